"""One run directory for ``simrec run``, ``simrec stress`` and ``simrec calibrate``.

A run directory holds a job's outputs and everything needed to resume it:

* ``manifest.json`` — the job's kind, name, content digest, seed, package
  versions, the version of simrec's random draws
  (:data:`simrec._random.DRAWS_VERSION`), status (``running``,
  ``complete``, or ``failed`` / ``interrupted`` with the error when the job
  stopped on one: :meth:`RunDir.end`) and timings;
* ``scenario.toml`` — a copy of the file that was run;
* per-task shards, written atomically as each task finishes (:class:`Shards`),
  so an interrupted job keeps its work and re-running resumes from them;
* the tables and figures, written atomically (never a half-written file);
  in CSV tables a float of magnitude below :data:`NOISE` (1e-12) is written
  as 0 — the rounding noise of differences of equal quantities, e.g. an error
  observed − true of 3.47e-16 where both are equal (decision, issue 14:
  nothing simrec measures is meaningful at that scale; Parquet files keep
  every value as computed).

Opening a run directory checks it (a file in the way, or the results of a
*different* job, or results drawn by a simrec whose random draws differ, is
refused with a one-line message naming the folder) and
takes an exclusive lock (``.simrec.lock``, :func:`fcntl.flock`), so two jobs
cannot write into one folder at once; the lock is released when the job ends
or its process dies.

Example
-------
>>> with RunDir.open("runs/demo", kind="run", name="demo", digest="0123abcd",
...                  manifest={"seed": 1}) as rd:          # doctest: +SKIP
...     shards = rd.shards("replicates", ".parquet")
...     rd.complete(tasks_computed=3)
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simrec._io import atomic_write, write_csv, write_json, write_parquet, write_text
from simrec._random import DRAWS_VERSION
from simrec._usercode import describe

__all__ = ["RunDir", "RunDirError", "Shards", "package_versions", "os_error_line", "NOISE", "snap_noise"]

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
    errno.ENOSPC: "the disk is full: free space, or choose an --out folder on another disk",
    errno.EDQUOT: "the disk quota is exceeded: free space, or choose an --out folder on another disk",
    errno.EROFS: "the file system is read-only: choose another --out folder",
    errno.EACCES: "permission denied: choose an --out folder you can write to",
    errno.EPERM: "operation not permitted: choose an --out folder you can write to",
    errno.ENOTDIR: "a part of the path is a file, not a folder: choose another --out folder",
    errno.EEXIST: "a file is in the way: choose another --out folder",
    errno.EISDIR: "a folder is in the way: choose another --out folder",
    errno.ENAMETOOLONG: "the path is too long: choose a shorter --out folder",
}


def os_error_line(exc: OSError, out: str | os.PathLike) -> str:
    """One line for an operating-system error while writing into ``out``: what, where, what to do."""
    where = exc.filename or out
    advice = _OS_ADVICE.get(exc.errno or 0, "check the folder, or choose another --out folder")
    return f"cannot write {where}: {exc.strerror or exc} ({advice})"


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that determine a run's numbers (for manifests)."""
    out = {"python": platform.python_version()}
    for pkg in ("simrec", "numpy", "scipy", "pandas", "lenskit", "scikit-optimize", "torch"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


@dataclass(frozen=True)
class Shards:
    """Per-task result files in one subfolder of a run directory.

    ``key`` is a task's file stem, built by the caller from indices and
    validated names (never from free text); each shard is written atomically.
    """

    folder: Path
    suffix: str

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{self.suffix}"

    def exists(self, key: str) -> bool:
        return self.path(key).exists()

    def write(self, key: str, writer: Callable[[Path], None]) -> Path:
        """Write one shard atomically (``writer(tmp_path)`` writes the content)."""
        return atomic_write(self.path(key), writer)

    def write_frame(self, key: str, frame: pd.DataFrame) -> Path:
        return write_parquet(self.path(key), frame)


@dataclass
class RunDir:
    """An opened (checked, locked) run directory; use :meth:`open` as a context manager."""

    out: Path
    manifest: dict[str, Any]
    _lock_fd: int | None = field(default=None, repr=False)

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
            The scenario or spec file, copied to ``scenario.toml``.

        Raises
        ------
        RunDirError
            ``out`` is a file, holds files but no simrec manifest (a user's
            folder is never written into), holds another job's results or
            results of another draws version (a manifest without one is
            version 1), has an unreadable manifest, or another simrec job
            holds its lock.
        """
        out = Path(out)
        manifest_path = out / "manifest.json"
        if out.exists() and not out.is_dir():
            raise RunDirError(f"--out {out}: exists and is not a folder; choose a folder")
        if out.is_dir() and not manifest_path.exists():
            others = sorted(p.name for p in out.iterdir() if p.name != _LOCK)
            if others:
                shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
                raise RunDirError(
                    f"--out {out}: holds files ({shown}) but is not a simrec run folder (no "
                    "manifest.json); nothing was written. Choose a new or empty --out folder"
                )
        if manifest_path.exists():
            try:
                prev = json.loads(manifest_path.read_text())
            except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise RunDirError(f"{manifest_path}: unreadable manifest ({exc}); use a new --out folder") from None
            if prev.get("digest") != digest or prev.get("kind", kind) != kind:
                raise RunDirError(
                    f"--out {out}: holds results of {prev.get('kind', 'run')} {prev.get('scenario', '?')!r} with "
                    f"different content (digest {prev.get('digest')} != {digest}); use a new --out folder"
                )
            if prev.get("draws", 1) != DRAWS_VERSION:
                raise RunDirError(
                    f"--out {out}: holds results of a simrec that draws random numbers differently (draws "
                    f"version {prev.get('draws', 1)}, this simrec {DRAWS_VERSION}: the same seed gives other "
                    "numbers, and resuming would mix both); use a new --out folder"
                )
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file on the path, a read-only or full disk, no permission: nothing written
            raise RunDirError(f"--out {out}: {os_error_line(exc, out)}") from None
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
                "status": "running",
            },
        )
        try:
            rd._lock()
        except OSError as exc:
            raise RunDirError(f"--out {out}: {os_error_line(exc, out)}") from None
        try:
            write_json(manifest_path, rd.manifest)
            if source is not None:
                write_text(out / "scenario.toml", Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            rd.close()
            raise RunDirError(f"--out {out}: {os_error_line(exc, out)}") from None
        except BaseException:
            rd.close()
            raise
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
            if exc is not None:
                self.end(exc)
        finally:
            self.close()

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
    def shards(self, subfolder: str, suffix: str) -> Shards:
        """The per-task shard folder ``out/subfolder`` (created)."""
        folder = self.out / subfolder
        folder.mkdir(parents=True, exist_ok=True)
        return Shards(folder, suffix)

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
        self.manifest.update(status="complete", **updates)
        write_json(self.out / "manifest.json", self.manifest)

    def files(self, subfolder: str, pattern: str) -> Iterator[Path]:
        return iter(sorted((self.out / subfolder).glob(pattern)))
