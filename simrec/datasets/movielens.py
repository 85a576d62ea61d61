"""MovieLens (GroupLens) ratings, read as LensKit reads them, without importing LensKit.

Layouts (folders or the published zips), detected as
:func:`lenskit.data.load_movielens_df` detects them (the folder name first,
then the files) and parsed with the same pandas calls:

* ML-100K: ``u.data``, tab-separated ``user item rating timestamp``;
* ML-1M, ML-10M: ``ratings.dat``, ``user::item::rating::timestamp``;
* ML-20M, 25M, 32M, ml-latest(-small): ``ratings.csv`` with the header
  ``userId,movieId,rating,timestamp``.

Decision (issue 29): simrec parses the file itself. LensKit's loader imports
LensKit and PyTorch (about 1.4 s of CPU, four times the parse of ML-1M's
``ratings.dat``), which a baseline-only evaluation never uses. The frames are
LensKit's, column for column (user and item int32, rating float32;
tests/test_datasets.py compares them on every layout), except that
timestamps stay integer seconds instead of datetimes.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from ..interactions import Interactions
from .binarize import binarize, binarize_events
from .errors import DatasetError

__all__ = ["load_movielens", "load_movielens_timestamped", "MOVIELENS_RATING_FILES"]

#: Ratings file of each MovieLens generation, in LensKit's detection order.
MOVIELENS_RATING_FILES = ("u.data", "ratings.dat", "ratings.csv")

_EXPECTED = (
    "a MovieLens folder or .zip holding u.data (ML-100K), ratings.dat (ML-1M/10M) or ratings.csv (ML-20M and later)"
)
_NAME = re.compile(r"^ml-(\d+[mk]|latest|latest-small)", re.IGNORECASE)


def load_movielens(path: str | os.PathLike, *, min_rating: float | None = None) -> Interactions:
    """Load a MovieLens dataset as binary implicit feedback.

    Reads the ratings with :func:`lenskit.data.load_movielens_df` (folder or
    zip, generation detected by LensKit from the folder name or contents) and
    keeps every rated (user, movie) pair, or only those rated at least
    ``min_rating``. Only rated movies become columns (ML-1M: 3,706 of the 3,883
    listed movies, as in Tian's thesis, Table 1).

    Parameters
    ----------
    path : str or os.PathLike
        A MovieLens folder (e.g. ``ml-1m/``), its zip (``ml-1m.zip``), or the
        ratings file itself (``u.data``, ``ratings.dat``, ``ratings.csv``; its
        folder is read).
    min_rating : float, optional
        Keep only ratings ``>= min_rating`` (e.g. 4.0). Default None: every
        rating counts.

    Returns
    -------
    Interactions
        Shape (n_users, n_items); ``user_ids`` / ``item_ids`` are the sorted
        MovieLens ``userId`` / ``movieId`` (int).

    Raises
    ------
    DatasetError
        Missing path, no ratings file, unparsable line (with its number), or
        no pair left after ``min_rating``.
    """
    p, df = _frame(path)
    inter = binarize(df["user_id"].to_numpy(), df["item_id"].to_numpy(), df["rating"].to_numpy(), min_rating=min_rating)
    _check_not_empty(p, inter, min_rating)
    return inter


def load_movielens_timestamped(
    path: str | os.PathLike, *, min_rating: float | None = None
) -> tuple[Interactions, np.ndarray]:
    """:func:`load_movielens` and, per stored pair, the timestamp of its rating (seconds since 1970).

    Returns
    -------
    Interactions, ndarray of float64 of shape (n_pairs,)
        Aligned with the matrix's stored pairs (:func:`~simrec.datasets.binarize.binarize_events`).
    """
    p, df = _frame(path)
    inter, times = binarize_events(
        df["user_id"].to_numpy(),
        df["item_id"].to_numpy(),
        _seconds(df["timestamp"]),
        df["rating"].to_numpy(),
        min_rating=min_rating,
    )
    _check_not_empty(p, inter, min_rating)
    return inter, times


def _frame(path: str | os.PathLike) -> tuple[Path, pd.DataFrame]:
    """The ratings of a MovieLens folder or zip (``user_id``, ``item_id``, ``rating``, ``timestamp``)."""
    p = _resolve(Path(path))
    found = _member(p)
    if found is None:
        raise DatasetError(p, f"no ratings file of the MovieLens generation its name gives; expected {_EXPECTED}")
    name, opener = found
    try:
        with opener() as fh:
            df = _read_ratings(name.rsplit("/", 1)[-1].rsplit(":", 1)[-1], fh)
    except Exception as exc:  # pandas errors: find the culprit line
        _diagnose(p, exc)
        raise DatasetError(p, f"cannot be read as MovieLens ratings ({exc}); expected {_EXPECTED}") from exc
    return p, df


def _read_ratings(base: str, fh: IO[bytes]) -> pd.DataFrame:
    """Parse a ratings file as LensKit 2025.8's MovieLens loaders do (the same ``read_csv`` calls)."""
    if base == "u.data":
        return pd.read_csv(
            fh,
            sep="\t",
            header=None,
            names=["user_id", "item_id", "rating", "timestamp"],
            dtype={"user_id": np.int32, "item_id": np.int32, "rating": np.float32, "timestamp": np.int32},
        )
    if base == "ratings.dat":
        return pd.read_csv(
            fh,
            sep=":",
            header=None,
            names=["user_id", "_ui", "item_id", "_ir", "rating", "_rt", "timestamp"],
            usecols=[0, 2, 4, 6],
            dtype={"user_id": np.int32, "item_id": np.int32, "rating": np.float32, "timestamp": np.int32},
        )
    return pd.read_csv(
        fh, dtype={"userId": np.int32, "movieId": np.int32, "rating": np.float32, "timestamp": np.int64}
    ).rename(columns={"userId": "user_id", "movieId": "item_id"})


def _seconds(t: pd.Series) -> np.ndarray:
    """Timestamps as seconds since 1970 (LensKit returns datetimes; ``u.data`` read directly has seconds)."""
    if pd.api.types.is_datetime64_any_dtype(t):
        epoch = pd.Timestamp(0, tz=t.dt.tz) if t.dt.tz is not None else pd.Timestamp(0)
        return ((t - epoch) / pd.Timedelta(seconds=1)).to_numpy(np.float64)
    return t.to_numpy(np.float64)


def _check_not_empty(p: Path, inter: Interactions, min_rating: float | None) -> None:
    if inter.n_pairs == 0:
        what = "no ratings" if min_rating is None else f"no rating >= min_rating={min_rating}"
        raise DatasetError(p, f"{what}; expected at least one (user, item) pair")


def _resolve(p: Path) -> Path:
    """Check ``p`` exists and looks like MovieLens; a ratings file maps to its folder."""
    if not p.exists():
        raise DatasetError(p, f"no such file or folder; expected {_EXPECTED}")
    if p.is_file():
        if p.name in MOVIELENS_RATING_FILES:
            return p.parent
        if not zipfile.is_zipfile(p):
            raise DatasetError(p, f"not a folder or zip archive; expected {_EXPECTED}")
        with zipfile.ZipFile(p) as zf:
            names = zf.namelist()
        first = names[0] if names else ""
        if not (first.endswith("/") and _NAME.match(first)):
            raise DatasetError(
                p, f"zip does not start with an ml-*/ folder (first entry {first!r}); expected {_EXPECTED}"
            )
        if not any(n == first + f for n in names for f in MOVIELENS_RATING_FILES):
            raise DatasetError(p, f"zip has no {first}u.data, ratings.dat or ratings.csv; expected {_EXPECTED}")
        return p
    if not any((p / f).is_file() for f in MOVIELENS_RATING_FILES):
        raise DatasetError(p, f"folder has none of {', '.join(MOVIELENS_RATING_FILES)}; expected {_EXPECTED}")
    return p


def _generation_files(name: str) -> list[str]:
    """The ratings file LensKit reads for a folder or zip folder called ``name`` (all three, in
    detection order, when the name gives no generation; none for an unknown one, e.g. ``ml-5k``)."""
    m = _NAME.match(name)
    if not m:
        return list(MOVIELENS_RATING_FILES)
    gen = m.group(1).lower()
    if gen == "100k":
        return ["u.data"]
    if gen in ("1m", "10m"):
        return ["ratings.dat"]
    return ["ratings.csv"] if gen.endswith("m") or gen.startswith("latest") else []


def _member(p: Path) -> tuple[str, Callable[[], IO[bytes]]] | None:
    """Name and opener of the ratings file LensKit reads for ``p``.

    LensKit's detection: a folder named after a generation (``ml-1m``,
    ``ml-20m``, ...) is read as that generation, any other folder by the
    first of ``u.data``, ``ratings.dat``, ``ratings.csv`` it holds; a zip by
    the name of its first entry, a folder.
    """
    if p.is_dir():
        for name in _generation_files(p.name):
            path = p / name
            if path.is_file():
                return str(path), lambda path=path: open(path, "rb")
        return None
    with zipfile.ZipFile(p) as zf:
        names = zf.namelist()
    for name in _generation_files(names[0].rstrip("/")):
        full = names[0] + name
        if full in names:

            def opener(full: str = full) -> IO[bytes]:
                with zipfile.ZipFile(p) as zf:
                    return io.BytesIO(zf.read(full))

            return f"{p}:{full}", opener
    return None


def _bad_field(fields: list[str]) -> str | None:
    if len(fields) != 4:
        return f"{len(fields)} fields"
    try:
        int(fields[0]), int(fields[1]), float(fields[2]), int(float(fields[3]))
    except ValueError:
        return "a non-numeric field"
    return None


def _diagnose(p: Path, exc: BaseException) -> None:
    """Raise a DatasetError naming the first malformed line, if there is one."""
    found = _member(p)
    if found is None:
        return
    name, opener = found
    base = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    with opener() as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.decode("latin-1").rstrip("\r\n")
            if base == "ratings.csv":
                if lineno == 1:
                    if line.split(",")[:2] != ["userId", "movieId"]:
                        raise DatasetError(
                            name, f"header {line!r}; expected userId,movieId,rating,timestamp", line=1
                        ) from exc
                    continue
                fields, layout = line.split(","), "userId,movieId,rating,timestamp"
            elif base == "ratings.dat":
                fields, layout = line.split("::"), "user::item::rating::timestamp"
            else:
                fields, layout = line.split("\t"), "user<TAB>item<TAB>rating<TAB>timestamp"
            why = _bad_field(fields)
            if why is not None:
                raise DatasetError(name, f"{why} in {line[:80]!r}; expected {layout} (numbers)", line=lineno) from exc
