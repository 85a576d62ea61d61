"""The task layer (simrec.tasks): same results on every backend, retries, failures, interrupts, kills.

One local Ray cluster (2 CPUs) serves the whole module; the kill tests run a
small driver script in a subprocess, kill it and check that every process it
started (workers, forkserver, Ray's GCS/raylet/agents/workers) is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from simrec.tasks import (
    Backend,
    BackendError,
    ProcessBackend,
    RayBackend,
    SerialBackend,
    Task,
    TaskError,
    TaskFailure,
    format_seed,
    make_backend,
    run_tasks,
)

SEED = 20190531


# -- task functions (module level: workers import them) ------------------------


def draw(seed: np.random.SeedSequence) -> np.ndarray:
    """A seeded computation with BLAS in it."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((120, 120))
    return np.concatenate([np.linalg.eigvalsh(a @ a.T), rng.random(5)])


def sleep_then(arg: tuple[float, int]) -> int:
    seconds, value = arg
    time.sleep(seconds)
    return value


def finish_after_others(arg: tuple[str, int, int, int]) -> int:
    """Task 0 waits (up to 120 s) until the ``n_others`` other tasks have left their marker."""
    folder, index, n_others, value = arg
    if index == 0:
        deadline = time.monotonic() + 120
        while len(list(Path(folder).glob("done-*"))) < n_others and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the others' results are on their way back
    else:
        (Path(folder) / f"done-{index}").touch()
    return value


def fail_once(arg: tuple[str, int]) -> int:
    """Fails the first time it runs for a marker file, then succeeds."""
    marker, value = arg
    path = Path(marker)
    if not path.exists():
        path.touch()
        raise RuntimeError(f"transient failure of {value}")
    return value


def fail_on(arg: tuple[str, int, int]) -> int:
    """Records each attempt in a log file; task ``bad`` always fails."""
    log, value, bad = arg
    with open(log, "a") as f:
        f.write(f"{value}\n")
    if value == bad:
        raise ValueError(f"value {value} is bad")
    return value * 10


def die_on(arg: tuple[int, int]) -> int:
    """Kills its own worker process for task ``bad``."""
    value, bad = arg
    time.sleep(0.1)
    if value == bad:
        os._exit(3)
    return value


def worker_pid(_: object) -> int:
    time.sleep(0.05)
    return os.getpid()


def _tasks(payloads: list, name: str = "task") -> list[Task]:
    return [Task(f"{name} {i}", i, p) for i, p in enumerate(payloads)]


