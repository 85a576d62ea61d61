"""Calibration cost at ML-1M scale: one objective evaluation per cell, and a whole GP search.

ML-1M itself cannot be downloaded here, so the reference is a simulated
dataset of ML-1M's shape (6,040 users, 3,706 items, about 1M observed pairs;
IBP truth, popularity observation). Prints:

1. one objective evaluation (generate + observe + 4 key statistics + KL) for
   each of the six preference x observation cells, at parameters giving about
   1M observed pairs: seconds and tracemalloc peak;
2. a full ``--n-calls`` GP search (default 150 calls, 25 random) of one cell
   on one statistic: wall time, time in objective evaluations, time in the GP.

Usage: python bench/bench_calibration.py [--n-calls 150] [--cell ibp-pop] [--quick]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from simrec.calibration import CalibrationTarget, Objective, calibrate_cell
from simrec.config.models import CellSpec
from simrec.observation import PopularitySampler, TruncatedPareto, observe
from simrec.preference import IBP

POINTS = {
    "uniform": {"lam": 600.0},
    "ibp": {"alpha": 400.0, "c": 0.504, "sigma": 0.1},
    "lda": {"n_topics": 100, "lam": 600.0, "a": 0.1, "b": 0.05},
}
PARETO = {"m_low": 20.0, "pareto_alpha": 0.3, "m_high": 2314.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-calls", type=int, default=150)
    ap.add_argument("--cell", default="ibp-pop")
    ap.add_argument("--quick", action="store_true", help="30-call search")
    args = ap.parse_args()
    n_calls = 30 if args.quick else args.n_calls

    t0 = time.perf_counter()
    truth = IBP(n_users=6040, alpha=400.0, c=0.504, sigma=0.1).generate(0)
    ref = observe(truth, TruncatedPareto(m_low=20, alpha=0.3, m_high=2314), PopularitySampler(), 1).observed
    target = CalibrationTarget.from_interactions("ml-1m-like", ref, rng=0)
    print(
        f"reference: {ref.n_users:,} users x {ref.n_items:,} items, {ref.n_pairs:,} pairs "
        f"(built in {time.perf_counter() - t0:.2f} s)\n"
    )

    print(f"{'cell':12s} {'seconds':>8s} {'peak MiB':>9s} {'observed pairs':>15s} {'KL item pop':>12s}")
    for pref in ("uniform", "ibp", "lda"):
        for obs in ("uniform", "popularity"):
            obj = Objective(target, CellSpec(preference=pref, observation=obs), "item_popularity")
            params = {**POINTS[pref], **PARETO}
            obj(params, np.random.SeedSequence(99))  # warm-up (imports, caches)
            tracemalloc.start()
            t = time.perf_counter()
            out = obj(params, np.random.SeedSequence(1))
            secs = time.perf_counter() - t
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            name = f"{pref}-{'pop' if obs == 'popularity' else 'unif'}"
            print(
                f"{name:12s} {secs:8.3f} {peak:9.0f} {out.details.get('observed_pairs', float('nan')):15,.0f} "
                f"{out.value:12.4f}"
            )

    pref, obs_short = args.cell.split("-")
    obs = "popularity" if obs_short == "pop" else "uniform"
    obj = Objective(target, CellSpec(preference=pref, observation=obs), "item_popularity")
    t = time.perf_counter()
    res = calibrate_cell(obj, seed=3, n_calls=n_calls, n_initial=min(25, n_calls))
    wall = time.perf_counter() - t
    in_obj = sum(tr.seconds for tr in res.trials)
    refused = sum(tr.status == "refused" for tr in res.trials)
    print(f"\nGP search, cell {args.cell}, objective item_popularity, {n_calls} calls ({refused} refused):")
    print(f"{'wall s':>8s} {'objective s':>12s} {'GP + proposal s':>16s} {'best KL':>9s}")
    print(f"{wall:8.1f} {in_obj:12.1f} {wall - in_obj:16.1f} {res.best.value:9.4f}")
    print(f"best: { {k: round(v, 3) for k, v in res.best.params.items()} }")


if __name__ == "__main__":
    main()
