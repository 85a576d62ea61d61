"""One run directory for ``simrec run``, ``simrec stress`` and ``simrec calibrate``.

A run directory holds a job's outputs and everything needed to resume it:

* ``manifest.json`` — the job's kind, name, content digest, seed, package
  versions, the git commit simrec runs from and the command line
  (:mod:`simrec.provenance`), the version of simrec's random draws
  (:data:`simrec._random.DRAWS_VERSION`), status (``running``,
  ``complete``, or ``failed`` / ``interrupted`` with the error when the job
  stopped on one: :meth:`RunDir.end`) and timings;
* ``scenario.toml`` — a copy of the file that was run (read once, with the
  checks it was validated with: a regular file within the TOML size limit);
* ``run.log`` — what each ``simrec`` command that ran into the folder printed
  (appended by :mod:`simrec.cli`: warnings, phase and summary lines, the
  error that stopped it, its exit code; not the progress bars);
* per-task shards, written atomically as each task finishes (:class:`~simrec.shards.Shards`),
  so an interrupted job keeps its work and re-running resumes from them; each
  records its task and job and a digest of its content, and is verified
  whenever it is read (a broken or foreign shard is refused, named);
* the tables and figures, written atomically (never a half-written file);
  in CSV tables a float of magnitude below :data:`NOISE` (1e-12) is written
  as 0 — the rounding noise of differences of equal quantities, e.g. an error
  observed − true of 3.47e-16 where both are equal (decision, issue 14:
  nothing simrec measures is meaningful at that scale; Parquet files keep
  every value as computed).

Opening a run directory checks it (a name too long for the file system, a
file in the way, a user's files, the results of a *different* job, results
drawn by a simrec whose random draws differ, or a ``manifest.json`` that is not
simrec's, is refused with a one-line message naming the folder), takes an
exclusive lock (``.simrec.lock``, :func:`fcntl.flock`), so two jobs cannot
write into one folder at once, and checks it again under the lock: a job that
passed the first check while another was still writing is refused then, before
it writes anything (issue 22). The lock is released when the job ends or its
process dies. A job refused after it opened the folder (a shard that cannot be
used, :class:`~simrec.shards.ShardError`) leaves ``manifest.json`` and
``scenario.toml`` as they were.

Example
-------
>>> with RunDir.open("runs/demo", kind="run", name="demo", digest="0123abcd",
...                  manifest={"seed": 1}) as rd:          # doctest: +SKIP
...     shards = rd.shards("replicates", FRAMES)
...     rd.complete(tasks_computed=3)
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simrec._inputs import InputFileError, read_input
from simrec._io import write_bytes, write_csv, write_json, write_parquet, write_text
from simrec._random import DRAWS_VERSION
from simrec._usercode import describe
from simrec.provenance import command_line, git_commit, note_run_folder, package_versions
from simrec.shards import ARRAYS, FRAMES, Codec, ShardError, Shards

__all__ = [
    "RunDir",
    "RunDirError",
    "Shards",
    "ShardError",
    "FRAMES",
    "ARRAYS",
    "package_versions",
    "os_error_line",
    "path_problem",
    "NOISE",
    "snap_noise",
]

_LOCK = ".simrec.lock"


#: Magnitude below which a float in a CSV table is written as 0 (floating-point noise).
NOISE = 1e-12


def snap_noise(frame: pd.DataFrame, atol: float = NOISE) -> pd.DataFrame:
    """A copy of ``frame`` with every float of magnitude below ``atol`` set to 0 (NaN and ±inf kept)."""
    cols = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    if not cols:
        return frame
    out = frame.copy()
    for c in cols:
        v = out[c].to_numpy(dtype=np.float64, copy=True)
        v[np.abs(v) < atol] = 0.0
        out[c] = v
    return out


class RunDirError(RuntimeError):
    """The output folder cannot be used for this job (the message says why and what to do)."""


_OS_ADVICE = {
    errno.ENOSPC: "the disk is full: free space, or choose an {opt} folder on another disk",
    errno.EDQUOT: "the disk quota is exceeded: free space, or choose an {opt} folder on another disk",
    errno.EROFS: "the file system is read-only: choose another {opt} folder",
    errno.EACCES: "permission denied: choose an {opt} folder you can write to",
    errno.EPERM: "operation not permitted: choose an {opt} folder you can write to",
    errno.ENOTDIR: "a part of the path is a file, not a folder: choose another {opt} folder",
    errno.EEXIST: "a file is in the way: choose another {opt} folder",
    errno.EISDIR: "a folder is in the way: choose another {opt} folder",
    errno.ENAMETOOLONG: "the path is too long: choose a shorter {opt} folder",
}


def os_error_line(exc: OSError, out: str | os.PathLike, option: str = "--out") -> str:
    """One line for an operating-system error while writing into ``out``: what, where, what to do.

    ``option`` is the command-line option that named ``out`` (the advice names it).
    """
    where = _shown(exc.filename or out)
    advice = _OS_ADVICE.get(exc.errno or 0, "check the folder, or choose another {opt} folder").format(opt=option)
    return f"cannot write {where}: {exc.strerror or exc} ({advice})"


#: Characters of a path quoted in a message (a longer one is cut, and its length said).
_SHOWN = 100
#: Bytes of one name in a path, and of a whole path: Linux's NAME_MAX and PATH_MAX (most file systems).
NAME_MAX, PATH_MAX = 255, 4096


def _shown(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    text = text if isinstance(text, str) else os.fsdecode(text)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} characters)"


def _name_max(path: Path) -> int:
    """NAME_MAX of the file system of ``path``'s nearest existing folder (255 where it cannot be asked)."""
    for folder in (path.absolute(), *path.absolute().parents):
        try:
            if folder.is_dir():
                return int(os.pathconf(folder, "PC_NAME_MAX"))
        except (OSError, ValueError):
            continue
    return NAME_MAX


