"""Tidy summaries, the thesis's Table 3, and figures of a run's results.

Everything here reads the tidy results frame (:data:`simrec.experiment.RESULT_COLUMNS`);
aggregation over replicates happens here and only here.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special as _sp  # not scipy.stats: 0.7 s CPU to import, for two quantiles

from ._figures import literal_text
from ._validation import check_in_range, check_int

__all__ = ["errors", "summarize", "wilson_interval", "pairwise_wins", "plot_results"]

_KEYS = ["world", "preference", "observation", "recommender", "metric"]


def errors(results: pd.DataFrame) -> pd.DataFrame:
    """Per-replicate missing-data error M_obs − M_truth.

    Returns the rows of ``results`` reshaped to one row per replicate x world x
    recommender x metric with columns ``observed``, ``true`` and
    ``error = observed − true`` (NaN where either side is undefined).
    """
    wide = results.pivot_table(
        index=["replicate", *_KEYS], columns="truth", values="value", aggfunc="first", dropna=False
    )
    wide = wide.reindex(columns=["observed", "true"]).reset_index()
    wide.columns.name = None
    wide["error"] = wide["observed"] - wide["true"]
    return wide.dropna(subset=["observed", "true"], how="all")


def _t_interval(values: pd.Series, level: float) -> tuple[float, float, float, float, int]:
    v = values.dropna().to_numpy(dtype=float)
    n = len(v)
    if n == 0:
        return (np.nan,) * 4 + (0,)  # type: ignore[return-value]
    mean = float(v.mean())
    sd = float(v.std(ddof=1)) if n > 1 else np.nan
    if n > 1:
        half = float(_sp.stdtrit(n - 1, 0.5 + level / 2) * sd / np.sqrt(n))  # = scipy.stats.t.ppf(q, n - 1)
    else:
        half = np.nan
    return mean, sd, mean - half, mean + half, n


def summarize(results: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Mean, sd and a t confidence interval over replicates.

    One row per world x recommender x metric x kind, where kind is
    ``observed``, ``true`` or ``error`` (observed − true, paired by replicate).

    .. math:: \\bar x \\pm t_{(1+\\ell)/2,\\, R-1}\\; s / \\sqrt{R}

    Parameters
    ----------
    results : DataFrame
        Tidy results of :func:`simrec.experiment.run_replicate`.
    level : float, default 0.95
        Confidence level.
    """
    check_in_range("level", level, 0, 1, low_open=True, high_open=True)
    err = errors(results)
    long = err.melt(id_vars=["replicate", *_KEYS], value_vars=["observed", "true", "error"], var_name="kind")
    rows = []
    for key, grp in long.groupby([*_KEYS, "kind"], sort=False):
        mean, sd, lo, hi, n = _t_interval(grp["value"], level)
        rows.append((*key, mean, sd, lo, hi, n))
    return pd.DataFrame(rows, columns=[*_KEYS, "kind", "mean", "sd", "ci_low", "ci_high", "n_replicates"])


