"""Benchmark: the cost of graded truth (issue 11) at ML-1M size.

Two measurements, each with its peer line timed in the same run:

1. ``LDA.generate`` (6040 users x 3706 items, K = 100, λ = 600: the ML-1M
   scale of bench/bench_generators.py), which now keeps each pair's like
   count, against the same generator with the binary de-duplication it had
   before (``_unique_counts`` replaced by ``sorted_unique`` + a constant
   count, so the draws and the pairs are identical; at this density that is
   the bitmap of ``simrec._subsets.sorted_unique``);
2. the list metrics of one replicate's true relevance (the truth above minus
   nothing, all users evaluated) for 5 recommenders' top-50 lists at once
   (``list_metrics_many``): ``ndcg_lenskit07`` with graded relevance (gain
   look-up + ideal DCG sort) against ``ndcg_lenskit07`` on the binary pairs
   and against the standard ``ndcg``.

CPU time (process) beside wall time, best of 5; the load average is printed
before and after.

Usage: python bench/bench_graded.py
"""

from __future__ import annotations

import os
import time

import numpy as np

import simrec.preference.lda as lda_mod
from simrec.interactions import Interactions
from simrec.metrics import list_metrics_many
from simrec.preference import LDA

REPEATS = 5


def best(fn) -> tuple[float, float]:
    cpu = wall = float("inf")
    for _ in range(REPEATS):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall


def binary_dedup(keys: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """The binary de-duplication LDA used before (a bitmap at this density: simrec._subsets.sorted_unique)."""
    mask = np.zeros(n_cells, dtype=bool)
    mask[keys] = True
    unique = np.flatnonzero(mask)
    return unique, np.ones(len(unique), dtype=np.int32)


def main() -> None:
    print("load before: {:.2f} {:.2f} {:.2f} (1/5/15 min)".format(*os.getloadavg()))
    model = LDA(6040, 3706, 100, 600.0, 0.1, 0.1)
    rows = []
    seeds = iter(range(10**6))
    rows.append(("LDA.generate, graded (like counts)", *best(lambda: model.generate(next(seeds)))))
    graded_fn = lda_mod._unique_counts
    lda_mod._unique_counts = binary_dedup
    try:
        rows.append(("  peer: binary de-duplication", *best(lambda: model.generate(next(seeds)))))
    finally:
        lda_mod._unique_counts = graded_fn

    truth = model.generate(1)
    rng = np.random.default_rng(2)
    lists = [np.argsort(rng.random((truth.n_users, truth.n_items)), axis=1)[:, :50] for _ in range(5)]
    binary = Interactions(truth.matrix)
    rows.append(
        ("ndcg_lenskit07, graded truth, 5 x top-50", *best(lambda: list_metrics_many(lists, truth, ["ndcg_lenskit07"])))
    )
    rows.append(
        ("  peer: ndcg_lenskit07, binary pairs", *best(lambda: list_metrics_many(lists, binary, ["ndcg_lenskit07"])))
    )
    rows.append(("  peer: standard ndcg, graded truth", *best(lambda: list_metrics_many(lists, truth, ["ndcg"]))))

    print(
        f"truth: {truth.n_users} users x {truth.n_items} items, {truth.n_pairs} pairs, "
        f"{int(truth.gains.sum())} draws, max like count {int(truth.gains.max())}"
    )
    head = f"{'step':<44}{'CPU s':>8}{'wall s':>8}"
    print(head)
    print("-" * len(head))
    for name, cpu, wall in rows:
        print(f"{name:<44}{cpu:>8.3f}{wall:>8.3f}")
    print(f"best of {REPEATS}; load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
