"""Figures of a stress run (matplotlib, Agg; written atomically as PNG).

* ``relative_error_<scheme>_n<n>.png`` — mean relative error vs K per metric
  family for a readable subset of estimators, averaged over recommenders
  (the dissertation's Tables 3-4 as curves); metrics without a cutoff (AUC,
  untruncated AP) have no curve and are left to ``summary.csv``;
* ``expected_vs_n.png`` — E[sampled metric] vs sample size per recommender,
  with the exact metric dashed (Krichene & Rendle Figure 6);
* ``hit_ratio_<scheme>_n<n>.png`` — sampled HR@k and global HR@f(k) for each
  mapping (Li & Jin Figure 7), one panel per recommender;
* ``decomposition.png`` — sampling, missing-data and total error at K = 10
  (simulations), for the first scheme and size (named in the title, with the
  others it leaves out; every one is in ``decomposition.csv``);
* ``user_sampling.png`` — user sampling (dissertation §2.7): mean |relative
  error| of one sample of m users vs K, and the coverage of its intervals vs
  K beside the nominal level, one line per m (mean over recommenders);
* ``user_sampling_estimators.png`` — the item-sampling estimators on user
  samples (``[user_sampling] estimators``): mean |relative error| vs K, one
  row per estimator, one column per metric family, one line per m (mean over
  recommenders, the first n); with bootstrap intervals a last row of their
  coverage, estimators averaged, per m.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from simrec._figures import legend_label, literal_text, plain_log_axis
from simrec._io import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_stress", "plot_user_sampling", "plot_user_sampling_estimators", "FIGURE_ESTIMATORS"]

#: Estimators drawn in the error figures (when present).
FIGURE_ESTIMATORS = (
    "naive",
    "rank_estimate",
    "CLS",
    "BV(gamma=0.1)",
    "MLE",
    "MES",
    "MN_MLE",
    "mapping:beta@P",
    "adaptive_MLE",
)


#: One colour per estimator, the same in every panel and figure (tab10, then tab20's light shades).
_COLORS = (
    "tab:blue",
    "tab:orange",
    "tab:green",
    "tab:red",
    "tab:purple",
    "tab:brown",
    "tab:pink",
    "tab:olive",
    "tab:cyan",
    "#aec7e8",
)

#: Linear range of the symlog y-axis of the relative-error figures: |relative error| <= 1 is drawn linearly,
#: larger values on a log scale, so an estimator off by 7x or 1000x stays visible beside those near 0.
_LINTHRESH = 1.0


def _save(fig: Figure, path: Path) -> Path:
    import matplotlib.pyplot as plt

    out = atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=100))
    plt.close(fig)
    return out


def _figure_legend(fig: Figure, axes: Iterable[Axes], loc: str = "outside right upper", **kwargs: Any) -> None:
    """One legend for the whole figure (default right of the panels) with every label drawn in any panel, once."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc=cast(Any, loc), fontsize=8, **kwargs)


def _symlog_axis(ax: Axes, top: float) -> None:
    """Symlog y from −1 (an estimate of 0) to above ``top``: ticks at 0, ±0.5, ±1 and powers of ten, as plain numbers."""
    from matplotlib.ticker import NullLocator

    ax.set_yscale("symlog", linthresh=_LINTHRESH)
    ax.set_ylim(-1.05, top * 1.3)
    ticks = [-1.0, -0.5, 0.0, 0.5, 1.0] + [10.0**p for p in range(1, int(np.ceil(np.log10(top * 1.3))) + 1)]
    ticks = [t for t in ticks if t <= top * 1.3]
    ax.set_yticks(ticks, [f"{t:g}".replace("-", "−") for t in ticks])
    ax.yaxis.set_minor_locator(NullLocator())


