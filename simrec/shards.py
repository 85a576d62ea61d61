"""Per-task shards of a run directory: keyed, digested, and verified whenever they are read.

A job of ``simrec run``, ``simrec stress`` (and the sub-runs of ``simrec
assess``) writes one *shard* per finished task into a subfolder of its run
directory (its *phase*: ``replicates/``, ``ranks/``, ``tasks/``,
``user_sampling/``), so an interrupted job keeps its work and a re-run reuses
it. A shard is trusted only as far as it can be checked, so each one carries
an identity record, written in the same file (one atomic write):

* ``phase`` and ``key`` — the task it holds (the key is the file's stem, built
  by the caller from indices and validated names, e.g. ``rep00001__w000`` for
  replicate 1 of world 0; never free text);
* ``owner`` — the job's content digest (the run directory's manifest
  ``digest``), so a shard copied from another job's folder is recognised;
* ``sha256`` — a digest of the content's canonical bytes (see
  :func:`frame_digest`, :func:`arrays_digest`), so a shard changed after it
  was written is recognised;
* ``format`` — :data:`SHARD_FORMAT`.

Where the record lives depends on the content (the :class:`Codec`): a
DataFrame is written as Parquet with the record in the file's key-value
metadata (:data:`FRAMES`); a mapping of arrays as ``.npz`` with the record as
one more member (:data:`ARRAYS`). Every read goes through :meth:`Shards.read`,
which checks the record against the task asked for and the digest against the
content read; :meth:`Shards.reusable` does the same for every shard a re-run
would reuse *before* any task is computed. A shard that cannot be used raises
:class:`ShardError`, one line naming the file, what is wrong with it and what
to do ("delete it and re-run the same command to recompute it") — never an
``ArrowInvalid ... magic bytes`` traceback, and never a silent reuse that
would change the tables.

Decisions (issue 22):

* A shard without an identity record — written by simrec before shards had
  one, or not by simrec at all — is refused like any other shard that cannot
  be checked (as a run folder of another draws version is): a file name alone
  proves nothing (a shard copied over another has the right name). The
  message names the folder and says to delete it and re-run, or to use a new
  ``--out`` folder; the tasks are recomputed, with the same numbers.
* A shard that cannot be used is an error about the output folder (exit 2,
  as for a foreign or unreadable ``manifest.json``), also when it is
  truncated: simrec writes shards atomically, so a broken one was broken by
  something else (a copy, a disk), and the folder needs the user's action.
* The digest covers the values the tables are made of, not the file's bytes:
  floats by their IEEE bits (every NaN as the one canonical NaN, which Parquet
  does not preserve), integers and booleans by value, strings as UTF-8; so a
  shard verifies whatever Parquet or zip library version wrote it.

Example
-------
>>> shards = Shards(Path("runs/demo/replicates"), FRAMES, owner="0123abcd")  # doctest: +SKIP
>>> shards.write("rep00000__w000", frame)                                    # doctest: +SKIP
>>> done = shards.reusable(["rep00000__w000", "rep00001__w000"])  # doctest: +SKIP
>>> shards.read("rep00000__w000")  # verified                       # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from simrec._io import atomic_write

__all__ = [
    "ARRAYS",
    "FRAMES",
    "SHARD_FORMAT",
    "ArraysCodec",
    "Codec",
    "FrameCodec",
    "ShardError",
    "Shards",
    "arrays_digest",
    "frame_digest",
]

#: Version of the identity record (a shard of another version is refused).
SHARD_FORMAT = 1

#: Name of the identity record: Parquet key-value metadata key, ``.npz`` member name.
IDENTITY = "simrec.shard"
_NPZ_MEMBER = "__simrec_shard__"
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=-]{0,127}")
_DO = "delete it and re-run the same command to recompute it"
#: Characters of an exception's message quoted in a one-line refusal.
_QUOTE = 100


class ShardError(RuntimeError):
    """A shard of a run folder cannot be used (the message names the file, what is wrong and what to do)."""


# ---------------------------------------------------------------------------
# canonical digests
# ---------------------------------------------------------------------------
def _chunk(h: Any, data: bytes) -> None:
    h.update(struct.pack("<Q", len(data)))
    h.update(data)


def _update_array(h: Any, name: str, values: np.ndarray) -> None:
    """Feed one named array to ``h``: its kind, shape and canonical bytes."""
    arr = np.asarray(values)
    _chunk(h, name.encode("utf-8"))
    _chunk(h, struct.pack(f"<{arr.ndim + 1}q", arr.ndim, *arr.shape))
    kind = arr.dtype.kind
    if kind in "fc":  # IEEE bits, little-endian; one NaN (Parquet writes a NaN as null, read back as +NaN)
        arr = np.where(np.isnan(arr), np.array(math.nan, dtype=arr.dtype), arr)
    if kind in "biufcmMU":
        arr = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
        _chunk(h, arr.dtype.str.encode())
        h.update(arr.tobytes())
        return
    _chunk(h, b"object")  # strings (object or pandas string dtype), missing values, anything else by its repr
    for v in arr.ravel():
        if isinstance(v, str):
            _chunk(h, b"s" + v.encode("utf-8", "surrogatepass"))
        elif v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            _chunk(h, b"n")
        elif isinstance(v, bytes):
            _chunk(h, b"b" + v)
        else:
            _chunk(h, b"r" + repr(v).encode("utf-8", "surrogatepass"))


def frame_digest(frame: pd.DataFrame) -> str:
    """SHA-256 (hex) of a DataFrame's canonical content: column names in order and their values.

    The index is not part of it (shards are written without one). Floats are
    digested by their IEEE-754 bits with every NaN as the canonical NaN,
    integers, booleans and datetimes by value and width, strings as UTF-8,
    missing values of object columns as one marker.
    """
    h = hashlib.sha256(b"simrec-frame-v1")
    h.update(struct.pack("<qq", frame.shape[1], frame.shape[0]))
    for name in frame.columns:
        col = frame[name]
        _update_array(h, str(name), col.to_numpy())
    return h.hexdigest()


def arrays_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 (hex) of named arrays' canonical content (names sorted; dtype, shape and bytes of each)."""
    h = hashlib.sha256(b"simrec-arrays-v1")
    h.update(struct.pack("<q", len(arrays)))
    for name in sorted(arrays):
        _update_array(h, name, arrays[name])
    return h.hexdigest()


