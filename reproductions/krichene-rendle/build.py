"""Krichene & Rendle's Tables 3-4 and Figure 6 beside a ``simrec stress`` run of their protocol on ML-1M.

Reads a run folder of ``sampled-kr-ml1m-rownorm`` (or ``sampled-kr-ml1m``): ``estimates.parquet``,
``ordering.csv``, ``expected_vs_n.csv``, ``ranks.parquet`` and ``manifest.json``; writes ``table3.csv``,
``table4.csv`` and ``figure6.csv`` into ``--out`` (each row stamped with the simrec version, the git commit
given by ``--commit`` and the run's draws version; the published numbers in their own columns, typed from
the paper: Krichene & Rendle, "On Sampled Metrics for Item Recommendation", KDD 2020, Tables 3 and 4) and
prints the Markdown tables of ``REPORT.md``.

  python reproductions/krichene-rendle/build.py --run <runs/kr-ml1m-rownorm> --commit <sha>
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from simrec.report import share_verdict

#: K&R Table 3 (value, sd) in %: exact, sampled, rank estimate, CLS, BV 1, 0.1, 0.01, 0.001.
PUBLISHED_T3 = {
    ("recall", "X"): [(7.60, None), (66.19, .25), (17.46, .32), (8.52, .16), (4.71, .07), (6.49, .25), (7.18, .59), (7.32, 1.17)],
    ("recall", "Y"): [(8.84, None), (56.51, .22), (17.26, .28), (8.42, .14), (4.60, .07), (6.95, .21), (8.18, .51), (8.54, 1.07)],
    ("recall", "Z"): [(9.42, None), (54.20, .22), (18.67, .32), (9.10, .15), (4.97, .07), (7.44, .24), (8.63, .59), (9.08, 1.20)],
    ("ndcg", "X"): [(3.76, None), (39.21, .20), (17.46, .32), (3.99, .07), (2.16, .04), (3.00, .12), (3.34, .32), (3.41, .71)],
    ("ndcg", "Y"): [(4.59, None), (34.82, .16), (17.26, .28), (3.94, .06), (2.12, .03), (3.24, .10), (3.85, .28), (4.03, .66)],
    ("ndcg", "Z"): [(4.79, None), (35.34, .16), (18.67, .32), (4.27, .07), (2.29, .04), (3.46, .12), (4.05, .32), (4.31, .74)],
    ("average_precision_full", "X"): [(3.75, None), (32.55, .21), (18.12, .31), (3.58, .06), (2.44, .03), (3.13, .09), (3.37, .21), (3.42, .49)],
    ("average_precision_full", "Y"): [(4.32, None), (30.01, .20), (17.81, .28), (3.54, .06), (2.32, .03), (3.19, .07), (3.62, .18), (3.73, .45)],
    ("average_precision_full", "Z"): [(4.44, None), (30.71, .21), (19.20, .31), (3.82, .06), (2.45, .03), (3.38, .08), (3.79, .21), (3.97, .51)],
    ("auc", "X"): [(89.13, None), (89.12, .04), (89.24, .04), (89.12, .04), (88.36, .04), (89.04, .04), (89.11, .04), (89.12, .04)],
    ("auc", "Y"): [(85.33, None), (85.33, .04), (85.48, .04), (85.32, .04), (84.63, .04), (85.26, .04), (85.32, .04), (85.32, .04)],
    ("auc", "Z"): [(74.73, None), (75.04, .23), (75.24, .20), (75.04, .21), (74.51, .23), (75.02, .20), (75.02, .24), (75.02, .23)],
}  # fmt: skip
#: K&R Table 4 (% of 100 repetitions ordering the pair as the exact metric does): sampled, rank estimate, CLS,
#: BV 1, 0.1, 0.01, 0.001.
PUBLISHED_T4 = {
    ("X vs Y", "recall"): [0, 31, 31, 11, 93, 91, 78],
    ("X vs Y", "ndcg"): [0, 31, 31, 15, 93, 88, 76],
    ("X vs Y", "average_precision_full"): [0, 24, 31, 0, 68, 79, 66],
    ("X vs Y", "auc"): [100] * 7,
    ("X vs Z", "recall"): [0, 100, 100, 100, 100, 95, 86],
    ("X vs Z", "ndcg"): [0, 100, 100, 100, 100, 95, 82],
    ("X vs Z", "average_precision_full"): [0, 100, 100, 61, 99, 92, 81],
    ("X vs Z", "auc"): [100] * 7,
    ("Y vs Z", "recall"): [0, 100, 100, 100, 95, 72, 68],
    ("Y vs Z", "ndcg"): [100, 100, 100, 100, 94, 70, 67],
    ("Y vs Z", "average_precision_full"): [100, 100, 100, 100, 98, 75, 68],
    ("Y vs Z", "auc"): [100] * 7,
}
ESTIMATORS = ["naive", "rank_estimate", "CLS", "BV(gamma=1)", "BV(gamma=0.1)", "BV(gamma=0.01)", "BV(gamma=0.001)"]
LABELS = ["Sampled", "Rank est.", "CLS", "BV 1", "BV 0.1", "BV 0.01", "BV 0.001"]
METRICS = {
    "recall": (10, "Recall@10"),
    "ndcg": (10, "NDCG@10"),
    "average_precision_full": (None, "AP"),
    "auc": (None, "AUC"),
}


def _at_k(frame: pd.DataFrame, k: int | None) -> pd.DataFrame:
    return frame[frame["k"].isna()] if k is None else frame[frame["k"].eq(k).fillna(False).astype(bool)]


def _letter(name: str) -> str:
    return name.split("-")[0]


def table3(est: pd.DataFrame, stamp: dict) -> pd.DataFrame:
    rows = []
    for (metric, letter), pub in PUBLISHED_T3.items():
        k, _ = METRICS[metric]
        sub = _at_k(est, k)
        sub = sub[(sub["metric"] == metric) & (sub["recommender"].map(_letter) == letter)]
        if sub.empty:
            continue
        rec = sub["recommender"].iloc[0]
        sub = sub.set_index("estimator")
        exact = 100 * float(sub["exact"].iloc[0])
        rows.append({"metric": metric, "k": k, "recommender": rec, "column": "Exact", "published": pub[0][0],
                     "published_sd": np.nan, "ours": exact, "ours_sd": np.nan, **stamp})  # fmt: skip
        for (value, sd), est_name, label in zip(pub[1:], ESTIMATORS, LABELS):
            row = sub.loc[est_name]
            rows.append({"metric": metric, "k": k, "recommender": rec, "column": label, "published": value,
                         "published_sd": sd, "ours": 100 * row["mean"], "ours_sd": 100 * row["sd"], **stamp})  # fmt: skip
    return pd.DataFrame(rows)


def table4(order: pd.DataFrame, stamp: dict) -> pd.DataFrame:
    rows = []
    for (pair, metric), pub in PUBLISHED_T4.items():
        a, b = pair.split(" vs ")
        k, _ = METRICS[metric]
        sub = _at_k(order, k)
        sub = sub[
            (sub["metric"] == metric)
            & (sub["recommender_a"].map(_letter) == a)
            & (sub["recommender_b"].map(_letter) == b)
        ].set_index("estimator")
        if sub.empty:
            continue
        exact_order = "a<b" if sub["exact_a"].iloc[0] < sub["exact_b"].iloc[0] else "a>b"
        for value, est_name, label in zip(pub, ESTIMATORS, LABELS):
            share = float(sub.loc[est_name, "share_correct"])
            n = int(sub.loc[est_name, "n_repeats"]) if "n_repeats" in sub.columns else 100
            rows.append({"pair": pair, "metric": metric, "k": k, "column": label, "exact_order": exact_order,
                         "published": value, "ours": 100 * share, "n_repeats": n, **stamp})  # fmt: skip
    return pd.DataFrame(rows)


def t3_verdict(row: pd.Series) -> str:
    """Exact: within 5 % of the published value; sampled / corrected: within 2 combined sd."""
    diff = abs(row["ours"] - row["published"])
    if np.isnan(row["published_sd"]):
        return "≈" if diff <= 0.05 * abs(row["published"]) else "differs"
    return "≈" if diff <= 2 * np.hypot(row["published_sd"], row["ours_sd"]) else "differs"


def t4_verdict(published: float, ours: float, n: int) -> str:
    """Our share ``ours`` (percent of ``n`` repeats) against the published one (:func:`simrec.report.share_verdict`)."""
    return share_verdict(published, round(ours * n / 100), n)


MARK = {"≈": "", "differs": " ✗", "match": "", "coin flip": " (coin flip)"}


def markdown(t3: pd.DataFrame, t4: pd.DataFrame, curve: pd.DataFrame) -> str:
    """Table 3 and 4 as in the paper, each cell ``K&R / ours`` (✗: the verdict is "differs"), and Figure 6's curves."""
    t3 = t3.assign(verdict=t3.apply(t3_verdict, axis=1))
    cols = ["Exact", *LABELS]
    out = ["| metric | recommender | " + " | ".join(cols) + " |", "|---|---|" + "---:|" * len(cols)]
    for (metric, rec), g in t3.groupby(["metric", "recommender"], sort=False):
        g = g.set_index("column")
        cells = [f"{g.loc[c, 'published']:.2f} / {g.loc[c, 'ours']:.2f}{MARK[g.loc[c, 'verdict']]}" for c in cols]
        out.append(f"| {METRICS[metric][1]} | {rec} | " + " | ".join(cells) + " |")
    out += ["", "| pair | metric | exact order (ours) | " + " | ".join(LABELS) + " |", "|---|---|---|" + "---:|" * 7]
    for (pair, metric), g in t4.groupby(["pair", "metric"], sort=False):
        g = g.set_index("column")
        cells = [
            f"{g.loc[c, 'published']:.0f} / {g.loc[c, 'ours']:.0f}"
            + MARK[t4_verdict(g.loc[c, "published"], g.loc[c, "ours"], int(g.loc[c, "n_repeats"]))]
            for c in LABELS
        ]
        out.append(f"| {pair} | {METRICS[metric][1]} | {g['exact_order'].iloc[0]} | " + " | ".join(cells) + " |")
    out += ["", "| m | " + " | ".join(f"{c}" for c in curve.columns) + " |", "|---:|" + "---:|" * len(curve.columns)]
    for m, row in curve.iterrows():
        out.append(f"| {m} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    return "\n".join(out)


def first_correct(curve: pd.DataFrame, col: str, a: str, b: str) -> int | None:
    """Smallest m from which the expected metric orders a and b as the exact metric does (and keeps it)."""
    wide = curve.pivot(index="n", columns="recommender", values=col)
    exact = curve.groupby("recommender")["exact"].first()
    sign = np.sign(exact[a] - exact[b])
    ok = (np.sign(wide[a] - wide[b]) == sign).to_numpy()
    for i in range(len(ok)):
        if ok[i:].all():
            return int(wide.index[i])
    return None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args(argv)
    manifest = json.loads((args.run / "manifest.json").read_text())
    if manifest.get("status") != "complete":
        raise SystemExit(f"{args.run}: run not complete ({manifest.get('status')})")
    stamp = {
        "scenario": manifest["scenario"],
        "simrec_version": manifest["versions"]["simrec"],
        "git_commit": args.commit,
        "draws_version": manifest["draws"],
    }
    est = pd.read_parquet(args.run / "estimates.parquet")
    est = est[(est["scheme"] == "binomial") & (est["n"] == 100)]
    order = pd.read_csv(args.run / "ordering.csv", dtype={"k": "Int64"})
    order = order[(order["scheme"] == "binomial") & (order["n"] == 100)]
    curve = pd.read_csv(args.run / "expected_vs_n.csv")
    curve = curve[curve["metric"] == "recall"]
    t3, t4 = table3(est, stamp), table4(order, stamp)
    fig6 = curve[["recommender", "n", "exact", "expected_sampled", "expected_bv"]].assign(**stamp)
    args.out.mkdir(parents=True, exist_ok=True)
    t3.to_csv(args.out / "table3.csv", index=False, float_format="%.6g")
    t4.to_csv(args.out / "table4.csv", index=False, float_format="%.6g")
    fig6.to_csv(args.out / "figure6.csv", index=False, float_format="%.6g")
    names = {_letter(r): r for r in curve["recommender"].unique()}
    wide = 100 * curve.pivot(index="n", columns="recommender", values="expected_sampled")
    wide_bv = 100 * curve.pivot(index="n", columns="recommender", values="expected_bv")
    both = pd.concat({"sampled": wide, "BV 0.1": wide_bv}, axis=1)
    both.columns = [f"{r} {kind}" for kind, r in both.columns]
    print(markdown(t3, t4, both))
    for a, b in (("X", "Y"), ("X", "Z"), ("Y", "Z")):
        if a in names and b in names:
            print(
                f"{a} vs {b}: expected Recall@10 ordered as exact from m = "
                f"{first_correct(curve, 'expected_sampled', names[a], names[b])} (uncorrected), "
                f"{first_correct(curve, 'expected_bv', names[a], names[b])} (BV 0.1)"
            )


if __name__ == "__main__":
    sys.exit(main())
