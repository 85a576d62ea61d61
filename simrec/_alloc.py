"""Process-wide allocator setting for the processes simrec owns (glibc only).

At ML-20M size most temporaries of a replicate (sort keys, row ids, masks of
20-40 M entries) are larger than glibc's dynamic mmap threshold (at most
32 MiB), so glibc gives each one fresh pages from the kernel with ``mmap``
and returns them with ``munmap`` when it is freed; every first write then
costs a page fault (and with transparent huge pages, a huge-page
allocation). Temporaries at ML-1M size stay below the threshold and are
reused from the heap, so this cost grows faster than the data: it is most of
the super-linear growth of a replicate's steps from ML-1M to ML-20M size.

:func:`tune_allocator` raises glibc's mmap threshold (``M_MMAP_THRESHOLD``)
and its trim threshold (``M_TRIM_THRESHOLD``) so that freed blocks stay in
the heap and are reused by the next temporary of the same size. Results,
random streams and outputs are unchanged: only where the memory comes from.

Decisions
---------
* It is applied only where simrec owns the process: the ``simrec`` command
  (:func:`simrec.cli.main`) and the workers it starts when it applied it
  itself: the process pool's initializer, and Ray's
  ``worker_process_setup_hook`` added to the job's ``runtime_env``
  (see :class:`simrec.tasks.RayBackend`). Importing simrec as a library
  changes nothing; a library user may call :func:`tune_allocator` (public as
  ``simrec.tune_allocator``) in their own program, and pools and Ray jobs
  created after it follow.
* The setting is a trade: a process keeps up to ``trim_threshold`` bytes of
  freed memory at the top of its heap instead of returning it to the system
  at once, and blocks up to ``mmap_threshold`` bytes come from the heap, where
  a long-lived block can pin freed memory below it. The peak RSS of an
  ML-20M-sized replicate is measured with and without by
  ``bench/bench_scale.py --allocator``.
* The environment variable ``SIMREC_MALLOC=default`` switches it off (for the
  command and its workers); glibc's own ``MALLOC_MMAP_THRESHOLD_`` /
  ``MALLOC_TRIM_THRESHOLD_`` variables, when set, are respected (simrec then
  leaves the allocator alone).
* On a C library other than glibc (macOS, musl, Windows) it does nothing and
  never raises.
"""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass

__all__ = ["AllocatorSetting", "ENV_VAR", "MMAP_THRESHOLD", "TRIM_THRESHOLD", "allocator_setting",
           "tune_allocator"]

#: environment variable: ``default`` leaves glibc's allocator as it is
ENV_VAR = "SIMREC_MALLOC"
#: blocks below this many bytes come from the heap (glibc's default: dynamic, 128 KiB .. 32 MiB)
MMAP_THRESHOLD = 1 << 30
#: freed memory at the top of the heap kept up to this many bytes (glibc's default: dynamic, 128 KiB .. 64 MiB)
TRIM_THRESHOLD = 1 << 30

# glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_GLIBC_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


@dataclass(frozen=True)
class AllocatorSetting:
    """What :func:`tune_allocator` did in this process.

    Attributes
    ----------
    applied : bool
        Whether the thresholds were set.
    reason : str
        One line: the thresholds set, or why not (switched off, not glibc,
        glibc's own variables set, ``mallopt`` refused).
    """

    applied: bool
    reason: str


_setting: AllocatorSetting | None = None


def allocator_setting() -> AllocatorSetting | None:
    """The outcome of :func:`tune_allocator` in this process, or None if it was not called."""
    return _setting


def _apply(mmap_threshold: int, trim_threshold: int) -> AllocatorSetting:
    if os.environ.get(ENV_VAR, "").strip().lower() == "default":
        return AllocatorSetting(False, f"{ENV_VAR}=default: glibc's defaults")
    glibc_vars = [v for v in _GLIBC_VARS if v in os.environ]
    if glibc_vars:
        return AllocatorSetting(False, f"{', '.join(glibc_vars)} set: glibc's allocator left as configured")
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return AllocatorSetting(False, "not glibc: allocator left alone")
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return AllocatorSetting(False, "mallopt not found: allocator left alone")
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # trim first: setting the mmap threshold fixes both (no more dynamic adjustment)
    if mallopt(_M_TRIM_THRESHOLD, trim_threshold) != 1 or mallopt(_M_MMAP_THRESHOLD, mmap_threshold) != 1:
        return AllocatorSetting(False, "mallopt refused the thresholds: glibc's defaults")
    return AllocatorSetting(True, f"glibc mmap threshold {mmap_threshold >> 20} MiB, "
                                  f"trim threshold {trim_threshold >> 20} MiB ({ENV_VAR}=default for glibc's defaults)")


def tune_allocator(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> AllocatorSetting:
    """Keep large freed blocks in the heap for reuse (glibc; a no-op elsewhere).

    Parameters
    ----------
    mmap_threshold : int, default 1 GiB
        Blocks of at least this many bytes are mapped fresh (``M_MMAP_THRESHOLD``).
    trim_threshold : int, default 1 GiB
        Free memory at the top of the heap beyond this is returned to the
        system (``M_TRIM_THRESHOLD``).

    Returns
    -------
    AllocatorSetting
        Whether it was applied, and why not. Never raises for the platform;
        the environment variable ``SIMREC_MALLOC=default`` switches it off.

    Raises
    ------
    ValueError
        If a threshold is not an int in [1 MiB, 2 GiB).

    Notes
    -----
    Process-wide and irreversible for the blocks already allocated; simrec
    calls it in its command-line entry point and its pool workers only (see
    the module docstring). Results do not depend on it.
    """
    global _setting
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or not (1 << 20) <= value < (1 << 31):
            raise ValueError(f"`{name}` must be an int in [1 MiB, 2 GiB) bytes; got {value!r}")
    _setting = _apply(mmap_threshold, trim_threshold)
    return _setting