# ---------------------------------------------------------------------------
# codecs: where the content and the identity record live
# ---------------------------------------------------------------------------
class Codec(Protocol):
    """How a kind of shard content is written, read and digested."""

    @property
    def suffix(self) -> str: ...

    @property
    def what(self) -> str: ...

    def digest(self, content: Any) -> str: ...

    def write(self, path: Path, content: Any, identity: str) -> None: ...

    def read_identity(self, path: Path) -> str | None: ...

    def read(self, path: Path) -> Any: ...


@dataclass(frozen=True)
class FrameCodec:
    """A DataFrame as Parquet (no index); the identity record in the file's key-value metadata."""

    suffix: str = ".parquet"
    what: str = "a Parquet"

    def digest(self, content: pd.DataFrame) -> str:
        return frame_digest(content)

    def write(self, path: Path, content: pd.DataFrame, identity: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(content, preserve_index=False)  # what DataFrame.to_parquet(index=False) writes
        meta = {**(table.schema.metadata or {}), IDENTITY.encode(): identity.encode("utf-8")}
        pq.write_table(table.replace_schema_metadata(meta), path)

    def read_identity(self, path: Path) -> str | None:
        import pyarrow.parquet as pq

        raw = (pq.read_schema(path).metadata or {}).get(IDENTITY.encode())
        return None if raw is None else raw.decode("utf-8")

    def read(self, path: Path) -> pd.DataFrame:
        return pd.read_parquet(path)


@dataclass(frozen=True)
class ArraysCodec:
    """A mapping of arrays as ``.npz`` (read without pickles); the identity record as one more member."""

    suffix: str = ".npz"
    what: str = "an npz"

    def digest(self, content: Mapping[str, np.ndarray]) -> str:
        return arrays_digest(content)

    def write(self, path: Path, content: Mapping[str, np.ndarray], identity: str) -> None:
        if _NPZ_MEMBER in content:
            raise ValueError(f"`{_NPZ_MEMBER}` is reserved for the shard's identity record")
        with open(path, "wb") as fh:
            arrays: dict[str, Any] = {**content, _NPZ_MEMBER: np.array(identity)}
            np.savez(fh, **arrays)

    def read_identity(self, path: Path) -> str | None:
        with np.load(path, allow_pickle=False) as z:
            return str(z[_NPZ_MEMBER]) if _NPZ_MEMBER in z.files else None

    def read(self, path: Path) -> dict[str, np.ndarray]:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files if k != _NPZ_MEMBER}


#: Shards holding one DataFrame (``.parquet``).
FRAMES = FrameCodec()
#: Shards holding named arrays (``.npz``).
ARRAYS = ArraysCodec()


