"""Benchmark: item-sampling estimators on user samples (``[user_sampling] estimators``), wall and CPU time.

Synthetic global ranks at ML-1M size (M = 6,040 users, N = 3,706 items, R = 3
recommenders, top-heavy shapes as in ``bench_user_sampling.py``), binomial
sampling at n = 100, the estimators naive, BV(γ = 0.1), MLE and MN_MES,
Recall/NDCG/AP at K = 1..50, samples of m = 1K and 3K users.

Rows per m:

* ``exact part only`` — :func:`run_user_sampling` without estimators (the
  dissertation's experiment);
* ``+ estimators`` — with the four estimators on every sample's sampled ranks
  (``n_boot = 0``), and ``+ estimators, n_boot`` with a bootstrap over the
  sample's users (``--n-boot``, default 10);
* ``harness, all users (reference)`` — :func:`run_stress` of the same
  estimators on all M users for every recommender (the item-sampled evaluation
  the estimator part subsamples), measured in the same run.

Every timing is one run's wall time (``perf_counter``) and CPU time of this
process (``process_time``); the load average is printed before and after.
Run: ``python bench/bench_user_sampling_estimators.py`` (a few minutes on a busy
machine), ``--repeats`` samples per size (default 20).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from simrec.sampling import MLE, BiasVariance, MESPrior, MSEOptimal, Naive
from simrec.stress import RecommenderRanks, StressConfig, run_stress
from simrec.stress.user_sampling import UserSamplingConfig, run_user_sampling


def _ranks(rng: np.random.Generator, n_users: int, n_items: int, a: float) -> np.ndarray:
    return np.clip(np.ceil(n_items * rng.random(n_users) ** (1 / a)), 1, n_items).astype(np.int64)


def _time(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    res = fn()
    return time.perf_counter() - w0, time.process_time() - c0, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20, help="samples of users per size (and harness repeats)")
    ap.add_argument("--n-boot", type=int, default=10, help="bootstrap replicates of the n_boot row")
    args = ap.parse_args()
    M, N, n = 6040, 3706, 100
    rng = np.random.default_rng(0)
    recs = [
        RecommenderRanks(f"R{i}", _ranks(rng, M, N, a), np.full(M, N), np.arange(M))
        for i, a in enumerate((0.3, 0.35, 0.4))
    ]
    ests = (Naive(), BiasVariance(0.1), MLE(), MSEOptimal(MESPrior(0.001)))
    sizes = (1000, 3000)
    seeds = [[np.random.SeedSequence([7, j])] for j in range(len(recs))]
    plain = UserSamplingConfig(sizes=sizes, repeats=args.repeats)
    with_e = UserSamplingConfig(sizes=sizes, repeats=args.repeats, estimators=ests, item_sizes=(n,))
    with_b = UserSamplingConfig(sizes=sizes, repeats=args.repeats, estimators=ests, item_sizes=(n,), n_boot=args.n_boot)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"M = {M:,}, N = {N:,}, R = {len(recs)}, n = {n}, estimators {', '.join(e.name for e in ests)}, "
        f"J = {len(plain.ks)} metric columns, {args.repeats} samples per size"
    )
    print(f"{'m':>7} | {'computation':<32} | {'wall s':>7} | {'CPU s':>7} | {'per sample ms':>13}")
    w, c, _ = _time(
        lambda: [
            run_stress(r, "binomial", n, StressConfig(repeats=args.repeats, estimators=ests), rng=s[0])
            for r, s in zip(recs, seeds)
        ]
    )
    print(f"{M:>7,} | {'harness, all users (reference)':<32} | {w:7.2f} | {c:7.2f} | {1e3 * w / args.repeats:13.1f}")
    for m in sizes:
        for label, cfg in (
            ("exact part only", plain),
            ("+ estimators", with_e),
            (f"+ estimators, n_boot = {args.n_boot}", with_b),
        ):
            w, c, _ = _time(lambda cfg=cfg: run_user_sampling(recs, m, cfg, rng=m, item_rngs=seeds))
            print(f"{m:>7,} | {label:<32} | {w:7.2f} | {c:7.2f} | {1e3 * w / args.repeats:13.1f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