def path_problem(path: str | os.PathLike, option: str = "--out", *, folder: bool = True) -> str | None:
    """What makes ``path`` unusable as an output (``option`` names it in the message), or None.

    Checked before anything is created, without raising for any path: a name
    longer than the file system's limit (255 bytes on most), a path longer
    than :data:`PATH_MAX` bytes, a part of the path that is a file, or (with
    ``folder``) ``path`` itself a file.
    """
    path = Path(path)
    limit = _name_max(path)
    for name in path.parts:
        if len(os.fsencode(name)) > limit:
            return (
                f"{option} {_shown(path)}: a name in the path is {len(os.fsencode(name))} bytes long; each name "
                f"must be at most {limit} bytes (the file system's limit). Choose a shorter {option}"
            )
    if len(os.fsencode(os.fspath(path.absolute()))) >= PATH_MAX:
        return f"{option} {_shown(path)}: the path must be shorter than {PATH_MAX} bytes. Choose a shorter {option}"
    try:
        for part in (path, *path.parents):
            if part.is_dir():
                return None
            if part.exists():
                if part == path and not folder:
                    return None
                if part == path:
                    return f"{option} {_shown(path)}: exists and is not a folder; choose a folder"
                return (
                    f"{option} {_shown(path)}: a part of the path is a file, not a folder ({_shown(part)}); "
                    f"choose another {option}"
                )
    except OSError as exc:  # e.g. a folder on the path that cannot be searched
        return os_error_line(exc, path, option)
    return None


#: Entries every simrec manifest has, as text (``kind`` may be missing: then the job's own kind).
_MANIFEST_KEYS = ("digest",)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _previous_manifest(path: Path) -> dict[str, Any]:
    """The manifest of an existing run folder, checked to be simrec's (RunDirError otherwise)."""
    try:
        prev = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, UnicodeDecodeError
        # RecursionError: JSON nested deeper than Python's recursion limit ('[' * 100_000)
        reason = _shown(f"{type(exc).__name__}: {exc}")
        raise RunDirError(f"{_shown(path)}: unreadable manifest ({reason}); use a new --out folder") from None
    if not isinstance(prev, dict):
        raise RunDirError(
            f"{_shown(path)}: not a simrec manifest (a JSON object expected; got {type(prev).__name__}); "
            "use a new --out folder"
        )
    missing = [k for k in _MANIFEST_KEYS if not isinstance(prev.get(k), str)]
    missing += [] if isinstance(prev.get("kind", ""), str) else ["kind"]
    if missing:
        raise RunDirError(
            f"{_shown(path)}: not a simrec manifest (no {' or '.join(map(repr, missing))} text); use a new --out folder"
        )
    return prev


def _read_source(source: str | os.PathLike) -> bytes:
    """The job's file as :func:`simrec._inputs.read_input` reads it (a regular file within the TOML limit).

    Read once, with the same checks as when it was validated, and copied as
    these bytes: a file swapped for a FIFO, a device or a huge file after
    validation is refused in one line (:class:`RunDirError`, nothing written)
    instead of hanging or filling memory.
    """
    try:
        return read_input(source, "toml", "the job's TOML file")
    except InputFileError as exc:
        reason = exc.reason
    except OSError as exc:
        reason = f"cannot be read ({exc.strerror or type(exc).__name__})"
    raise RunDirError(
        f"{_shown(source)}: {reason}; not copied into --out and nothing was written (was the file replaced "
        "after it was read?)"
    )