# -- backends ------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_backend():
    pytest.importorskip("ray")
    # the workers import this test module (a cluster's nodes need simrec the same way)
    backend = RayBackend(n_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    backend.start()
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def process_backend():
    with ProcessBackend(2) as backend:
        yield backend


@pytest.fixture(params=["serial", "processes", pytest.param("ray", marks=pytest.mark.slow)])
def backend(request) -> Backend:
    if request.param == "serial":
        return SerialBackend()
    return request.getfixturevalue(f"{'process' if request.param == 'processes' else 'ray'}_backend")


@pytest.fixture(params=["processes", pytest.param("ray", marks=pytest.mark.slow)])
def worker_backend(request) -> Backend:
    return request.getfixturevalue(f"{'process' if request.param == 'processes' else 'ray'}_backend")


# -- results -------------------------------------------------------------------


@pytest.mark.slow
def test_same_results_on_every_backend(backend):
    seeds = [np.random.SeedSequence(SEED, spawn_key=(i,)) for i in range(6)]
    tasks = [Task(f"cell {i}", s, s) for i, s in enumerate(seeds)]
    expected = [draw(s) for s in seeds]  # in this process, BLAS threads as they are
    got = run_tasks(draw, tasks, backend=backend)
    assert len(got) == len(expected)
    for x, y in zip(got, expected):
        np.testing.assert_array_equal(x, y)  # bit for bit


def test_results_in_task_order_callbacks_in_completion_order(backend, tmp_path):
    seen: list[tuple[int, int]] = []
    if backend.name == "serial":
        fn, args = sleep_then, [(0.05, 100 + i) for i in range(4)]
    else:  # the first task finishes only after the three others have (no timing assumption)
        fn, args = finish_after_others, [(str(tmp_path), i, 3, 100 + i) for i in range(4)]
    out = run_tasks(fn, _tasks(args), backend=backend, on_result=lambda i, r: seen.append((i, r)))
    assert out == [100, 101, 102, 103]
    assert sorted(seen) == [(0, 100), (1, 101), (2, 102), (3, 103)]
    if backend.name == "serial":
        assert [i for i, _ in seen] == [0, 1, 2, 3]
    else:
        assert seen[-1] == (0, 100)


def test_empty_task_list(backend):
    assert run_tasks(draw, [], backend=backend) == []


def test_backend_serves_several_calls_without_restarting(process_backend):
    first = set(run_tasks(worker_pid, _tasks([None] * 6), backend=process_backend))
    second = set(run_tasks(worker_pid, _tasks([None] * 6), backend=process_backend))
    assert second <= first and len(first) <= 2


# -- failures ------------------------------------------------------------------


def test_task_failing_once_is_retried(backend, tmp_path):
    tasks = _tasks([(str(tmp_path / f"m{i}"), i) for i in range(3)])
    assert run_tasks(fail_once, tasks, backend=backend) == [0, 1, 2]


def test_failing_task_is_reported_and_the_others_kept(backend, tmp_path):
    log = tmp_path / "attempts.log"
    seeds = [np.random.SeedSequence(SEED, spawn_key=(i, 1)) for i in range(5)]
    tasks = [Task(f"replicate {i}, world ibp-pop", s, (str(log), i, 2)) for i, s in enumerate(seeds)]
    recorded: dict[int, int] = {}
    with pytest.raises(TaskError) as info:
        run_tasks(fail_on, tasks, backend=backend, on_result=recorded.__setitem__)
    assert recorded == {0: 0, 1: 10, 3: 30, 4: 40}
    assert info.value.results == [0, 10, None, 30, 40]
    (failure,) = info.value.failures
    assert failure.label == "replicate 2, world ibp-pop"
    assert failure.seed == "SeedSequence(entropy=20190531, spawn_key=(2, 1))"
    assert failure.error == "ValueError: value 2 is bad"
    assert "in fail_on" in failure.traceback and failure.traceback.rstrip().endswith("ValueError: value 2 is bad")
    assert str(info.value) == (
        "task 'replicate 2, world ibp-pop' with seed "
        "SeedSequence(entropy=20190531, spawn_key=(2, 1)) failed: ValueError: value 2 is bad"
    )
    assert log.read_text().split().count("2") == 2  # tried, retried once


def test_retries_zero_reports_the_first_failure(tmp_path):
    with pytest.raises(TaskError) as info:
        run_tasks(fail_once, _tasks([(str(tmp_path / "m"), 7)]), backend=SerialBackend(), retries=0)
    assert info.value.failures[0].error == "RuntimeError: transient failure of 7"


@pytest.mark.slow
def test_on_result_error_stops_the_run_and_propagates(backend):
    def disk_full(i: int, r: int) -> None:
        raise OSError(28, "No space left on device")

    t = time.perf_counter()
    with pytest.raises(OSError, match="No space left"):
        run_tasks(sleep_then, _tasks([(0.05, 1)] + [(30.0, 2)] * 3), backend=backend, on_result=disk_full)
    assert time.perf_counter() - t < 10  # the 30 s tasks were not waited for
    assert run_tasks(sleep_then, _tasks([(0.0, 5)]), backend=backend) == [5]  # still usable


@pytest.mark.slow
def test_keyboard_interrupt_stops_workers_promptly(backend):
    def interrupt(i: int, r: int) -> None:
        raise KeyboardInterrupt

    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_tasks(sleep_then, _tasks([(0.05, 1)] + [(30.0, 2)] * 3), backend=backend, on_result=interrupt)
    assert time.perf_counter() - t < 10
    assert run_tasks(sleep_then, _tasks([(0.0, 5)]), backend=backend) == [5]


def test_dead_worker_charges_only_its_task(worker_backend):
    got: dict[int, int] = {}
    with pytest.raises(TaskError) as info:
        run_tasks(die_on, _tasks([(i, 3) for i in range(6)]), backend=worker_backend, on_result=got.__setitem__)
    assert [f.label for f in info.value.failures] == ["task 3"]
    assert sorted(got) == [0, 1, 2, 4, 5]


def test_run_tasks_validation():
    with pytest.raises(ValueError, match=r"`retries` must be an integer >= 0; got -1"):
        run_tasks(draw, [], backend=SerialBackend(), retries=-1)
    with pytest.raises(TypeError, match=r"`tasks\[0\]` must be a simrec.tasks.Task; got int"):
        run_tasks(draw, [1], backend=SerialBackend())  # type: ignore[list-item]
    with pytest.raises(TypeError, match="`backend` must be a simrec.tasks.Backend; got str"):
        run_tasks(draw, [], backend="serial")  # type: ignore[arg-type]


def test_format_seed_and_failure_line():
    assert format_seed(np.random.SeedSequence(5, spawn_key=(3,))) == "SeedSequence(entropy=5, spawn_key=(3,))"
    assert format_seed(12) == "12" and format_seed(None) == "None"
    f = TaskFailure("cell", "12", "ValueError: two\nlines", "tb")
    assert f.line() == "task 'cell' with seed 12 failed: ValueError: two lines"


# -- choosing a backend ----------------------------------------------------------


def test_make_backend():
    assert isinstance(make_backend(None), SerialBackend)
    b = make_backend(None, 2)
    assert isinstance(b, ProcessBackend) and (b.name, b.n_workers) == ("processes", 2)
    assert isinstance(make_backend("serial", 2), SerialBackend)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("foo",), "`--backend` must be one of serial, processes, ray; got 'foo'"),
        (("processes", 0), "`n_jobs` must be >= 1; got 0"),
        (("serial", 1, "auto"), "`--address` needs --backend ray; got --backend serial"),
        ((None, 1, "auto"), "`--address` needs --backend ray; got --backend unset"),
    ],
)
def test_make_backend_validation(args, message):
    with pytest.raises(ValueError) as info:
        make_backend(*args)
    assert str(info.value) == message


