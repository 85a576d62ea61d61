"""Benchmark the task backends of ``simrec.tasks`` (issue 9); prints plain tables.

Section 1, synthetic tasks through :func:`simrec.tasks.run_tasks` on
``serial``, ``processes`` (2 workers) and a local Ray cluster (2 CPUs):

* start-up: ``backend.start()`` plus a first round of one no-op task per
  worker (workers are spawned lazily);
* no-op tasks: wall time, CPU time (this process; and with the backend's
  processes: workers, forkserver, Ray's GCS/raylet/agents, polled with
  psutil when it is installed) and the overhead per task,
  ``(wall - serial compute) / n_tasks``, where serial compute is the time of a
  plain loop calling the function;
* CPU-bound numpy tasks (stable argsort of 2,500,000 seeded uniforms, about
  0.3 s each):
  the same numbers and the speed-up over the serial backend; the results are
  checked to be identical on every backend.

Section 2 times the real command, ``simrec run SCENARIO --out DIR --quiet
--no-figures --backend B --jobs 2`` (default: the quickstart, 30 tasks of
about 0.1 s at ML-100K size, then ``bench/ml1m-size.toml``, 8 tasks of about
0.4 s at ML-1M size: 3.1 s and 3.35 s serial on 2 quiet cores, 2026-12-01), once per backend in a subprocess, and checks that the
results are identical. A backend the command rejects (exit code 2) is
reported as skipped.

The machine load (``uptime``) is printed at the start and the end: the
reference machine has 2 cores shared with other users, so compare runs made
at similar loads.

Usage::

    python bench/bench_backends.py                 # both sections
    python bench/bench_backends.py --quick         # fewer tasks
    python bench/bench_backends.py --skip-cli      # section 1 only
    python bench/bench_backends.py --backends serial processes
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simrec.tasks import Backend, BackendError, Task, make_backend, run_tasks

SEED = 20190531
BACKENDS = ("serial", "processes", "ray")


def noop(x: Any) -> Any:
    return x


def cpu_task(seed: np.random.SeedSequence) -> float:
    """About 0.3 s of single-threaded numpy work (no BLAS), seeded."""
    order = np.argsort(np.random.default_rng(seed).random(2_500_000), kind="stable")
    return int(order[::1000].sum())


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


class _CPU:
    """CPU seconds of this process plus its descendants (psutil), between start and stop."""

    def __init__(self) -> None:
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil comes with ray[default] and the test extra
            psutil = None
        self._psutil = psutil

    def total(self) -> float:
        own = time.process_time()
        if self._psutil is None:
            return own
        kids = 0.0
        for p in self._psutil.Process().children(recursive=True):
            try:
                t = p.cpu_times()
                kids += t.user + t.system
            except self._psutil.Error:
                pass
        return own + kids


def _timed_run(fn: Callable[[Any], Any], tasks: Sequence[Task], backend: Backend) -> tuple[list, float, float]:
    cpu = _CPU()
    c0, t0 = cpu.total(), time.perf_counter()
    out = run_tasks(fn, tasks, backend=backend)
    return out, time.perf_counter() - t0, cpu.total() - c0


def _serial_compute(fn: Callable[[Any], Any], tasks: Sequence[Task]) -> float:
    t0 = time.perf_counter()
    for t in tasks:
        fn(t.payload)
    return time.perf_counter() - t0


def section_tasks(names: Sequence[str], n_noop: int, n_cpu: int) -> None:
    noop_tasks = [Task(f"noop {i}", i, i) for i in range(n_noop)]
    seeds = [np.random.SeedSequence(SEED, spawn_key=(i,)) for i in range(n_cpu)]
    cpu_tasks = [Task(f"sort {i}", s, s) for i, s in enumerate(seeds)]
    noop_compute = _serial_compute(noop, noop_tasks)
    cpu_compute = _serial_compute(cpu_task, cpu_tasks)
    print(
        f"serial compute (plain loop): {n_noop} no-op tasks {noop_compute * 1e3:.1f} ms; "
        f"{n_cpu} CPU tasks {cpu_compute:.2f} s ({cpu_compute / n_cpu:.2f} s each)\n"
    )

    rows = []
    reference = None
    serial_wall = None
    for name in names:
        try:
            backend = make_backend(name, 2)
        except BackendError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        with backend:
            t0 = time.perf_counter()
            backend.start()
            run_tasks(noop, [Task("warm-up", i, i) for i in range(backend.n_workers)], backend=backend)
            startup = time.perf_counter() - t0
            _, wall0, cpu0 = _timed_run(noop, noop_tasks, backend)
            out, wall1, cpu1 = _timed_run(cpu_task, cpu_tasks, backend)
        if reference is None:
            reference = out
        identical = out == reference
        if name == "serial":
            serial_wall = wall1
        rows.append(
            (
                f"{name} ({backend.n_workers})",
                startup,
                wall0,
                cpu0,
                (wall0 - noop_compute) / n_noop,
                wall1,
                cpu1,
                serial_wall / wall1 if serial_wall else float("nan"),
                identical,
            )
        )

    print(
        f"{'backend (workers)':<18} {'start s':>8} | {'no-op wall s':>12} {'cpu s':>7} {'ms/task':>8} | "
        f"{'cpu-bound wall s':>16} {'cpu s':>7} {'speed-up':>8} {'same':>5}"
    )
    print("-" * 104)
    for label, startup, w0, c0, per, w1, c1, speed, same in rows:
        print(
            f"{label:<18} {startup:8.2f} | {w0:12.3f} {c0:7.2f} {per * 1e3:8.3f} | "
            f"{w1:16.2f} {c1:7.2f} {speed:7.2f}x {'yes' if same else 'NO':>5}"
        )
    print(
        f"\n(no-op: {n_noop} tasks; cpu-bound: {n_cpu} tasks; cpu s counts this process and the backend's "
        "processes; speed-up = serial wall / wall)"
    )


def section_cli(names: Sequence[str], scenario: str, jobs: int) -> None:
    import resource

    exe = Path(sys.executable).with_name("simrec")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "simrec.cli"]
    rows = []
    reference = None
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as tmp:
        for name in names:
            out = Path(tmp) / name
            args = [
                *command,
                "run",
                scenario,
                "--out",
                str(out),
                "--quiet",
                "--no-figures",
                "--backend",
                name,
                "--jobs",
                str(jobs),
            ]
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            res = subprocess.run(args, check=False, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
            if res.returncode == 2:
                reason = (res.stderr.strip().splitlines() or ["exit code 2"])[-1]
                rows.append((name, None, None, f"skipped: {reason}"))
                continue
            if res.returncode != 0:
                rows.append((name, wall, cpu, f"FAILED (exit {res.returncode}): {res.stderr.strip()[-200:]}"))
                continue
            note = ""
            if (out / "results.parquet").exists():
                import pandas as pd

                frame = pd.read_parquet(out / "results.parquet")
                if reference is None:
                    reference = frame
                    note = "reference"
                else:
                    note = "same results" if frame.equals(reference) else "RESULTS DIFFER"
            rows.append((name, wall, cpu, note))
            shutil.rmtree(out, ignore_errors=True)
    serial = next((w for n, w, _, _ in rows if n == "serial" and w is not None), None)
    print(
        f"{'simrec run ' + Path(scenario).stem + f' --jobs {jobs}':<36} {'wall s':>8} {'cpu s':>8} {'speed-up':>9}  note"
    )
    print("-" * 82)
    for name, wall, cpu, note in rows:
        if wall is None:
            print(f"--backend {name:<26} {'-':>8} {'-':>8} {'-':>9}  {note}")
        else:
            speed = f"{serial / wall:8.2f}x" if serial else f"{'-':>9}"
            print(f"--backend {name:<26} {wall:8.2f} {cpu:8.2f} {speed}  {note}")
    print(
        "\n(wall time of the whole command: interpreter start, imports, cluster start-up and writing the "
        "run folder included; cpu s = the command and the children it waited for (Ray's own daemons are "
        "not its children and are not counted))"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="500 no-op and 6 CPU-bound tasks")
    ap.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    ap.add_argument("--n-noop", type=int, default=None, help="no-op tasks (default 2000)")
    ap.add_argument("--n-cpu", type=int, default=None, help="CPU-bound tasks (default 12)")
    ap.add_argument("--skip-tasks", action="store_true", help="skip section 1")
    ap.add_argument("--skip-cli", action="store_true", help="skip section 2 (simrec run)")
    ap.add_argument(
        "--scenario",
        nargs="+",
        default=["quickstart", str(Path(__file__).with_name("ml1m-size.toml"))],
        help="scenarios of section 2 (default: the quickstart, 30 tasks at ML-100K size, and "
        "bench/ml1m-size.toml, 8 tasks at ML-1M size)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="--jobs of section 2 (default 2)")
    args = ap.parse_args()
    n_noop = args.n_noop or (500 if args.quick else 2000)
    n_cpu = args.n_cpu or (6 if args.quick else 12)

    print(f"start: {_uptime()}")
    print(f"cores: {os.cpu_count()}; python {sys.version.split()[0]}; numpy {np.__version__}\n")
    if not args.skip_tasks:
        print("== 1. synthetic tasks through simrec.tasks.run_tasks ==")
        section_tasks(args.backends, n_noop, n_cpu)
        print()
    if not args.skip_cli:
        print("== 2. the real command ==")
        for scenario in args.scenario:
            section_cli(args.backends, scenario, args.jobs)
            print()
    print(f"end:   {_uptime()}")


if __name__ == "__main__":
    main()
