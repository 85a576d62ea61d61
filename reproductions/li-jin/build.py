"""Li & Jin's Table 2 (beta@P's fitted a) and Table 3 (predicting the winner) beside simrec's runs on ML-1M.

Reads the run folders of ``sampled-lijin-ml1m`` (blocks binom and hyper: all items ranked) and
``sampled-lijin-actual-ml1m`` (block actual: the unseen items ranked, negatives drawn from them without
replacement): ``mapping_a.csv``, ``hit_ratio.csv`` and ``manifest.json``. Writes into ``--out``:

* ``table2.csv``: the fitted a per recommender, block and n, mean and sd over the repeats (stamped), and
  Li & Jin's published Table 2 column for ml-1m (``source``: the paper);
* ``winners.csv``: for every block, n, mapping and k = 1..50, the recommender with the highest SHR@k and the
  one with the highest global HR@f(k) (stamped);

and prints the Markdown tables of ``REPORT.md``.

  python reproductions/li-jin/build.py --all <runs/sampled-lijin-ml1m> --commit <sha> \\
      --actual <runs/sampled-lijin-actual-ml1m> --actual-commit <sha>
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

PAPER = "Li & Jin, On Sampling Top-K Recommendation Evaluation, KDD 2020, Table 2 (n = 100)"
#: Li & Jin Table 2, column ml-1m: beta@P's a for n = 100.
PUBLISHED_A = {"NeuMF": 0.3685, "MultiVAE": 0.3681, "EASE": 0.3684, "itemKNN": 0.4079}
MAPPINGS = ("bound", "beta@0.5", "beta@P")


def _stamp(folder: Path, commit: str) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("status") != "complete":
        raise SystemExit(f"{folder}: run not complete ({manifest.get('status')})")
    return {
        "scenario": manifest["scenario"],
        "simrec_version": manifest["versions"]["simrec"],
        "git_commit": commit,
        "draws_version": manifest["draws"],
    }


def blocks(all_items: Path, actual: Path, commit: str, actual_commit: str) -> list[tuple[str, str, Path, str]]:
    """(block, scheme, run folder, commit): Li & Jin's three blocks of Tables 5-6."""
    return [
        ("binom", "binomial", all_items, commit),
        ("hyper", "hypergeometric", all_items, commit),
        ("actual", "hypergeometric", actual, actual_commit),
    ]


def table2(runs: list[tuple[str, str, Path, str]]) -> pd.DataFrame:
    rows = []
    for block, scheme, folder, commit in runs:
        a = pd.read_csv(folder / "mapping_a.csv")
        a = a[a["scheme"] == scheme]
        stamp = _stamp(folder, commit)
        for _, r in a.iterrows():
            rows.append({"block": block, "recommender": r["recommender"], "n": int(r["n"]), "a_mean": r["a_mean"],
                         "a_sd": r["a_sd"], "n_repeats": int(r["n_repeats"]), **stamp})  # fmt: skip
    return pd.DataFrame(rows)


def winners(runs: list[tuple[str, str, Path, str]]) -> pd.DataFrame:
    frames = []
    for block, scheme, folder, commit in runs:
        hr = pd.read_csv(folder / "hit_ratio.csv")
        hr = hr[(hr["scheme"] == scheme) & hr["mapping"].isin(MAPPINGS) & (hr["k"] <= 50)]
        for (n, mapping), g in hr.groupby(["n", "mapping"]):
            shr = g.pivot(index="k", columns="recommender", values="sampled_hr")
            ghr = g.pivot(index="k", columns="recommender", values="global_hr_at_f")
            frames.append(
                pd.DataFrame(
                    {
                        "block": block,
                        "n": n,
                        "mapping": mapping,
                        "k": shr.index,
                        "winner_shr": shr.idxmax(axis=1).to_numpy(),
                        "winner_hr_at_f": ghr.idxmax(axis=1).to_numpy(),
                        **_stamp(folder, commit),
                    }
                )
            )
    out = pd.concat(frames, ignore_index=True)
    out["same"] = out["winner_shr"] == out["winner_hr_at_f"]
    return out


def markdown(t2: pd.DataFrame, win: pd.DataFrame) -> str:
    lines = ["| recommender | source | n | binom | hyper | actual |", "|---|---|---:|---:|---:|---:|"]
    for name, a in PUBLISHED_A.items():
        lines.append(f"| {name} | Li & Jin (block not stated) | 100 | {a:.4f} | | |")
    wide = t2.pivot_table(index=["recommender", "n"], columns="block", values="a_mean")
    sd = t2.pivot_table(index=["recommender", "n"], columns="block", values="a_sd")
    for (rec, n), row in wide.iterrows():
        cells = [f"{row[b]:.3f} ± {sd.loc[(rec, n), b]:.3f}" if b in row else "" for b in ("binom", "hyper", "actual")]
        lines.append(f"| {rec} | simrec | {n} | " + " | ".join(cells) + " |")
    lines += ["", "| block | n | mapping | k = 1..50: same winner | winner(s) by SHR@k |", "|---|---:|---|---:|---|"]
    for (block, n, mapping), g in win.groupby(["block", "n", "mapping"], sort=False):
        lines.append(
            f"| {block} | {n} | {mapping} | {int(g['same'].sum())}/{len(g)} | "
            f"{', '.join(sorted(set(g['winner_shr'])))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", type=Path, required=True, help="run folder of sampled-lijin-ml1m")
    ap.add_argument("--actual", type=Path, required=True, help="run folder of sampled-lijin-actual-ml1m")
    ap.add_argument("--commit", required=True, help="git commit of the simrec that made the --all run")
    ap.add_argument("--actual-commit", help="the same for the --actual run (default: --commit)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args(argv)
    runs = blocks(args.all, args.actual, args.commit, args.actual_commit or args.commit)
    t2, win = table2(runs), winners(runs)
    published = pd.DataFrame(
        [{"recommender": k, "block": "", "n": 100, "a": v, "source": PAPER} for k, v in PUBLISHED_A.items()]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    t2.to_csv(args.out / "table2.csv", index=False, float_format="%.6g")
    published.to_csv(args.out / "table2-published.csv", index=False)
    win.to_csv(args.out / "winners.csv", index=False)
    print(markdown(t2, win))


if __name__ == "__main__":
    sys.exit(main())
