"""Benchmark: a whole ML-1M evaluation process, simrec vs LensKit (fresh processes, same run).

The evaluation (issue 29): real MovieLens 1M (``../shared/data/ml-1m``, or
``--data``), 20% of each user's ratings held out at random, Popular's top-50
lists, four metrics (precision, recall, reciprocal rank, nDCG with the
log2(rank + 1) discount) against the one relevance set real data has (the
held-out items). Each side is a script a researcher would write, run as a
fresh Python process (this file with ``--child simrec`` or ``--child
lenskit``):

* simrec: ``load_movielens`` -> ``holdout(data, 0.2)`` ->
  ``Popular().recommend(train, None, 50)`` -> ``list_metrics`` (4 metrics);
* LensKit 2025.8: ``load_movielens`` (its Dataset) -> ``sample_users`` over
  every user with ``SampleFrac(0.2)`` -> ``topn_pipeline(PopScorer(), n=50)``
  trained, ``batch.recommend`` (``n_jobs=1``) -> ``RunAnalysis`` with
  Precision, Recall, RecipRank, NDCG(n=50, LogRankWeight(offset=1)).

Whole process: wall seconds and CPU seconds of the child and its descendants
(``RUSAGE_CHILDREN``, user + system; the children start no worker process),
``--repeats`` runs of each side, interleaved, best CPU kept; the interpreter
start-up and every import are included. In-process: each child also times its
own steps after its imports (``time.process_time``), so the table shows where
a process's time goes and the in-process ratio (the steps alone). The metric
means of both sides are printed last (the splits are drawn differently and
LensKit's Popular breaks ties by item, so they agree closely, not exactly).
The load (``os.getloadavg``, as ``uptime`` prints it) is printed before and
after.

Run: ``python bench/bench_ml1m_process.py [--repeats 3] [--data PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "ml-1m"
N = 50
STEPS = ("imports", "load", "split", "Popular top-50", "4 metrics")


def _simrec_child(path: str, seed: int) -> dict:
    t = [time.process_time()]
    import numpy as np

    from simrec.datasets import load_movielens
    from simrec.metrics import list_metrics
    from simrec.recommenders import Popular
    from simrec.split import holdout

    t.append(time.process_time())
    data = load_movielens(path)
    t.append(time.process_time())
    split = holdout(data, 0.2, np.random.default_rng(seed))
    t.append(time.process_time())
    lists = Popular().recommend(split.train, None, N, np.random.default_rng(seed + 1))
    t.append(time.process_time())
    vals = list_metrics(lists, split.test.matrix, evaluated=split.evaluated)
    means = {m: float(np.nanmean(v)) for m, v in vals.items()}
    t.append(time.process_time())
    return {"steps": [b - a for a, b in zip(t[:-1], t[1:])], "means": means, "users": int(split.evaluated.sum())}


def _lenskit_child(path: str, seed: int) -> dict:
    t = [time.process_time()]
    import warnings

    from lenskit.basic import PopScorer
    from lenskit.batch import recommend
    from lenskit.data import load_movielens
    from lenskit.metrics import NDCG, LogRankWeight, Precision, Recall, RecipRank, RunAnalysis
    from lenskit.pipeline import topn_pipeline
    from lenskit.splitting import SampleFrac, sample_users

    t.append(time.process_time())
    data = load_movielens(path)
    t.append(time.process_time())
    split = sample_users(data, data.user_count, SampleFrac(0.2, rng=seed), rng=seed)
    t.append(time.process_time())
    pipe = topn_pipeline(PopScorer(), n=N)
    pipe.train(split.train)
    recs = recommend(pipe, split.test.keys(), n=N, n_jobs=1)
    t.append(time.process_time())
    ra = RunAnalysis()
    for metric in (Precision(), Recall(), RecipRank(), NDCG(n=N, weight=LogRankWeight(offset=1))):
        ra.add_metric(metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ra.measure(recs, split.test).list_metrics().mean()
    names = {"Precision": "precision", "Recall": "recall", "RecipRank": "reciprocal_rank", f"NDCG@{N}": "ndcg"}
    means = {ours: float(res[theirs]) for theirs, ours in names.items()}
    t.append(time.process_time())
    return {"steps": [b - a for a, b in zip(t[:-1], t[1:])], "means": means, "users": len(split.test)}


def run_child(side: str, path: Path, seed: int) -> tuple[float, float, dict]:
    """Wall and CPU seconds (the child and its descendants) of one fresh process, and its report."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", side, "--data", str(path), "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per side (best CPU kept)")
    ap.add_argument("--data", type=Path, default=DATA, help="the ml-1m folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", choices=("simrec", "lenskit"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        fn = _simrec_child if args.child == "simrec" else _lenskit_child
        print(json.dumps(fn(str(args.data), args.seed)))
        return
    if not args.data.exists():
        sys.exit(f"{args.data}: not found (pass --data, the ml-1m folder)")
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min), {os.cpu_count()} CPUs")
    print(f"data: {args.data}; 20% holdout per user, Popular top-{N}, 4 metrics, one relevance set\n")
    runs: dict[str, list[tuple[float, float, dict]]] = {"simrec": [], "lenskit": []}
    for _ in range(args.repeats):  # interleaved, so both sides see the same load
        for side in runs:
            runs[side].append(run_child(side, args.data, args.seed))
    best = {side: min(r, key=lambda x: x[1]) for side, r in runs.items()}
    (sw, sc, srep), (lw, lc, lrep) = best["simrec"], best["lenskit"]
    print(f"{'whole process (best of ' + str(args.repeats) + ')':<34} {'wall s':>8} {'CPU s':>8}")
    print(f"{'simrec':<34} {sw:8.2f} {sc:8.2f}")
    print(f"{'LensKit (the peer)':<34} {lw:8.2f} {lc:8.2f}")
    print(f"{'LensKit / simrec (target >= 10x)':<34} {lw / sw:7.1f}x {lc / sc:7.1f}x")
    print(
        f"every run's CPU s: simrec {[round(r[1], 2) for r in runs['simrec']]}, "
        f"LensKit {[round(r[1], 2) for r in runs['lenskit']]}\n"
    )
    print(f"{'in-process CPU s (that run)':<34} {'simrec':>8} {'LensKit':>8} {'ratio':>8}")
    for name, a, b in zip(STEPS, srep["steps"], lrep["steps"]):
        print(f"{name:<34} {a:8.3f} {b:8.3f} {b / a if a > 0 else float('nan'):7.1f}x")
    s_in, l_in = sum(srep["steps"][1:]), sum(lrep["steps"][1:])
    print(f"{'steps after the imports':<34} {s_in:8.3f} {l_in:8.3f} {l_in / s_in:7.1f}x")
    print(f"\nevaluated users: simrec {srep['users']}, LensKit {lrep['users']}; means simrec / LensKit:")
    print("  " + "  ".join(f"{m} {srep['means'][m]:.4f}/{lrep['means'][m]:.4f}" for m in srep["means"]))
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
