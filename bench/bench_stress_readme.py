"""Benchmark the "Stress-test your own ranks file" example (docs/howto/ranks.md; first in the README) (issue 13 target: <= 60 s on 2 cores).

The example's 3-row ranks file (N = 20,720; 2 recommenders, 3 users),
``repeats = 100``, schemes binomial / hypergeometric / adaptive, n = 100,
every default estimator, through ``run_stress_scenario`` (the code path of
``simrec stress``, figures off). Two runs:

* ``serial`` — in this process: wall time and this process's CPU time
  (``process_time``), i.e. the total work;
* ``processes`` — ``--jobs`` worker processes: wall time, and the CPU time of
  every descendant process (utime + stime from /proc, polled twice a second,
  the last value seen per process) plus this process's.

On a machine shared with other jobs the wall time of the second run is
inflated by the load (printed before and after); the CPU time is not, and
CPU / jobs is the wall time the run needs on ``jobs`` idle cores when its
tasks balance. The "before" line of the README comes from running this same
script against the previous commit (``PYTHONPATH=<old checkout>``), with
``--repeats 10`` and scaled (the per-repeat cost dominates).

Usage::

    python bench/bench_stress_readme.py            # 100 repeats, serial and --jobs 2
    python bench/bench_stress_readme.py --repeats 10 --only serial
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from simrec.config.stress import load_stress_scenario
from simrec.studies import run_stress_scenario
from simrec.tasks import make_backend

RANKS = "user,recommender,rank,n_candidates\nu1,MyModel,12,20720\nu2,MyModel,3,20720\nu1,Baseline,40,20720\n"
SCENARIO = """kind = "stress"
name = "my-models"
seed = 1
repeats = {repeats}

[source]
type = "file"
path = "my_ranks.csv"

[sampling]
schemes = ["binomial", "hypergeometric", "adaptive"]
sizes = [100]
"""
_TICK = os.sysconf("SC_CLK_TCK")


class _DescendantCPU:
    """Polls /proc twice a second: utime + stime of every descendant of this process (last value per pid)."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _poll(self) -> None:
        parent, cpu = {}, {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parent[int(d)] = int(fields[1])
                cpu[int(d)] = (int(fields[11]) + int(fields[12])) / _TICK
        frontier, kids = [os.getpid()], []
        while frontier:
            frontier = [p for p, pp in parent.items() if pp in frontier]
            kids += frontier
        for p in kids:
            self.seen[p] = max(self.seen.get(p, 0.0), cpu[p])

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._poll()

    def __enter__(self) -> _DescendantCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._poll()
        self._stop.set()
        self._thread.join()


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run(backend_name: str, jobs: int, repeats: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "my_ranks.csv").write_text(RANKS)
        (folder / "my-models.toml").write_text(SCENARIO.format(repeats=repeats))
        sc, path = load_stress_scenario(str(folder / "my-models.toml"))
        t0, c0 = time.perf_counter(), time.process_time()
        with _DescendantCPU() as kids, make_backend(backend_name, jobs) as backend:
            run_stress_scenario(sc, path, folder / "out", backend=backend, progress=False, figures=False)
        wall = time.perf_counter() - t0
        return wall, time.process_time() - c0 + sum(kids.seen.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", choices=["serial", "processes"], default=None)
    args = ap.parse_args()
    print(f"README ranks-file example, {args.repeats} repeats; load average {load()} (start)")
    print(f"{'backend':<12} {'jobs':>4} {'wall s':>8} {'CPU s':>8} {'CPU/jobs s':>10}  load after")
    runs = [("serial", 1), ("processes", args.jobs)]
    for name, jobs in runs:
        if args.only and name != args.only:
            continue
        wall, cpu = run(name, jobs, args.repeats)
        print(f"{name:<12} {jobs:>4} {wall:>8.1f} {cpu:>8.1f} {cpu / jobs:>10.1f}  {load()}", flush=True)


if __name__ == "__main__":
    main()
