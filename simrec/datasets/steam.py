"""Steam user inventories (Kang & McAuley; ``australian_users_items.json``)."""

from __future__ import annotations

import ast
import os
import re

import numpy as np

from .._validation import check_real
from ..interactions import Interactions
from ._text import check_file, open_text
from .binarize import binarize
from .errors import DatasetError

__all__ = ["load_steam", "parse_steam_line"]

_EXPECTED = (
    "Steam australian_users_items lines: one Python-literal dict per line with "
    "'user_id' and 'items' (a list of dicts with 'item_id' and 'playtime_forever')"
)

# A Python str literal as repr() writes it: single-quoted unless it contains a
# quote and no double quote; escapes start with a backslash; no raw newline.
_S = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
_ITEM = r"\{'item_id': (" + _S + r"), 'item_name': " + _S + r", 'playtime_forever': (\d+), 'playtime_2weeks': \d+\}"
_ITEM_NC = r"\{'item_id': " + _S + r", 'item_name': " + _S + r", 'playtime_forever': \d+, 'playtime_2weeks': \d+\}"
_LINE = re.compile(
    r"\{'user_id': ("
    + _S
    + r"), 'items_count': \d+, 'steam_id': "
    + _S
    + r", 'user_url': "
    + _S
    + r", 'items': \[((?:"
    + _ITEM_NC
    + r"(?:, "
    + _ITEM_NC
    + r")*)?)\]\}"
)
_ITEM_RE = re.compile(_ITEM)


def _unquote(lit: str) -> str:
    """Value of a repr()-style str literal; ``literal_eval`` only when it has escapes."""
    return lit[1:-1] if "\\" not in lit else ast.literal_eval(lit)


def parse_steam_line(line: str) -> tuple[str, list[str], list[float]] | None:
    """Parse one line into ``(user_id, item_ids, playtimes_forever)``.

    Semantically :func:`ast.literal_eval` of the line. Lines in the exact
    layout the published file uses (keys in the order ``user_id, items_count,
    steam_id, user_url, items`` and ``item_id, item_name, playtime_forever,
    playtime_2weeks``) go through a regular expression that matches the whole
    line with Python's string-literal grammar (several times faster than
    ``literal_eval``, which a 500 MB file needs; docs/design.md §9); any other line falls back to
    ``literal_eval``. Returns None when the line is not a dict with the
    expected keys or does not parse (the caller reports it).
    """
    s = line.strip()
    m = _LINE.fullmatch(s)
    if m is not None:
        pairs = _ITEM_RE.findall(m.group(2))
        return _unquote(m.group(1)), [_unquote(a) for a, _ in pairs], [float(b) for _, b in pairs]
    try:
        rec = ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    if not isinstance(rec, dict) or "user_id" not in rec or not isinstance(rec.get("items"), list):
        return None
    ids: list[str] = []
    play: list[float] = []
    for it in rec["items"]:
        if not isinstance(it, dict) or "item_id" not in it:
            return None
        ids.append(str(it["item_id"]))
        t = it.get("playtime_forever")
        play.append(float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else np.nan)
    return str(rec["user_id"]), ids, play


def load_steam(path: str | os.PathLike, *, min_playtime: float | None = None) -> Interactions:
    """Load Steam inventories as binary implicit feedback (STMV1 of Tian's thesis).

    One Python-literal dict per line (single quotes: not JSON), plain or
    gzipped, e.g. ``{'user_id': 'js41637', 'items_count': 888, 'steam_id':
    '76561198035864385', 'user_url': '...', 'items': [{'item_id': '10',
    'item_name': 'Counter-Strike', 'playtime_forever': 6, 'playtime_2weeks':
    0}, ...]}``. Every listed item counts as consumed (implicit feedback);
    users whose inventory is empty (after ``min_playtime``) are dropped, as the
    thesis did (70,912 users, 10,978 items, 5,094,082 pairs). A user listed on
    several lines gets the union of the lines' items.

    Parameters
    ----------
    path : str or os.PathLike
        ``australian_users_items.json`` or its ``.gz``.
    min_playtime : float, optional
        Keep only items with ``playtime_forever >= min_playtime`` (minutes).
        Default None: every listed item counts. An item without a numeric
        playtime never passes a threshold.

    Returns
    -------
    Interactions
        ``user_ids``: sorted ``user_id`` strings (Steam vanity names or numeric
        ids); ``item_ids``: sorted ``item_id`` strings, as in the file (string
        order, so '10' < '100' < '20').

    Raises
    ------
    DatasetError
        Missing file, a line that is not such a dict (with its number), or no
        pair left.
    """
    if min_playtime is not None:
        check_real("min_playtime", min_playtime)
    p = check_file(path, _EXPECTED)
    users: list[str] = []
    items: list[str] = []
    play: list[float] = []
    n_lines = 0
    with open_text(p) as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                n_lines += 1
                rec = parse_steam_line(line)
                if rec is None:
                    raise DatasetError(p, f"cannot parse {line.strip()[:60]!r}; expected {_EXPECTED}", line=lineno)
                uid, ids, times = rec
                users.extend([uid] * len(ids))
                items.extend(ids)
                play.extend(times)
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise DatasetError(p, f"cannot be read ({exc}); expected {_EXPECTED}") from exc
    if n_lines == 0:
        raise DatasetError(p, f"file is empty; expected {_EXPECTED}")
    inter = binarize(
        np.asarray(users, dtype=object),
        np.asarray(items, dtype=object),
        np.asarray(play, dtype=np.float64),
        min_rating=min_playtime,
    )
    if inter.n_pairs == 0:
        what = "no user owns an item" if min_playtime is None else f"no item with playtime_forever >= {min_playtime}"
        raise DatasetError(p, f"{what}; expected at least one (user, item) pair")
    return inter


def _is_steam_head(head: str) -> bool:
    """Whether a first line looks like a Steam inventory line (used by detection)."""
    return parse_steam_line(head) is not None
