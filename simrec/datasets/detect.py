"""One entry point that recognises the published layouts."""

from __future__ import annotations

import ast
import inspect
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._validation import check_choice
from ..interactions import Interactions
from ._text import check_input, first_line
from .amazon import load_amazon_5core
from .errors import DatasetError
from .movielens import MOVIELENS_RATING_FILES, load_movielens, load_movielens_timestamped
from .pairs import PARQUET_SUFFIXES, _suffix, load_pairs, load_pairs_timestamped
from .steam import _is_steam_head, load_steam

__all__ = ["load_dataset", "load_timestamped", "DATASET_KINDS", "detect_kind", "check_dataset_files"]

#: Values of ``kind`` for :func:`load_dataset`.
DATASET_KINDS = ("movielens", "amazon", "steam", "pairs")

_LOADERS: dict[str, Callable[..., Interactions]] = {
    "movielens": load_movielens,
    "amazon": load_amazon_5core,
    "steam": load_steam,
    "pairs": load_pairs,
}

_EXPECTED = (
    "a MovieLens folder/zip, Amazon review JSON lines or ratings CSV, Steam "
    "users_items lines, or a CSV/TSV/Parquet table of (user, item) pairs"
)


def check_dataset_files(path: str | os.PathLike) -> None:
    """Refuse, before anything is read, a dataset that is not regular files within the data size limit.

    ``path`` itself when it is a file, else the MovieLens ratings files in the
    folder: a FIFO, a socket, a device (``/dev/zero``) or a file over
    ``SIMREC_MAX_DATA_SIZE`` (16 GiB by default; :mod:`simrec._inputs`) is a
    :class:`DatasetError`. Only metadata is read; a missing path is left to the
    loaders' messages. :func:`detect_kind`, :func:`load_dataset` and
    :func:`load_timestamped` call it first.
    """
    check_input(path, MOVIELENS_RATING_FILES)


def detect_kind(path: str | os.PathLike, *, user_col: str = "user", item_col: str = "item") -> str:
    """Guess the layout of ``path``; one of :data:`DATASET_KINDS`.

    Rules, in order:

    1. a folder, a ``.zip``, a file named ``u.data`` / ``ratings.dat``, or a
       ``ratings.csv`` with the ``userId,movieId`` header → "movielens";
    2. ``.parquet`` / ``.pq`` → "pairs";
    3. first non-blank line (gzip looked through) is a JSON or Python-literal
       object: with ``reviewerID`` → "amazon", with ``items`` (a Steam
       inventory) → "steam";
    4. a header line naming ``user_col`` and ``item_col`` → "pairs";
    5. a header-less ``id,id,number,number`` line (an Amazon ratings-only
       CSV) or ``user_id,parent_asin,...`` (2023) → "amazon".

    Anything else is a :class:`DatasetError`; pass ``kind`` to
    :func:`load_dataset` to force a layout.
    """
    p = Path(path)
    if not p.exists():
        raise DatasetError(p, f"no such file or folder; expected {_EXPECTED}")
    check_dataset_files(p)
    if p.is_dir() or p.name in ("u.data", "ratings.dat") or (p.suffix.lower() == ".zip" and zipfile.is_zipfile(p)):
        return "movielens"
    if _suffix(p) in PARQUET_SUFFIXES:
        return "pairs"
    head = first_line(p)
    if not head:
        raise DatasetError(p, f"file is empty; expected {_EXPECTED}")
    if p.name == "ratings.csv" and head.startswith("userId,movieId"):
        return "movielens"
    if head.startswith("{"):
        rec: Any = None
        try:
            rec = json.loads(head)
        except json.JSONDecodeError:
            if _is_steam_head(head):
                return "steam"
            try:
                rec = ast.literal_eval(head)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                rec = None
        if isinstance(rec, dict) and "reviewerID" in rec:
            return "amazon"
        if isinstance(rec, dict) and "items" in rec and "user_id" in rec:
            return "steam"
        raise DatasetError(
            p, f"line 1 is an object without 'reviewerID' (Amazon) or 'user_id'/'items' (Steam); expected {_EXPECTED}"
        )
    fields = [f.strip().strip('"') for f in head.replace("\t", ",").replace(";", ",").split(",")]
    if user_col in fields and item_col in fields:
        return "pairs"
    if head.startswith("user_id,parent_asin,"):
        return "amazon"
    if len(fields) == 4 and _is_number(fields[2]) and _is_number(fields[3]):
        return "amazon"
    raise DatasetError(
        p,
        f"unknown layout: first line {head[:60]!r} has no {user_col!r}/{item_col!r} header and is not an "
        f"Amazon ratings line; expected {_EXPECTED} (for a table with other column names give them: "
        f"--user-col/--item-col, or user_col/item_col in a dataset spec)",
    )


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def load_dataset(path: str | os.PathLike, *, kind: str | None = None, **options: Any) -> Interactions:
    """Load a reference dataset, recognising its layout (see :func:`detect_kind`).

    Parameters
    ----------
    path : str or os.PathLike
        A file or folder in one of the published layouts.
    kind : {"movielens", "amazon", "steam", "pairs"}, optional
        Force a layout instead of detecting it. Default None (detect).
    **options
        Passed to the loader: :func:`load_movielens` (``min_rating``),
        :func:`load_amazon_5core` (``min_rating``, ``csv_order``),
        :func:`load_steam` (``min_playtime``), :func:`load_pairs`
        (``user_col``, ``item_col``, ``rating_col``, ``min_rating``, ``sep``).

    Returns
    -------
    Interactions

    Raises
    ------
    DatasetError
        Unknown layout or any loader error.
    TypeError
        An option the chosen loader does not take.
    """
    check_dataset_files(path)
    kind = _kind(path, kind, options)
    return _call(_LOADERS[kind], path, options, f"the {kind!r} loader")


