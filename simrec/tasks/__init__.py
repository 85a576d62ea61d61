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
    cluster at ``address``, which is only disconnected from. What a cluster
    needs (the same environment on every node, or a ``runtime_env``; token
    authentication): :mod:`simrec.tasks.ray_backend`.

Their start-up and overhead per task are measured by
``bench/bench_backends.py`` (the page "Running on several processes or a
Ray cluster", docs/howto/parallel.md, has the table): a local Ray cluster pays off for longer tasks or
for more CPUs than one machine has.

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
  cluster at once, and its task workers exit within seconds, but its agents
  linger for about a minute; a local cluster started here therefore comes
  with a small reaper process (Linux, :mod:`simrec.tasks._reaper`) that
  tracks the cluster's process tree and SIGKILLs what is left of it when the
  driver dies or closes the backend.
* multiprocessing's resource tracker killed while tasks run: the pool is
  stopped and :class:`BackendFault` raised (:class:`ProcessBackend`).

Modules: :mod:`~simrec.tasks.run` (:func:`run_tasks`, :func:`make_backend`,
the task and failure types), :mod:`~simrec.tasks.backends` (the
:class:`Backend` protocol, serial and processes),
:mod:`~simrec.tasks.ray_backend`; private: ``_worker`` (what runs in a
worker), ``_signals`` (SIGINT/SIGTERM while tasks run), ``_reaper`` (the
program that reaps a local Ray cluster), ``_ray_files`` (where a local Ray
cluster writes: simrec's cache folder, its token in the environment).
"""

from simrec.tasks.backends import Backend, BackendError, BackendFault, ProcessBackend, SerialBackend
from simrec.tasks.ray_backend import RayBackend
from simrec.tasks.run import BACKENDS, Task, TaskError, TaskFailure, format_seed, make_backend, run_tasks

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