def _plain_log_k(ax: Axes, k_max: float) -> None:
    """A log x axis up to ``k_max`` labelled in plain numbers at 1, 2, 5, 10, 20, 50, ... (1, 3, 10, 30, ... beyond
    500; decades beyond 5,000), without minor ticks.

    Decision (issue 29): labelled ticks read better than decades with
    unlabelled minor ticks, and draw in about a third less time (minor ticks
    were a third of the hit-ratio figures' cost); fewer per decade as the
    axis gets longer, so the labels never overlap.
    """
    from matplotlib.ticker import LogLocator, NullLocator

    plain_log_axis(ax, "x")
    subs = (1.0, 2.0, 5.0) if k_max <= 500 else (1.0, 3.0) if k_max <= 5000 else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(subs=subs, numticks=64))  # the subs decide the density
    ax.xaxis.set_minor_locator(NullLocator())


def _size_ticks(ax: Axes, sizes: Iterable[float]) -> None:
    """Ticks at the sample sizes used, as plain numbers (no 10^k labels, no minor labels); rotated when many."""
    from matplotlib.ticker import NullFormatter, NullLocator

    sizes = sorted({int(v) for v in sizes})
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(sizes, [str(v) for v in sizes], rotation=45 if len(sizes) > 5 else 0, fontsize=8)