def _kind(path: str | os.PathLike, kind: str | None, options: dict[str, Any]) -> str:
    """``kind`` checked, or the layout detected (with the column names among ``options``)."""
    if kind is not None:
        return check_choice("kind", kind, DATASET_KINDS)
    return detect_kind(path, **{k: options[k] for k in ("user_col", "item_col") if k in options})


def _call(loader: Callable[..., Any], path: str | os.PathLike, options: dict[str, Any], what: str) -> Any:
    """``loader(path, **options)``, or a TypeError naming the options ``loader`` does not take."""
    accepted = [n for n, prm in inspect.signature(loader).parameters.items() if prm.kind is prm.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"option(s) {', '.join(map(repr, unknown))} not accepted by {what}; it takes "
            f"{', '.join(map(repr, accepted))}"
        )
    return loader(path, **options)


def load_timestamped(path: str | os.PathLike, *, kind: str | None = None, **options: Any) -> tuple[Interactions, Any]:
    """A dataset and, per stored pair, the time of its latest record (for :func:`simrec.loo.leave_last_out`).

    Layouts with timestamps: MovieLens (:func:`load_movielens_timestamped`,
    ``min_rating``) and CSV/TSV/Parquet tables (:func:`load_pairs_timestamped`:
    ``user_col``, ``item_col``, ``timestamp_col`` (default "timestamp"),
    ``rating_col``, ``min_rating``, ``sep``), e.g. CiaoDVD's
    ``user,item,rating,timestamp``. ``kind`` as :func:`load_dataset`.

    Raises
    ------
    DatasetError
        A layout without timestamps (Amazon, Steam in simrec's loaders), or any loader error.
    TypeError
        An option the chosen loader does not take.
    """
    check_dataset_files(path)
    kind = _kind(path, kind, options)
    loaders = {"movielens": load_movielens_timestamped, "pairs": load_pairs_timestamped}
    if kind not in loaders:
        raise DatasetError(
            path,
            f"a {kind} dataset has no timestamps in simrec's loader; a leave-last-out split "
            "needs MovieLens or a table with a timestamp column",
        )
    return _call(loaders[kind], path, options, f"the {kind!r} loader with timestamps")
