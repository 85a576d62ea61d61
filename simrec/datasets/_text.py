"""Opening (optionally gzipped) text files and peeking at their first line."""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, BinaryIO

from .._inputs import InputFileError, check_input_file, open_input
from .errors import DatasetError

__all__ = ["check_file", "check_input", "open_text", "first_line", "is_gzip"]

_EXPECTED_FILE = "a dataset file"


def check_file(path: str | os.PathLike, expected: str) -> Path:
    """``Path(path)`` if it is an existing file, else a :class:`DatasetError`."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(p, f"no such file; expected {expected}")
    if not p.is_file():
        raise DatasetError(p, f"not a file; expected {expected}")
    return p


def check_input(path: str | os.PathLike, inside: Iterable[str] = ()) -> None:
    """Refuse, before anything is read, a dataset that is not made of regular files within the data size limit.

    ``path`` itself if it is a file, else the entries ``inside`` the folder
    that exist (e.g. MovieLens' ratings files): a FIFO, a socket, a device
    (``/dev/zero``) or a file over the limit (:mod:`simrec._inputs`,
    ``SIMREC_MAX_DATA_SIZE``) is a :class:`DatasetError`. A missing path is
    left to the loaders' own messages. Only metadata is read (``os.stat``).
    """
    p = Path(path)
    try:
        files = [p / name for name in inside if os.path.lexists(p / name)] if p.is_dir() else [p]
        for f in files:
            check_input_file(f, "data", _EXPECTED_FILE)
    except InputFileError as exc:
        raise DatasetError(exc.path, exc.reason) from None
    except OSError:  # missing or unreadable: the loader says so in its words
        return


def _open_binary(path: Path) -> BinaryIO:
    """A dataset file opened for reading after :func:`simrec._inputs.open_input`'s checks (a DatasetError if refused)."""
    try:
        return open_input(path, "data", _EXPECTED_FILE)
    except InputFileError as exc:
        raise DatasetError(exc.path, exc.reason) from None


def is_gzip(path: Path) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its name)."""
    with _open_binary(path) as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_text(path: Path) -> IO[str]:
    """Open a UTF-8 text file, transparently decompressing gzip (checked by :func:`_open_binary` first)."""
    fh = _open_binary(path)
    try:
        gzipped = fh.read(2) == b"\x1f\x8b"
        fh.seek(0)
        if not gzipped:
            return io.TextIOWrapper(fh, encoding="utf-8", errors="strict")
        gz = gzip.GzipFile(fileobj=fh, mode="rb")
        gz.myfileobj = fh  # type: ignore[assignment]  # typeshed says FileIO; GzipFile closes the file it opened itself (myfileobj): this one too
        return io.TextIOWrapper(gz, encoding="utf-8", errors="strict")
    except BaseException:
        fh.close()
        raise


def first_line(path: Path, *, max_chars: int = 1 << 24) -> str:
    """The first non-blank line of a text file (stripped), or '' if none.

    Reads at most ``max_chars`` characters of that line (Steam lines are long).
    """
    try:
        with open_text(path) as fh:
            while line := fh.readline(max_chars):  # never more than max_chars at once (a file of one huge line)
                s = line.strip()
                if s:
                    return s[:max_chars]
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise DatasetError(path, f"cannot be read as UTF-8 text ({exc}); expected a text file") from exc
    return ""
