"""The one error type of the dataset loaders."""

from __future__ import annotations

import os

__all__ = ["DatasetError"]


class DatasetError(ValueError):
    """A reference dataset cannot be read as the layout it should have.

    Raised for a missing file, a wrong layout, a missing column, an unparsable
    line or an empty result (e.g. after a rating filter). The message always
    names the file (and the line, when one is to blame) and says what was
    expected.

    Parameters
    ----------
    path : str or os.PathLike
        The file or folder being read.
    message : str
        What went wrong and what was expected.
    line : int, optional
        1-based line number (or row number, for Parquet) of the culprit.

    Attributes
    ----------
    path : str
    line : int or None
    """

    def __init__(self, path: str | os.PathLike, message: str, *, line: int | None = None) -> None:
        self.path = os.fspath(path)
        self.line = line
        where = self.path if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {message}")
