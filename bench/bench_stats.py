"""Benchmark: the four key statistics at ML-1M size (Tian's thesis, §3.4).

Data: 6,040 users x 3,706 items, about 1,000,000 distinct pairs, from a simple
seeded generator (Pareto-like user activity, Zipf-like item popularity, pairs
drawn independently and de-duplicated). Similarities use 1M + 1M sampled
pairs. For each statistic: seconds and peak traced memory (tracemalloc) of
simrec's implementation, and, for the two similarities, of the "row-multiply"
method of the thesis code (``X[:, a].multiply(X[:, b]).sum(axis=0)`` over the
pair arrays, vectorized in chunks) on the same pairs.

Run: ``python bench/bench_stats.py [--pairs 1000000] [--seed 0] [--skip-rowmult]``
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from simrec.interactions import Interactions
from simrec.stats import (
    StatisticBins,
    item_cosines,
    item_popularity,
    key_statistics,
    similarity_histogram,
    user_activity,
    user_cosines,
)
from simrec.stats.similarity import sample_unique_pairs

N_USERS, N_ITEMS, TARGET_PAIRS = 6_040, 3_706, 1_000_000


def make_data(seed: int) -> Interactions:
    rng = np.random.default_rng(seed)
    activity = np.minimum(20 * (1 + rng.pareto(1.3, N_USERS)), 2_300)
    popularity = 1.0 / np.arange(1, N_ITEMS + 1) ** 0.9
    cu, ci = np.cumsum(activity / activity.sum()), np.cumsum(popularity / popularity.sum())
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < TARGET_PAIRS:
        m = int(1.3 * (TARGET_PAIRS - len(keys))) + 1000
        u = np.minimum(np.searchsorted(cu, rng.random(m)), N_USERS - 1)
        i = np.minimum(np.searchsorted(ci, rng.random(m)), N_ITEMS - 1)
        keys = np.sort(np.concatenate([keys, u * N_ITEMS + i]))
        keys = keys[np.r_[True, keys[1:] != keys[:-1]]]
    keys = np.sort(keys[rng.permutation(len(keys))[:TARGET_PAIRS]])
    u, i = np.divmod(keys, N_ITEMS)
    indptr = np.r_[0, np.cumsum(np.bincount(u, minlength=N_USERS))]
    return Interactions.from_csr(indptr, i, (N_USERS, N_ITEMS), sort=False)


def measure(fn):
    """Result, seconds (untraced run) and peak traced MiB (second run under tracemalloc)."""
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, dt, peak / 2**20


def rowmult_cosines(inter: Interactions, axis: str, rng, max_pairs: int, chunk: int = 20_000) -> np.ndarray:
    """Thesis-code style: multiply the sparse columns (items) or rows (users) of each pair."""
    counts = inter.item_counts() if axis == "item" else inter.user_counts()
    eligible = np.flatnonzero(counts >= 5)
    left, right, _ = sample_unique_pairs(len(eligible), max_pairs, rng)
    a, b = eligible[left], eligible[right]
    if axis == "item":
        x = inter.matrix.tocsc().astype(np.float32)
        take = lambda idx: x[:, idx]  # noqa: E731
        red = 0
    else:
        x = inter.matrix.astype(np.float32)
        take = lambda idx: x[idx]  # noqa: E731
        red = 1
    inter_count = np.empty(len(a))
    for s in range(0, len(a), chunk):
        e = s + chunk
        inter_count[s:e] = np.asarray(take(a[s:e]).multiply(take(b[s:e])).sum(axis=red)).ravel()
    return inter_count / np.sqrt(counts[a] * counts[b].astype(np.float64))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1_000_000, help="sampled pairs per similarity")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-rowmult", action="store_true", help="skip the slow row-multiply comparison")
    args = ap.parse_args()

    inter, t_gen, _ = measure(lambda: make_data(args.seed))
    bins = StatisticBins.from_reference(inter)
    print(
        f"data: {inter.n_users:,} users x {inter.n_items:,} items, {inter.n_pairs:,} pairs "
        f"(generated in {t_gen:.2f} s); {args.pairs:,} sampled pairs per similarity"
    )

    rows = []
    _, t, m = measure(lambda: item_popularity(inter, bins))
    rows.append(("item_popularity", t, m, None, None))
    _, t, m = measure(lambda: user_activity(inter, bins))
    rows.append(("user_activity", t, m, None, None))
    for axis, fn in (("item", item_cosines), ("user", user_cosines)):

        def ours(fn=fn):
            return similarity_histogram(fn(inter, 1, max_pairs=args.pairs).cosines, bins.n_similarity_bins)

        _, t, m = measure(ours)
        rt = rm = None
        if not args.skip_rowmult:
            ref, rt, rm = measure(lambda axis=axis: rowmult_cosines(inter, axis, 1, args.pairs))
            exact = fn(inter, 1, max_pairs=args.pairs).cosines
            if not np.allclose(np.sort(ref), np.sort(exact)):
                raise SystemExit(f"{axis}: row-multiply and bitset cosines differ")
        rows.append((f"{axis}_similarity", t, m, rt, rm))
    _, t_all, m_all = measure(lambda: key_statistics(inter, bins, 1, max_pairs=args.pairs))

    fmt = "{:<18s} {:>12s} {:>12s} {:>16s} {:>16s}"
    print(fmt.format("statistic", "simrec [s]", "peak [MiB]", "row-multiply [s]", "peak [MiB]"))
    for name, t, m, rt, rm in rows:
        print(
            fmt.format(
                name, f"{t:.3f}", f"{m:.1f}", "-" if rt is None else f"{rt:.3f}", "-" if rm is None else f"{rm:.1f}"
            )
        )
    tot = sum(r[1] for r in rows)
    rtot = sum(r[3] for r in rows if r[3] is not None) + sum(r[1] for r in rows[:2])
    print(fmt.format("sum of the four", f"{tot:.3f}", "", "-" if args.skip_rowmult else f"{rtot:.3f}", ""))
    print(fmt.format("key_statistics()", f"{t_all:.3f}", f"{m_all:.1f}", "", ""))


if __name__ == "__main__":
    main()