def test_ray_missing_is_a_backend_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(BackendError, match=r'the ray backend needs Ray: pip install "simrec\[ray\]"'):
        make_backend("ray", 2)
    with pytest.raises(BackendError, match="pip install"):
        RayBackend()


def test_ray_backend_validation():
    pytest.importorskip("ray")
    with pytest.raises(ValueError, match="`n_cpus` must be >= 1; got 0"):
        RayBackend(n_cpus=0)
    with pytest.raises(ValueError, match="`n_cpus` sets the CPUs of a local cluster"):
        RayBackend(address="auto", n_cpus=2)


def test_closed_backend_cannot_be_reused():
    b = ProcessBackend(1)
    with b:
        assert run_tasks(sleep_then, _tasks([(0.0, 1)]), backend=b) == [1]
    b.close()  # idempotent
    with pytest.raises(BackendError, match="closed"):
        run_tasks(sleep_then, _tasks([(0.0, 1)]), backend=b)


# -- kills of the calling process ---------------------------------------------------

DRIVER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from simrec.tasks import Task, make_backend, run_tasks

    def sleeper(marker):
        Path(marker).touch()
        time.sleep(120)

    if __name__ == "__main__":
        name, folder = sys.argv[1], sys.argv[2]
        with make_backend(name, 2) as backend:
            run_tasks(sleeper, [Task(f"sleep {i}", i, f"{folder}/started-{i}") for i in range(4)], backend=backend)
""")


def _start_driver(tmp_path: Path, backend: str) -> tuple[subprocess.Popen, list]:
    """Run DRIVER until both workers run a task; return it and every process below it."""
    psutil = pytest.importorskip("psutil")  # comes with LensKit
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(script), backend, str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("started-*"))) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the driver did not start its tasks (exit code {proc.poll()})")
        time.sleep(0.1)
    time.sleep(1.0)  # let Ray's agents finish starting
    return proc, psutil.Process(proc.pid).children(recursive=True)


def _alive(procs: list) -> list:
    import psutil

    out = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _wait_gone(procs: list, seconds: float) -> list:
    deadline = time.monotonic() + seconds
    while _alive(procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _alive(procs)
    for p in left:  # do not leave them behind if the test fails
        p.kill()
    return [(p.pid, p.name()) for p in left]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["processes", "ray"])
def test_sigkill_of_the_driver_leaves_no_worker(tmp_path, name):
    if name == "ray":
        pytest.importorskip("ray")
    proc, children = _start_driver(tmp_path, name)
    assert len(children) >= 3  # processes: forkserver + 2 workers (+ resource tracker); ray: many
    proc.kill()
    proc.wait()
    assert _wait_gone(children, 5) == []


REAPED = textwrap.dedent("""
    import subprocess, sys, time
    from simrec.tasks._reaper import reaper_go, start_reaper

    reaper = start_reaper()
    shell = subprocess.Popen(["sh", "-c", "sleep 300 & echo started; wait"], stdout=subprocess.PIPE)
    shell.stdout.readline()  # its child `sleep` runs
    reaper_go(reaper)
    print(reaper.pid, " ".join(reaper.args), flush=True)
    time.sleep(300)