def _check_folder(out: Path, kind: str, digest: str) -> None:
    """Refuse ``out`` unless it is missing, empty, or a run folder of this very job (nothing is written).

    Raises
    ------
    RunDirError
        A file; a folder of a user's files without a simrec manifest; a
        manifest that is unreadable or not simrec's; another job's results;
        results of another draws version.
    """
    manifest_path = out / "manifest.json"
    shown = _shown(out)
    try:
        if out.exists() and not out.is_dir():
            raise RunDirError(f"--out {shown}: exists and is not a folder; choose a folder")
        if not out.is_dir():
            return
        if not manifest_path.exists():
            others = sorted(p.name for p in out.iterdir() if p.name != _LOCK)
            if others:
                listed = ", ".join(_shown(o) for o in others[:3]) + (", ..." if len(others) > 3 else "")
                raise RunDirError(
                    f"--out {shown}: holds files ({listed}) but is not a simrec run folder (no "
                    "manifest.json); nothing was written. Choose a new or empty --out folder"
                )
            return
    except OSError as exc:  # e.g. a folder on the path that cannot be searched
        raise RunDirError(f"--out {shown}: {os_error_line(exc, out)}") from None
    prev = _previous_manifest(manifest_path)
    if prev["digest"] != digest or prev.get("kind", kind) != kind:
        job = f"{_shown(prev.get('kind', 'run'))} {_shown(str(prev.get('scenario', '?')))!r}"
        # no digests in the message (issue 28: "digest a0b1... != 5ef1..." is jargon); the job's file is there to compare
        raise RunDirError(
            f"--out {shown}: holds results of {job} with different content (its settings, kept in "
            f"{_shown(out / 'scenario.toml')}, differ from this job's, so the two cannot be resumed together); "
            f"use a new --out folder, or delete {shown} to start over"
        )
    if prev.get("draws", 1) != DRAWS_VERSION:
        raise RunDirError(
            f"--out {shown}: holds results of a simrec that draws random numbers differently (draws "
            f"version {_shown(str(prev.get('draws', 1)))}, this simrec {DRAWS_VERSION}: the same seed gives other "
            "numbers, and resuming would mix both); use a new --out folder"
        )


def _commit_entries() -> dict[str, Any]:
    """``commit`` (the git commit simrec runs from, or None) and, from a clone, ``commit_modified``."""
    commit = git_commit()
    if commit is None:
        return {"commit": None}
    return {"commit": commit.sha, "commit_modified": commit.modified}


