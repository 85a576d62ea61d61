"""Run independent tasks serially, on local processes or on a Ray cluster.

A task (:class:`Task`) is one unit of work: ``fn(task.payload)`` for a
module-level function ``fn``. Each task carries its own seed (spawned from the
run's seed, see :mod:`simrec._random`), so the results do not depend on the
backend, the number of workers or the completion order; nothing here adds
randomness. :func:`run_tasks` hands every result to ``on_result(index,
result)`` in the calling process as soon as the task finishes (the callers
write one shard per result there, so an interrupted run keeps its work) and
returns the results in task order.

Backends (:func:`make_backend` builds one from the command-line options)
------------------------------------------------------------------------
``serial`` (:class:`SerialBackend`)
    Every task in the calling process, one after the other.
``processes`` (:class:`ProcessBackend`)
    A pool of ``n_jobs`` worker processes (``forkserver`` start method: the
    parent may hold PyTorch/BLAS thread pools, which ``fork`` would copy in a
    broken state).
``ray`` (:class:`RayBackend`)
    A Ray cluster: a local one started on first use (``n_cpus`` CPUs, no
    dashboard) and shut down by :meth:`Backend.close`, or an existing
    cluster at ``address`` (``"auto"``, ``"ray://head:10001"``, ...), which is
    only disconnected from. Every node of a cluster must import simrec and its
    dependencies in the driver's versions (task functions and payloads are
    pickled by reference to simrec's modules): install the same environment on
    every node, or give the job a Ray ``runtime_env`` that provides it,
    either ``RayBackend(address, runtime_env={"pip": [...]})`` /
    ``{"py_modules": [...]}`` or by running the command as a Ray job
    (``ray job submit --runtime-env-json '...' -- simrec run ... --backend ray
    --address auto``; Ray merges the job's environment into the driver's).
    Workers of a local cluster use the driver's interpreter and environment,
    so nothing is needed there. A cluster started with ``ray start`` may use
    token authentication: the driver then needs ``RAY_AUTH_MODE=token`` and
    the cluster's token (``~/.ray/auth_token`` or ``RAY_AUTH_TOKEN``);
    otherwise connecting fails with a :class:`BackendError` that says so.
    Measured on the 2-core reference machine (``bench/bench_backends.py``,
    load average 0.6-1.4): a local cluster starts in about 7 s and costs about
    2 ms of wall time per no-op task (processes: 0.3 s and 0.3 ms; serial:
    2 us); 0.5 s numpy tasks ran 1.87x faster than serially on Ray and 1.94x
    on processes, and ``simrec run quickstart --jobs 2 --no-figures`` (30
    tasks of about 0.3 s) took 18.3 s on Ray, 9.8 s on processes and 10.7 s
    serially. Ray pays off for longer tasks or for more CPUs than one machine
    has.

A backend is a context manager, starts lazily (on the first
:func:`run_tasks` or :meth:`Backend.start`), serves any number of
:func:`run_tasks` calls without restarting its pool or cluster, and
:meth:`Backend.close` is idempotent::

    with make_backend("processes", n_jobs=2) as backend:
        ranks = run_tasks(rank_fn, rank_tasks, backend=backend, on_result=save)
        stats = run_tasks(stress_fn, stress_tasks, backend=backend, on_result=save)

Failures, interrupts and kills
------------------------------
* A task that raises is retried ``retries`` times (default once); if it still
  fails it is recorded as a :class:`TaskFailure` (label, seed, error,
  traceback) while the other tasks go on; :class:`TaskError` is raised once
  every other task has finished. An exception raised by ``on_result`` (e.g.
  disk full while writing a shard) is not a task failure: it stops the run
  and propagates.
* A worker process that dies (segfault, killed by the out-of-memory killer)
  breaks a process pool: the tasks it held are not charged an attempt but
  re-run one at a time on a fresh pool, so only the task that kills its
  worker when running alone is charged.
* Ctrl-C, or SIGTERM while tasks run (a handler is installed for the duration
  of :func:`run_tasks`, in the main thread only, and the previous one restored
  afterwards), cancels the pending tasks, stops the workers at once (process
  workers are killed, Ray tasks force-cancelled; running tasks are not waited
  for) and raises :class:`KeyboardInterrupt`. Process workers ignore SIGINT, so
  a Ctrl-C that reaches the whole process group is handled by the parent only.
* SIGKILL of the calling process: every process worker runs a watchdog thread
  that exits the worker (``os._exit``) within half a second of the parent's
  death (the worker's parent in the process tree is the forkserver, which
  itself only exits once the workers are gone). Ray's own fate-sharing
  (``PR_SET_PDEATHSIG``) kills the GCS server and the raylet of a local
  cluster at once, and its task workers exit within seconds, but the
  dashboard and runtime-env agents linger for about 65 s (measured with Ray
  2.60: they try to report the raylet's death to the dead GCS with a 60 s
  timeout). A local cluster
  started here therefore comes with a small reaper process (Linux) that
  tracks the cluster's process tree and SIGKILLs what is left of it when the
  driver dies or closes the backend.

Worker processes of the ``processes`` backend run BLAS single-threaded
(``OMP_NUM_THREADS=1`` and friends plus :mod:`threadpoolctl`, unless the user
set one of those variables), like Ray does by default for its workers, so two
workers on two cores do not oversubscribe them. The numbers do not depend on
it: the pinned outputs of ``tests/test_golden.py`` (run, both stress sources,
calibrate) and a run with LensKit's ImplicitMF came out identical on the three
backends, i.e. with 1 BLAS thread in workers and the default in the caller.
"""

