"""Figures of a stress run (matplotlib, Agg; written atomically as PNG).

* ``relative_error_<scheme>_n<n>.png`` — mean relative error vs K per metric
  family for a readable subset of estimators, averaged over recommenders
  (the dissertation's Tables 3-4 as curves);
* ``expected_vs_n.png`` — E[sampled metric] vs sample size per recommender,
  with the exact metric dashed (Krichene & Rendle Figure 6);
* ``hit_ratio_<scheme>_n<n>.png`` — sampled HR@k and global HR@f(k) for each
  mapping (Li & Jin Figure 7), one panel per recommender;
* ``decomposition.png`` — sampling, missing-data and total error at K = 10
  (simulations);
* ``user_sampling.png`` — user sampling (dissertation §2.7): mean |relative
  error| of one sample of m users vs K, and the coverage of its intervals vs
  K beside the nominal level, one line per m (mean over recommenders).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simrec._io import atomic_write

__all__ = ["plot_stress", "plot_user_sampling", "FIGURE_ESTIMATORS"]

#: Estimators drawn in the error figures (when present).
FIGURE_ESTIMATORS = ("naive", "rank_estimate", "CLS", "BV(gamma=0.1)", "MLE", "MES", "MN_MLE", "mapping:beta@P",
                     "adaptive_MLE")


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    out = atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=100, bbox_inches="tight"))
    plt.close(fig)
    return out


def plot_stress(
    out: str | Path,
    estimates: pd.DataFrame,
    expected: pd.DataFrame,
    hit_ratio: pd.DataFrame,
    decomposition: pd.DataFrame,
) -> list[Path]:
    """Write every figure into ``out``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    written: list[Path] = []
    families = list(dict.fromkeys(estimates["metric"])) if len(estimates) else []
    for (scheme, n), grp in estimates.groupby(["scheme", "n"], sort=False):
        fig, axes = plt.subplots(1, len(families), figsize=(4.5 * len(families), 3.6), squeeze=False)
        for ax, fam in zip(axes[0], families):
            sub = grp[grp["metric"] == fam]
            for est in FIGURE_ESTIMATORS:
                e = sub[sub["estimator"] == est]
                if len(e):
                    curve = e.groupby("k")["rel_error"].mean()
                    ax.plot(curve.index, curve.values, label=est)
            ax.axhline(0, color="k", lw=0.6)
            ax.set(title=f"{fam}", xlabel="K", ylabel="mean relative error", ylim=(-1, 2))
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(f"{scheme}, n = {n} (mean over recommenders)")
        written.append(_save(fig, out / f"relative_error_{scheme}_n{n}.png"))
    if len(expected):
        fams = list(dict.fromkeys(expected["metric"]))
        fig, axes = plt.subplots(1, len(fams), figsize=(4.5 * len(fams), 3.6), squeeze=False)
        for ax, fam in zip(axes[0], fams):
            sub = expected[expected["metric"] == fam]
            for i, (rec, e) in enumerate(sub.groupby("recommender", sort=False)):
                line = ax.plot(e["n"], e["expected_sampled"], marker="o", ms=3, label=rec)[0]
                ax.axhline(float(e["exact"].iloc[0]), color=line.get_color(), ls="--", lw=0.8)
            ax.set(xscale="log", title=f"{fam}@{int(sub['k'].iloc[0])}", xlabel="sample size n",
                   ylabel="E[sampled metric] (dashed: exact)")
        axes[0][-1].legend(fontsize=7)
        written.append(_save(fig, out / "expected_vs_n.png"))
    if len(hit_ratio):
        for (scheme, n), grp in hit_ratio.groupby(["scheme", "n"], sort=False):
            recs = list(dict.fromkeys(grp["recommender"]))
            fig, axes = plt.subplots(1, len(recs), figsize=(4 * len(recs), 3.4), squeeze=False)
            for ax, rec in zip(axes[0], recs):
                sub = grp[grp["recommender"] == rec]
                first = sub[sub["mapping"] == sub["mapping"].iloc[0]]
                ax.plot(first["k"], first["sampled_hr"], color="k", lw=2, label="sampled HR@k")
                for m, e in sub.groupby("mapping", sort=False):
                    ax.plot(e["k"], e["global_hr_at_f"], lw=1, label=f"HR@f(k), {m}")
                ax.set(xscale="log", title=rec, xlabel="k", ylabel="hit ratio")
            axes[0][-1].legend(fontsize=7)
            fig.suptitle(f"Li & Jin Fig. 7: {scheme}, n = {n}")
            written.append(_save(fig, out / f"hit_ratio_{scheme}_n{n}.png"))
    if len(decomposition):
        d = decomposition[(decomposition["k"] == min(10, int(decomposition["k"].max())))]
        first = d[(d["scheme"] == d["scheme"].iloc[0]) & (d["n"] == d["n"].iloc[0])]
        ests = [e for e in FIGURE_ESTIMATORS if e in set(first["estimator"])][:4]
        fams = list(dict.fromkeys(first["metric"]))
        fig, axes = plt.subplots(len(ests), len(fams), figsize=(4.5 * len(fams), 2.8 * len(ests)), squeeze=False)
        for i, est in enumerate(ests):
            for j, fam in enumerate(fams):
                ax = axes[i][j]
                sub = first[(first["estimator"] == est) & (first["metric"] == fam)]
                x = np.arange(len(sub))
                for o, (col, lab) in enumerate((("sampling_error", "sampling"), ("missing_data_error", "missing data"),
                                                ("total_error", "total"))):
                    ax.bar(x + (o - 1) * 0.27, sub[col], width=0.27, label=lab)
                ax.set_xticks(x, sub["recommender"], fontsize=7)
                ax.axhline(0, color="k", lw=0.6)
                ax.set_title(f"{est}, {fam}@{int(sub['k'].iloc[0]) if len(sub) else ''}", fontsize=9)
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(f"error decomposition ({first['scheme'].iloc[0]}, n = {first['n'].iloc[0]})")
        written.append(_save(fig, out / "decomposition.png"))
    return written


def plot_user_sampling(out: str | Path, table: pd.DataFrame) -> Path | None:
    """``user_sampling.png`` from :func:`simrec.stress.user_sampling.user_sampling_table`'s output (None if empty)."""
    if not len(table):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = list(dict.fromkeys(table["metric"]))
    fig, axes = plt.subplots(2, len(fams), figsize=(4.5 * len(fams), 6.4), squeeze=False)
    for j, fam in enumerate(fams):
        sub = table[table["metric"] == fam]
        for size, grp in sub.groupby("size", sort=True):
            curve = grp.groupby("k")[["mean_abs_rel_error", "coverage"]].mean()
            axes[0][j].plot(curve.index, 100 * curve["mean_abs_rel_error"], label=f"m = {size}")
            axes[1][j].plot(curve.index, curve["coverage"], label=f"m = {size}")
        axes[0][j].set(title=fam, xlabel="K", ylabel="mean |relative error| (%)")
        axes[1][j].axhline(float(sub["nominal"].iloc[0]), color="k", ls="--", lw=0.8)
        axes[1][j].set(xlabel="K", ylabel="interval coverage", ylim=(0, 1.02))
    axes[0][-1].legend(fontsize=7)
    fig.suptitle("user sampling (mean over recommenders; dashed: nominal level)")
    return _save(fig, Path(out) / "user_sampling.png")