@dataclass
class RunDir:
    """An opened (checked, locked) run directory; use :meth:`RunDir.open` as a context manager."""

    out: Path
    manifest: dict[str, Any]
    _lock_fd: int | None = field(default=None, repr=False)
    _previous: dict[str, bytes | None] = field(default_factory=dict, repr=False)

    @classmethod
    def open(
        cls,
        out: str | os.PathLike,
        *,
        kind: str,
        name: str,
        digest: str,
        manifest: dict[str, Any] | None = None,
        source: Path | None = None,
    ) -> RunDir:
        """Check and lock ``out``, write the manifest (status ``running``) and copy the job's file.

        Parameters
        ----------
        out : folder
            Created if missing.
        kind : {"run", "stress", "calibrate"}
        name : str
            The job's name (the scenario's or sweep's ``name``).
        digest : str
            Content digest of the job: a folder whose manifest has another is refused.
        manifest : dict, optional
            More manifest entries (seed, sizes, ...).
        source : Path, optional
            The scenario or spec file, copied to ``scenario.toml``: read once,
            before anything is created, as :func:`simrec._inputs.read_input`
            reads it.

        Raises
        ------
        RunDirError
            ``out`` has a name too long for the file system, is a file, holds
            files but no simrec manifest (a user's folder is never written
            into), holds another job's results or results of another draws
            version (a manifest without one is version 1), has a manifest
            that is unreadable or not simrec's (not a JSON object, or without
            a text ``digest``), or another simrec job holds its lock; or
            ``source`` is no longer a regular file within the TOML size
            limit (replaced after it was validated).
            Every check is made again once the lock is held, before anything
            is written: a job that found the folder empty while another was
            about to fill it is refused then.
        """
        out = Path(out)
        problem = path_problem(out)
        if problem:
            raise RunDirError(problem)
        _check_folder(out, kind, digest)  # before anything is created (no lock file in a user's folder)
        copy = None if source is None else _read_source(source)  # read once, checked, before anything is created
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file on the path, a read-only or full disk, no permission: nothing written
            raise RunDirError(f"--out {_shown(out)}: {os_error_line(exc, out)}") from None
        rd = cls(
            out,
            {
                "scenario": name,
                "kind": kind,
                "source": str(source) if source else None,
                "digest": digest,
                **(manifest or {}),
                "draws": DRAWS_VERSION,
                "versions": package_versions(),
                **_commit_entries(),
                "command": command_line(),
                "status": "running",
            },
        )
        try:
            rd._lock()
        except OSError as exc:
            raise RunDirError(f"--out {_shown(out)}: {os_error_line(exc, out)}") from None
        try:
            # again under the lock: another job may have filled the folder since the first check
            _check_folder(out, kind, digest)
            rd._previous = {rel: _read_or_none(out / rel) for rel in ("manifest.json", "scenario.toml")}
            write_json(out / "manifest.json", rd.manifest)
            if copy is not None:
                write_bytes(out / "scenario.toml", copy)
        except OSError as exc:
            rd.close()
            raise RunDirError(f"--out {_shown(out)}: {os_error_line(exc, out)}") from None
        except BaseException:
            rd.close()
            raise
        note_run_folder(out)
        return rd

    def _lock(self) -> None:
        fd = os.open(self.out / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunDirError(
                f"--out {self.out}: another simrec job is writing into this folder; wait for it to "
                "finish or choose another --out folder"
            ) from None
        self._lock_fd = fd

    def close(self) -> None:
        """Release the lock (idempotent)."""
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            if isinstance(exc, (RunDirError, ShardError)):
                self._restore()
            elif exc is not None:
                self.end(exc)
        finally:
            self.close()

    def _restore(self) -> None:
        """Put back the manifest and scenario copy as they were before this job opened the folder.

        Called when the job is refused after opening it (a shard that cannot
        be used): the folder then says what it said before (a finished job
        stays ``complete``, with its timings). Best effort: a folder that
        cannot be written to keeps this job's manifest (status ``running``).
        """
        for rel, data in self._previous.items():
            if data is not None:
                try:
                    write_bytes(self.out / rel, data)
                except OSError:
                    pass

    def end(self, exc: BaseException) -> None:
        """Record in the manifest that the job stopped on ``exc`` (if it is still ``running``).

        Status ``interrupted`` for a ``KeyboardInterrupt`` (Ctrl-C, SIGTERM),
        else ``failed``, with ``error``: the exception's type and message on
        one line. Best effort: a disk that cannot take the manifest (the error
        may be that very disk) leaves it at ``running``. Re-running the job
        resumes from its shards either way and writes a new manifest.
        """
        if self.manifest.get("status") != "running" or self._lock_fd is None:
            return
        if isinstance(exc, KeyboardInterrupt):
            self.manifest["status"] = "interrupted"
        else:
            self.manifest.update(status="failed", error=describe(exc))
        try:
            write_json(self.out / "manifest.json", self.manifest)
        except OSError:
            pass

    # -- contents ---------------------------------------------------------------
    def shards(self, subfolder: str, codec: Codec) -> Shards:
        """The per-task shards of phase ``subfolder`` (the folder ``out/subfolder``, created).

        ``codec`` is :data:`~simrec.shards.FRAMES` (DataFrames) or
        :data:`~simrec.shards.ARRAYS` (named arrays); each shard records this
        job's digest and is verified whenever it is read (:class:`~simrec.shards.Shards`).
        """
        folder = self.out / subfolder
        folder.mkdir(parents=True, exist_ok=True)
        return Shards(folder, codec, owner=str(self.manifest["digest"]))

    def path(self, rel: str) -> Path:
        return self.out / rel

    def write_csv(self, rel: str, frame: pd.DataFrame) -> Path:
        """Write a table for people to read: floating-point noise (\\|x\\| < :data:`NOISE`) is written as 0."""
        return write_csv(self.out / rel, snap_noise(frame))

    def write_parquet(self, rel: str, frame: pd.DataFrame) -> Path:
        return write_parquet(self.out / rel, frame)

    def write_text(self, rel: str, text: str) -> Path:
        return write_text(self.out / rel, text)

    def complete(self, **updates: Any) -> None:
        """Mark the job complete in the manifest, with ``updates`` (counts, timings, sizes)."""
        self.manifest.update(status="complete", versions=package_versions(), **updates)  # + Ray, if the job used it
        write_json(self.out / "manifest.json", self.manifest)

    def files(self, subfolder: str, pattern: str) -> Iterator[Path]:
        return iter(sorted((self.out / subfolder).glob(pattern)))