from __future__ import annotations

import abc
import importlib
import importlib.util
import logging
import multiprocessing as mp
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Literal, Self, TypeVar

import numpy as np

from simrec._usercode import UserCodeError, signals_marked

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BackendFault",
    "ProcessBackend",
    "RayBackend",
    "SerialBackend",
    "Task",
    "TaskError",
    "TaskFailure",
    "format_seed",
    "make_backend",
    "run_tasks",
]

R = TypeVar("R")

#: Backend names accepted by :func:`make_backend` (the ``--backend`` option).
BACKENDS: tuple[str, ...] = ("serial", "processes", "ray")

#: Environment variables that size the thread pools of BLAS/OpenMP libraries.
_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
#: Seconds between two checks of a worker's watchdog / waits of the scheduler.
_WATCHDOG_INTERVAL = 0.5
_WAIT_INTERVAL = 1.0


# ---------------------------------------------------------------------------
# tasks, failures, errors
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn(payload)``.

    Parameters
    ----------
    label : str
        The cell, for reports, e.g. ``"replicate 3, world ibp-pop"``.
    seed : numpy.random.SeedSequence or int or None
        The task's seed, for reports only (the payload carries what ``fn``
        uses).
    payload : object
        The picklable argument of ``fn``.
    """

    label: str
    seed: np.random.SeedSequence | int | None
    payload: Any

    def __post_init__(self) -> None:
        if not isinstance(self.label, str):
            raise TypeError(f"`label` must be a string; got {type(self.label).__name__}")


@dataclass(frozen=True)
class TaskFailure:
    """A task that still failed after its retries.

    Parameters
    ----------
    label : str
        The task's label.
    seed : str
        The task's seed rendered reproducibly, e.g.
        ``"SeedSequence(entropy=20190531, spawn_key=(3, 1))"``.
    error : str
        Type and message of the last error, e.g. ``"ValueError: boom"``.
    traceback : str
        Formatted traceback of the last error (from the worker).
    """

    label: str
    seed: str
    error: str
    traceback: str

    def line(self) -> str:
        """One line for reports: label, seed and error."""
        error = " ".join(self.error.split())
        return f"task '{self.label}' with seed {self.seed} failed: {error}"


class TaskError(RuntimeError):
    """Some tasks failed; raised after every other task has finished.

    ``str(exc)`` has one line per failed task (label, seed, error).

    Attributes
    ----------
    failures : tuple of TaskFailure
        The failed tasks, in task order.
    results : list
        Every task's result in task order (None for the failed ones).
    """

    def __init__(self, failures: Sequence[TaskFailure], results: Sequence[Any] = ()) -> None:
        self.failures: tuple[TaskFailure, ...] = tuple(failures)
        self.results: list[Any] = list(results)
        super().__init__("\n".join(f.line() for f in self.failures))


class BackendError(RuntimeError):
    """A backend cannot be used (e.g. Ray requested but not installed)."""


class BackendFault(RuntimeError):
    """The backend broke while tasks ran, through no task's fault; the run stops (finished tasks are kept).

    E.g. multiprocessing's resource tracker of the ``processes`` backend was
    killed (:class:`ProcessBackend`). ``str(exc)`` is one line saying what
    happened.
    """


def format_seed(seed: np.random.SeedSequence | int | None) -> str:
    """Render a task seed so that it can be typed back in.

    Examples
    --------
    >>> format_seed(np.random.SeedSequence(20190531, spawn_key=(3, 1)))
    'SeedSequence(entropy=20190531, spawn_key=(3, 1))'
    >>> format_seed(7)
    '7'
    """
    if isinstance(seed, np.random.SeedSequence):
        pool = "" if seed.pool_size == 4 else f", pool_size={seed.pool_size}"
        return f"SeedSequence(entropy={seed.entropy!r}, spawn_key={tuple(seed.spawn_key)!r}{pool})"
    return repr(seed)


# ---------------------------------------------------------------------------
# what runs in a worker
# ---------------------------------------------------------------------------


def _run_one(fn: Callable[[Any], R], payload: Any) -> tuple[bool, Any]:
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
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))
            if isinstance(exc, UserCodeError):
                error = str(exc)
            else:
                error = traceback.format_exception_only(type(exc), exc)[-1].strip()
            return False, (error, tb)


def _proc_start_ticks(pid: int) -> int | None:
    """Start time of a live process (Linux clock ticks), None if gone or a zombie.

    Also None on systems without ``/proc``.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def _parent_alive(pid: int, start_ticks: int | None) -> bool:
    if start_ticks is not None:  # Linux: same pid and same start time, not a zombie
        return _proc_start_ticks(pid) == start_ticks
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the pid now belongs to another user's process
        return False
    return True