@literal_text
def plot_stress(
    out: str | Path,
    estimates: pd.DataFrame,
    expected: pd.DataFrame,
    hit_ratio: pd.DataFrame,
    decomposition: pd.DataFrame,
) -> list[Path]:
    """Write every figure into ``out``; returns the files written.

    Layout decisions (issue 14): panels, titles and labels are placed by
    matplotlib's constrained layout (no overlaps); each figure has one legend
    right of its panels holding every line drawn in any panel; estimators keep
    one colour across panels; the relative-error axis is symlog (linear for
    |error| <= 1), so no estimator is off the chart; the size axis has a tick
    at every size used; the decomposition figure names the scheme, size and K
    it shows and the ones in ``decomposition.csv`` it does not.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out = Path(out)
    written: list[Path] = []
    if len(estimates):  # metrics without a cutoff (AUC, untruncated AP) have no curve vs K: in the CSVs only
        estimates = estimates[estimates["k"].notna()]
    families = list(dict.fromkeys(estimates["metric"])) if len(estimates) else []
    colors = dict(zip(FIGURE_ESTIMATORS, _COLORS))
    for (scheme, n), grp in estimates.groupby(["scheme", "n"], sort=False):
        fig, axes = plt.subplots(
            1, len(families), figsize=(4.2 * len(families) + 2.2, 3.8), squeeze=False, layout="constrained"
        )
        n_recs = grp["recommender"].nunique() if "recommender" in grp else 0
        for ax, fam in zip(axes[0], families):
            sub = grp[grp["metric"] == fam]
            top = 1.0
            for est in FIGURE_ESTIMATORS:
                e = sub[sub["estimator"] == est]
                curve = e.groupby("k")["rel_error"].mean().dropna() if len(e) else e
                if len(curve):
                    ax.plot(curve.index, curve.values, label=est, color=colors[est])
                    top = max(top, float(np.nanmax(curve.values[np.isfinite(curve.values)], initial=1.0)))
            ax.axhline(0, color="k", lw=0.6, label="0 = unbiased")
            _symlog_axis(ax, top)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set(title=fam, xlabel="K")
            ax.grid(axis="y", alpha=0.3)
        axes[0][0].set_ylabel("mean relative error (estimate − exact) / exact\n(symlog: linear in [−1, 1])")
        _figure_legend(fig, axes[0], title="estimator")
        fig.suptitle(
            f"Sampled {scheme}, n = {n} negatives: relative error of each estimator vs K "
            f"(mean over {n_recs} recommenders and the repeats)",
            fontsize=10,
        )
        written.append(_save(fig, out / f"relative_error_{scheme}_n{n}.png"))
    if len(expected):
        fams = list(dict.fromkeys(expected["metric"]))
        fig, axes = plt.subplots(
            1, len(fams), figsize=(4.2 * len(fams) + 1.8, 3.8), squeeze=False, layout="constrained"
        )
        for ax, fam in zip(axes[0], fams):
            sub = expected[expected["metric"] == fam]
            for rec, e in sub.groupby("recommender", sort=False):
                line = ax.plot(e["n"], e["expected_sampled"], marker="o", ms=3, label=legend_label(str(rec)))[0]
                ax.axhline(float(e["exact"].iloc[0]), color=line.get_color(), ls="--", lw=0.8)
            ax.set(xscale="log", title=f"{fam}@{int(sub['k'].iloc[0])}", xlabel="sample size n")
            _size_ticks(ax, sub["n"])
            ax.plot([], [], color="grey", ls="--", lw=0.8, label="exact metric (dashed, recommender's colour)")
        axes[0][0].set_ylabel("E[sampled metric]")
        _figure_legend(fig, axes[0], title="recommender")
        fig.suptitle("Expected sampled metric vs sample size n (solid) and the exact metric (dashed)", fontsize=10)
        written.append(_save(fig, out / "expected_vs_n.png"))
    if len(hit_ratio):
        for (scheme, n), grp in hit_ratio.groupby(["scheme", "n"], sort=False):
            recs = list(dict.fromkeys(grp["recommender"]))
            fig, axes = plt.subplots(
                1, len(recs), figsize=(3.8 * len(recs) + 2.2, 3.6), squeeze=False, layout="constrained"
            )
            for ax, rec in zip(axes[0], recs):
                sub = grp[grp["recommender"] == rec]
                first = sub[sub["mapping"] == sub["mapping"].iloc[0]]
                ax.plot(first["k"], first["sampled_hr"], color="k", lw=2, label="sampled HR@k")
                for m, e in sub.groupby("mapping", sort=False):
                    ax.plot(e["k"], e["global_hr_at_f"], lw=1, label=f"HR@f(k), {m}")
                _plain_log_k(ax, float(sub["k"].max()))
                ax.set(title=rec, xlabel="k (sampled list)")
            axes[0][0].set_ylabel("hit ratio")
            _figure_legend(fig, axes[0])
            fig.suptitle(
                f"Sampled HR@k and global HR@f(k) per mapping (Li & Jin Fig. 7): {scheme}, n = {n}", fontsize=10
            )
            written.append(_save(fig, out / f"hit_ratio_{scheme}_n{n}.png"))
    if len(decomposition):
        k = min(10, int(decomposition["k"].max()))
        d = decomposition[decomposition["k"] == k]
        scheme, n = d["scheme"].iloc[0], d["n"].iloc[0]
        first = d[(d["scheme"] == scheme) & (d["n"] == n)]
        ests = [e for e in FIGURE_ESTIMATORS if e in set(first["estimator"])][:4]
        fams = list(dict.fromkeys(first["metric"]))
        fig, axes = plt.subplots(
            len(ests),
            len(fams),
            figsize=(4.2 * len(fams) + 1.8, 2.8 * len(ests) + 0.6),
            squeeze=False,
            layout="constrained",
        )
        parts = (
            ("sampling_error", "sampling (estimate − exact observed)"),
            ("missing_data_error", "missing data (exact observed − true)"),
            ("total_error", "total (sum)"),
        )
        for i, est in enumerate(ests):
            for j, fam in enumerate(fams):
                ax = axes[i][j]
                sub = first[(first["estimator"] == est) & (first["metric"] == fam)]
                x = np.arange(len(sub))
                for o, (col, lab) in enumerate(parts):
                    ax.bar(x + (o - 1) * 0.27, sub[col], width=0.27, label=lab, color=_COLORS[o])
                ax.set_xticks(x, sub["recommender"], fontsize=7)
                ax.axhline(0, color="k", lw=0.6)
                ax.set_title(f"{est}, {fam}@{k}", fontsize=9)
            axes[i][0].set_ylabel("error")
        _figure_legend(fig, axes.flat, loc="outside lower center", ncols=3)
        others = sorted({(str(s), int(m)) for s, m in zip(d["scheme"], d["n"])} - {(str(scheme), int(n))})
        rest = (
            f"\nnot shown: {', '.join(f'{s} n = {m}' for s, m in others)} (all in decomposition.csv)" if others else ""
        )
        fig.suptitle(
            f"Error decomposition at K = {k}, shown for {scheme} sampling with n = {n} "
            f"(rows: estimators, columns: metrics){rest}",
            fontsize=10,
        )
        written.append(_save(fig, out / "decomposition.png"))
    return written


@literal_text
def plot_user_sampling(out: str | Path, table: pd.DataFrame) -> Path | None:
    """``user_sampling.png`` from :func:`simrec.stress.user_sampling.user_sampling_table`'s output (None if empty)."""
    if not len(table):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = list(dict.fromkeys(table["metric"]))
    fig, axes = plt.subplots(2, len(fams), figsize=(4.5 * len(fams) + 1.2, 6.4), squeeze=False, layout="constrained")
    for j, fam in enumerate(fams):
        sub = table[table["metric"] == fam]
        for size, grp in sub.groupby("size", sort=True):
            curve = grp.groupby("k")[["mean_abs_rel_error", "coverage"]].mean()
            axes[0][j].plot(curve.index, 100 * curve["mean_abs_rel_error"], label=f"m = {size}")
            axes[1][j].plot(curve.index, curve["coverage"], label=f"m = {size}")
        axes[0][j].set(title=fam, xlabel="K", ylabel="mean |relative error| (%)")
        axes[1][j].axhline(float(sub["nominal"].iloc[0]), color="k", ls="--", lw=0.8)
        axes[1][j].set(xlabel="K", ylabel="interval coverage", ylim=(0, 1.02))
    _figure_legend(fig, axes.flat)
    fig.suptitle("user sampling (mean over recommenders; dashed: nominal level)")
    return _save(fig, Path(out) / "user_sampling.png")


