"""Benchmark: Krichene & Rendle's item CF (simrec.recommenders.ItemCFScorer) scoring every user, wall and CPU time.

On MovieLens 1M (``--quick``: 100K), train and score every user over all
items, as ``simrec stress`` does for the leave-one-out ranks:

* ``ItemCF, blocks`` — the library path: ``LensKitRecommender.score`` calls
  the component's ``score_histories`` once per block of users (a sparse
  product of their histories with the weights);
* ``ItemCF, per user (peer)`` — the same component through LensKit's
  pipeline, one ``pipeline.run("scorer", query=u)`` per user, as any LensKit
  scorer is run; the scores agree (checked here, to float32 precision);
* ``LensKit ItemKNN, every neighbour (peer)`` — LensKit's own cosine
  item-kNN (Rust), ``max_nbrs`` = every item, per user.

Training time is reported separately (the same for both ItemCF rows).
Timings: wall (``perf_counter``) and CPU of this process (``process_time``,
which includes the threads of BLAS and LensKit's Rust pool); the load
average is printed before and after.

Run: ``python bench/bench_item_cf.py`` (a few minutes on 2 cores),
``--quick`` for ML-100K, ``--users 1000`` to score fewer users.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

from simrec.datasets import load_movielens
from simrec.recommenders import ItemCFScorer, LensKitRecommender

DATA = Path(os.environ.get("SIMREC_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="ML-100K instead of ML-1M")
    ap.add_argument("--users", type=int, default=0, help="score only the first USERS users (0: all)")
    ap.add_argument("--q", type=float, default=3.0, help="ItemCF exponent (K&R's Y: 3)")
    args = ap.parse_args()
    name = "ml-100k" if args.quick else "ml-1m"
    inter = load_movielens(DATA / name)
    users = np.arange(inter.n_users if args.users <= 0 else min(args.users, inter.n_users))
    print(f"{name}: {inter.n_users} users, {inter.n_items} items, {inter.n_pairs} pairs; scoring {users.size} users")
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = LensKitRecommender(ItemCFScorer, q=args.q)
        _, w, c = timed(lambda: rec.fit(inter, rng=1))
        rows.append(("ItemCF, training", w, c))
        blocks, w, c = timed(
            lambda: np.concatenate(
                [rec.score(inter, None, users=users[i : i + 500]) for i in range(0, users.size, 500)]
            )
        )
        rows.append(("ItemCF, blocks (simrec)", w, c))
        pipe = rec.pipeline

        def per_user():
            out = np.full((users.size, inter.n_items), np.nan)
            for row, u in enumerate(users):
                s = pipe.run("scorer", query=int(u))
                out[row, np.asarray(s.ids(), dtype=np.int64)] = s.scores()
            return out

        single, w, c = timed(per_user)
        rows.append(("ItemCF, per user (peer)", w, c))
        knn = LensKitRecommender("ItemKNNScorer", max_nbrs=inter.n_items)
        _, w, c = timed(lambda: knn.fit(inter, rng=1))
        rows.append(("LensKit ItemKNN, training", w, c))
        _, w, c = timed(
            lambda: np.concatenate(
                [knn.score(inter, None, users=users[i : i + 500]) for i in range(0, users.size, 500)]
            )
        )
        rows.append(("LensKit ItemKNN, every neighbour, per user (peer)", w, c))
    cand = np.isfinite(blocks) & (blocks > -1e300)
    diff = np.nanmax(np.abs(blocks[cand] - single[cand]) / np.maximum(np.abs(single[cand]), 1e-12))
    print(f"blocks vs per user: max relative difference {diff:.1e} (per-user scores are float32)")
    print(f"\n| {'step':52} | wall (s) | CPU (s) |\n|{'-' * 54}|---------:|--------:|")
    for label, w, c in rows:
        print(f"| {label:52} | {w:8.2f} | {c:7.2f} |")
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