""")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_reaper_kills_the_tree_started_after_go_when_the_driver_dies(tmp_path):
    """The reaper of a local Ray cluster without Ray: a driver starts it, then a shell with a child `sleep` (standing
    for Ray's GCS, raylet and agents), says go and is SIGKILLed: the shell and its child, which would otherwise be
    orphaned and live on, are killed, and the reaper exits. The reaper that ran is the driver's own file."""
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "driver.py"
    script.write_text(REAPED)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        reaper_pid, command = proc.stdout.readline().split(" ", 1)
        # the shell's background child may not have exec'd `sleep` yet (it is a second `sh` until it does: seen
        # under the parallel suite's load), so look until it has
        deadline = time.monotonic() + 10
        while True:
            children = psutil.Process(proc.pid).children(recursive=True)
            names = set()
            for c in children:
                try:
                    names.add(c.name())
                except psutil.NoSuchProcess:
                    pass
            if names >= {"sh", "sleep"} or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert names >= {"sh", "sleep"}
    finally:
        proc.kill()
        proc.wait()
    expected = Path(__file__).resolve().parents[1] / "simrec" / "tasks" / "_reaper.py"
    assert command.split()[1:] == ["-I", str(expected), str(proc.pid)]
    assert int(reaper_pid) in {p.pid for p in children}
    assert _wait_gone(children, 5) == []


def test_sigterm_of_the_driver_interrupts_and_stops_workers(tmp_path):
    proc, children = _start_driver(tmp_path, "processes")
    t = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    assert time.monotonic() - t < 10  # running 120 s tasks were not waited for
    assert proc.returncode == -signal.SIGINT  # KeyboardInterrupt reached the top
    assert _wait_gone(children, 5) == []


def test_sigterm_handler_is_restored():
    before = signal.getsignal(signal.SIGTERM)
    seen = []
    run_tasks(
        sleep_then,
        _tasks([(0.0, 1)]),
        backend=SerialBackend(),
        on_result=lambda i, r: seen.append(signal.getsignal(signal.SIGTERM)),
    )
    assert seen[0] is not before
    assert signal.getsignal(signal.SIGTERM) is before


# -- multiprocessing's resource tracker killed while tasks run (issue 22) ----------------------------------------------


def _children(pid: int) -> dict[int, str]:
    """Live child processes of ``pid``: pid -> command line (Linux /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            out[int(entry.name)] = cmdline
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_killing_the_resource_tracker_is_one_line_and_loses_nothing(tmp_path):
    """SIGKILL of the tracker during `run --jobs 2`: exit 1 with one line (no multiprocessing traceback), the
    finished replicates kept, and re-running the same command resumes and completes."""
    from cli_helpers import RUN_TOML

    exits = Path(__file__).resolve().parent / "fixtures" / "exits"
    (tmp_path / "simrec_test_exits.py").write_text((exits / "simrec_test_exits.py").read_text())
    slow = '{ kind = "lenskit", scorer = "simrec_test_exits:PopScorer", name = "slow", params = { sleep = 0.5 } }'
    text = RUN_TOML.replace("replicates = 1", "replicates = 16").replace(
        'recommenders = [{ kind = "oracle" }, { kind = "popular" }]', f'recommenders = [{{ kind = "popular" }}, {slow}]'
    )
    (tmp_path / "s.toml").write_text(text)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "simrec.cli", "run", "s.toml", "--out", str(out), "-q", "--no-figures", "-j", "2"]
    proc = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(out.glob("replicates/*.parquet")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        trackers = [pid for pid, cmd in _children(proc.pid).items() if "resource_tracker" in cmd]
        assert len(trackers) == 1, _children(proc.pid)
        os.kill(trackers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err and "Warning" not in err, err
    assert err.startswith(f"simrec: error: multiprocessing's resource tracker (pid {trackers[0]}) died"), err
    assert err.rstrip().endswith(f"finished tasks are kept in {out}; re-run the same command to resume"), err
    kept = len(list(out.glob("replicates/*.parquet")))
    assert 1 <= kept < 16
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert len(list(out.glob("replicates/*.parquet"))) == 16
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
