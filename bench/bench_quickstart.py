"""Benchmark: ``simrec run quickstart`` end to end, AUC's share, and ``simrec --help``.

Three measurements, each with its reference line in the same run:

1. ``simrec run quickstart`` (30 tasks: 5 replicates x 6 worlds at ML-100K
   size, 3 recommenders, 6 list metrics and AUC, then 14 figures) in a fresh
   subprocess into a fresh folder, serial and with ``--jobs 2``: wall seconds
   and CPU seconds (the process and its children, ``RUSAGE_CHILDREN``).
   Target (issue 13): <= 15 s wall on 2 cores, figures included.
2. The 30 tasks in this process, with the scenario's metrics and with AUC
   removed (the reference line): CPU seconds; target AUC within 1.5x.
3. ``simrec --help`` in a fresh interpreter (best of 3), beside the bare
   interpreter (``python -c pass``): CPU seconds; target <= 0.5 s.
   Below it, the dense score blocks AUC needs (the part of the AUC cost
   paid by the recommenders): CPU milliseconds of one ``score`` call per
   recommender at the quickstart's size (943 users x 1,682 items; median
   over the six worlds' recorded calls, 5 repeats each), beside the
   block's Uniform(0, 1) draws alone (the reference line: the floor of
   every baseline, whose random streams must not change).
4. The one-off start-up of AUC's compiled kernel in a fresh interpreter
   (importing numba and loading the cached machine code on the first AUC,
   best of 3), beside importing :mod:`simrec.metrics` alone: part of the
   AUC cost of every process (measurement 2 includes it once).

The load (``os.getloadavg``) is printed before and after.

Run: ``python bench/bench_quickstart.py [--skip-run]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def child_run(args: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system, children) seconds of one subprocess."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def tasks_cpu() -> tuple[float, float]:
    """CPU seconds of the quickstart's 30 tasks without and with AUC (same seeds)."""
    from simrec import task_seed
    from simrec.config.run import load_scenario
    from simrec.experiment import run_replicate

    sc = load_scenario("quickstart")[0]
    worlds, ev = sc.worlds(), sc.evaluation.build()
    no_auc = dataclasses.replace(ev, metrics=tuple(m for m in ev.metrics if not m.needs_scores))
    out = []
    for e in (no_auc, ev):
        t0 = time.process_time()
        for r in range(sc.replicates):
            for w, world in enumerate(worlds):
                run_replicate(world, e, task_seed(sc.seed, r, w), r)
        out.append(time.process_time() - t0)
    return out[0], out[1]


_DRAWS = "Uniform draws alone (reference)"


def score_cpu(reps: int = 5) -> dict[str, float]:
    """Median CPU ms of one dense ``score`` block per recommender (the quickstart's six worlds, replicate 0).

    The inputs are recorded while ``run_replicate`` runs (the recommenders'
    ``score`` wrapped for that pass only), then each recorded call is repeated
    ``reps`` times from the same generator state.
    """
    import numpy as np

    from simrec import task_seed
    from simrec.config.run import load_scenario
    from simrec.experiment import run_replicate

    sc = load_scenario("quickstart")[0]
    worlds, ev = sc.worlds(), sc.evaluation.build()
    calls: list[tuple] = []
    originals = {type(rec): type(rec).score for rec in ev.recommenders}

    def recorder(fn):
        def score(self, train, relevant, rng=None, users=None, **kw):
            calls.append((self, train, relevant, rng.bit_generator.state, users, kw))
            return fn(self, train, relevant, rng, users=users, **kw)
        return score

    try:
        for cls, fn in originals.items():
            cls.score = recorder(fn)
        for w, world in enumerate(worlds):
            run_replicate(world, ev, task_seed(sc.seed, 0, w), 0)
    finally:
        for cls, fn in originals.items():
            cls.score = fn
    times: dict[str, list[float]] = {}
    for rec, train, relevant, state, users, kw in calls:
        for _ in range(reps):
            gen = np.random.Generator(np.random.PCG64())
            gen.bit_generator.state = state
            t0 = time.process_time()
            rec.score(train, relevant, gen, users=users, **kw)
            times.setdefault(rec.name, []).append(time.process_time() - t0)
            t0 = time.process_time()
            gen.random((train.n_users if users is None else len(users), train.n_items))
            times.setdefault(_DRAWS, []).append(time.process_time() - t0)
    return {name: 1000 * float(np.median(t)) for name, t in times.items()}


_IMPORT_METRICS = "import numpy as np, scipy.sparse as sp; from simrec.metrics import auc"
_FIRST_AUC = "; auc(np.arange(6.0).reshape(2, 3), sp.csr_array(np.eye(2, 3)))"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-run", action="store_true", help="skip the end-to-end runs")
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min), {os.cpu_count()} CPUs\n")
    print(f"{'measurement':<52} {'wall s':>8} {'CPU s':>8}")
    if not args.skip_run:
        for extra in ([], ["--jobs", "2"]):
            with tempfile.TemporaryDirectory() as tmp:
                wall, cpu = child_run(["-m", "simrec.cli", "run", "quickstart", "--out", str(Path(tmp) / "q"), *extra])
            label = "simrec run quickstart" + (" --jobs 2" if extra else " (serial)") + ", with figures"
            print(f"{label:<52} {wall:8.2f} {cpu:8.2f}")
    base, with_auc = tasks_cpu()
    print(f"{'30 tasks without AUC (reference)':<52} {'':>8} {base:8.2f}")
    print(f"{'30 tasks with AUC':<52} {'':>8} {with_auc:8.2f}")
    print(f"{'  ratio with / without AUC':<52} {'':>8} {with_auc / base:7.2f}x")
    for name, ms in score_cpu().items():
        print(f"{'  one score block, ms: ' + name:<52} {'':>8} {ms:8.2f}")
    bare = min((child_run(["-c", "pass"]) for _ in range(3)), key=lambda x: x[1])
    helps = min((child_run(["-m", "simrec.cli", "--help"]) for _ in range(3)), key=lambda x: x[1])
    print(f"{'python -c pass (reference, best of 3)':<52} {bare[0]:8.2f} {bare[1]:8.2f}")
    print(f"{'simrec --help (best of 3)':<52} {helps[0]:8.2f} {helps[1]:8.2f}")
    metrics = min((child_run(["-c", _IMPORT_METRICS]) for _ in range(3)), key=lambda x: x[1])
    first = min((child_run(["-c", _IMPORT_METRICS + _FIRST_AUC]) for _ in range(3)), key=lambda x: x[1])
    print(f"{'import simrec.metrics (reference, best of 3)':<52} {metrics[0]:8.2f} {metrics[1]:8.2f}")
    print(f"{'  + first AUC: kernel start-up (best of 3)':<52} {first[0]:8.2f} {first[1]:8.2f}")
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
