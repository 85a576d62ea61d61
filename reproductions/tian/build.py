"""Tian's Table 3 and Figures 21-28, cell by cell: the authors' published results beside simrec's.

Reads
  * the authors' per-replicate results, ``simulation-results/simulate_<pref>_<obs>_csr-<data>.pkl`` of a
    checkout of BoiseState/chiir2020-est-error (the commit the project cites, e51c918): 100 replicates x
    Oracle / Popular / Random, precision, recall, MRR and nDCG (LensKit 0.7's) against the observed test data
    (``*_obs``) and the true preferences (``*_pref``); the thesis's IBP and LDA worlds on ML1M, AZM5, STMV1;
  * simrec run folders of ``thesis-table3-ml1m`` (the thesis text's reading), ``thesis-table3-ml1m-code``
    (the authors' code's reading) and the ``thesis-authors-ibp-unif`` pair, each given as
    ``READING=FOLDER@COMMIT`` (the git commit of the simrec that made it);

and writes, into ``--out``:
  * ``authors-table3.csv``, ``authors-means.csv``: the numbers recomputed from the pickles, each row naming
    its source (repository@commit:file);
  * ``ours-table3.csv``, ``ours-means.csv``: simrec's, each row stamped with the simrec version, the git
    commit and the draws version that made it (the run's manifest; the commit as given with ``--run``);

and prints the cell-by-cell Markdown tables of ``REPORT.md``.

Run from the repository root:
  python reproductions/tian/build.py --authors <checkout> \\
      --run text=<runs/thesis-table3-ml1m>@<sha> --run code=<runs/thesis-table3-ml1m-code>@<sha> ...
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from simrec.report import pairwise_wins, share_verdict

REPO = "BoiseState/chiir2020-est-error"
METRICS = {"precision": "precision", "recall": "recall", "recip_rank": "reciprocal_rank", "ndcg": "ndcg_lenskit07"}
DATA = {"ml_1m": "ML1M", "az_music_5core": "AZM5", "steam_video_game": "STMV1"}
OBS = {"unif": "uniform", "pop": "popularity"}

#: The thesis's Table 3 (Tian 2019, "Percentage of runs where Oracle beats Popular"): (data, world) ->
#: P@50, Recall, MRR, nDCG.
THESIS_TABLE3 = {
    ("ML1M", "uniform-unif"): (100, 100, 100, 100),
    ("ML1M", "uniform-pop"): (100, 100, 100, 100),
    ("ML1M", "ibp-unif"): (87, 58, 47, 65),
    ("ML1M", "ibp-pop"): (0, 0, 0, 0),
    ("ML1M", "lda-unif"): (100, 100, 100, 100),
    ("ML1M", "lda-pop"): (100, 100, 89, 100),
    ("AZM5", "uniform-unif"): (100, 100, 99, 100),
    ("AZM5", "uniform-pop"): (100, 100, 100, 100),
    ("AZM5", "ibp-unif"): (100, 100, 100, 100),
    ("AZM5", "ibp-pop"): (100, 100, 99, 100),
    ("AZM5", "lda-unif"): (100, 100, 100, 100),
    ("AZM5", "lda-pop"): (100, 100, 100, 100),
    ("STMV1", "uniform-unif"): (100, 100, 100, 100),
    ("STMV1", "uniform-pop"): (100, 100, 100, 100),
    ("STMV1", "ibp-unif"): (100, 100, 86, 100),
    ("STMV1", "ibp-pop"): (100, 5, 0, 85),
    ("STMV1", "lda-unif"): (100, 100, 100, 100),
    ("STMV1", "lda-pop"): (100, 100, 100, 100),
}
ORDER = ["precision", "recall", "reciprocal_rank", "ndcg_lenskit07"]
WORLDS = ["uniform-unif", "uniform-pop", "ibp-unif", "ibp-pop", "lda-unif", "lda-pop"]


def authors_frames(checkout: Path, commit: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 shares and per-world means recomputed from the authors' pickles."""
    wins, means = [], []
    for path in sorted((checkout / "simulation-results").glob("simulate_*_csr-*.pkl")):
        m = re.fullmatch(r"simulate_(ibp|lda)_(pop|unif)_csr-(\w+)\.pkl", path.name)
        if m is None or m.group(3) not in DATA:
            continue
        pref, obs, data = m.group(1), OBS[m.group(2)], DATA[m.group(3)]
        world = f"{pref}-{m.group(2)}"
        source = f"{REPO}@{commit}:simulation-results/{path.name}"
        frame = pd.read_pickle(path)  # the authors' own file, read in a scratch checkout (never committed)
        n_algos = frame["algorithm"].nunique()
        frame = frame.assign(replicate=np.repeat(np.arange(len(frame) // n_algos), n_algos))
        by = {a: g.set_index("replicate") for a, g in frame.groupby("algorithm")}
        for theirs, ours in METRICS.items():
            for truth, col in (("observed", f"{theirs}_obs"), ("true", f"{theirs}_pref")):
                o, p = by["Oracle"][col], by["Popular"][col]
                wins.append(
                    {
                        "data": data,
                        "world": world,
                        "preference": pref,
                        "observation": obs,
                        "metric": ours,
                        "truth": truth,
                        "wins_ge": int((o >= p).sum()),
                        "wins": int((o > p).sum()),
                        "n_replicates": len(o),
                        "source": source,
                    }
                )
            for algo, g in by.items():
                err = g[f"{theirs}_obs"] - g[f"{theirs}_pref"]
                means.append(
                    {
                        "data": data,
                        "world": world,
                        "preference": pref,
                        "observation": obs,
                        "recommender": algo,
                        "metric": ours,
                        "observed_mean": g[f"{theirs}_obs"].mean(),
                        "true_mean": g[f"{theirs}_pref"].mean(),
                        "error_mean": err.mean(),
                        "error_sd": err.std(ddof=1),
                        "n_replicates": len(g),
                        "source": source,
                    }
                )
    wins_f = pd.DataFrame(wins)
    thesis = [
        THESIS_TABLE3[(d, w)][ORDER.index(m)] if t == "observed" else np.nan
        for d, w, m, t in wins_f[["data", "world", "metric", "truth"]].itertuples(index=False)
    ]
    wins_f["thesis_percent"] = thesis
    return wins_f, pd.DataFrame(means)


def ours_frames(runs: dict[str, tuple[Path, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """simrec's Table 3 shares (strict, as simrec; >=, as the authors' code) and means, stamped."""
    wins, means = [], []
    for reading, (folder, commit) in runs.items():
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest.get("status") != "complete":
            raise SystemExit(f"{folder}: run not complete ({manifest.get('status')})")
        stamp = {
            "reading": reading,
            "scenario": manifest["scenario"],
            "simrec_version": manifest["versions"]["simrec"],
            "git_commit": commit,
            "draws_version": manifest["draws"],
        }
        res = pd.read_parquet(folder / "results.parquet")
        oracle = next(r for r in manifest["recommenders"] if r.startswith("Oracle"))
        keys = ["world", "preference", "observation", "metric", "truth"]
        strict = pairwise_wins(res, oracle, "Popular")  # ties count as not beating (simrec's Table 3)
        # Oracle >= Popular (the authors' code's rank_algos): every replicate but those Popular wins
        lost = pairwise_wins(res, "Popular", oracle).set_index(keys)["wins"]
        strict["wins_ge"] = strict["n_replicates"] - lost.reindex(pd.MultiIndex.from_frame(strict[keys])).to_numpy()
        for row in strict.to_dict("records"):
            wins.append({**{k: row[k] for k in keys}, "wins": row["wins"], "wins_ge": int(row["wins_ge"]),
                         "n_replicates": row["n_replicates"], "percent": row["percent"], "ci_low": row["ci_low"],
                         "ci_high": row["ci_high"], **stamp})  # fmt: skip
        summary = pd.read_csv(folder / "summary.csv")
        wide_s = summary.pivot_table(
            index=["world", "preference", "observation", "recommender", "metric", "n_replicates"],
            columns="kind",
            values=["mean", "sd"],
        )
        for key, row in wide_s.iterrows():
            means.append(
                {
                    **dict(zip(["world", "preference", "observation", "recommender", "metric", "n_replicates"], key)),
                    "observed_mean": row[("mean", "observed")],
                    "true_mean": row[("mean", "true")],
                    "error_mean": row[("mean", "error")],
                    "error_sd": row[("sd", "error")],
                    **stamp,
                }
            )
    return pd.DataFrame(wins), pd.DataFrame(means)


def verdict(published: float, wins: int, n: int) -> str:
    """``coin flip`` when our Wilson interval spans 50 %; else ``match`` when it holds the published share
    (:func:`simrec.report.share_verdict`)."""
    return share_verdict(published, wins, n)


def table3_markdown(authors: pd.DataFrame, ours: pd.DataFrame, readings: list[str]) -> str:
    """Published (thesis; authors' pickles, >=) / ours per reading (% of replicates [Wilson 95 %]) / verdict."""
    lines = [
        "| world | metric | thesis | authors' pickles (>=) | "
        + " | ".join(f"ours, {r} [Wilson 95 %] | verdict ({r})" for r in readings)
        + " |",
        "|---|---|---:|---:|" + "---:|---|" * len(readings),
    ]
    obs_a = authors[(authors["truth"] == "observed") & (authors["data"] == "ML1M")]
    worlds = sorted(set(ours["world"]), key=lambda w: (WORLDS.index(w) if w in WORLDS else len(WORLDS), w))
    for world in worlds:
        for metric in ORDER:
            pub = THESIS_TABLE3.get(("ML1M", world))
            thesis = pub[ORDER.index(metric)] if pub else None
            a = obs_a[(obs_a["world"] == world) & (obs_a["metric"] == metric)]
            cells = [
                world,
                metric,
                "—" if thesis is None else str(thesis),
                "—" if a.empty else str(a["wins_ge"].iloc[0]),
            ]
            for r in readings:
                o = ours[(ours["reading"] == r) & (ours["world"] == world) & (ours["metric"] == metric)]
                o = o[o["truth"] == "observed"]
                if o.empty:
                    cells += ["", ""]
                    continue
                row = o.iloc[0]
                cells.append(f"{row['percent']:.0f} [{row['ci_low']:.0f}–{row['ci_high']:.0f}]")
                cells.append("—" if thesis is None else verdict(thesis, int(row["wins"]), int(row["n_replicates"])))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: An error this small counts as none, however small its standard error (recall's is 1e-4 under uniform
#: observation: Steck's unbiasedness holds up to the users with an empty test set).
ZERO = 0.001


def _near_zero(row: pd.Series) -> bool:
    """A mean error within 2 standard errors of zero, or below :data:`ZERO`."""
    return abs(row["error_mean"]) <= max(2 * row["error_sd"] / np.sqrt(row["n_replicates"]), ZERO)


def _error_verdict(ra: pd.Series, ro: pd.Series) -> str:
    """Sign agreement of two mean errors (authors', ours); "≈ 0" as :func:`_near_zero`."""
    za, zo = _near_zero(ra), _near_zero(ro)
    if za and zo:
        return "both ≈ 0"
    if za or zo:
        return "≈ 0 in " + ("authors'" if za else "ours") + " only"
    return "same sign" if np.sign(ra["error_mean"]) == np.sign(ro["error_mean"]) else "**opposite sign**"


def means_markdown(authors: pd.DataFrame, ours: pd.DataFrame, readings: list[str], metric: str) -> str:
    """One metric's ML1M means (Figures 21-28): observed, true and error, authors / ours per reading."""
    a = authors[authors["data"] == "ML1M"].set_index(["world", "recommender", "metric"])
    o = {r: ours[ours["reading"] == r].set_index(["world", "recommender", "metric"]) for r in readings}
    head = " / ".join(["authors", *readings])
    lines = [
        f"| world | recommender | observed: {head} | true: {head} | error: {head} | verdict: "
        + " / ".join(readings)
        + " |",
        "|---|---|---:|---:|---:|---|",
    ]
    worlds = sorted({w for w, _, _ in a.index}, key=lambda w: WORLDS.index(w) if w in WORLDS else 99)
    for world in worlds:
        for rec in ("Oracle", "Popular", "Random"):
            key = (world, rec, metric)
            rows = [o[r].loc[key] for r in readings if key in o[r].index]
            if key not in a.index or len(rows) < len(readings):
                continue
            ra = a.loc[key]
            cells = [
                " / ".join(f"{x[col]:{fmt}}" for x in (ra, *rows))
                for col, fmt in (("observed_mean", ".4f"), ("true_mean", ".4f"), ("error_mean", "+.4f"))
            ]
            verdicts = " / ".join(_error_verdict(ra, ro) for ro in rows)
            lines.append(f"| {world} | {rec} | " + " | ".join(cells) + f" | {verdicts} |")
    return "\n".join(lines)


def _claims(m: pd.DataFrame) -> dict[tuple[str, str], bool | None]:
    """The thesis's statements about Figures 21-28 (§4.2), each evaluated on one world's means.

    ``m``: rows of one source, indexed by (world, recommender, metric), columns as in ``*-means.csv``.
    A statement that does not apply to a world is None.
    """
    out: dict[tuple[str, str], bool | None] = {}
    for world in sorted({w for w, _, _ in m.index}, key=lambda w: WORLDS.index(w) if w in WORLDS else 99):

        def err(rec: str, metric: str) -> float:
            return float(m.loc[(world, rec, metric), "error_mean"])

        def near_zero(rec: str, metric: str) -> bool:
            return _near_zero(m.loc[(world, rec, metric)])

        recs = ("Oracle", "Popular", "Random")
        unif, lda = world.endswith("-unif"), world.startswith("lda")
        # §4.2.1: no bias under uniform observation, nor in Unif-Pop (popularity sampling of a uniform truth is
        # uniform); popularity observation otherwise overestimates recall, "particularly for Popular"
        unbiased = unif or world == "uniform-pop"
        out[(world, "recall unbiased under uniform observation and in Unif-Pop (§4.2.1)")] = (
            all(near_zero(r, "recall") for r in recs) if unbiased else None
        )
        out[(world, "popularity observation: recall overestimated, most for Popular (§4.2.1)")] = (
            None
            if unbiased
            else err("Popular", "recall") > 0
            and err("Popular", "recall") >= max(err("Oracle", "recall"), err("Random", "recall"))
        )
        out[(world, "precision underestimated, more for Oracle than Popular (§4.2.2)")] = all(
            err(r, "precision") < 0 for r in recs
        ) and err("Oracle", "precision") < err("Popular", "precision")
        out[(world, "MRR underestimated (§4.2.3)")] = all(err(r, "reciprocal_rank") < 0 for r in recs)
        threshold = err("Oracle", "ndcg_lenskit07") < -0.4
        out[(world, "nDCG: Oracle's error above -0.4 under Unif/IBP, below under LDA (§4.2.4)")] = threshold == lda
        if world == "ibp-pop":
            obs = (
                m.loc[(world, "Popular", "reciprocal_rank"), "observed_mean"]
                > m.loc[(world, "Oracle", "reciprocal_rank"), "observed_mean"]
            )
            obs_r = (
                m.loc[(world, "Popular", "recall"), "observed_mean"]
                > m.loc[(world, "Oracle", "recall"), "observed_mean"]
            )
            out[(world, "IBP-Pop: Popular beats Oracle on observed recall and MRR (§4.2.1, §4.2.3)")] = bool(
                obs and obs_r
            )
    return out


def claims_markdown(authors: pd.DataFrame, ours: pd.DataFrame, readings: list[str]) -> str:
    """Each statement of §4.2 per ML1M world: holds in the authors' pickles / in ours, per reading."""
    a = _claims(authors[authors["data"] == "ML1M"].set_index(["world", "recommender", "metric"]))
    o = {r: _claims(ours[ours["reading"] == r].set_index(["world", "recommender", "metric"])) for r in readings}
    mark = {True: "yes", False: "**no**", None: "—"}
    lines = [
        "| statement (thesis §4.2) | world | authors' pickles | " + " | ".join(f"ours, {r}" for r in readings) + " |",
        "|---|---|---|" + "---|" * len(readings),
    ]
    keys = list(dict.fromkeys([*a, *(k for r in readings for k in o[r])]))
    keys.sort(key=lambda k: (k[1], WORLDS.index(k[0]) if k[0] in WORLDS else 99))
    for world, claim in keys:
        cells = [mark[a.get((world, claim))]] + [mark[o[r].get((world, claim))] for r in readings]
        if all(c == "—" for c in cells):
            continue
        lines.append(f"| {claim} | {world} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--authors", type=Path, required=True, help="checkout of BoiseState/chiir2020-est-error")
    ap.add_argument("--authors-commit", default="e51c918")
    ap.add_argument(
        "--run",
        action="append",
        default=[],
        help="READING=RUN_FOLDER@COMMIT, the git commit of the simrec that made it",
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args(argv)
    runs = {}
    for item in args.run:
        reading, rest = item.split("=", 1)
        folder, commit = rest.rsplit("@", 1)
        runs[reading] = (Path(folder), commit)
    authors_wins, authors_means = authors_frames(args.authors, args.authors_commit)
    ours_wins, ours_means = ours_frames(runs)
    args.out.mkdir(parents=True, exist_ok=True)
    authors_wins.to_csv(args.out / "authors-table3.csv", index=False, float_format="%.6g")
    authors_means.to_csv(args.out / "authors-means.csv", index=False, float_format="%.6g")
    ours_wins.to_csv(args.out / "ours-table3.csv", index=False, float_format="%.6g")
    ours_means.to_csv(args.out / "ours-means.csv", index=False, float_format="%.6g")
    # readings of the six-world scenarios, and the others (the one-world matched IBP-Unif runs), in two tables
    main_readings = [r for r in runs if set(ours_wins.loc[ours_wins["reading"] == r, "world"]) >= set(WORLDS[2:])]
    extra = [r for r in runs if r not in main_readings]
    print(table3_markdown(authors_wins, ours_wins[ours_wins["reading"].isin(main_readings)], main_readings))
    if extra:
        print()
        print(table3_markdown(authors_wins, ours_wins[ours_wins["reading"].isin(extra)], extra))
    print("\n### statements\n")
    print(claims_markdown(authors_means, ours_means, list(runs)))
    for metric in ORDER:
        print(f"\n### means, {metric}\n")
        print(means_markdown(authors_means, ours_means, main_readings, metric))


if __name__ == "__main__":
    sys.exit(main())
