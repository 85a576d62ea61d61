"""The sharded phase (simrec.studies.phases): keyed tasks, resume from verified shards, results in key order,
progress counted by the tasks."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from simrec.rundir import ARRAYS, FRAMES, RunDir
from simrec.shards import ShardError
from simrec.studies import phases
from simrec.studies.phases import KeyedTask, Phase, Phases, run_phase
from simrec.tasks import ProcessBackend, SerialBackend

CALLS: list[int] = []


def _square(x: int) -> dict[str, np.ndarray]:
    CALLS.append(x)
    return {"x": np.array(x), "sq": np.array(x * x)}


def _slow_first(x: int) -> int:
    time.sleep(0.3 if x == 0 else 0.0)  # the first task finishes last on two processes
    return x


def _counting(task: tuple[int, object]) -> int:
    x, counter = task
    for done in range(1, 4):
        if counter is not None:
            counter(done)
    return x


def _tasks(n: int) -> list[KeyedTask]:
    return [KeyedTask(f"t{i:02d}", f"task {i}", i, i) for i in range(n)]


def _open(out, digest="d1"):
    return RunDir.open(out, kind="run", name="phases", digest=digest)


SQUARES = Phase(_square, "squares", "squares", ARRAYS, decode=lambda a: int(a["sq"]))


def test_a_phase_resumes_from_its_verified_shards_and_returns_values_in_key_order(tmp_path):
    CALLS.clear()
    with _open(tmp_path / "o") as rd:
        first = run_phase(SQUARES, _tasks(3), rd=rd, backend=SerialBackend(), title="t", progress=False)
    assert first.values == [0, 1, 4] and (first.computed, first.reused) == (3, 0)
    assert sorted(p.name for p in (tmp_path / "o" / "squares").iterdir()) == ["t00.npz", "t01.npz", "t02.npz"]
    CALLS.clear()
    with _open(tmp_path / "o") as rd:  # two more tasks: only they run
        again = run_phase(SQUARES, _tasks(5), rd=rd, backend=SerialBackend(), title="t", progress=False)
    assert again.values == [0, 1, 4, 9, 16] and (again.computed, again.reused) == (2, 3)
    assert CALLS == [3, 4]


def test_a_shard_that_cannot_be_used_stops_the_phase_before_any_task_runs(tmp_path):
    with _open(tmp_path / "o") as rd:
        run_phase(SQUARES, _tasks(2), rd=rd, backend=SerialBackend(), title="t", progress=False)
    shards = tmp_path / "o" / "squares"
    (shards / "t00.npz").write_bytes((shards / "t01.npz").read_bytes())  # a shard copied over another
    CALLS.clear()
    with pytest.raises(ShardError, match="t00.npz: shard holds task squares/t01"):
        with _open(tmp_path / "o") as rd:
            run_phase(SQUARES, _tasks(3), rd=rd, backend=SerialBackend(), title="t", progress=False)
    assert CALLS == []  # t02 was not computed


def test_values_follow_the_keys_not_the_completion_order(tmp_path):
    phase = Phase(_slow_first, "frames", "frames", FRAMES, encode=lambda x: pd.DataFrame({"x": [x]}))
    with _open(tmp_path / "o") as rd, ProcessBackend(2) as backend:
        out = run_phase(phase, _tasks(4), rd=rd, backend=backend, title="t", progress=False)
    assert [int(f["x"].iloc[0]) for f in out.values] == [0, 1, 2, 3]


def test_a_phase_without_shards_runs_every_task_and_keeps_results_in_memory():
    seen = []
    out = run_phase(
        Phase(_slow_first, "searches"),
        _tasks(3),
        rd=None,
        backend=SerialBackend(),
        title="t",
        progress=False,
        on_result=lambda task, res: seen.append((task.key, res)),
    )
    assert out.values == [0, 1, 2] and (out.computed, out.reused) == (3, 0)
    assert seen == [("t00", 0), ("t01", 1), ("t02", 2)]


def test_keys_must_be_distinct_and_a_sharded_phase_needs_a_run_directory():
    with pytest.raises(ValueError, match="distinct keys"):
        run_phase(SQUARES, _tasks(2) * 2, rd=None, backend=SerialBackend(), title="t")
    with pytest.raises(ValueError, match="run directory"):
        run_phase(SQUARES, _tasks(2), rd=None, backend=SerialBackend(), title="t")
    with pytest.raises(ValueError, match="both `folder` and `codec`"):
        Phase(_square, "squares", "squares")


def test_phases_count_every_phase_of_a_job_and_counted_tasks_clean_up(tmp_path):
    counted = Phase(_counting, "steps", "counted", FRAMES, encode=lambda x: pd.DataFrame({"x": [x]}), steps=3)
    with _open(tmp_path / "o") as rd:
        job = Phases(rd, SerialBackend(), "t", progress=True)
        job.run(SQUARES, _tasks(2))
        job.run(counted, _tasks(3))
        assert (job.computed, job.reused) == (5, 0)
    assert not (tmp_path / "o" / "progress").exists()  # the counters' folder is removed after the phase
    with _open(tmp_path / "o") as rd:
        job = Phases(rd, SerialBackend(), "t", progress=False)
        job.run(SQUARES, _tasks(2))
        job.run(counted, _tasks(3))
        assert (job.computed, job.reused) == (0, 5)


def test_tasks_that_count_their_steps_get_a_counter_whatever_their_number_of_steps(tmp_path):
    # one step (a stress scenario with repeats = 1) or no run directory: the payload is still (payload, counter)
    one = Phase(_counting, "steps", "one", FRAMES, encode=lambda x: pd.DataFrame({"x": [x]}), steps=1)
    with _open(tmp_path / "o") as rd:
        out = run_phase(one, _tasks(2), rd=rd, backend=SerialBackend(), title="t", progress=True)
    assert [int(f["x"].iloc[0]) for f in out.values] == [0, 1]
    bare = run_phase(Phase(_counting, "steps", steps=3), _tasks(2), rd=None, backend=SerialBackend(), title="t")
    assert bare.values == [0, 1]


def test_task_counters_turn_the_tasks_counter_files_into_bar_steps(tmp_path):
    # each task writes its step count (throttled, the last one always); the parent's poller turns the
    # counts into bar steps, and a finished task completes its share whatever its file said
    steps: list[int] = []
    keys = ["0__binomial__n100", "0__adaptive__n100"]
    with phases.TaskCounters(tmp_path, keys, 5, steps.append) as prog:
        counter = prog.counter(keys[0])
        for done in range(1, 6):
            counter(done)  # within 0.2 s: only the last write is forced
        assert (tmp_path / f"{keys[0]}.txt").read_text() == "5"
        time.sleep(1.2)  # the poller reads every 0.5 s
        assert sum(steps) == 5
        prog.finished(keys[1])
        prog.finished(keys[0])  # already complete: no more steps
    assert sum(steps) == 10
    missing = phases._Counter(tmp_path / "gone" / "x.txt", 3)
    missing(3)  # a folder that does not exist here (remote worker): ignored
    assert not (tmp_path / "gone").exists()