@literal_text
def plot_user_sampling_estimators(out: str | Path, table: pd.DataFrame) -> Path | None:
    """``user_sampling_estimators.png`` from :func:`simrec.stress.user_sampling.user_sampling_estimator_table`'s
    output (None if empty): error vs K per estimator and m at the first n, and the intervals' coverage."""
    if not len(table):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first_n = table["n"].min()
    sub = table[table["n"] == first_n]
    fams = list(dict.fromkeys(sub["metric"]))
    ests = list(dict.fromkeys(sub["estimator"]))
    boot = bool(sub["coverage"].notna().any())
    rows = len(ests) + boot
    fig, axes = plt.subplots(
        rows, len(fams), figsize=(4.5 * len(fams) + 1.2, 2.6 * rows + 0.6), squeeze=False, layout="constrained"
    )
    for j, fam in enumerate(fams):
        for i, est in enumerate(ests):
            cell = sub[(sub["metric"] == fam) & (sub["estimator"] == est)]
            for size, grp in cell.groupby("size", sort=True):
                curve = grp.groupby("k")["mean_abs_rel_error"].mean()
                axes[i][j].plot(curve.index, 100 * curve.to_numpy(), label=f"m = {size}")
            axes[i][j].set(title=f"{est}, {fam}", xlabel="K", ylabel="mean |rel. error| (%)")
        if boot:
            ax = axes[rows - 1][j]
            for size, grp in sub[sub["metric"] == fam].groupby("size", sort=True):
                curve = grp.groupby("k")["coverage"].mean()
                ax.plot(curve.index, curve.to_numpy(), label=f"m = {size}")
            ax.axhline(float(sub["nominal"].iloc[0]), color="k", ls="--", lw=0.8)
            ax.set(
                title=f"interval coverage, {fam} (estimators averaged)", xlabel="K", ylabel="coverage", ylim=(0, 1.02)
            )
    _figure_legend(fig, axes.flat)
    fig.suptitle(
        f"item-sampling estimators on m sampled users ({sub['scheme'].iloc[0]}, n = {first_n}; mean over recommenders)"
    )
    return _save(fig, Path(out) / "user_sampling_estimators.png")
