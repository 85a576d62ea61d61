"""What runs in a worker: one task, reported the same way on every backend; a process worker's set-up.

:func:`run_one` runs a task and formats its error where it happened;
:func:`init_worker` prepares a worker process of
:class:`~simrec.tasks.backends.ProcessBackend` (a watchdog that exits it when
the driver is gone, no SIGINT, single-threaded BLAS); :func:`error_text` and
:func:`traceback_text` format the errors a backend reports itself (a broken
pool, a lost Ray object).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

from simrec._usercode import UserCodeError, signals_marked
from simrec.tasks._reaper import start_ticks

R = TypeVar("R")

#: Environment variables that size the thread pools of BLAS/OpenMP libraries.
_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
#: Seconds between two checks of a worker's watchdog.
_WATCHDOG_INTERVAL = 0.5

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its error messages


def run_one(fn: Callable[[Any], R], payload: Any) -> tuple[bool, Any]:
    """``(True, fn(payload))``, or ``(False, (error, traceback))`` if it raised.

    The error is formatted where it happened, so failures read the same on
    every backend and need no picklable exception. Every ``BaseException`` is
    a failure of the task (``SystemExit``, even ``SystemExit(0)``, from code a
    scorer runs outside its guard, and ``KeyboardInterrupt``), except a real
    interrupt: a signal delivered to this process while the task ran (Ctrl-C
    of a serial run), which propagates; see :mod:`simrec._usercode`. A
    :class:`~simrec._usercode.UserCodeError` is reported by its message alone
    ("recommender 'x' failed: SystemExit: 0").
    """
    with signals_marked() as signalled:
        try:
            return True, fn(payload)
        except BaseException as exc:  # noqa: BLE001 - every task error is reported, not raised
            if isinstance(exc, KeyboardInterrupt) and signalled():
                raise
            tb = "".join(
                traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
            )
            if isinstance(exc, UserCodeError):
                error = str(exc)
            else:
                error = traceback.format_exception_only(type(exc), exc)[-1].strip()
            return False, (error, tb)


def error_text(exc: BaseException) -> str:
    """``"Type: message"`` of an exception on one line, without Ray's colour codes."""
    return _ANSI.sub("", traceback.format_exception_only(type(exc), exc)[-1].strip())


def traceback_text(exc: BaseException) -> str:
    """The formatted traceback of an exception, without Ray's colour codes."""
    return _ANSI.sub("", "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def _parent_alive(pid: int, start: int | None) -> bool:
    if start is not None:  # Linux: same pid and same start time, not a zombie
        return start_ticks(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the pid now belongs to another user's process
        return False
    return True


def _watch_parent(pid: int, start: int | None) -> None:
    while _parent_alive(pid, start):
        time.sleep(_WATCHDOG_INTERVAL)
    os._exit(1)


def init_worker(parent_pid: int, parent_start: int | None) -> None:
    """Initializer of a process worker: watchdog, no SIGINT, single-threaded BLAS.

    Parameters
    ----------
    parent_pid : int
        The process that created the pool (the driver).
    parent_start : int or None
        Its start time (:func:`~simrec.tasks._reaper.start_ticks`), so a
        reused pid does not pass for the driver; None where there is no
        ``/proc`` (then only the pid is checked).

    Notes
    -----
    The watchdog thread exits the worker (``os._exit``) within half a second
    of the driver's death, even after SIGKILL (the worker's parent in the
    process tree is the forkserver, which itself only exits once the workers
    are gone). BLAS runs single-threaded (``OMP_NUM_THREADS=1`` and friends
    plus :mod:`threadpoolctl`) unless the user set one of those variables.
    """
    threading.Thread(
        target=_watch_parent, args=(parent_pid, parent_start), name="simrec-parent-watchdog", daemon=True
    ).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    if not any(v in os.environ for v in _THREAD_VARS):
        for v in _THREAD_VARS:  # libraries loaded later read these
            os.environ[v] = "1"
        with suppress(ImportError):  # libraries the worker inherited already loaded
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1)
