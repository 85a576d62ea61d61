"""Benchmark: the baselines' full rankings (every candidate) on ML-1M, beside plain-numpy floors.

Data: real MovieLens 1M (``../shared/data/ml-1m``, or ``--data``; 6,040 users
x 3,706 items) with 20% of each user's ratings held out; without it,
bench_replicate.py's generated data of the same size. Timed (best CPU of
``--repeats``, wall beside it), each list the full ranking ``n = n_items``:

* reference lines, plain numpy written for this bench (issue 29's recipe):

  - *floor, no tie-break*: the global popularity order once, a training
    bitmap per block of users, a stable compress of the order by the bitmap:
    every user's candidates in popularity order, ties in one fixed order
    (what LensKit's ``PopScorer`` ranks);
  - *floor, random tie-break*: the same, plus what a uniformly random
    tie-break inside each popularity level costs at least: one uniform draw
    per list entry and one sort per row of (level, draw) integer keys;

* simrec ``Popular().recommend``, ``RandomRecommender().recommend`` and
  ``Oracle().recommend`` (relevance: the held-out items), each with its own
  random tie-break or order, the lists identical for a seed to the previous
  implementation (tests/test_recommenders.py pins them).

Target (issue 29): Popular within 1.5x of the floor. The load (``uptime``'s
averages, ``os.getloadavg``) is printed before and after.

Run: ``python bench/bench_baseline_rankings.py [--repeats 3] [--data PATH]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replicate import make_data  # noqa: E402

from simrec.datasets import load_movielens  # noqa: E402
from simrec.recommenders import Oracle, Popular, RandomRecommender  # noqa: E402
from simrec.split import holdout  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ml-1m"
BLOCK = 1 << 17  # list entries per block of users in the floors


def _blocks(n_users: int, width: int):
    step = max(1, BLOCK // width)
    for u0 in range(0, n_users, step):
        yield u0, min(u0 + step, n_users)


def _popularity(train):
    pop = train.item_counts()
    order = np.argsort(-pop, kind="stable")  # position -> item
    gpos = np.empty(len(order), dtype=np.int64)
    gpos[order] = np.arange(len(order))
    return pop, order, gpos


def _block_bitmap(train, gpos, u0, u1, n_items):
    """Allowed (non-training) cells of users u0:u1, by popularity position."""
    m = train.matrix
    lo, hi = m.indptr[u0], m.indptr[u1]
    allowed = np.ones((u1 - u0, n_items), dtype=bool)
    rows = np.repeat(np.arange(u1 - u0), np.diff(m.indptr[u0 : u1 + 1]))
    allowed[rows, gpos[m.indices[lo:hi]]] = False
    return allowed


def floor_plain(train) -> np.ndarray:
    """Every user's candidates in popularity order (ties in one fixed order), -1 padding."""
    n_users, n_items = train.n_users, train.n_items
    _, order, gpos = _popularity(train)
    out = np.full((n_users, n_items), -1, dtype=np.int64)
    col = np.arange(n_items)
    for u0, u1 in _blocks(n_users, n_items):
        allowed = _block_bitmap(train, gpos, u0, u1, n_items)
        k = np.count_nonzero(allowed, axis=1)
        out[u0:u1][col < k[:, None]] = np.broadcast_to(order, allowed.shape)[allowed]
    return out


def floor_ties(train, rng: np.random.Generator) -> np.ndarray:
    """:func:`floor_plain` with ties broken at random per user: (level, draw, item) keys, one sort per row."""
    n_users, n_items = train.n_users, train.n_items
    pop, order, gpos = _popularity(train)
    spop = pop[order]
    level = np.concatenate(([0], np.cumsum(spop[1:] != spop[:-1])))  # by position, 0 = most popular
    n_levels = int(level[-1]) + 2  # and the padding's
    ib = n_items.bit_length()
    db = 63 - ib - n_levels.bit_length()
    base = (level << (db + ib)) | (order + 1)
    pad = (n_levels - 1) << (db + ib)
    out = np.empty((n_users, n_items), dtype=np.int64)
    col = np.arange(n_items)
    for u0, u1 in _blocks(n_users, n_items):
        allowed = _block_bitmap(train, gpos, u0, u1, n_items)
        k = np.count_nonzero(allowed, axis=1)
        keys = np.full((u1 - u0, n_items), pad, dtype=np.int64)
        keys[col < k[:, None]] = np.broadcast_to(base, allowed.shape)[allowed]
        draws = rng.bit_generator.random_raw(keys.size).reshape(keys.shape) >> np.uint64(64 - db)
        keys += (draws << np.uint64(ib)).view(np.int64)
        keys.sort(axis=1)
        np.bitwise_and(keys, (1 << ib) - 1, out=out[u0:u1])
        out[u0:u1] -= 1
    return out


def best(repeats: int, fn):
    """(output, wall, CPU) of the call with the least CPU."""
    out = None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        res = fn()
        w, c = time.perf_counter() - w, time.process_time() - c
        if out is None or c < out[2]:
            out = (res, w, c)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="calls per line (the least CPU is kept)")
    ap.add_argument("--data", type=Path, default=DATA, help="the ml-1m folder")
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min), {os.cpu_count()} CPUs")
    if args.data.exists():
        obs, source = load_movielens(args.data), f"MovieLens 1M ({args.data})"
    else:
        obs, source = make_data(6_040, 3_706, 380, 0)[1], "generated, ML-1M size (no ml-1m folder)"
    split = holdout(obs, 0.2, np.random.default_rng(0))
    train, rel = split.train, sp.csr_array(split.test.matrix)
    n = train.n_items
    print(f"data: {source}: {train.n_users:,} users x {n:,} items, {train.n_pairs:,} training pairs")
    print(f"full rankings: n = {n:,} (every candidate; -1 after them)\n")

    rows = [
        ("floor, no tie-break (reference)", best(args.repeats, lambda: floor_plain(train))),
        (
            "floor, random tie-break (reference)",
            best(args.repeats, lambda: floor_ties(train, np.random.default_rng(1))),
        ),
    ]
    for rec in (Popular(), RandomRecommender(), Oracle()):
        rows.append((f"simrec {rec.name}", best(args.repeats, lambda: rec.recommend(train, rel, n, 1))))
    plain, ties = rows[0][1][2], rows[1][1][2]
    print(f"{'list maker':<38} {'wall s':>8} {'CPU s':>8} {'/ no-tie':>9} {'/ tie':>7}  sha256 of the lists")
    for name, (lists, w, c) in rows:
        digest = hashlib.sha256(np.ascontiguousarray(lists).tobytes()).hexdigest()[:12]
        print(f"{name:<38} {w:8.2f} {c:8.2f} {c / plain:8.2f}x {c / ties:6.2f}x  {digest}")
    same = np.array_equal(np.sort(rows[0][1][0], axis=1), np.sort(rows[2][1][0], axis=1))
    print(f"\nPopular's lists hold the floor's items per user: {same}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
