"""The backend protocol (:class:`Backend`) and the two local backends, serial and processes.

A backend is where tasks run: a context manager that starts lazily (on the
first :func:`~simrec.tasks.run_tasks` or :meth:`Backend.start`), serves any
number of :func:`~simrec.tasks.run_tasks` calls without restarting its pool,
and whose :meth:`Backend.close` is idempotent. :func:`~simrec.tasks.run_tasks`
drives it through four methods (:meth:`Backend._submit`,
:meth:`Backend._wait`, :meth:`Backend._outcome`, :meth:`Backend._abort`); a
new backend implements those. The Ray backend is
:mod:`simrec.tasks.ray_backend`.

Worker processes of :class:`ProcessBackend` run BLAS single-threaded
(``OMP_NUM_THREADS=1`` and friends plus :mod:`threadpoolctl`, unless the user
set one of those variables), like Ray does by default for its workers, so two
workers on two cores do not oversubscribe them. The numbers do not depend on
it: the pinned outputs of ``tests/test_golden.py`` (run, both stress sources,
calibrate) and a run with LensKit's ImplicitMF came out identical on the three
backends, i.e. with 1 BLAS thread in workers and the default in the caller.
"""

from __future__ import annotations

import abc
import multiprocessing as mp
import os
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from multiprocessing import resource_tracker
from typing import Any, Literal, Self

import numpy as np

from simrec.tasks._reaper import start_ticks
from simrec.tasks._signals import interrupts_deferred
from simrec.tasks._worker import error_text, init_worker, run_one, traceback_text

__all__ = ["Backend", "BackendError", "BackendFault", "ProcessBackend", "SerialBackend"]


class BackendError(RuntimeError):
    """A backend cannot be used (e.g. Ray requested but not installed)."""


class BackendFault(RuntimeError):
    """The backend broke while tasks ran, through no task's fault; the run stops (finished tasks are kept).

    E.g. multiprocessing's resource tracker of the ``processes`` backend was
    killed (:class:`ProcessBackend`). ``str(exc)`` is one line saying what
    happened.
    """


_Outcome = tuple[Literal["ok", "error", "broken"], Any]


class Backend(abc.ABC):
    """Where tasks run; a context manager that starts lazily.

    Attributes
    ----------
    name : str
        ``"serial"``, ``"processes"`` or ``"ray"``.
    n_workers : int
        Tasks that can run at once.
    """

    name: str = ""

    def __init__(self) -> None:
        self._started = False
        self._closed = False

    @property
    def n_workers(self) -> int:
        """Tasks that can run at once."""
        return 1

    @property
    def window(self) -> int:
        """Tasks submitted at once (about twice the workers, so none idles)."""
        return 2 * self.n_workers

    def start(self) -> Self:
        """Start the pool or cluster now (it is otherwise started on first use).

        Returns
        -------
        Backend
            ``self``.
        """
        if self._closed:
            raise BackendError(f"the {self.name} backend was closed; create a new one")
        if not self._started:
            self._start()
            self._started = True
        return self

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        if self._started and not self._closed:
            self._close()
        self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_workers={self.n_workers})"

    # -- what a backend implements -------------------------------------------

    def _start(self) -> None:
        pass

    def _close(self) -> None:
        pass

    @abc.abstractmethod
    def _submit(self, fn: Callable[[Any], Any], payload: Any) -> Hashable:
        """Start ``fn(payload)``; return a handle."""

    @abc.abstractmethod
    def _wait(self, handles: Iterable[Hashable], timeout: float) -> list[Hashable]:
        """Handles among ``handles`` finished within ``timeout`` seconds."""

    @abc.abstractmethod
    def _outcome(self, handle: Hashable) -> _Outcome:
        """The finished task's result or error."""

    def _abort(self, handles: Sequence[Hashable]) -> None:
        """Cancel ``handles`` and stop the workers running them, without waiting."""


class SerialBackend(Backend):
    """Every task in the calling process, one after the other."""

    name = "serial"

    def __init__(self) -> None:
        super().__init__()
        self._done: dict[int, tuple[bool, Any]] = {}
        self._next = 0

    @property
    def window(self) -> int:
        # one at a time: a task's result is recorded before the next one starts
        return 1

    def __repr__(self) -> str:
        return "SerialBackend()"

    def _submit(self, fn: Callable[[Any], Any], payload: Any) -> Hashable:
        self._next += 1
        self._done[self._next] = run_one(fn, payload)
        return self._next

    def _wait(self, handles: Iterable[Hashable], timeout: float) -> list[Hashable]:
        return list(handles)

    def _outcome(self, handle: Hashable) -> _Outcome:
        ok, value = self._done.pop(handle)  # type: ignore[call-overload]
        return ("ok", value) if ok else ("error", value)

    def _abort(self, handles: Sequence[Hashable]) -> None:
        for h in handles:
            self._done.pop(h, None)  # type: ignore[call-overload]


