"""Benchmark: one evaluation replicate at ML-1M scale, simrec vs LensKit.

Data: 6,040 users x 3,706 items. A seeded, self-contained generator draws a
true preference set per user (Pareto-like sizes, Zipf-like item popularity) and
observes a random half of it, about 1,000,000 observed pairs (``--quick``:
1,000 users x 1,000 items, about 80,000 pairs). Timed steps (Tian's thesis
§3.5; docs/design.md §4):

* split: 20% of each user's observed items held out
  (``simrec.split.holdout`` vs ``lenskit.splitting.sample_users`` with
  ``SampleFrac(0.2)`` over every user);
* Popular top-50 lists (``simrec.recommenders.Popular`` vs LensKit's
  ``PopScorer`` in ``topn_pipeline``: Dataset build + training +
  ``lenskit.batch.recommend``);
* 8 measurements of the Popular lists: Precision, Recall, RR, nDCG against the
  observed test set and against the truth (simrec.metrics vs
  ``lenskit.metrics.RunAnalysis``, incl. building its test collections);
* Oracle and Random top-50 lists and their 16 measurements (simrec only).

Run: ``python bench/bench_replicate.py [--quick] [--seed 0] [--skip-lenskit]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp

from simrec.interactions import Interactions
from simrec.metrics import list_metrics
from simrec.recommenders import Oracle, Popular, RandomRecommender
from simrec.split import holdout

N = 50
METRICS = ("precision", "recall", "reciprocal_rank", "ndcg")


def make_data(n_users: int, n_items: int, mean_truth: float, seed: int) -> tuple[Interactions, Interactions]:
    """Truth and observed (a uniform half of each user's truth, at least one item)."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(mean_truth * 0.35 * (1 + rng.pareto(1.5, n_users)), 0.8 * n_items).astype(np.int64)
    sizes = np.maximum(sizes, 4)
    w = 1.0 / np.arange(1, n_items + 1) ** 0.8
    w = rng.permutation(w / w.sum())
    users = np.repeat(np.arange(n_users), (sizes * 1.6).astype(np.int64))
    items = rng.choice(n_items, len(users), p=w)
    truth = Interactions.from_pairs(users, items, (n_users, n_items))
    keep = rng.random(truth.n_pairs) < 0.5
    first = truth.matrix.indptr[:-1]
    keep[first[truth.user_counts() > 0]] = True  # every user observes something
    obs = Interactions.from_pairs(truth.row_of_pairs()[keep], truth.matrix.indices[keep], truth.matrix.shape)
    return truth, obs


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def simrec_measure(lists, test, truth_rel, evaluated):
    out = {}
    for kind, rel in (("observed", test), ("truth", truth_rel)):
        for m, v in list_metrics(lists, rel, METRICS, evaluated=evaluated).items():
            out[(m, kind)] = v
    return out


def lenskit_path(train: Interactions, test: Interactions, truth_rel: sp.csr_array, obs: Interactions, seed: int):
    from lenskit.basic import PopScorer
    from lenskit.batch import recommend
    from lenskit.data import ItemListCollection, UserIDKey, from_interactions_df
    from lenskit.metrics import NDCG, LogRankWeight, Precision, Recall, RecipRank, RunAnalysis
    from lenskit.pipeline import topn_pipeline
    from lenskit.splitting import SampleFrac, sample_users

    times = {}

    # split: LensKit's per-user holdout over every user
    def lk_split():
        df = pd.DataFrame({"user_id": obs.row_of_pairs(), "item_id": obs.matrix.indices.astype(np.int64)})
        ds = from_interactions_df(df)
        return sample_users(ds, ds.user_count, SampleFrac(0.2, rng=seed), rng=seed)

    _, times["split"] = timed(lk_split)

    def lk_recommend():
        df = pd.DataFrame({"user_id": train.row_of_pairs(), "item_id": train.matrix.indices.astype(np.int64)})
        ds = from_interactions_df(df, users=np.arange(train.n_users), items=np.arange(train.n_items))
        pipe = topn_pipeline(PopScorer(), n=N)
        pipe.train(ds)
        users = np.flatnonzero(test.user_counts() > 0)
        return recommend(pipe, users, n=N, n_jobs=1)

    recs, times["popular"] = timed(lk_recommend)

    def collection(m: sp.csr_array):
        rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
        df = pd.DataFrame({"user_id": rows, "item_id": m.indices.astype(np.int64)})
        return ItemListCollection.from_df(df, UserIDKey)

    def lk_measure():
        res = {}
        for kind, m in (("observed", test.matrix), ("truth", truth_rel)):
            # a fresh RunAnalysis per relevance set: measure() accumulates across calls
            ra = RunAnalysis()
            ra.add_metric(Precision())
            ra.add_metric(Recall())
            ra.add_metric(RecipRank())
            ra.add_metric(NDCG(n=N, weight=LogRankWeight(offset=1)))  # IDCG over min(|Rel|, N)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res[kind] = ra.measure(recs, collection(m)).list_metrics().mean()
        return res

    res, times["metrics"] = timed(lk_measure)
    return times, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 users x 1,000 items instead of ML-1M size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-lenskit", action="store_true")
    args = ap.parse_args()

    n_users, n_items, mean_truth = (1_000, 1_000, 160) if args.quick else (6_040, 3_706, 380)
    truth, obs = make_data(n_users, n_items, mean_truth, args.seed)
    print(
        f"data: {obs.n_users} users x {obs.n_items} items, {obs.n_pairs:,} observed pairs, "
        f"{truth.n_pairs:,} true pairs; lists of N = {N}\n"
    )

    rng = np.random.default_rng(args.seed)
    t0 = {}
    split, t0["split"] = timed(holdout, obs, 0.2, rng)
    train, test = split.train, split.test
    truth_rel = sp.csr_array(truth.matrix - truth.matrix.multiply(train.matrix))
    truth_rel.eliminate_zeros()
    evaluated = split.evaluated

    lists = {}
    for rec in (Popular(), Oracle(), RandomRecommender()):
        lists[rec.name], t0[rec.name] = timed(rec.recommend, train, truth_rel, N, rng)
    vals = {}
    for name in lists:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vals[name], t0[f"metrics {name}"] = timed(simrec_measure, lists[name], test.matrix, truth_rel, evaluated)

    lk, lk_res = ({}, None) if args.skip_lenskit else lenskit_path(train, test, truth_rel, obs, args.seed)

    rows = [
        ("split (20% per user)", t0["split"], lk.get("split")),
        ("Popular top-50 lists", t0["Popular"], lk.get("popular")),
        ("Popular: 4 metrics x {test, truth}", t0["metrics Popular"], lk.get("metrics")),
        ("Oracle top-50 lists", t0["Oracle"], None),
        ("Random top-50 lists", t0["Random"], None),
        ("Oracle + Random: 16 measurements", t0["metrics Oracle"] + t0["metrics Random"], None),
    ]
    comparable = [r for r in rows if r[2] is not None]
    if comparable:
        rows.append(("total (steps run by both)", sum(r[1] for r in comparable), sum(r[2] for r in comparable)))
    rows.append(("total simrec (all steps)", sum(r[1] for r in rows[:6]), None))

    print(f"{'step':<38} {'simrec s':>10} {'LensKit s':>10} {'ratio':>8}")
    print("-" * 69)
    for step, a, b in rows:
        bs = f"{b:10.3f}" if b is not None else f"{'-':>10}"
        ratio = f"{b / a:7.0f}x" if b is not None else f"{'-':>8}"
        print(f"{step:<38} {a:10.3f} {bs} {ratio}")

    print(
        "\nmean over evaluated users (Popular; simrec vs LensKit; Popular ties are broken "
        "differently, so small differences are expected):"
    )
    names = {"precision": "Precision", "recall": "Recall", "reciprocal_rank": "RecipRank", "ndcg": f"NDCG@{N}"}
    for kind in ("observed", "truth"):
        parts = []
        for m, label in names.items():
            ours = np.nanmean(vals["Popular"][(m, kind)])
            theirs = f"{lk_res[kind][label]:.4f}" if lk_res is not None else "-"
            parts.append(f"{m} {ours:.4f}/{theirs}")
        print(f"  {kind:<9}" + "  ".join(parts))
    for name in ("Oracle", "Random"):
        print(
            f"  {name:<9}"
            + "  ".join(
                f"{m}[{kind}] {np.nanmean(vals[name][(m, kind)]):.4f}"
                for m in ("precision", "recall")
                for kind in ("observed", "truth")
            )
        )


if __name__ == "__main__":
    main()
