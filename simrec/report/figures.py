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
from scipy import special as _sp  # not scipy.stats (slow to import): the t quantile only

from simrec._figures import literal_text
from simrec._io import atomic_write
from simrec._validation import check_int
from simrec.labels import FULL_RANKING_METRICS, metric_label, world_label
from simrec.report.summaries import errors

__all__ = ["plot_results"]


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
    """Figures in the style of the thesis's Figures 21-28, one shared y scale per figure.

    ``n`` (the list length N) is shown in titles and axis labels
    (``Precision@50``; AUC and pAp@k are of full rankings and say so); every
    name is a :mod:`simrec.labels` label, as in the tables and the
    assessment report.

    For every metric: ``values_<metric>.png`` (per recommender, each
    replicate's metric against observed and true relevance as a point, with
    the mean and its 95% t interval over the replicates; one panel per world)
    and ``error_<metric>.png`` (the error observed − true, the same way, with
    a zero line). Files are written atomically.

    Decisions (issue 28): the panels of one figure share their y scale, so a
    world whose error is ±0.004 does not look like one whose error is +0.27;
    the replicates are drawn as points beside their mean and interval (a box
    plot of 3-5 replicates collapsed to a line and hid how few there were);
    the layout is matplotlib's constrained layout, so every label (long
    recommender names, the y label) stays inside the image, and tick labels
    that would not fit side by side are turned 30°. Every image is laid out
    for its own metric, at its save: keeping the first metric's layout while
    the next metrics' labels fit saved CPU (2.4 s of 7.0 s for the
    quickstart's 14 figures, measured at load 7-9) but made an image depend
    on the metrics drawn before it in the same process, so figures drawn in
    parallel differed from the serial ones. The points of one group
    are spread evenly across its slot in replicate order (no random jitter:
    the files stay byte-identical between runs).

    Drawn with matplotlib only, as a few collections per panel on two figures
    reused across metrics (no seaborn): artist creation and text layout
    dominated the seaborn version (measured: docs/design.md §9;
    ``bench/bench_quickstart.py`` times the run with its figures).
    Each panel's values are split from the results once (not masked and
    grouped again per panel and metric).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    err = errors(results)
    worlds = list(dict.fromkeys(results["world"]))
    recs = list(dict.fromkeys(results["recommender"]))
    kinds = {"observed": "tab:blue", "true": "tab:orange"}
    ncol = min(3, len(worlds))
    nrow = -(-len(worlds) // ncol)
    longest = max(len(str(r)) for r in recs)
    # a recommender's slot is wide enough for its name at 10 pt (about 0.085 in a character), within limits
    slot = min(1.6, max(0.9, 0.085 * longest + 0.15))
    width = max(3.6, 0.6 + slot * len(recs))
    turn = 0.085 * longest > slot  # names that still do not fit side by side are turned
    height = 3.0 * nrow + 0.9
    # Two figures (values, errors) are built once and redrawn for every
    # metric: creating axes and ticks was most of the time of a figure.
    figs = {}
    for name in ("values", "error"):
        fig, axes = plt.subplots(
            nrow, ncol, figsize=(width * ncol, height), squeeze=False, sharey=True, layout="constrained"
        )
        for ax in axes.flat[len(worlds) :]:
            ax.set_visible(False)
        for ax, world in zip(axes.flat, worlds):
            ax.set_title(world_label(world))
            ax.set_xticks(np.arange(len(recs)), recs, rotation=30 if turn else 0, ha="right" if turn else "center")
            ax.set_xlim(-0.6, len(recs) - 0.4)
            ax.grid(axis="y", alpha=0.3)
            if name == "error":
                ax.axhline(0, color="black", lw=0.8)
        figs[name] = (fig, list(axes.flat[: len(worlds)]))
    interval = Line2D([], [], color="black", lw=1.6, marker="_", markersize=10, label="mean, 95% interval")
    dot: dict[str, Any] = {"marker": "o", "ls": "", "markersize": 4, "alpha": 0.7}
    figs["values"][0].legend(
        handles=[*[Line2D([], [], color=c, label=f"{k} (one replicate)", **dot) for k, c in kinds.items()], interval],
        loc="outside lower center",
        ncol=3,
        fontsize=9,
    )
    figs["error"][0].legend(
        handles=[Line2D([], [], color="tab:red", label="one replicate", **dot), interval],
        loc="outside lower center",
        ncol=2,
        fontsize=9,
    )

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

    def strip(ax: Any, table: dict, key: tuple, offset: float, spread: float, color: str) -> list:
        # each replicate a point, spread evenly over the group's slot; the mean as a tick, its t interval a bar
        # (three Line2D per call, segments split by NaN: cheaper to create and draw than collections)
        xs, ys, bars, ticks = [], [], [], []
        for x, r in enumerate(recs):
            v = table.get((*key, r), none)
            if not len(v):
                continue
            xc = x + offset
            xs.append(xc + (np.linspace(-spread / 2, spread / 2, len(v)) if len(v) > 1 else np.zeros(1)))
            ys.append(v)
            m = float(v.mean())
            ticks.append([(xc - spread / 2, m), (xc + spread / 2, m), (np.nan, np.nan)])
            if len(v) > 1:
                half = float(_sp.stdtrit(len(v) - 1, 0.975) * v.std(ddof=1) / np.sqrt(len(v)))
                bars.append([(xc, m - half), (xc, m + half), (np.nan, np.nan)])
        if not xs:
            return []
        drawn = ax.plot(np.concatenate(xs), np.concatenate(ys), "o", color=color, alpha=0.7, ms=4, mew=0, zorder=2)
        for segs, lw in ((bars, 1.6), (ticks, 1.2)):
            if segs:
                xy = np.concatenate(segs)
                drawn += ax.plot(xy[:, 0], xy[:, 1], "-", color="black", lw=lw, zorder=3)
        return drawn

    def draw(name: str, metric: str, title: str, ylabel: str, fill: Callable[..., Any]) -> Path:
        fig, axes = figs[name]
        fig.suptitle(title, x=0.01, ha="left", fontsize=11)  # the legend sits below the panels
        drawn = []
        for i, (ax, world) in enumerate(zip(axes, worlds)):
            drawn += fill(ax, world)
            ax.set_ylabel(ylabel if i % ncol == 0 else "")  # the first column only: the scale is shared
        for ax in axes:
            ax.relim()
            ax.autoscale_view(scalex=False)
        # laid out for this metric alone (constrained layout at every save): the image does not depend on which
        # metrics were drawn before it, so figures drawn in parallel are the serial ones, byte for byte
        path = atomic_write(out / f"{name}_{metric}.png", lambda p: fig.savefig(p, format="png", dpi=110))
        for artist in drawn:
            artist.remove()
        return path

    for metric in dict.fromkeys(results["metric"]):
        label = metric_label(metric, n)
        where = (
            "full ranking of the candidates"
            if metric in FULL_RANKING_METRICS
            else f"top-N lists, N = {n}"
            if n is not None
            else "top-N lists"
        )
        written.append(
            draw(
                "values",
                metric,
                f"{label}: observed vs true relevance\n({where}; every panel on one scale)",
                label,
                lambda ax, world: [
                    a
                    for j, (kind, color) in enumerate(kinds.items())
                    for a in strip(ax, values, (metric, world, kind), (j - 0.5) * 0.4, 0.3, color)
                ],
            )
        )
        written.append(
            draw(
                "error",
                metric,
                f"{label}: missing-data error\n({where}; every panel on one scale)",
                "error (observed − true)",
                lambda ax, world: strip(ax, error_values, (metric, world), 0.0, 0.45, "tab:red"),
            )
        )
    for fig, _ in figs.values():
        plt.close(fig)
    return written