def _watch_parent(pid: int, start_ticks: int | None) -> None:
    while _parent_alive(pid, start_ticks):
        time.sleep(_WATCHDOG_INTERVAL)
    os._exit(1)


def _init_worker(parent_pid: int, parent_start: int | None) -> None:
    """Initializer of a process worker: watchdog, no SIGINT, single-threaded BLAS."""
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


# ---------------------------------------------------------------------------
# backends
# ---------------------------------------------------------------------------

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
        self._done[self._next] = _run_one(fn, payload)
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
            initializer=_init_worker,
            initargs=(me, _proc_start_ticks(me)),
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
        with _interrupts_deferred():
            if self._pool is None or getattr(self._pool, "_broken", False):
                self._kill_pool()
                self._pool = self._new_pool()
            future = self._pool.submit(_run_one, fn, payload)
            if self._tracker is None:  # started with the pool's first workers
                pid = _tracker_pid()
                self._tracker = None if pid is None else (pid, _proc_start_ticks(pid))
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
        if start is None or _proc_start_ticks(pid) == start:  # alive (or not checkable: no /proc)
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
            return "broken", (error, _traceback_text(exc))
        except Exception as exc:  # noqa: BLE001 - e.g. an argument or result that does not pickle
            return "error", (_error_text(exc), _traceback_text(exc))
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
    from multiprocessing import resource_tracker

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
    from multiprocessing import resource_tracker

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


