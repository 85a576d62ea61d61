"""Benchmark: ``simrec run quickstart`` end to end, AUC's share, and ``simrec --help``.

Three measurements, each with its reference line in the same run:

1. ``simrec run quickstart`` (30 tasks: 5 replicates x 6 worlds at ML-100K
   size, 3 recommenders, 6 list metrics and AUC, then 14 figures) in a fresh
   subprocess into a fresh folder, serial and with ``--jobs 2``: wall seconds
   and CPU seconds (the process and its children, ``RUSAGE_CHILDREN``).
   Target (issue 13): <= 15 s wall on 2 cores, figures included.
2. The 30 tasks in this process, with the scenario's metrics and with AUC
   removed (the reference line): CPU seconds; target AUC within 1.5x. The
   LDA generator's compiled kernel is loaded before either pass.
3. ``simrec --help`` in a fresh interpreter (best of 3), beside the bare
   interpreter (``python -c pass``): CPU seconds; target <= 0.5 s.
   Below it, AUC per recommender for one replicate's two relevance sets
   (observed and true) at the quickstart's size (943 users x 1,682 items;
   median over the six worlds of replicate 0, 5 repeats each), CPU ms: the
   path ``run_replicate`` takes for the baselines (``score_levels`` ->
   ``TiedLevels.mid_ranks`` -> ``auc_from_ranks``, no dense block) beside
   the dense path every other recommender takes (``score`` -> ``auc_many``,
   numba's kernel warmed up first: the reference line).
4. The one-off start-up of AUC's compiled kernel in a fresh interpreter
   (importing numba and loading the cached machine code on the first dense
   AUC, best of 3), beside importing :mod:`simrec.metrics` alone: paid by a
   process that computes the AUC of a dense-scored recommender (the
   quickstart's baselines do not).

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
    # the LDA generator's compiled urn: its one-off start-up (numba's import, the cached code) is paid first,
    # or it would fall on the first pass only (measurement 1 includes it, as a run does)
    from simrec.preference import LDA

    LDA(2, 3, 2, 1.0, 0.5, 0.5).generate(0)
    out = []
    for e in (no_auc, ev):
        t0 = time.process_time()
        for r in range(sc.replicates):
            for w, world in enumerate(worlds):
                run_replicate(world, e, task_seed(sc.seed, r, w), r)
        out.append(time.process_time() - t0)
    return out[0], out[1]


def auc_cpu(reps: int = 5) -> dict[str, tuple[float, float]]:
    """Median CPU ms per recommender of AUC against both relevance sets: (levels path, dense path).

    The inputs are those of ``run_replicate`` at replicate 0 of each world
    (the same seeds); each path is repeated ``reps`` times per world.
    """
    import numpy as np
    import scipy.sparse as sp

    from simrec import as_generator, spawn_seeds, task_seed
    from simrec.config.run import load_scenario
    from simrec.experiment import true_relevance
    from simrec.metrics import auc_from_ranks, auc_many
    from simrec.observation import observe
    from simrec.split import holdout

    sc = load_scenario("quickstart")[0]
    worlds, ev = sc.worlds(), sc.evaluation.build()
    times: dict[str, tuple[list[float], list[float]]] = {rec.name: ([], []) for rec in ev.recommenders}
    warm = False
    for w, world in enumerate(worlds):
        children = spawn_seeds(task_seed(sc.seed, 0, w), 3 + len(ev.recommenders))
        truth = world.preference.generate(as_generator(children[0]), max_pairs=world.max_pairs)
        obs = observe(truth, world.profile, world.sampler, as_generator(children[1]))
        split = holdout(obs.observed, ev.test_fraction, as_generator(children[2]))
        true_rel = true_relevance(truth, obs.truth_rows, split.train)
        users = np.flatnonzero(split.test.user_counts() > 0)
        rels = [sp.csr_array(split.test.matrix[users]), sp.csr_array(true_rel[users])]
        for rec in ev.recommenders:
            if not warm:  # numba's start-up is measurement 4, not part of a call
                auc_many(rec.score(split.train, true_rel, np.random.default_rng(0), users=users), rels)
                warm = True
            for _ in range(reps):
                t0 = time.process_time()
                lv = rec.score_levels(split.train, true_rel, users=users)
                [auc_from_ranks(r, lv.n_candidates()) for r in lv.mid_ranks(rels)]
                t1 = time.process_time()
                auc_many(rec.score(split.train, true_rel, np.random.default_rng(0), users=users), rels)
                t2 = time.process_time()
                times[rec.name][0].append(t1 - t0)
                times[rec.name][1].append(t2 - t1)
    return {name: (1000 * float(np.median(a)), 1000 * float(np.median(b))) for name, (a, b) in times.items()}


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
    bare = min((child_run(["-c", "pass"]) for _ in range(3)), key=lambda x: x[1])
    helps = min((child_run(["-m", "simrec.cli", "--help"]) for _ in range(3)), key=lambda x: x[1])
    print(f"{'python -c pass (reference, best of 3)':<52} {bare[0]:8.2f} {bare[1]:8.2f}")
    print(f"{'simrec --help (best of 3)':<52} {helps[0]:8.2f} {helps[1]:8.2f}")
    print(f"\n{'AUC of one replicate, both relevance sets, CPU ms':<52} {'levels':>8} {'dense':>8}")
    for name, (lv_ms, dense_ms) in auc_cpu().items():
        print(f"{'  ' + name:<52} {lv_ms:8.2f} {dense_ms:8.2f}")
    print(f"{'  (dense: score + auc_many, the reference line)':<52}\n")
    metrics = min((child_run(["-c", _IMPORT_METRICS]) for _ in range(3)), key=lambda x: x[1])
    first = min((child_run(["-c", _IMPORT_METRICS + _FIRST_AUC]) for _ in range(3)), key=lambda x: x[1])
    print(f"{'import simrec.metrics (reference, best of 3)':<52} {metrics[0]:8.2f} {metrics[1]:8.2f}")
    print(f"{'  + first AUC: kernel start-up (best of 3)':<52} {first[0]:8.2f} {first[1]:8.2f}")
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
