"""Opening (optionally gzipped) text files and peeking at their first line."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import IO

from .errors import DatasetError

__all__ = ["check_file", "open_text", "first_line", "is_gzip"]


def check_file(path: str | os.PathLike, expected: str) -> Path:
    """``Path(path)`` if it is an existing file, else a :class:`DatasetError`."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(p, f"no such file; expected {expected}")
    if not p.is_file():
        raise DatasetError(p, f"not a file; expected {expected}")
    return p


def is_gzip(path: Path) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its name)."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_text(path: Path) -> IO[str]:
    """Open a UTF-8 text file, transparently decompressing gzip."""
    if is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8", errors="strict")


def first_line(path: Path, *, max_chars: int = 1 << 24) -> str:
    """The first non-blank line of a text file (stripped), or '' if none.

    Reads at most ``max_chars`` characters of that line (Steam lines are long).
    """
    try:
        with open_text(path) as fh:
            for line in fh:
                s = line.strip()
                if s:
                    return s[:max_chars]
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise DatasetError(path, f"cannot be read as UTF-8 text ({exc}); expected a text file") from exc
    return ""