class ProcessBackend(Backend):
    """A pool of local worker processes (``forkserver``).

    Parameters
    ----------
    n_jobs : int
        Worker processes.

    Notes
    -----
    Each worker runs a watchdog thread that exits it when the process that
    created the pool is gone (even after SIGKILL), ignores SIGINT (the parent
    stops the workers on Ctrl-C) and runs BLAS single-threaded. A pool broken
    by a dying worker is replaced on the next submission.

    multiprocessing's resource tracker (a helper process that unlinks the
    pool's semaphores if this process dies) ignores SIGINT and SIGTERM, so
    only SIGKILL or the out-of-memory killer ends it. Python then relaunches
    it with a warning on the next semaphore operation, and the new tracker
    prints a ``KeyError`` traceback for every semaphore the pool releases.
    Decision (issue 22): a dead tracker is a fault of the machine, not of a
    task. :meth:`_wait` checks it (same pid and start time, as the workers'
    watchdog checks their parent); when it is gone, the pool is stopped and
    :class:`BackendFault` raised (the command prints one line and exits 1;
    finished tasks are kept and re-running resumes), and multiprocessing's
    messages to the dead tracker go to ``os.devnull`` instead of a relaunched
    one, so nothing else is printed (this process unlinks its semaphores
    itself when the pool is released; the tracker only matters if it dies).
    """

    name = "processes"

    def __init__(self, n_jobs: int) -> None:
        super().__init__()
        self._n_jobs = _check_n_jobs(n_jobs)
        self._pool: ProcessPoolExecutor | None = None
        self._tracker: tuple[int, int | None] | None = None  # pid and start time of the resource tracker

    @property
    def n_workers(self) -> int:
        return self._n_jobs

    def __repr__(self) -> str:
        return f"ProcessBackend(n_jobs={self._n_jobs})"

    def _new_pool(self) -> ProcessPoolExecutor:
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        me = os.getpid()
        return ProcessPoolExecutor(
            max_workers=self._n_jobs,
            mp_context=mp.get_context(method),
            initializer=init_worker,
            initargs=(me, start_ticks(me)),
        )

    def _start(self) -> None:
        self._pool = self._new_pool()

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _submit(self, fn: Callable[[Any], Any], payload: Any) -> Hashable:
        # Ctrl-C / SIGTERM held while a submit may start a worker (with forkserver or spawn the pool starts its
        # workers on submit): interrupted inside Process.start, a worker not yet in the pool's table escaped
        # _kill_pool and printed a multiprocessing traceback after simrec's one line
        with interrupts_deferred():
            if self._pool is None or getattr(self._pool, "_broken", False):
                self._kill_pool()
                self._pool = self._new_pool()
            future = self._pool.submit(run_one, fn, payload)
            if self._tracker is None:  # started with the pool's first workers
                pid = _tracker_pid()
                self._tracker = None if pid is None else (pid, start_ticks(pid))
            return future

    def _wait(self, handles: Iterable[Hashable], timeout: float) -> list[Hashable]:
        done, _ = wait_futures(handles, timeout=timeout, return_when=FIRST_COMPLETED)  # type: ignore[arg-type]
        self._check_tracker()
        return list(done)

    def _check_tracker(self) -> None:
        """:class:`BackendFault` if the resource tracker died (the pool is stopped, the tracker silenced)."""
        if self._tracker is None:
            return
        pid, start = self._tracker
        if start is None or start_ticks(pid) == start:  # alive (or not checkable: no /proc)
            return
        self._tracker = None
        _silence_dead_tracker(pid)
        self._kill_pool()
        raise BackendFault(
            f"multiprocessing's resource tracker (pid {pid}) died while tasks ran (killed, or out of memory); the "
            "worker processes were stopped"
        )

    def _outcome(self, handle: Hashable) -> _Outcome:
        fut: Future = handle  # type: ignore[assignment]
        try:
            ok, value = fut.result()
        except BrokenProcessPool as exc:
            error = (
                "BrokenProcessPool: a worker process died while this task was in flight "
                "(killed, out of memory or crashed)"
            )
            return "broken", (error, traceback_text(exc))
        except Exception as exc:  # noqa: BLE001 - e.g. an argument or result that does not pickle
            return "error", (error_text(exc), traceback_text(exc))
        return ("ok", value) if ok else ("error", value)

    def _abort(self, handles: Sequence[Hashable]) -> None:
        self._kill_pool()  # the pool cancels the pending futures (cancelling them here races with it)

    def _kill_pool(self) -> None:
        """Kill the workers (running tasks are not waited for) and drop the pool."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # no public API for this before Python 3.14 (ProcessPoolExecutor.kill_workers)
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(timeout=5)


def _tracker_pid() -> int | None:
    """The pid of the resource tracker this process started (None if none, or another process started it)."""
    pid = getattr(getattr(resource_tracker, "_resource_tracker", None), "_pid", None)
    return pid if isinstance(pid, int) else None


def _silence_dead_tracker(pid: int) -> None:
    """Send multiprocessing's messages for the dead resource tracker ``pid`` to ``os.devnull`` (and reap it).

    Without this, the next semaphore operation relaunches a tracker with a
    warning, and the new tracker prints a traceback for every semaphore the
    pool then releases (it never saw them registered). Relies on CPython's
    ``ResourceTracker`` attributes (``_lock``, ``_fd``, ``_pid``, 3.11-3.13);
    where they differ nothing is changed.
    """
    tracker = getattr(resource_tracker, "_resource_tracker", None)
    lock = getattr(tracker, "_lock", None)
    if tracker is None or lock is None or getattr(tracker, "_pid", None) != pid:
        return
    with lock:
        old = tracker._fd
        tracker._fd = os.open(os.devnull, os.O_WRONLY)  # its liveness probe succeeds: no relaunch
        tracker._pid = None
        if old is not None:
            with suppress(OSError):
                os.close(old)
    with suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _check_n_jobs(value: object, name: str = "n_jobs") -> int:
    """``value`` as an ``int`` >= 1 (``TypeError`` or ``ValueError`` naming ``name`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer; got {value!r}")
    if value < 1:
        raise ValueError(f"`{name}` must be >= 1; got {value}")
    return int(value)
