"""Benchmark: the user-sampling experiment at ml-20m scale (simrec.stress.user_sampling), wall and CPU time.

Synthetic global ranks for M = 136,677 users (ml-20m's evaluated users) and
R = 5 recommenders among N = 20,720 items, top-heavy Beta(0.3, 1) shapes
(P(R <= x) = (x/N)^a, a = 0.25-0.45 as Li & Jin fit), Recall/NDCG/AP at
K = 1..50 (J = 150 metric columns), samples of m = 1K, 5K and 10K users
(the dissertation's Tables 6-7), ``--repeats`` samples each (default 100).

Rows:

* ``run_user_sampling`` — the library: per sample one ``bincount`` of the
  m users' capped ranks per recommender and one (k_max+1)² joint histogram
  per pair, then the moments from the (k_max+1) x J table of F;
* ``direct (peer)`` — the straightforward vectorised computation on the same
  draws: F(R_u) for the m sampled users of every recommender as an (m, J)
  array (``metric_values``), their means, squares and pairwise products.
  Both give the same numbers (checked here, to 1e-12).

Every timing is the median of ``--repeat`` runs of wall time
(``perf_counter``) and CPU time of this process (``process_time``); the load
average is printed before and after.

Run: ``python bench/bench_user_sampling.py`` (about a minute), ``--quick``
for small sizes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from itertools import combinations

import numpy as np

from simrec.stress import RecommenderRanks
from simrec.stress.harness import metric_values
from simrec.stress.user_sampling import UserSamplingConfig, run_user_sampling


def _ranks(rng: np.random.Generator, n_users: int, n_items: int, a: float) -> np.ndarray:
    return np.clip(np.ceil(n_items * rng.random(n_users) ** (1 / a)), 1, n_items).astype(np.int64)


def _direct(recs: list[RecommenderRanks], size: int, config: UserSamplingConfig, seed: int) -> np.ndarray:
    """The peer: F on the sampled users as dense (m, J) arrays; returns the means (repeats, R, J)."""
    gen = np.random.default_rng(seed)
    f = config.f_table()[:-1]
    R = len(recs)
    out = np.empty((config.repeats, R, f.shape[1]))
    for rep in range(config.repeats):
        idx = gen.choice(recs[0].ranks.size, size, replace=False)
        vals = [metric_values(r.ranks[idx], f) for r in recs]
        for j, v in enumerate(vals):
            out[rep, j] = v.mean(axis=0)
            _ = (v * v).mean(axis=0)
        for a, b in combinations(range(R), 2):
            _ = (vals[a] * vals[b]).mean(axis=0)
    return out


def _time(fn, repeat: int) -> tuple[float, float, object]:
    walls, cpus, res = [], [], None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        res = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="M = 20,000, sizes 1K/5K, 20 repeats")
    ap.add_argument("--repeats", type=int, default=100, help="samples of users per size")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (median)")
    args = ap.parse_args()
    M, N = (20_000, 5_000) if args.quick else (136_677, 20_720)
    sizes = (1000, 5000) if args.quick else (1000, 5000, 10_000)
    repeats = 20 if args.quick else args.repeats
    rng = np.random.default_rng(0)
    recs = [
        RecommenderRanks(f"R{i}", _ranks(rng, M, N, a), np.full(M, N), np.arange(M))
        for i, a in enumerate((0.25, 0.3, 0.35, 0.4, 0.45))
    ]
    config = UserSamplingConfig(sizes=sizes, repeats=repeats)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"M = {M:,} users, R = {len(recs)} recommenders, N = {N:,}, J = {len(config.ks)} metric columns, "
        f"{repeats} samples per size; median of {args.repeat} runs"
    )
    print(f"{'m':>7} | {'implementation':<18} | {'wall s':>7} | {'CPU s':>7} | {'per sample ms':>13} | ratio")
    for m in sizes:
        w_lib, c_lib, lib = _time(lambda: run_user_sampling(recs, m, config, rng=m), args.repeat)
        w_dir, c_dir, direct = _time(lambda: _direct(recs, m, config, m), args.repeat)
        np.testing.assert_allclose(lib.mean, direct, rtol=0, atol=1e-12)  # type: ignore[union-attr]
        print(
            f"{m:>7,} | {'run_user_sampling':<18} | {w_lib:7.2f} | {c_lib:7.2f} | {1e3 * w_lib / repeats:13.1f} | 1.00"
        )
        print(
            f"{m:>7,} | {'direct (peer)':<18} | {w_dir:7.2f} | {c_dir:7.2f} | {1e3 * w_dir / repeats:13.1f} | "
            f"{w_dir / w_lib:.2f}"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
