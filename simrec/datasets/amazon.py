"""Amazon review data (McAuley et al.): 5-core JSON lines and ratings-only CSVs."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_choice, quote
from ..interactions import Interactions
from ._text import check_file, first_line, is_gzip, open_text
from .binarize import binarize
from .errors import DatasetError

__all__ = ["load_amazon_5core", "AMAZON_CSV_ORDERS"]

#: Column orders of the header-less ratings-only CSVs (``csv_order``).
AMAZON_CSV_ORDERS = ("auto", "user-item", "item-user")

_EXPECTED_JSON = "Amazon review JSON lines with keys reviewerID, asin, overall"
_EXPECTED = (
    "Amazon review JSON lines (reviewerID, asin, overall, unixReviewTime; optionally gzipped) "
    "or a ratings-only CSV (user,item,rating,timestamp without header)"
)


def load_amazon_5core(
    path: str | os.PathLike,
    *,
    min_rating: float | None = None,
    csv_order: str = "auto",
) -> Interactions:
    """Load Amazon reviews (e.g. the 5-core Digital Music set, AZM5) as binary feedback.

    The layout is detected from the content, so names and ``.gz`` do not matter:

    * **JSON lines** (first character ``{``): one review per line, with
      ``reviewerID`` (user), ``asin`` (item) and ``overall`` (rating), as in the
      2014 ``reviews_Digital_Music_5.json`` and the 2018 ``Digital_Music_5.json``
      (extra keys such as ``verified``, ``vote``, ``style`` are ignored). Lines
      that are Python literals rather than JSON (some 2014 files) are read with
      :func:`ast.literal_eval`.
    * **Ratings-only CSV**, no header. The era is detected as LensKit's
      :func:`lenskit.data.amazon.load_amazon_ratings` does: a first line starting
      with ``user_id,parent_asin,`` is the 2023 layout (with header); a first
      line starting with ``A`` (a reviewer id) is the 2014 ``user,item,rating,
      timestamp`` layout; anything else is the 2018 ``item,user,rating,
      timestamp`` layout. ``csv_order`` overrides the guess for header-less files.

    Duplicated (user, item) reviews (present in the 2018 files) are merged. The
    2014 AZM5 of Tian's thesis has 5,541 users, 3,568 items, 64,706 pairs.

    Parameters
    ----------
    path : str or os.PathLike
        The JSON-lines or CSV file, plain or gzipped.
    min_rating : float, optional
        Keep only reviews with ``overall >= min_rating``. Default None: every
        review counts, as in the thesis.
    csv_order : {"auto", "user-item", "item-user"}
        Column order of a header-less CSV. Default "auto" (the detection above).

    Returns
    -------
    Interactions
        ``user_ids`` / ``item_ids``: sorted reviewer ids and ASINs (str).

    Raises
    ------
    DatasetError
        Missing file, unknown layout, a line that does not parse or lacks a
        key (with its number), or nothing left after ``min_rating``.
    """
    check_choice("csv_order", csv_order, AMAZON_CSV_ORDERS)
    p = check_file(path, _EXPECTED)
    head = first_line(p)
    if not head:
        raise DatasetError(p, f"file is empty; expected {_EXPECTED}")
    if head.startswith("{"):
        users, items, ratings = _read_json_lines(p, need_rating=min_rating is not None)
    else:
        users, items, ratings = _read_ratings_csv(p, head, csv_order)
    inter = binarize(users, items, ratings, min_rating=min_rating)
    if inter.n_pairs == 0:
        what = "no reviews" if min_rating is None else f"no review with overall >= min_rating={min_rating}"
        raise DatasetError(p, f"{what}; expected at least one (user, item) pair")
    return inter


# -- JSON lines -------------------------------------------------------------
def _read_json_lines(p: Path, *, need_rating: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fast path with pyarrow; on any trouble, the line-by-line reader names the line."""
    fast = _read_json_arrow(p)
    if fast is not None and not (need_rating and np.isnan(fast[2]).any()):
        return fast
    return _read_json_python(p, need_rating=need_rating)


def _read_json_arrow(p: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    import gzip

    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([("reviewerID", pa.string()), ("asin", pa.string()), ("overall", pa.float64())])
    try:
        src = gzip.open(p, "rb") if is_gzip(p) else open(p, "rb")
        with src:
            table = pj.read_json(
                src,
                read_options=pj.ReadOptions(block_size=1 << 24),
                parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
            )
    except (pa.ArrowException, OSError, EOFError):
        return None
    if table.num_rows == 0 or table.column("reviewerID").null_count or table.column("asin").null_count:
        return None
    users = table.column("reviewerID").to_numpy(zero_copy_only=False)
    items = table.column("asin").to_numpy(zero_copy_only=False)
    ratings = table.column("overall").to_numpy(zero_copy_only=False).astype(np.float64)
    return users, items, ratings


def _read_json_python(p: Path, *, need_rating: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    users: list[str] = []
    items: list[str] = []
    ratings: list[float] = []
    with open_text(p) as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                s = line.strip()
                if not s:
                    continue
                rec = _parse_record(p, s, lineno)
                u, i = rec.get("reviewerID"), rec.get("asin")
                if u is None or i is None:
                    missing = "reviewerID" if u is None else "asin"
                    raise DatasetError(p, f"no {missing!r} key; expected {_EXPECTED_JSON}", line=lineno)
                r = rec.get("overall")
                if r is None and need_rating:
                    raise DatasetError(
                        p, f"no 'overall' key, needed by min_rating; expected {_EXPECTED_JSON}", line=lineno
                    )
                try:
                    ratings.append(np.nan if r is None else float(r))
                except (TypeError, ValueError):
                    raise DatasetError(p, f"'overall' is {quote(r)}; expected a number", line=lineno) from None
                users.append(str(u))
                items.append(str(i))
        except (UnicodeDecodeError, OSError, EOFError) as exc:
            raise DatasetError(p, f"cannot be read ({exc}); expected {_EXPECTED}") from exc
    return np.asarray(users, dtype=object), np.asarray(items, dtype=object), np.asarray(ratings, dtype=np.float64)


def _parse_record(p: Path, s: str, lineno: int) -> dict:
    try:
        rec = json.loads(s)
    except json.JSONDecodeError:
        try:
            rec = ast.literal_eval(s)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise DatasetError(p, f"cannot parse {s[:60]!r}; expected {_EXPECTED_JSON}", line=lineno) from None
    if not isinstance(rec, dict):
        raise DatasetError(p, f"a {type(rec).__name__}, not an object; expected {_EXPECTED_JSON}", line=lineno)
    return rec


# -- ratings-only CSV -------------------------------------------------------
def _read_ratings_csv(p: Path, head: str, csv_order: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    header = head.startswith("user_id,parent_asin,")
    try:
        df = pd.read_csv(
            p,
            header=0 if header else None,
            dtype=str,
            compression="gzip" if is_gzip(p) else None,
            skip_blank_lines=False,
            encoding="utf-8",
        )
    except (ValueError, OSError, EOFError) as exc:  # pandas ParserError names the line
        raise DatasetError(p, f"{exc}; expected {_EXPECTED}") from exc
    if header:
        names = ["user_id", "parent_asin", "rating", "timestamp"]
        missing = [c for c in names if c not in df.columns]
        if missing:
            raise DatasetError(p, f"2023 header lacks {missing}; expected columns {names}", line=1)
        df = df[names].set_axis(["user", "item", "rating", "timestamp"], axis=1)
        first_data_line = 2
    else:
        if df.shape[1] != 4:
            raise DatasetError(p, f"{df.shape[1]} fields; expected 4 (user,item,rating,timestamp)", line=1)
        order = csv_order if csv_order != "auto" else ("user-item" if head.startswith("A") else "item-user")
        cols = (
            ["user", "item", "rating", "timestamp"] if order == "user-item" else ["item", "user", "rating", "timestamp"]
        )
        df = df.set_axis(cols, axis=1)
        first_data_line = 1
    user_col, item_col = "user", "item"
    df.index = np.arange(len(df)) + first_data_line
    df = df.dropna(how="all")
    rating = pd.to_numeric(df["rating"], errors="coerce")
    ts = pd.to_numeric(df["timestamp"], errors="coerce")
    bad = df[user_col].isna() | df[item_col].isna() | rating.isna() | ts.isna()
    if bad.any():
        lineno = int(bad.idxmax())
        raise DatasetError(
            p,
            f"malformed record {quote(df.loc[lineno].tolist())}; expected user,item,rating,timestamp "
            "(or item,user,rating,timestamp for 2018) with a numeric rating and timestamp",
            line=lineno,
        )
    return df[user_col].to_numpy(dtype=object), df[item_col].to_numpy(dtype=object), rating.to_numpy(np.float64)
