"""Collect ``simrec sim-to-real`` outputs into stamped tables, one folder per dataset.

Each ``--run`` is a ``simrec sim-to-real --out`` folder (``metrics.csv``, ``orders.csv``); the tables of all
runs of one dataset are concatenated (one world per run or several) and stamped with the simrec version, the
commit that ran them and the draws version, then written to ``<dataset>/metrics.csv`` and
``<dataset>/orders.csv`` beside this file. Prints the Markdown summary used in ``REPORT.md``. ``--commit``
is given once (every run made at that commit) or once per ``--run``, in the same order.

  python reproductions/sim-to-real/build.py --dataset ml-1m --commit <sha> --run runs/s2r-a --run runs/s2r-b
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--commit", action="append", required=True)
    ap.add_argument("--run", action="append", required=True, type=Path)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parents[1]))
    from simrec import __version__
    from simrec._random import DRAWS_VERSION  # noqa: PLC2701 (this repository's own script)

    commits = args.commit * len(args.run) if len(args.commit) == 1 else args.commit
    if len(commits) != len(args.run):
        ap.error(f"--commit must be given once or once per --run ({len(args.run)}); got {len(args.commit)}")

    def stamped(name: str) -> pd.DataFrame:
        return pd.concat(
            [
                pd.read_csv(r / name).assign(simrec_version=__version__, git_commit=c, draws_version=DRAWS_VERSION)
                for r, c in zip(args.run, commits)
            ],
            ignore_index=True,
        )

    metrics, orders = stamped("metrics.csv"), stamped("orders.csv")
    out = HERE / args.dataset
    out.mkdir(exist_ok=True)
    metrics.to_csv(out / "metrics.csv", index=False)
    orders.to_csv(out / "orders.csv", index=False)
    for (world, metric), g in metrics.groupby(["world", "metric"], sort=False):
        o = orders[(orders["world"] == world) & (orders["metric"] == metric)]
        print(f"\n{args.dataset} {world} {metric}@10 ({int(g['replicates'].iloc[0])} replicates)")
        print("| algorithm | real [95% CI] | sim [95% CI] | rel. error |")
        print("|---|---|---|---:|")
        for r in g.itertuples():
            print(
                f"| {r.algorithm} | {r.real:.4f} [{r.real_low:.4f}, {r.real_high:.4f}] | "
                f"{r.sim:.4f} [{r.sim_low:.4f}, {r.sim_high:.4f}] | {r.rel_error:+.0%} |"
            )
        for r in o.itertuples():
            agree = "-" if r.real_order == "tie" else f"{r.agreement:.0%}"
            print(
                f"- {r.a} vs {r.b}: real {r.real_order} (gap {r.real_gap:+.4f} [{r.real_gap_low:+.4f}, "
                f"{r.real_gap_high:+.4f}]), reproduced in {agree}"
            )
        print(f"- full order reproduced in {o['full_order_agreement'].iloc[0]:.0%} of replicates")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