class RayBackend(Backend):
    """Tasks on a Ray cluster: a local one, or the one at ``address``.

    Parameters
    ----------
    address : str, optional
        Cluster to connect to (``ray.init(address=...)``); :meth:`close` only
        disconnects. Default: start a local cluster on first use and shut it
        down on :meth:`close`.
    n_cpus : int, optional
        CPUs of the local cluster (default: every CPU of the machine); not
        allowed with ``address``.
    runtime_env : dict, optional
        Ray ``runtime_env`` of the job (``ray.init(runtime_env=...)``), e.g. to
        make simrec importable on the nodes of a cluster.

    Raises
    ------
    BackendError
        Ray is not installed.

    Notes
    -----
    Tasks are submitted with ``max_retries=0`` (retries are
    :func:`run_tasks`'s) and one CPU each; on an interrupt they are
    force-cancelled, which kills the workers running them. A local cluster
    gets a reaper process (Linux) that kills what is left of it if the driver
    dies (see the module docstring). The whole module docstring says what a
    cluster needs.
    """

    name = "ray"

    def __init__(
        self, address: str | None = None, n_cpus: int | None = None, runtime_env: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        if runtime_env is not None and not isinstance(runtime_env, dict):
            raise TypeError(f"`runtime_env` must be a dict; got {type(runtime_env).__name__}")
        if address is not None and not (isinstance(address, str) and address.strip()):
            raise ValueError(f"`address` must be a non-empty string; got {address!r}")
        if n_cpus is not None:
            n_cpus = _check_n_jobs(n_cpus, "n_cpus")
            if address is not None:
                raise ValueError(
                    "`n_cpus` sets the CPUs of a local cluster; the cluster at "
                    f"`address` has its own; got n_cpus={n_cpus}, address={address!r}"
                )
        _require_ray()
        self.address = address
        self.n_cpus = n_cpus
        self.runtime_env = runtime_env
        self._ray: Any = None
        self._remote: Any = None
        self._named: dict[Callable[[Any], Any], Any] = {}
        self._cluster_cpus: int | None = None
        self._reaper: subprocess.Popen | None = None

    @property
    def n_workers(self) -> int:
        if self._cluster_cpus is not None:
            return self._cluster_cpus
        if self.n_cpus is not None:
            return self.n_cpus
        return (os.cpu_count() or 1) if self.address is None else 1

    def __repr__(self) -> str:
        return f"RayBackend(address={self.address!r}, n_cpus={self.n_cpus!r})"

    def _start(self) -> None:
        ray = _require_ray(import_it=True)
        if ray.is_initialized():
            raise BackendError(
                "Ray is already initialized in this process; shut it down "
                "(ray.shutdown()) or close the other ray backend first"
            )
        if self.address is None:
            self._reaper = _start_reaper()
            try:
                ray.init(
                    address="local",
                    num_cpus=self.n_cpus,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                    runtime_env=self.runtime_env,
                )
            except BaseException:
                _stop_reaper(self._reaper)
                self._reaper = None
                raise
            _reaper_go(self._reaper)
        else:
            try:
                ray.init(address=self.address, logging_level=logging.WARNING, runtime_env=self.runtime_env)
            except (ConnectionError, ValueError) as exc:
                detail = " ".join(str(exc).split())
                if exc.__cause__ is not None:  # e.g. the cluster wants an authentication token
                    detail += f" ({' '.join(_error_text(exc.__cause__).split())})"
                raise BackendError(f"cannot connect to the Ray cluster at {self.address!r}: {detail}") from exc
        self._ray = ray
        self._remote = ray.remote(_run_one)
        self._cluster_cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def _close(self) -> None:
        try:
            self._ray.shutdown()  # stops a local cluster, disconnects from a remote one
        finally:
            _stop_reaper(self._reaper)
            self._reaper = None
            self._ray = self._remote = None
            self._named.clear()

    def _submit(self, fn: Callable[[Any], Any], payload: Any) -> Hashable:
        remote = self._named.get(fn)
        if remote is None:  # tasks show as ray::<fn name> in `ray list tasks` and the dashboard
            remote = self._named[fn] = self._remote.options(
                max_retries=0, num_cpus=1, name=getattr(fn, "__name__", "task")
            )
        return remote.remote(fn, payload)

    def _wait(self, handles: Iterable[Hashable], timeout: float) -> list[Hashable]:
        ready, rest = self._ray.wait(list(handles), num_returns=1, timeout=timeout)
        if ready and rest:  # and whatever else is done already
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return ready

    def _outcome(self, handle: Hashable) -> _Outcome:
        try:
            ok, value = self._ray.get(handle)
        except Exception as exc:  # noqa: BLE001 - worker crashed, cancelled, lost object, ...
            return "error", (_error_text(exc), _traceback_text(exc))
        return ("ok", value) if ok else ("error", value)

    def _abort(self, handles: Sequence[Hashable]) -> None:
        for ref in handles:
            with suppress(Exception):  # already finished or gone
                self._ray.cancel(ref, force=True)


def _require_ray(import_it: bool = False) -> Any:
    message = 'the ray backend needs Ray: pip install "simrec[ray]"'
    if not import_it:
        try:
            found = importlib.util.find_spec("ray") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise BackendError(message)
        return None
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise BackendError(message) from exc


# -- the reaper of a local Ray cluster (Linux) --------------------------------

#: Source of the reaper process (standard library only). It records the
#: driver's children at start, says "ready", and on "go" (sent once
#: ``ray.init`` returned) tracks the process tree below the driver's new
#: children (GCS, raylet, agents, workers), refreshed every second. When its
#: stdin reaches end of file (the driver closed the pipe or died), it SIGKILLs
#: every tracked process still alive (same pid and start time) and exits.
_REAPER_SOURCE = r"""# simrec.tasks: reaper of a local Ray cluster (argument: the driver's pid)
import os, select, signal, sys

def stat(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[19])

def table():
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = stat(int(name))
            if s is not None:
                out[int(name)] = s
    return out

driver, me = int(sys.argv[1]), os.getpid()
baseline = {p for p, (pp, _) in table().items() if pp == driver}
sys.stdout.write("ready\n")
sys.stdout.flush()
tracked, going, buf = {}, False, b""

def refresh():
    t = table()
    kids = {}
    for p, (pp, _) in t.items():
        kids.setdefault(pp, []).append(p)
    stack = [p for p, start in tracked.items() if p in t and t[p][1] == start]
    while stack:
        for c in kids.get(stack.pop(), ()):
            if c != me and c not in tracked:
                tracked[c] = t[c][1]
                stack.append(c)

while True:
    ready, _, _ = select.select([0], [], [], 1.0)
    if ready:
        chunk = os.read(0, 4096)
        if not chunk:
            break
        buf += chunk
        if not going and b"go\n" in buf:
            going = True
            for p, (pp, start) in table().items():
                if pp == driver and p != me and p not in baseline:
                    tracked[p] = start
    if going:
        refresh()

if going:
    refresh()
for pid, start in tracked.items():
    s = stat(pid)
    if s is not None and s[1] == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def _start_reaper() -> subprocess.Popen | None:
    """Start the reaper of a local cluster (None where there is no ``/proc``)."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        return None
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", _REAPER_SOURCE, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # no Ctrl-C from the terminal
    if (
        proc.stdout is None or proc.stdout.readline() != b"ready\n"
    ):  # pragma: no cover - the interpreter failed to start
        _stop_reaper(proc)
        return None
    return proc


def _reaper_go(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.stdin is not None:
        proc.stdin.write(b"go\n")
        proc.stdin.flush()


def _stop_reaper(proc: subprocess.Popen | None) -> None:
    """Close the reaper's stdin: it kills the cluster's stragglers and exits."""
    if proc is None:
        return
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - /proc scans take milliseconds
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------------------
# choosing a backend, running tasks
# ---------------------------------------------------------------------------


def _check_n_jobs(value: object, name: str = "n_jobs") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer; got {value!r}")
    if value < 1:
        raise ValueError(f"`{name}` must be >= 1; got {value}")
    return int(value)


def make_backend(name: str | None, n_jobs: int = 1, address: str | None = None) -> Backend:
    """The backend the command-line options ask for (not started yet).

    Parameters
    ----------
    name : {"serial", "processes", "ray"}, optional
        Default: ``"serial"`` when ``n_jobs == 1``, else ``"processes"``.
    n_jobs : int, default 1
        Worker processes (``processes``) or CPUs of a local Ray cluster
        (``ray`` without ``address``); ``serial`` and a cluster at ``address``
        ignore it.
    address : str, optional
        Ray cluster to connect to; only with ``name="ray"``.

    Returns
    -------
    Backend

    Raises
    ------
    ValueError
        An unknown name, ``n_jobs < 1``, or ``address`` without ``"ray"``.
    BackendError
        ``"ray"`` without Ray installed.
    """
    n_jobs = _check_n_jobs(n_jobs)
    if name is not None and name not in BACKENDS:
        raise ValueError(f"`--backend` must be one of {', '.join(BACKENDS)}; got {name!r}")
    if address is not None and name != "ray":
        raise ValueError(f"`--address` needs --backend ray; got --backend {name or 'unset'}")
    if name is None:
        name = "serial" if n_jobs == 1 else "processes"
    if name == "serial":
        return SerialBackend()
    if name == "processes":
        return ProcessBackend(n_jobs)
    return RayBackend(address=address) if address is not None else RayBackend(n_cpus=n_jobs)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours its error messages


def _error_text(exc: BaseException) -> str:
    return _ANSI.sub("", traceback.format_exception_only(type(exc), exc)[-1].strip())


def _traceback_text(exc: BaseException) -> str:
    return _ANSI.sub("", "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While tasks run, SIGTERM raises KeyboardInterrupt (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """Defer SIGINT/SIGTERM (delivered on exit) so a second Ctrl-C cannot cut a cleanup short."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, then deliver the first to its own handler (main thread only).

    Unlike :func:`_signals_blocked` (a signal mask, which is per thread), this
    also holds a signal the kernel hands to a helper thread of the process
    pool: Python runs the handler in the main thread at its next bytecode,
    which could be inside ``Process.start``.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def hold(signum: int, frame: object) -> None:
        got.append(signum)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        if got:
            signal.raise_signal(got[0])


def run_tasks(
    fn: Callable[[Any], R],
    tasks: Sequence[Task],
    *,
    backend: Backend,
    on_result: Callable[[int, R], None] | None = None,
    retries: int = 1,
) -> list[R | None]:
    """Compute ``fn(task.payload)`` for every task; return the results in task order.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled by reference for workers).
    tasks : sequence of Task
        The tasks; their payloads must pickle.
    backend : Backend
        Where to run them; started if needed and left open (close it, or use
        it as a context manager).
    on_result : callable, optional
        Called as ``on_result(index, result)`` in the calling process as each
        task finishes (completion order), e.g. to write a result shard. An
        exception it raises stops the run and propagates.
    retries : int, default 1
        Further attempts for a task that raised.

    Returns
    -------
    list
        ``fn(task.payload)`` for every task, in task order.

    Raises
    ------
    TaskError
        Some tasks still failed after their retries; raised once every other
        task has finished (their results reached ``on_result``). Its
        ``failures`` say which and why; its ``results`` hold the others.
    KeyboardInterrupt
        Ctrl-C or SIGTERM: pending tasks were cancelled and the workers
        stopped without waiting for running tasks.

    Notes
    -----
    At most ``backend.window`` tasks (about twice the workers; one for the
    serial backend) are submitted at once, so a long task list is not pickled
    up front. Nothing here draws random numbers: each task's payload carries
    its seed, so the results are the same on every backend.
    """
    if not callable(fn):
        raise TypeError(f"`fn` must be callable; got {type(fn).__name__}")
    if not isinstance(backend, Backend):
        raise TypeError(f"`backend` must be a simrec.tasks.Backend; got {type(backend).__name__}")
    if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or retries < 0:
        raise ValueError(f"`retries` must be an integer >= 0; got {retries!r}")
    tasks = list(tasks)
    for i, t in enumerate(tasks):
        if not isinstance(t, Task):
            raise TypeError(f"`tasks[{i}]` must be a simrec.tasks.Task; got {type(t).__name__}")
    if not tasks:
        return []
    results: list[R | None] = [None] * len(tasks)
    attempts = [0] * len(tasks)
    failures: dict[int, TaskFailure] = {}
    backend.start()

    queue: deque[int] = deque(range(len(tasks)))
    inflight: dict[Hashable, int] = {}
    solo: set[int] = set()  # tasks whose worker died with others in flight: re-run alone
    solo_running = False
    with _sigterm_interrupts():
        try:
            while queue or inflight:
                while queue and len(inflight) < backend.window and not solo_running:
                    i = queue[0]
                    if i in solo:
                        if inflight:
                            break
                        solo_running = True
                    queue.popleft()
                    attempts[i] += 1
                    inflight[backend._submit(fn, tasks[i].payload)] = i
                for handle in backend._wait(list(inflight), _WAIT_INTERVAL):
                    i = inflight.pop(handle)
                    kind, value = backend._outcome(handle)
                    alone = i in solo
                    if alone:
                        solo_running = False
                    if kind == "ok":
                        results[i] = value
                        if on_result is not None:
                            on_result(i, value)
                    elif kind == "broken" and not alone:
                        attempts[i] -= 1  # its worker died with others running: not charged
                        solo.add(i)
                        queue.appendleft(i)
                    elif attempts[i] <= retries:
                        queue.appendleft(i)
                    else:
                        error, tb = value
                        failures[i] = TaskFailure(tasks[i].label, format_seed(tasks[i].seed), error, tb)
        except BaseException:
            with _signals_blocked():
                backend._abort(list(inflight))
            raise
    if failures:
        raise TaskError([failures[i] for i in sorted(failures)], results)
    return results
