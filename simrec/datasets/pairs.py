"""Any table of (user, item[, rating]) records: CSV, TSV or Parquet."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import quote
from ..interactions import Interactions
from ._text import check_file, first_line, is_gzip
from .binarize import binarize, binarize_events
from .errors import DatasetError

__all__ = ["load_pairs", "load_pairs_timestamped", "PARQUET_SUFFIXES"]

PARQUET_SUFFIXES = (".parquet", ".pq")
_TAB_SUFFIXES = (".tsv", ".tab")


def _suffix(p: Path) -> str:
    """Lower-case suffix, looking through a trailing .gz."""
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def load_pairs(
    path: str | os.PathLike,
    *,
    user_col: str = "user",
    item_col: str = "item",
    rating_col: str | None = None,
    min_rating: float | None = None,
    sep: str | None = None,
) -> Interactions:
    """Load any table of (user, item) records as binary implicit feedback.

    Parameters
    ----------
    path : str or os.PathLike
        ``.parquet`` / ``.pq`` (read with pandas/pyarrow), or a delimited text
        file with a header line, plain or gzipped.
    user_col, item_col : str
        Columns holding the user and item ids. Defaults "user" and "item".
    rating_col : str, optional
        Column with ratings; needed only with ``min_rating``.
    min_rating : float, optional
        Keep only records with ``rating_col >= min_rating``. Default None:
        every record counts.
    sep : str, optional
        Field separator of a text file. Default None: tab for ``.tsv`` /
        ``.tab``, comma for ``.csv``, else sniffed from the header line
        (:class:`csv.Sniffer` over ``, \\t ; |`` and space).

    Returns
    -------
    Interactions
        ``user_ids`` / ``item_ids`` hold the sorted unique ids with the dtype
        pandas reads (int64 for integer ids, str otherwise).

    Raises
    ------
    ValueError
        ``min_rating`` without ``rating_col``.
    DatasetError
        Missing file, missing column (the message lists the columns found), an
        unparsable line, a missing id or non-numeric rating (with its line), or
        no pair left.
    """
    p, df, ratings, _ = _records(
        path, user_col=user_col, item_col=item_col, rating_col=rating_col, min_rating=min_rating, sep=sep
    )
    inter = binarize(df[user_col].to_numpy(), df[item_col].to_numpy(), ratings, min_rating=min_rating)
    _check_not_empty(p, inter, rating_col, min_rating)
    return inter


def _check_not_empty(p: Path, inter: Interactions, rating_col: str | None, min_rating: float | None) -> None:
    if inter.n_pairs == 0:
        what = "no records" if min_rating is None else f"no record with {rating_col} >= min_rating={min_rating}"
        raise DatasetError(p, f"{what}; expected at least one (user, item) pair")


def load_pairs_timestamped(
    path: str | os.PathLike,
    *,
    user_col: str = "user",
    item_col: str = "item",
    timestamp_col: str = "timestamp",
    rating_col: str | None = None,
    min_rating: float | None = None,
    sep: str | None = None,
) -> tuple[Interactions, np.ndarray]:
    """:func:`load_pairs` and, per stored pair, the time of its latest record (column ``timestamp_col``).

    Returns
    -------
    Interactions, ndarray of float64 of shape (n_pairs,)
        The timestamps are aligned with the matrix's stored pairs (see
        :func:`~simrec.datasets.binarize.binarize_events`).

    Raises
    ------
    DatasetError
        As :func:`load_pairs`, and a missing or non-numeric timestamp (with its line).
    """
    p, df, ratings, times = _records(
        path,
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        min_rating=min_rating,
        sep=sep,
        timestamp_col=timestamp_col,
    )
    inter, latest = binarize_events(
        df[user_col].to_numpy(), df[item_col].to_numpy(), times, ratings, min_rating=min_rating
    )
    _check_not_empty(p, inter, rating_col, min_rating)
    return inter, latest


def _numbers(p: Path, df: pd.DataFrame, col: str, unit: str, what: str) -> np.ndarray:
    """Column ``col`` as float64; a DatasetError naming the line of the first non-number."""
    vals = pd.to_numeric(df[col], errors="coerce")
    bad = vals.isna() & df[col].notna()
    if bad.any():
        at = int(bad.idxmax())
        raise DatasetError(
            p,
            f"{what} {quote(df.loc[at, col])} in column {quote(col)} ({unit} {at}) is not a number",
            line=at if unit == "line" else None,
        )
    return vals.to_numpy(np.float64)


def _records(
    path: str | os.PathLike,
    *,
    user_col: str,
    item_col: str,
    rating_col: str | None,
    min_rating: float | None,
    sep: str | None,
    timestamp_col: str | None = None,
) -> tuple[Path, pd.DataFrame, np.ndarray | None, Any]:  # (timestamps: None without timestamp_col)
    """The validated records of a pairs table: (path, frame, ratings or None, timestamps or None)."""
    if min_rating is not None and rating_col is None:
        raise ValueError(f"`min_rating` needs `rating_col`; got rating_col=None with min_rating={min_rating}")
    for name, col in (
        ("user_col", user_col),
        ("item_col", item_col),
        ("rating_col", rating_col),
        ("timestamp_col", timestamp_col),
    ):
        if col is not None and not isinstance(col, str):
            raise TypeError(f"`{name}` must be a column name (str); got {quote(col)}")
    if sep is not None and (not isinstance(sep, str) or not sep):
        raise ValueError(f"`sep` must be a non-empty string or None; got {quote(sep)}")
    p = check_file(path, "a CSV/TSV file with a header line or a Parquet file")
    cols = [user_col, item_col] + [c for c in (rating_col, timestamp_col) if c is not None]
    if _suffix(p) in PARQUET_SUFFIXES:
        df, unit, offset = _read_parquet(p, cols), "row", 1
    else:
        df, unit, offset = _read_text(p, cols, sep), "line", 2
    df.index = np.arange(len(df)) + offset
    if unit == "line":
        df = df.dropna(how="all")  # blank lines
    for col in (user_col, item_col):
        miss = df[col].isna()
        if miss.any():
            at = int(miss.idxmax())
            raise DatasetError(
                p,
                f"missing value in column {col!r} ({unit} {at}); expected an id on every {unit}",
                line=at if unit == "line" else None,
            )
    ratings = None if rating_col is None else _numbers(p, df, rating_col, unit, "rating")
    times = None
    if timestamp_col is not None:
        times = _numbers(p, df, timestamp_col, unit, "timestamp")
        if np.isnan(times).any():
            at = int(df.index[np.isnan(times)][0])
            raise DatasetError(
                p, f"missing timestamp in column {timestamp_col!r} ({unit} {at})", line=at if unit == "line" else None
            )
    return p, df, ratings, times


def _read_parquet(p: Path, cols: list[str]) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(p).names
    except Exception as exc:  # pyarrow raises ArrowInvalid on a non-Parquet file
        raise DatasetError(p, f"not a Parquet file ({exc}); expected a Parquet table with columns {cols}") from exc
    _check_columns(p, cols, names)
    return pd.read_parquet(p, columns=cols)


def _read_text(p: Path, cols: list[str], sep: str | None) -> pd.DataFrame:
    head = first_line(p)
    if not head:
        raise DatasetError(p, f"file is empty; expected a header line with columns {cols}")
    if sep is None:
        suffix = _suffix(p)
        if suffix in _TAB_SUFFIXES:
            sep = "\t"
        elif suffix == ".csv":
            sep = ","
        else:
            try:
                sep = csv.Sniffer().sniff(head, delimiters=",\t;| ").delimiter
            except csv.Error:
                sep = ","
    _check_columns(p, cols, [c.strip().strip('"') for c in head.split(sep)], sep)
    try:
        # no usecols: pandas would then accept lines with extra fields silently
        df = pd.read_csv(
            p,
            sep=sep,
            dtype={c: "string" for c in cols[2:]},
            compression="gzip" if is_gzip(p) else None,
            skip_blank_lines=False,
            encoding="utf-8",
        )
    except (ValueError, OSError, EOFError) as exc:  # pandas ParserError names the line
        raise DatasetError(p, f"{exc}; expected {sep!r}-separated fields with columns {cols}") from exc
    return df[cols]


#: Separators a header split the wrong way may hide (issue 28: a ``;``-separated CSV got no hint).
_OTHER_SEPARATORS = (";", "\t", "|", ",", " ")


def _check_columns(p: Path, cols: list[str], found: list[str], sep: str | None = None) -> None:
    """Refuse a header without ``cols``; when another separator would give them, say which to pass.

    Decision: the hint is given only when splitting the header by that
    separator finds every missing column (so a header that is simply wrong is
    not misdiagnosed as a separator problem).
    """
    missing = [c for c in cols if c not in found]
    if not missing:
        return
    hint = ""
    if sep is not None:
        header = sep.join(found)
        for other in _OTHER_SEPARATORS:
            fields = [c.strip().strip('"') for c in header.split(other)]
            if other != sep and all(c in fields for c in missing):
                shown = "'\\t'" if other == "\t" else repr(other)
                hint = (
                    f"; the header looks {shown}-separated, not {sep!r}-separated: pass --sep {shown} on the command "
                    f"line, or sep = {shown} in the [dataset] table"
                )
                break
    raise DatasetError(p, f"no column {', '.join(map(repr, missing))}; found columns {found}{hint}")
