"""Run independent tasks serially or on local processes.

The execution layer is deliberately small: a task is a picklable callable and
a sequence of arguments; each task carries its own seed (spawned from the run's
seed, see :mod:`simrec._random`), so the results do not depend on the backend,
the number of workers or the completion order. Results are handed to
``on_result`` as they finish (the caller records them, so an interrupted run
keeps what was finished) and are also returned in task order.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Literal, TypeVar

from ._validation import check_choice, check_int

__all__ = ["Backend", "BACKENDS", "run_tasks"]

T = TypeVar("T")
R = TypeVar("R")

Backend = Literal["serial", "processes"]
BACKENDS: tuple[str, ...] = ("serial", "processes")


def run_tasks(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    *,
    n_jobs: int = 1,
    backend: Backend | None = None,
    on_result: Callable[[int, R], None] | None = None,
) -> list[R]:
    """Apply ``fn`` to every task; return the results in task order.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled for worker processes).
    tasks : sequence
        Picklable arguments, one per task.
    n_jobs : int, default 1
        Worker processes for the ``"processes"`` backend.
    backend : {"serial", "processes"}, optional
        Default: ``"serial"`` when ``n_jobs == 1``, else ``"processes"``.
    on_result : callable, optional
        Called as ``on_result(index, result)`` in the parent process as each task
        finishes (completion order), e.g. to write a result shard.

    Notes
    -----
    Worker processes are started with the ``forkserver`` method: the parent may
    hold PyTorch/BLAS thread pools, which ``fork`` would copy in a broken state.
    At most ``2 * n_jobs`` tasks are in flight at once, so a long task list does
    not pickle every argument up front.
    """
    n_jobs = check_int("n_jobs", n_jobs, low=1)
    if backend is None:
        backend = "serial" if n_jobs == 1 else "processes"
    check_choice("backend", backend, BACKENDS)
    results: list[R | None] = [None] * len(tasks)

    def record(i: int, r: R) -> None:
        results[i] = r
        if on_result is not None:
            on_result(i, r)

    if backend == "serial" or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            record(i, fn(task))
        return results  # type: ignore[return-value]

    ctx = mp.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx) as pool:
        pending: dict[Future, int] = {}
        next_i = 0
        try:
            while next_i < len(tasks) or pending:
                while next_i < len(tasks) and len(pending) < 2 * n_jobs:
                    pending[pool.submit(fn, tasks[next_i])] = next_i
                    next_i += 1
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    record(pending.pop(fut), fut.result())
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
    return results  # type: ignore[return-value]
