"""Atomic file output: a crash never leaves a half-written file.

Every writer goes to a temporary file in the destination's folder and then
``os.replace``-s it into place (atomic on POSIX within one file system).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["atomic_write", "write_bytes", "write_text", "write_json", "write_parquet", "write_csv"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], object]) -> Path:
    """Call ``writer(tmp_path)`` then move ``tmp_path`` onto ``path`` atomically.

    The file gets the usual permissions (0666 less the umask), not the private
    0600 of a temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        writer(tmp_path)
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))


def write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_parquet(path: str | os.PathLike, frame: pd.DataFrame) -> Path:
    return atomic_write(path, lambda p: frame.to_parquet(p, index=False))


def write_csv(path: str | os.PathLike, frame: pd.DataFrame) -> Path:
    return atomic_write(path, lambda p: frame.to_csv(p, index=False))
