"""Benchmark: the time estimate of :mod:`simrec.config.cost` against measured jobs (issue 28).

For several shipped scenarios (small ones by default, the assessment with
``--all``), each job runs as ``simrec <job> NAME --out <fresh folder> -q
--jobs J`` in a fresh subprocess; the table prints, per job, its counted work,
the predicted CPU seconds (:meth:`Work.seconds`, the job's start included) and
wall seconds on ``J`` workers of a quiet machine (:func:`wall_seconds`), beside
the measured wall and CPU seconds (user + system of the process and its
children, ``RUSAGE_CHILDREN``: workers included) and the ratio measured CPU /
predicted CPU (the cost constants were set from these ratios on the reference
machine; a ratio within [0.5, 2] is the target). Measure CPU with ``--jobs 1``
(the default): with ``--jobs 2`` the workers' CPU is partly missed (they are
not all reaped by the job, the guide's ``/usr/bin/time`` trap), so only the wall
columns compare there. On a loaded machine the
measured wall exceeds the prediction by about the load / cores; the CPU columns
are the ones to compare. The load (``os.getloadavg``) is printed before and after.

The per-unit costs come from the same runs: a job whose work is mostly one
unit sets that unit's cost (quickstart: pairs and untrained scores;
lenskit-cf: trained scores; sampled-sim-ibp-pop: draws and fits).

Seen on the build machine (2 cores, load 17-25, serial, 26 Nov 2026; the first three set the constants of
their unit, the last one was not used for fitting), predicted / measured CPU s, measured wall s:
quickstart 13.2 / 12.8 (wall 57), lenskit-cf 69.7 / 70.0 (wall 301), sampled-sim-ibp-pop 191.9 / 191.3
(wall 1517), ml100k-assess --quick 29.2 / 39.2 (wall 393; with --jobs 2: wall 327 at load 17-25).

Run: ``python bench/bench_cost_model.py [--jobs 1] [--quick] [--all] [NAME ...]`` (names: ``run:quickstart``,
``stress:sampled-sim-ibp-pop``, ``assess:ml100k-assess``, ``assess:ml100k-assess:quick`` for ``--quick``, ...). Needs ``../shared/data`` (or ``SIMREC_DATA``)
for dataset-based jobs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

SMALL = ["run:quickstart", "run:lenskit-cf", "stress:sampled-sim-ibp-pop"]
QUICK = ["assess:ml100k-assess:quick"]
LARGE = ["assess:ml100k-assess", "stress:sampled-ml100k"]


def predicted(job: str, name: str, quick: bool = False):
    """The job's counted work, as the CLI counts it during validation (simrec.cli's ``_announce`` calls)."""
    if job == "run":
        from simrec.config.run import load_scenario

        return load_scenario(name)[0].work()
    if job == "stress":
        from simrec.config.stress import load_stress_scenario

        sc, path = load_stress_scenario(name)
        return sc.estimated_work(path)
    if job == "assess":
        from simrec.config.assess import load_assessment

        return load_assessment(name, quick=quick).work()
    raise SystemExit(f"unknown job {job!r} (run, stress, assess)")


def measure(job: str, name: str, jobs: int, quick: bool = False) -> tuple[float, float]:
    """Wall and CPU (user + system, children) seconds of ``simrec <job> <name>`` in a fresh subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-c", "from simrec.cli import main; main()", job, name]
        cmd += ["--out", str(Path(tmp) / "out"), "-q", "--jobs", str(jobs), *(["--quick"] if quick else [])]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=ENV, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="job:name pairs (default: the small shipped scenarios)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="also ml100k-assess --quick (needs ML-100K)")
    parser.add_argument("--all", action="store_true", help="also the assessment and the ML-100K stress scenario")
    args = parser.parse_args()
    from simrec.config.cost import MEASURED_ON, SECONDS_START, cores, wall_seconds

    names = args.names or SMALL + (QUICK if args.quick or args.all else []) + (LARGE if args.all else [])
    print(f"load before: {os.getloadavg()}  cores: {cores()}  --jobs {args.jobs}")
    print(f"cost constants measured on: {MEASURED_ON}")
    if args.jobs > 1:
        print("note: with --jobs > 1 the measured CPU misses workers' time; compare the wall columns")
    header = f"{'job':36s} {'pred CPU s':>10s} {'pred wall s':>11s} {'meas wall s':>11s} {'meas CPU s':>10s} {'CPU ratio':>9s}"
    print(header)
    rows = []
    for item in names:
        job, name, *size = item.split(":")
        quick = size == ["quick"]
        work = predicted(job, name, quick)
        cpu_pred = SECONDS_START + work.seconds()
        wall_pred = wall_seconds(work, args.jobs)
        wall, cpu = measure(job, name, args.jobs, quick)
        rows.append((item, work))
        print(
            f"{item:36s} {cpu_pred:10.1f} {wall_pred:11.1f} {wall:11.1f} {cpu:10.1f} {cpu / cpu_pred:9.2f}", flush=True
        )
    print("work counted:")
    for item, work in rows:
        print(f"  {item}: {work}")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
