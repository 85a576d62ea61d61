"""Run tasks on a backend: :func:`run_tasks`, the task (:class:`Task`) and its failure (:class:`TaskFailure`).

:func:`run_tasks` computes ``fn(task.payload)`` for every task on a backend
(:func:`make_backend` builds the one the command-line options ask for), hands
every result to ``on_result(index, result)`` in the calling process as soon as
the task finishes (the callers write one shard per result there, so an
interrupted run keeps its work) and returns the results in task order.
Failures, interrupts and kills: see :mod:`simrec.tasks`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from simrec.tasks._signals import signals_blocked, sigterm_interrupts
from simrec.tasks.backends import Backend, ProcessBackend, SerialBackend, _check_n_jobs
from simrec.tasks.ray_backend import RayBackend

__all__ = ["BACKENDS", "Task", "TaskError", "TaskFailure", "format_seed", "make_backend", "run_tasks"]

R = TypeVar("R")

#: Backend names accepted by :func:`make_backend` (the ``--backend`` option).
BACKENDS: tuple[str, ...] = ("serial", "processes", "ray")

#: Seconds the scheduler waits for a task to finish before it looks again (and the backend checks its health).
_WAIT_INTERVAL = 1.0


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
    with sigterm_interrupts():
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
            with signals_blocked():
                backend._abort(list(inflight))
            raise
    if failures:
        raise TaskError([failures[i] for i in sorted(failures)], results)
    return results
