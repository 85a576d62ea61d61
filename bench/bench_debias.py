"""Benchmark: the MNAR estimators at ML-1M size beside the naive metric in the same run (issue 25).

Data: 6,040 users x 3,706 items, about 1,000,000 observed pairs (bench_stats.py's
generator: Pareto-like activity, Zipf-like popularity), 20% of the pairs
held out as test, one top-50 list per user (the 50 most popular items not in
the user's training data, shuffled by a small noise: a popularity-like
recommender), propensities from Yang et al.'s power law on the training counts.
The ratio column is CPU over the reference's CPU (wall time on a shared
machine measures the others' load as much as this code).

Reference line: :func:`simrec.metrics.recall` on the same lists and test set
(today's naive evaluation). Each estimator line is the full cost of one
estimate from the lists (:func:`simrec.debias.rank_test` + ``estimate``);
"given ranked" is the estimate alone, for a harness that ranks once per
recommender and runs every estimator on it. Seconds are the best of
``--repeat`` runs; CPU (process time) is measured over the same run as the
wall time. The issue's budget: every correction < 3x the naive metric.

Run: ``python bench/bench_debias.py [--repeat 5] [--seed 0]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from simrec.debias import (
    DR,
    IPS,
    NDCG,
    SNDR,
    SNIPS,
    InversePropensityWeights,
    Naive,
    PopularityPowerLaw,
    Recall,
    SkewWeights,
    Stratified,
    TrainPopularity,
    WeightedResampling,
    WTDWeights,
    fit_popularity_exponent,
    rank_test,
)
from simrec.metrics import UndefinedMetricWarning, ndcg, recall

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stats import N_ITEMS, N_USERS  # noqa: E402
from bench_stats import make_data as make_observed  # noqa: E402

N = 50


def make_data(seed: int) -> tuple[sp.csr_array, sp.csr_array, np.ndarray]:
    data = make_observed(seed).matrix  # bench_stats.py's ML-1M-sized pairs
    rng = np.random.default_rng(seed + 1)
    u = np.repeat(np.arange(N_USERS), np.diff(data.indptr))
    i = data.indices
    is_test = rng.random(len(i)) < 0.2
    shape = (N_USERS, N_ITEMS)
    train = sp.csr_array((np.ones((~is_test).sum(), dtype=np.int8), (u[~is_test], i[~is_test])), shape=shape)
    test = sp.csr_array((np.ones(is_test.sum(), dtype=np.int8), (u[is_test], i[is_test])), shape=shape)
    # a popularity-like recommender: the training counts plus noise, training items excluded, top 50
    counts = np.bincount(train.indices, minlength=N_ITEMS).astype(np.float64)
    lists = np.empty((N_USERS, N), dtype=np.int64)
    for u0 in range(0, N_USERS, 1024):  # blocks of users (setup, not timed)
        block = counts[None, :] + rng.random((min(1024, N_USERS - u0), N_ITEMS)) * counts.mean()
        t = train[u0 : u0 + len(block)]
        block[np.repeat(np.arange(len(block)), np.diff(t.indptr)), t.indices] = -np.inf
        top = np.argpartition(-block, N, axis=1)[:, :N]
        lists[u0 : u0 + len(block)] = np.take_along_axis(top, np.argsort(-np.take_along_axis(block, top, 1), axis=1), 1)
    return train, test, lists


def best(fn, repeat: int) -> tuple[float, float]:
    """Best wall seconds and best CPU (process) seconds over ``repeat`` runs (each measured around the same call)."""
    walls, cpus = [], []
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    warnings.simplefilter("ignore", UndefinedMetricWarning)
    train, test, lists = make_data(args.seed)
    ranked = rank_test(lists, test, train=train, n_relevant=np.diff(test.indptr) * 2.0)
    counts = np.bincount(train.indices, minlength=N_ITEMS)
    gamma = fit_popularity_exponent(lists, counts).exponent
    p = PopularityPowerLaw(exponent=gamma, floor=1e-3).item_propensities(counts, gamma)[ranked.items]
    p = np.where(np.isnan(p), 1e-3, p)
    print(f"# ML-1M size: {N_USERS} users x {N_ITEMS} items, {train.nnz} train + {test.nnz} test pairs, N = {N}")
    print(f"# uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(f"# cores: {os.cpu_count()}, best of {args.repeat}")
    rng = np.random.default_rng(1)
    lines = []
    for metric, peer in ((Recall(), recall), (NDCG(), ndcg)):
        ref_wall, ref_cpu = best(lambda: peer(lists, test), args.repeat)
        lines.append((f"naive {metric.label}: simrec.metrics.{peer.__name__} (reference)", ref_wall, ref_cpu, None))
        estimators = [
            Naive(),
            IPS(),
            SNIPS(),
            DR(TrainPopularity()),
            SNDR(TrainPopularity()),
            Stratified(),
            Stratified(weighting="inverse_propensity"),
            WeightedResampling(SkewWeights()),
            WeightedResampling(WTDWeights()),
            WeightedResampling(InversePropensityWeights()),
        ]
        for est in estimators:
            full = best(lambda: est.estimate(rank_test(lists, test, train=train, n_relevant=ranked.n_relevant),
                                             metric, p, rng=rng), args.repeat)  # fmt: skip
            given = best(lambda: est.estimate(ranked, metric, p, rng=rng), args.repeat)
            lines.append((f"{est.estimate(ranked, metric, p, rng=rng).estimator} {metric.label}", *full, given))
        lines.append((f"rank_test {metric.label} (once per recommender)", *best(
            lambda: rank_test(lists, test, train=train, n_relevant=ranked.n_relevant), args.repeat), None))  # fmt: skip
    fit = best(lambda: fit_popularity_exponent(lists, counts), args.repeat)
    lines.append(("fitted propensities: fit_popularity_exponent (once per replicate)", *fit, None))
    print(f"{'what':<66} {'wall s':>8} {'CPU s':>8} {'CPU x naive':>11} {'given ranked CPU s':>19}")
    ref = None
    for name, wall, cpu, given in lines:
        if "(reference)" in name:
            ref = cpu
        ratio = cpu / ref if ref else float("nan")
        g = "" if given is None else f"{given[1]:.4f}"
        print(f"{name:<66} {wall:8.4f} {cpu:8.4f} {ratio:11.2f} {g:>19}")
    print(f"# uptime after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
