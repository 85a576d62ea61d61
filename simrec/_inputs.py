"""Files a user names are bounded before they are read (issue 22).

Scenario, stress, assessment, sweep and preset files (TOML), ranks files and
dataset files are untrusted input. Before a byte is read, each must be a
*regular* file (a folder, a named pipe, a socket or a device such as
``/dev/zero`` is refused: a FIFO would block forever, ``/dev/zero`` never
ends) no larger than a size limit. The check is made with ``os.stat`` before
opening, and the file is opened with ``O_NONBLOCK`` and checked again with
``fstat`` on the open descriptor, so a file swapped for a FIFO between the
check and the open cannot make simrec hang either; at most ``limit + 1``
bytes are ever read from a TOML file.

Limits (decision, issue 22), chosen so that no real file reaches them and
overridable by environment variables (sizes such as ``8M``, ``2G``; binary
units), which reach every command and library call alike:

* TOML files: 1 MiB (``SIMREC_MAX_TOML_SIZE``). simrec's scenarios and
  presets are a few KiB.
* Data files (ranks files, dataset files): 16 GiB (``SIMREC_MAX_DATA_SIZE``).
  Public recommender datasets in common use are at most a few GB (ML-25M's
  ratings about 0.7 GB); a dataset that will not fit in memory is refused
  by the memory budget (``--max-memory``) before it is read anyway.

TOML nesting is limited to :data:`MAX_TOML_DEPTH` levels (tables, arrays,
inline tables and dotted keys together): ``tomllib`` parses recursively and
raised RecursionError at a few hundred levels; simrec's own files use at most
five.
"""

from __future__ import annotations

import fcntl
import os
import stat
import tomllib
from typing import Any, BinaryIO, Literal

from simrec._validation import format_bytes, parse_size

__all__ = [
    "InputFileError",
    "DEFAULT_MAX_TOML_SIZE",
    "DEFAULT_MAX_DATA_SIZE",
    "SIZE_VARIABLES",
    "MAX_TOML_DEPTH",
    "max_input_size",
    "check_input_file",
    "open_input",
    "read_input",
    "parse_toml",
]

#: Default limit on a TOML file (scenario, stress, assessment, sweep, preset): 1 MiB.
DEFAULT_MAX_TOML_SIZE = 1 << 20
#: Default limit on a data file (ranks file, dataset file): 16 GiB.
DEFAULT_MAX_DATA_SIZE = 16 << 30
#: The environment variable that overrides each limit.
SIZE_VARIABLES: dict[str, str] = {"toml": "SIMREC_MAX_TOML_SIZE", "data": "SIMREC_MAX_DATA_SIZE"}
_DEFAULTS = {"toml": DEFAULT_MAX_TOML_SIZE, "data": DEFAULT_MAX_DATA_SIZE}
#: Deepest nesting of a TOML file (the top-level table is level 0).
MAX_TOML_DEPTH = 32

Kind = Literal["toml", "data"]


class InputFileError(ValueError):
    """A file named by the user cannot be read safely: not a regular file, too large, or too deeply nested.

    ``path`` is the file, ``reason`` what is wrong with it; ``str(exc)`` is
    ``"<path>: <reason>"``.
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def max_input_size(kind: Kind) -> int:
    """The size limit of ``kind`` files in bytes: the environment variable's value, else the default.

    Raises ValueError for a variable that is not a size.
    """
    text = os.environ.get(SIZE_VARIABLES[kind], "").strip()
    return _DEFAULTS[kind] if not text else parse_size(SIZE_VARIABLES[kind], text)


def _what(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _limit(path: str | os.PathLike, kind: Kind) -> int:
    """:func:`max_input_size`, an :class:`InputFileError` naming the file for a variable that is not a size."""
    try:
        return max_input_size(kind)
    except ValueError as exc:
        raise InputFileError(path, f"cannot check its size: {exc}") from None


def _check(path: str | os.PathLike, st: os.stat_result, kind: Kind, expected: str) -> None:
    what = _what(st.st_mode)
    if what is not None:
        raise InputFileError(path, f"is {what}, not a regular file; expected {expected}")
    limit = _limit(path, kind)
    if st.st_size > limit:
        var = SIZE_VARIABLES[kind]
        raise InputFileError(
            path,
            f"{format_bytes(st.st_size)} ({st.st_size:,} bytes), over simrec's limit of {format_bytes(limit)} for "
            f"{'a TOML file' if kind == 'toml' else 'a data file'}; if the file is right, raise the limit with the "
            f"environment variable {var} (e.g. {var}={_example(st.st_size)})",
        )


def _example(size: int) -> str:
    """A size comfortably above ``size`` in the variables' syntax (``64M``, ``32G``)."""
    for unit, scale in (("M", 2**20), ("G", 2**30), ("T", 2**40)):
        n = -(-2 * size // scale)
        if n < 1024 or unit == "T":
            return f"{max(n, 1)}{unit}"
    return f"{size}"  # pragma: no cover


def check_input_file(path: str | os.PathLike, kind: Kind, expected: str) -> os.stat_result:
    """``os.stat(path)`` of a regular file within the ``kind`` limit; :class:`InputFileError` otherwise.

    Only the metadata is read (a FIFO is never opened). OSError (e.g.
    FileNotFoundError) propagates for the caller's own message.
    """
    st = os.stat(path)
    _check(path, st, kind, expected)
    return st


def open_input(path: str | os.PathLike, kind: Kind, expected: str) -> BinaryIO:
    """A regular file within the ``kind`` limit, opened for binary reading (see the module docstring).

    Checked with ``os.stat`` before opening; opened with ``O_NONBLOCK`` (opening
    a FIFO does not wait for a writer) and checked again with ``fstat``, so a
    swap between the check and the open is caught; blocking mode is restored
    for the reader.

    Raises
    ------
    InputFileError
        Not a regular file, or larger than the limit.
    OSError
        Missing, unreadable (the caller words it).
    """
    check_input_file(path, kind, expected)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _check(path, os.fstat(fd), kind, expected)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike, kind: Kind, expected: str) -> bytes:
    """The bytes of a file checked as :func:`open_input` does; never more than the limit (a growing file is refused)."""
    limit = _limit(path, kind)
    with open_input(path, kind, expected) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputFileError(path, f"grew past simrec's limit of {format_bytes(limit)} while being read")
    return data


def parse_toml(text: str, where: str | os.PathLike) -> dict[str, Any]:
    """``tomllib.loads(text)``, refusing nesting deeper than :data:`MAX_TOML_DEPTH` levels.

    ``tomllib`` parses arrays and inline tables recursively: a file nested
    thousands deep raised RecursionError (caught here, and reported as the
    limit); the parsed tables are then measured without recursion, which
    also covers deep dotted keys (``a.b.c…``) and headers.

    Raises
    ------
    InputFileError
        Nested too deeply (``where`` names the file or option).
    tomllib.TOMLDecodeError
        Not TOML.
    """
    try:
        raw = tomllib.loads(text)
    except RecursionError:
        raw = None
    if raw is None or _depth_over(raw, MAX_TOML_DEPTH):
        raise InputFileError(
            where,
            f"nested more than {MAX_TOML_DEPTH} levels deep (tables, arrays, inline tables and dotted keys "
            "together); simrec's files need a few levels",
        )
    return raw


def _depth_over(value: object, limit: int) -> bool:
    """True when tables/arrays nest more than ``limit`` levels below ``value`` (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False
