"""Sharded phases: the one skeleton through which every study runs its tasks.

A study (``simrec run``, ``simrec stress``, ``simrec calibrate``, ``simrec
assess``) is a short sequence of *phases* over its validated spec. A phase is
a list of keyed tasks (:class:`KeyedTask`) and a description of what they
compute and how their results are kept (:class:`Phase`); :func:`run_phase`
runs it in a run directory (:class:`~simrec.rundir.RunDir`):

1. **resume** — the shards of the phase's folder (``DIR/<folder>/<key>``,
   :class:`~simrec.shards.Shards`) are checked before anything is computed:
   a task whose shard exists and verifies (its task, its job and its
   content's digest) is reused; a shard that cannot be used stops the job
   with :class:`~simrec.shards.ShardError`, naming it;
2. **compute** — the other tasks run on the task backend
   (:func:`simrec.tasks.run_tasks`), each task's result written to its shard
   (``encode``) in the calling process as soon as it arrives, with a progress
   bar (one step per task, or ``steps`` per task counted by the tasks
   themselves, :class:`TaskCounters`);
3. **results** — every task's shard is read back, verified, and decoded
   (``decode``), in the order of the tasks (the keys' order): the same values
   whether a task ran now, in another process, or in an interrupted earlier
   attempt.

A phase without shards (``folder=None``) is for tasks that resume on their
own (a calibration search's trial log, :mod:`simrec.studies.calibrate`):
every task runs, and the results are the tasks' return values, in task order.

Decisions (issue 23): a key is built by the study from indices and validated
names only (``rep00001__w000``, ``0__binomial__n100``, ``m1000``), never
free text, and it is the shard's file stem (:meth:`Shards.path` checks it),
so the layout of an existing run folder is the contract: a study keeps its
folders and keys, and a run folder of an earlier version resumes. Task
functions are module-level (workers import them by reference); a phase is
built when the study runs, so the function it names is the module's current
one.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from simrec._io import write_text
from simrec._progress import progress_bar
from simrec.rundir import RunDir
from simrec.shards import Codec
from simrec.tasks import Backend, Task, run_tasks

__all__ = ["KeyedTask", "Phase", "PhaseOutcome", "Phases", "TaskCounters", "run_phase", "task_timings"]

R = TypeVar("R")  # what a task returns
V = TypeVar("V")  # what a phase hands back per task (decoded from its shard)


def _same(x: Any) -> Any:
    return x


@dataclass(frozen=True)
class KeyedTask:
    """One task of a phase.

    Parameters
    ----------
    key : str
        Its shard's file stem (indices and validated names only; see the module docstring).
    label : str
        What it computes, for failure reports (e.g. ``"replicate 3, world ibp-pop"``).
    seed : numpy.random.SeedSequence or int
        Its seed, for failure reports (the payload carries what the task uses).
    payload : object
        The picklable argument of the phase's task function.
    """

    key: str
    label: str
    seed: np.random.SeedSequence | int | None
    payload: Any


@dataclass(frozen=True)
class Phase(Generic[R, V]):
    """What a phase's tasks compute and how their results are kept.

    Parameters
    ----------
    task : callable
        A module-level function: ``task(payload) -> R``; with ``steps``,
        ``task((payload, counter)) -> R``, ``counter(done)`` reporting how many
        of its ``steps`` are done (``counter`` is None when no bar is shown).
    unit : str
        What the progress bar counts (``"replicates"``, ``"ranks"``, ...).
    folder : str or None
        The phase's subfolder of the run directory, holding one shard per
        task; None: no shards (the tasks resume on their own; every task runs).
    codec : Codec, optional
        :data:`~simrec.shards.FRAMES` or :data:`~simrec.shards.ARRAYS` (required with ``folder``).
    encode : callable, default identity
        A task's result -> its shard's content.
    decode : callable, default identity
        A shard's content -> the value the phase hands back.
    steps : int, optional
        Progress steps per task, counted by the task itself (see ``task``;
        e.g. a stress cell's repeats); default: one step per finished task.
    side : str, optional
        A second shard folder per task (same codec and key), for a second
        output of the same task (``simrec run``'s ``debias/`` beside
        ``replicates/``): written first, from ``side_encode(result)``, so a
        task whose main shard exists has both; a task is reused only when both
        verify. Its shards are read by the study (``rd.shards(side, codec)``).
    side_encode : callable, default identity
    """

    task: Callable[[Any], R]
    unit: str
    folder: str | None = None
    codec: Codec | None = None
    encode: Callable[[R], Any] = _same
    decode: Callable[[Any], V] = _same
    steps: int | None = None
    side: str | None = None
    side_encode: Callable[[R], Any] = _same

    def __post_init__(self) -> None:
        if (self.folder is None) != (self.codec is None):
            raise ValueError("a phase with shards needs both `folder` and `codec`; one without, neither")
        if self.side is not None and (self.folder is None or self.side == self.folder):
            raise ValueError("`side` needs the phase's own `folder` and must differ from it")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"`steps` must be >= 1; got {self.steps}")


@dataclass(frozen=True)
class PhaseOutcome(Generic[V]):
    """A phase's values in task order, and how many tasks ran now (``computed``) or were reused."""

    values: list[V]
    computed: int
    reused: int


@dataclass
class Phases:
    """The phases of one job: its run directory, backend, name and progress, and the tasks counted so far."""

    rd: RunDir
    backend: Backend
    title: str
    progress: bool = True
    computed: int = 0
    reused: int = 0

    def run(
        self, phase: Phase[R, V], tasks: Sequence[KeyedTask], on_result: Callable[[KeyedTask, R], None] | None = None
    ) -> PhaseOutcome[V]:
        """:func:`run_phase` in this job; its counts are added to :attr:`computed` and :attr:`reused`."""
        out = run_phase(
            phase,
            tasks,
            rd=self.rd,
            backend=self.backend,
            title=self.title,
            progress=self.progress,
            on_result=on_result,
        )
        self.computed += out.computed
        self.reused += out.reused
        return out


def run_phase(
    phase: Phase[R, V],
    tasks: Sequence[KeyedTask],
    *,
    rd: RunDir | None,
    backend: Backend,
    title: str,
    progress: bool = True,
    on_result: Callable[[KeyedTask, R], None] | None = None,
) -> PhaseOutcome[V]:
    """Run a phase's tasks in ``rd``, resuming from its shards (see the module docstring).

    Parameters
    ----------
    phase : Phase
    tasks : sequence of KeyedTask
        Every task of the phase, in the order of the results (distinct keys).
    rd : RunDir or None
        The opened run directory (None only for a phase without shards).
    backend : simrec.tasks.Backend
    title : str
        The job's name, shown on the progress bar.
    progress : bool, default True
    on_result : callable(task, result), optional
        Called in the calling process as each task finishes (after its shard is written).

    Returns
    -------
    PhaseOutcome
        The decoded shards (or the results, without shards) in task order.

    Raises
    ------
    simrec.shards.ShardError
        An existing shard of the phase cannot be used (before anything is computed).
    simrec.tasks.TaskError
        Some tasks failed twice (every other task's shard is written).
    """
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        raise ValueError(f"the tasks of a phase need distinct keys; got {len(keys) - len(set(keys))} repeated")
    if phase.folder is None or phase.codec is None:
        return _run_unsharded(phase, tasks, backend=backend, title=title, progress=progress, on_result=on_result)
    if rd is None:
        raise ValueError("a phase with shards runs in a run directory; got rd=None")
    shards = rd.shards(phase.folder, phase.codec)
    side = None if phase.side is None else rd.shards(phase.side, phase.codec)
    done = set(shards.reusable(keys))
    if side is not None:
        done &= set(side.reusable(keys))
    todo = [t for t in tasks if t.key not in done]

    def record(task: KeyedTask, result: R) -> None:
        if side is not None:  # first: a task counts as done once its main shard exists
            side.write(task.key, phase.side_encode(result))
        shards.write(task.key, phase.encode(result))
        if on_result is not None:
            on_result(task, result)

    _compute(phase, todo, rd=rd, backend=backend, title=title, progress=progress, record=record)
    return PhaseOutcome([phase.decode(shards.read(k)) for k in keys], len(todo), len(tasks) - len(todo))


def _run_unsharded(
    phase: Phase[R, V],
    tasks: Sequence[KeyedTask],
    *,
    backend: Backend,
    title: str,
    progress: bool,
    on_result: Callable[[KeyedTask, R], None] | None,
) -> PhaseOutcome[V]:
    def record(task: KeyedTask, result: R) -> None:
        if on_result is not None:
            on_result(task, result)

    results = _compute(phase, tasks, rd=None, backend=backend, title=title, progress=progress, record=record)
    return PhaseOutcome([phase.decode(r) for r in results], len(tasks), 0)


def _compute(
    phase: Phase[R, V],
    todo: Sequence[KeyedTask],
    *,
    rd: RunDir | None,
    backend: Backend,
    title: str,
    progress: bool,
    record: Callable[[KeyedTask, R], None],
) -> list[R]:
    """Run ``todo`` with a progress bar; ``record`` each result as it arrives; the results in task order."""
    steps = phase.steps or 1
    counted = phase.steps is not None and rd is not None
    folder = rd.path("progress") if rd is not None else Path()
    if counted:  # the tasks count their own steps in progress/<key>.txt, polled here
        shutil.rmtree(folder, ignore_errors=True)  # stale counts of an interrupted run
        if progress and todo:
            folder.mkdir()
    with progress_bar(title, len(todo) * steps, phase.unit, progress) as advance:
        counters = TaskCounters(folder, [t.key for t in todo], steps, advance) if counted else None

        def on_result(i: int, result: R) -> None:
            record(todo[i], result)
            if counters is not None:
                counters.finished(todo[i].key)
            else:
                advance(steps)

        def payload(t: KeyedTask) -> Any:
            if phase.steps is None:
                return t.payload
            return t.payload, counters.counter(t.key) if counters is not None and progress else None

        with counters if counters is not None else nullcontext():
            batch = [Task(t.label, t.seed, payload(t)) for t in todo]
            results = run_tasks(phase.task, batch, backend=backend, on_result=on_result)
    if counted:
        shutil.rmtree(folder, ignore_errors=True)
    return results  # type: ignore[return-value]


@dataclass(frozen=True)
class _Counter:
    """``counter(done)`` of a task: the count, written atomically to ``path`` at most every 0.2 s.

    Best effort: a folder that does not exist here (a remote Ray worker) or a
    failed write is ignored (the bar then advances when the task finishes).
    """

    path: Path
    steps: int

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if done < self.steps and now - _LAST_WRITE.get(self.path, -1.0) < 0.2:
            return
        _LAST_WRITE[self.path] = now
        if not self.path.parent.is_dir():
            return
        try:
            write_text(self.path, str(done))
        except OSError:
            pass


_LAST_WRITE: dict[Path, float] = {}


class TaskCounters:
    """Advances a progress bar of tasks x steps from the tasks' counter files (polled by a thread).

    Each task writes how many of its ``steps`` it has done to
    ``folder/<key>.txt`` (:meth:`counter`); a thread reads them every 0.5 s,
    and a finished task counts all its steps (:meth:`finished`).
    """

    def __init__(self, folder: Path, keys: list[str], steps: int, advance: Callable[..., None]) -> None:
        self.folder, self.keys, self.steps, self.advance = folder, keys, steps, advance
        self.seen = dict.fromkeys(keys, 0)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def counter(self, key: str) -> _Counter | None:
        """The picklable counter task ``key`` reports to (None when the folder does not exist)."""
        return _Counter(self.folder / f"{key}.txt", self.steps) if self.folder.is_dir() else None

    def _set(self, key: str, done: int) -> None:
        with self.lock:
            step = min(done, self.steps) - self.seen[key]
            if step > 0:
                self.seen[key] += step
                self.advance(step)

    def finished(self, key: str) -> None:
        self._set(key, self.steps)

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            for key in self.keys:
                if self.seen[key] < self.steps:
                    try:
                        self._set(key, int((self.folder / f"{key}.txt").read_text()))
                    except (OSError, ValueError):
                        pass

    def __enter__(self) -> TaskCounters:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def task_timings(total: float, task_seconds: Sequence[float], backend: Backend, **more: float) -> dict[str, Any]:
    """The ``timings`` entry of a study's manifest: total, the tasks' mean and max, extra phases, the backend."""
    return {
        "total_seconds": round(total, 3),
        **{k: round(v, 3) for k, v in more.items()},
        "task_seconds_mean": round(float(np.mean(task_seconds)), 3) if len(task_seconds) else None,
        "task_seconds_max": round(float(np.max(task_seconds)), 3) if len(task_seconds) else None,
        "backend": backend.name,
        "workers": backend.n_workers,
    }