# ---------------------------------------------------------------------------
# shards
# ---------------------------------------------------------------------------
def _clip(value: object) -> str:
    """A value read from a file, for a one-line message: whitespace runs as one space, at most ~100 characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= _QUOTE else f"{text[:_QUOTE]}... ({len(text)} characters)"


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _clip(text)


class _Unusable(Exception):
    """Why one shard cannot be used (``legacy``: it has no identity record)."""

    def __init__(self, path: Path, reason: str, legacy: bool = False) -> None:
        super().__init__(reason)
        self.path, self.reason, self.legacy = path, reason, legacy


@dataclass(frozen=True)
class Shards:
    """The shards of one phase (a subfolder of a run directory), keyed by task, verified on every read.

    Parameters
    ----------
    folder : Path
        The phase's folder (its name is the phase recorded in each shard).
    codec : Codec
        :data:`FRAMES` (DataFrames, Parquet) or :data:`ARRAYS` (named arrays, ``.npz``).
    owner : str
        The job's content digest (the run directory's manifest ``digest``).
    """

    folder: Path
    codec: Codec
    owner: str

    @property
    def phase(self) -> str:
        return self.folder.name

    def path(self, key: str) -> Path:
        """The file of task ``key`` (checked to be a plain stem: a key never becomes a path elsewhere)."""
        if not _KEY.fullmatch(key):
            raise ValueError(
                f"a shard key must be 1-128 letters, digits, '_', '.', '=', '-' (a letter or digit first); got {key!r}"
            )
        return self.folder / f"{key}{self.codec.suffix}"

    def exists(self, key: str) -> bool:
        """Whether task ``key`` has a shard file (not yet verified: see :meth:`reusable`)."""
        return self.path(key).exists()

    def _identity(self, key: str, digest: str) -> str:
        return json.dumps(
            {"format": SHARD_FORMAT, "phase": self.phase, "key": key, "owner": self.owner, "sha256": digest},
            sort_keys=True,
        )

    def write(self, key: str, content: Any) -> Path:
        """Write task ``key``'s shard atomically, with its identity record."""
        identity = self._identity(key, self.codec.digest(content))
        return atomic_write(self.path(key), lambda p: self.codec.write(p, content, identity))

    def _unreadable(self, path: Path, exc: Exception) -> _Unusable:
        return _Unusable(path, f"is unreadable (truncated, or not {self.codec.what} file: {_first_line(exc)})")

    def _load(self, key: str) -> Any:
        """The verified content of task ``key``'s shard; :class:`_Unusable` if it cannot be used."""
        path = self.path(key)
        try:
            raw = self.codec.read_identity(path)
        except MemoryError:
            raise
        except Exception as exc:  # truncated, not this format at all, unreadable
            raise self._unreadable(path, exc) from None
        if raw is None:
            raise _Unusable(path, "has no shard identity record (written by an earlier simrec, or not by simrec)", True)
        try:
            ident = json.loads(raw)
            stored = {k: ident[k] for k in ("format", "phase", "key", "owner", "sha256")}
        except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: '[' * 100_000
            raise _Unusable(path, "has an unreadable shard identity record") from None
        if stored["format"] != SHARD_FORMAT:
            raise _Unusable(path, f"is of format {_clip(stored['format'])}; this simrec reads format {SHARD_FORMAT}")
        if (stored["phase"], stored["key"]) != (self.phase, key):
            raise _Unusable(
                path,
                f"holds task {_clip(stored['phase'])}/{_clip(stored['key'])}, not "
                f"{self.phase}/{key} (copied or renamed)",
            )
        if stored["owner"] != self.owner:
            raise _Unusable(
                path,
                "belongs to another job (one with other settings than this folder's; copied from another folder?)",
            )
        try:
            content = self.codec.read(path)
        except MemoryError:
            raise
        except Exception as exc:
            raise self._unreadable(path, exc) from None
        if self.codec.digest(content) != stored["sha256"]:
            raise _Unusable(
                path, "does not match the checksum recorded when it was written (its content changed since)"
            )
        return content

    def read(self, key: str) -> Any:
        """The content of task ``key``'s shard, verified (task, job and digest).

        Raises
        ------
        ShardError
            The shard is unreadable, holds another task or another job's
            result, was changed after it was written, or has no identity record.
        """
        try:
            return self._load(key)
        except _Unusable as bad:
            raise ShardError(_refusal([bad], self.folder)) from None

    def reusable(self, keys: Iterable[str]) -> set[str]:
        """The keys among ``keys`` whose shards exist and verify (a re-run reuses them, computes the rest).

        Every existing shard is read and checked before anything is computed.

        Raises
        ------
        ShardError
            Some existing shard cannot be used: one line naming it (and how
            many others), what is wrong and what to do.
        """
        done, bad = set(), []
        for key in keys:
            if not self.exists(key):
                continue
            try:
                self._load(key)
            except _Unusable as exc:
                bad.append(exc)
            else:
                done.add(key)
        if bad:
            raise ShardError(_refusal(bad, self.folder))
        return done


def _refusal(bad: list[_Unusable], folder: Path) -> str:
    """One line for shards that cannot be used: the file(s), what is wrong, what to do."""
    if all(b.legacy for b in bad):
        return (
            f"{folder}: {len(bad)} shard(s) without simrec's shard identity record (e.g. {bad[0].path.name}; "
            "written by an earlier simrec, or not by simrec), so they cannot be checked; delete the folder "
            f"{folder} and re-run the same command to recompute them (same numbers), or use a new --out folder"
        )
    first = bad[0]
    if len(bad) == 1:
        return f"{first.path}: shard {first.reason}; {_DO}"
    others = ", ".join(b.path.name for b in bad[1:4]) + (", ..." if len(bad) > 4 else "")
    return (
        f"{first.path}: shard {first.reason}; and {len(bad) - 1} more shard(s) in {folder} cannot be used "
        f"({others}); delete them and re-run the same command to recompute them"
    )
