"""Figures of a run's results: per metric, the values against observed and true relevance, and the error.

In the style of the thesis's Figures 21-28, drawn with matplotlib (Agg),
written atomically, and dealt among forked processes with ``n_jobs > 1``
(byte-identical files).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simrec._figures import literal_text
from simrec._io import atomic_write
from simrec._validation import check_int
from simrec.report.summaries import errors

__all__ = ["plot_results"]


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
    loaded; a ``forkserver`` child would import pandas and matplotlib again,
    about half of what drawing the quickstart's figures costs (measured:
    docs/design.md §9). The drawing code uses no thread pool, so
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
    creation and text layout dominated the seaborn version (measured:
    docs/design.md §9; ``bench/bench_quickstart.py`` times the run with its
    figures).
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

    def boxes(ax: Any, table: dict, key: tuple, offset: float, width: float, color: str) -> list:
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

    def draw(name: str, metric: str, title: str, ylabel: str, fill: Callable[..., Any]) -> Path:
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