def wilson_interval(successes: np.ndarray, n: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    .. math:: \\frac{\\hat p + z^2/2n \\pm z\\sqrt{\\hat p(1-\\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    Chosen over the normal interval because the proportions of Table 3 sit at
    or near 0 and 1, where the normal interval collapses.
    """
    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    z = _sp.ndtri(0.5 + level / 2)  # = scipy.stats.norm.ppf(q)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = successes / n
        denom = 1 + z**2 / n
        center = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    # rounded to 1e-12: at 0 or n successes a bound is 0 or 1 up to rounding (0.9999999999999999)
    return np.round(center - half, 12), np.round(center + half, 12)


def pairwise_wins(results: pd.DataFrame, winner: str, loser: str, level: float = 0.95) -> pd.DataFrame:
    """Share of replicates in which ``winner`` scores higher than ``loser``.

    The thesis's Table 3 uses ``winner="oracle"``, ``loser="popular"``: the
    percentage of replicates in which Oracle beats Popular on each metric,
    against observed and true relevance. Ties count as not beating. The
    interval is Wilson's (:func:`wilson_interval`).
    """
    keep = results[results["recommender"].isin([winner, loser])]
    wide = keep.pivot_table(
        index=["replicate", "world", "preference", "observation", "metric", "truth"],
        columns="recommender",
        values="value",
        aggfunc="first",
    ).dropna()
    if winner not in wide or loser not in wide:
        return pd.DataFrame(
            columns=["world", "metric", "truth", "wins", "n_replicates", "percent", "ci_low", "ci_high"]
        )
    wide["win"] = wide[winner] > wide[loser]
    tab = (
        wide.groupby(["world", "preference", "observation", "metric", "truth"])["win"]
        .agg(["sum", "count"])
        .reset_index()
    )
    tab = tab.rename(columns={"sum": "wins", "count": "n_replicates"})
    lo, hi = wilson_interval(tab["wins"].to_numpy(), tab["n_replicates"].to_numpy(), level)
    tab["percent"] = 100 * tab["wins"] / tab["n_replicates"]
    tab["ci_low"] = 100 * lo
    tab["ci_high"] = 100 * hi
    tab["wins"] = tab["wins"].astype(int)
    return tab


#: Metrics of the full ranking of candidates (every other metric reads the top-N list).
_FULL_RANKING = ("auc", "pap_at_k")


def _metric_label(metric: str, n: int | None) -> str:
    """``precision@50`` for a list metric when N is known; full-ranking metrics keep their name."""
    return metric if n is None or metric in _FULL_RANKING else f"{metric}@{n}"


def plot_results(results: pd.DataFrame, out_dir: str | Path, *, n: int | None = None, n_jobs: int = 1) -> list[Path]:
    """Draw :func:`_draw_figures`'s figures, the metrics shared among ``n_jobs`` processes.

    Parameters
    ----------
    results : DataFrame
        Tidy results (:data:`simrec.experiment.RESULT_COLUMNS`).
    out_dir : folder
        Where ``values_<metric>.png`` and ``error_<metric>.png`` are written.
    n : int, optional
        The list length N, shown in titles and axis labels (``precision@50``).
    n_jobs : int, default 1
        Processes drawing at once, capped at the number of metrics and of
        CPUs. With more than one, the metrics are dealt round-robin: the
        calling process draws the first share and ``n_jobs - 1`` forked
        children the others (each metric's figures depend on its rows only,
        so the files are byte-identical to a serial drawing).

    Returns
    -------
    list of Path
        ``values_<metric>.png`` and ``error_<metric>.png`` per metric, in the
        order of first appearance.

    Notes
    -----
    Decision: children are forked (where the platform offers ``fork``) after
    matplotlib is imported, so they start in milliseconds with every module
    loaded; a ``forkserver`` child would import pandas and matplotlib again
    (2.8 s CPU measured at load 10, about half of what drawing the
    quickstart's 14 figures costs). The drawing code uses no thread pool, so
    the usual hazard of forking a threaded parent does not arise in the
    children. Without ``fork`` the figures are drawn serially.
    """
    n_jobs = check_int("n_jobs", n_jobs, low=1)
    metrics = list(dict.fromkeys(results["metric"]))
    n_proc = min(n_jobs, len(metrics), os.cpu_count() or 1)
    if n_proc <= 1 or "fork" not in mp.get_all_start_methods():
        return _draw_figures(results, out_dir, n)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401  (imported once, before the fork)

    shares = [results[results["metric"].isin(metrics[i::n_proc])] for i in range(n_proc)]
    with warnings.catch_warnings():
        # Python >= 3.12 warns about forking a process that has threads (BLAS
        # pools, a progress bar); the children only draw.
        warnings.simplefilter("ignore", DeprecationWarning)
        with ProcessPoolExecutor(n_proc - 1, mp_context=mp.get_context("fork")) as pool:
            futures = [pool.submit(_draw_figures, share, out_dir, n) for share in shares[1:]]
            drawn = [_draw_figures(shares[0], out_dir, n)] + [f.result() for f in futures]
    # share i drew metrics[i::n_proc], the same number of files for each, in that order
    per = len(drawn[0]) // len(metrics[::n_proc])
    return [
        path for j in range(len(metrics)) for path in drawn[j % n_proc][(j // n_proc) * per : (j // n_proc + 1) * per]
    ]


@literal_text
def _draw_figures(results: pd.DataFrame, out_dir: str | Path, n: int | None = None) -> list[Path]:
    """Figures in the style of the thesis's Figures 21-28.

    ``n`` (the list length N) is shown in titles and axis labels
    (``precision@50``; AUC and pAp@k are of full rankings and say so).

    For every metric: ``values_<metric>.png`` (box plots of the per-replicate
    metric against observed and true relevance, per recommender, one panel per
    world) and ``error_<metric>.png`` (the error observed − true, with a zero
    line). Files are written atomically.

    Drawn with matplotlib only, as a few collections per panel on two figures
    reused across metrics (no seaborn, no ``bbox_inches="tight"``): artist
    creation and text layout dominated the seaborn version (the quickstart's
    14 figures: 31 s CPU then, 6 s now, measured in one run at load 3.5).
    Each panel's values are split from the results once (not masked and
    grouped again per panel and metric), and the panel titles are placed at a
    given height, so matplotlib does not re-measure every axis's decorations
    to place them at each draw (issue 13; the PNGs are pixel-identical to
    those of the previous version).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.cbook import boxplot_stats
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.patches import Patch

    from ._io import atomic_write

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    err = errors(results)
    worlds = list(dict.fromkeys(results["world"]))
    recs = list(dict.fromkeys(results["recommender"]))
    kinds = {"observed": "tab:blue", "true": "tab:orange"}
    ncol = min(3, len(worlds))
    nrow = -(-len(worlds) // ncol)
    height = 3.0 * nrow + 0.6
    # Two figures (values, errors) are built once and redrawn for every
    # metric: creating axes and ticks was most of the time of a figure.
    figs = {}
    for name in ("values", "error"):
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, height), squeeze=False)
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.08, top=1 - 0.7 / height, wspace=0.3, hspace=0.35)
        for ax in axes.flat[len(worlds) :]:
            ax.set_visible(False)
        for ax, world in zip(axes.flat, worlds):
            # y given: matplotlib then skips re-measuring the axes' decorations to place the title on
            # every draw (16% of the drawing's CPU); no panel has top tick labels, so it stays at 1.0
            ax.set_title(world, y=1.0)
            ax.set_xticks(np.arange(len(recs)), recs)
            ax.set_xlim(-0.6, len(recs) - 0.4)
            ax.grid(axis="y", alpha=0.3)
            if name == "error":
                ax.axhline(0, color="black", lw=0.8)
        figs[name] = (fig, list(axes.flat[: len(worlds)]))
    figs["values"][0].legend(handles=[Patch(color=c, label=k) for k, c in kinds.items()], loc="upper right", ncol=2)

    # Every panel's values, split once (one groupby per table instead of a mask
    # and a groupby per panel and metric): (metric, world[, truth], recommender) -> values.
    values = {
        key: grp.dropna().to_numpy()
        for key, grp in results.groupby(["metric", "world", "truth", "recommender"], sort=False)["value"]
    }
    error_values = {
        key: grp.dropna().to_numpy()
        for key, grp in err.groupby(["metric", "world", "recommender"], sort=False)["error"]
    }
    none = np.empty(0)

    def boxes(ax, table: dict, key: tuple, offset: float, width: float, color: str) -> list:
        # Tukey box plots (matplotlib's statistics) drawn as three collections
        # per call instead of ~20 Line2D artists per box.
        polys, segs, fliers = [], [], []
        for x, r in enumerate(recs):
            v = table.get((*key, r), none)
            if not len(v):
                continue
            st = boxplot_stats(v)[0]
            x0, x1, xm = x + offset - width / 2, x + offset + width / 2, x + offset
            polys.append([(x0, st["q1"]), (x1, st["q1"]), (x1, st["q3"]), (x0, st["q3"])])
            segs += [
                [(x0, st["med"]), (x1, st["med"])],
                [(xm, st["q1"]), (xm, st["whislo"])],
                [(xm, st["q3"]), (xm, st["whishi"])],
                [(xm - width / 4, st["whislo"]), (xm + width / 4, st["whislo"])],
                [(xm - width / 4, st["whishi"]), (xm + width / 4, st["whishi"])],
            ]
            fliers += [(xm, f) for f in st["fliers"]]
        drawn = [
            ax.add_collection(PolyCollection(polys, facecolors=color, edgecolors="black", linewidths=0.8, alpha=0.8)),
            ax.add_collection(LineCollection(segs, colors="black", linewidths=0.8)),
        ]
        if fliers:
            drawn += ax.plot(*zip(*fliers), "o", color="black", markersize=2, fillstyle="none")
        return drawn

    def draw(name: str, metric: str, title: str, ylabel: str, fill) -> Path:
        fig, axes = figs[name]
        fig.suptitle(title, x=0.02, ha="left", fontsize=11)  # left: the legend sits top right
        drawn = []
        for i, (ax, world) in enumerate(zip(axes, worlds)):
            drawn += fill(ax, world)
            ax.set_ylabel(ylabel if i % ncol == 0 else "")  # the first column only: labels never reach a neighbour
            ax.autoscale_view(scalex=False)
        path = atomic_write(out / f"{name}_{metric}.png", lambda p: fig.savefig(p, format="png", dpi=110))
        for artist in drawn:
            artist.remove()
        for ax in axes:
            ax.relim()  # forget the removed collections' limits
        return path

    for metric in dict.fromkeys(results["metric"]):
        label = _metric_label(metric, n)
        where = (
            "full ranking of the candidates"
            if metric in _FULL_RANKING
            else f"top-N lists, N = {n}"
            if n is not None
            else "top-N lists"
        )
        written.append(
            draw(
                "values",
                metric,
                f"{label}: observed vs true relevance\n({where})",
                label,
                lambda ax, world: [
                    a
                    for j, (kind, color) in enumerate(kinds.items())
                    for a in boxes(ax, values, (metric, world, kind), (j - 0.5) * 0.4, 0.35, color)
                ],
            )
        )
        written.append(
            draw(
                "error",
                metric,
                f"{label}: missing-data error\n({where})",
                f"{label} error (observed − true)",
                lambda ax, world: boxes(ax, error_values, (metric, world), 0.0, 0.5, "tab:red"),
            )
        )
    for fig, _ in figs.values():
        plt.close(fig)
    return written
