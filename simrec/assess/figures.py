"""The assessment report's figures, as PNG bytes (embedded base64 in the HTML page, also written as files).

* :func:`error_figure` — per metric, per algorithm: the missing-data error,
  the sampling error after the chosen estimator and their sum, each with its
  interval (:mod:`simrec.assess.errors`);
* :func:`ranking_figure` — per metric: the probability that the observed
  ranking of the algorithms is the true one, with its Wilson interval
  (:mod:`simrec.assess.ranking`);
* :func:`estimator_figure` — per metric: the worst relative RMSE over the
  algorithms vs sample size, for the best estimator at each size and for the
  naive sampled metric, with the acceptance threshold
  (:mod:`simrec.assess.advice`);
* :func:`sim_to_real_figure` — per metric, per algorithm: its observed value
  on the real data and in each calibrated world, each with its interval
  (:mod:`simrec.assess.sim_to_real`).

Every name is a :mod:`simrec.labels` label (as in the page's tables), and
the panels of one figure of errors share their y scale (issue 28: a ±0.004
error must not look like a +0.27 one beside it). The sim-to-real figure is
the exception: its panels show values of different metrics (Precision@10 is a
tenth of Recall@10 by construction), and each panel compares the data with
the worlds on one metric, so each has its own scale starting at 0. Images are
cut to their drawn content (``bbox_inches="tight"``), so no label falls
outside the image.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd

from simrec._figures import literal_text, plain_log_axis
from simrec.labels import estimator_label, metric_label, world_label

__all__ = ["error_figure", "ranking_figure", "estimator_figure", "sim_to_real_figure"]

_COMPONENTS = (("missing data", "tab:blue"), ("sampling", "tab:orange"), ("total", "tab:red"))


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _axes(n_panels: int, width: float = 4.2, height: float = 3.2, *, sharey: bool = False) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, n_panels, figsize=(width * n_panels, height), squeeze=False, layout="constrained", sharey=sharey
    )
    return fig, axes[0]


@literal_text
def error_figure(errors: pd.DataFrame, n: int | None = None) -> bytes:
    """Points with interval bars, one panel per metric on one y scale (``errors``: ``errors.csv``, pooled rows).

    ``n`` is the list length N of the metrics' labels (``nDCG@10``).
    """
    metrics = list(dict.fromkeys(errors["metric"]))
    recs = list(dict.fromkeys(errors["recommender"]))
    fig, axes = _axes(len(metrics), sharey=True)
    for ax, metric in zip(axes, metrics):
        sub = errors[errors["metric"] == metric]
        for c, (component, color) in enumerate(_COMPONENTS):
            part = sub[sub["component"] == component].set_index("recommender").reindex(recs)
            x = np.arange(len(recs)) + (c - 1) * 0.22
            y = part["mean"].to_numpy(dtype=float)
            lo = y - part["lower"].to_numpy(dtype=float)
            hi = part["upper"].to_numpy(dtype=float) - y
            yerr = np.clip(np.nan_to_num(np.vstack([lo, hi])), 0, None)  # rounding can make a zero width negative
            ax.errorbar(x, y, yerr=yerr, fmt="o", color=color, capsize=3, label=component)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(np.arange(len(recs)), recs, rotation=20, ha="right")
        ax.set_title(metric_label(metric, n))
    axes[0].set_ylabel("error (reported − true)")  # the first panel only: the scale is shared
    axes[0].legend(fontsize=8)
    return _png(fig)


@literal_text
def ranking_figure(ranking: pd.DataFrame, n: int | None = None) -> bytes:
    """Bars of P(observed order = true order) per metric and world (``ranking``: ``ranking.csv``; ``n``: N)."""
    metrics = list(dict.fromkeys(ranking["metric"]))
    sources = list(dict.fromkeys(ranking["source"]))
    fig, axes = _axes(1, width=max(4.5, 1.3 * len(metrics) * len(sources) / 2))
    ax = axes[0]
    w = 0.8 / len(sources)
    for s, source in enumerate(sources):
        part = ranking[ranking["source"] == source].set_index("metric").reindex(metrics)
        p = part["probability"].to_numpy(dtype=float)
        x = np.arange(len(metrics)) + (s - (len(sources) - 1) / 2) * w
        err = np.vstack([p - part["lower"].to_numpy(dtype=float), part["upper"].to_numpy(dtype=float) - p])
        label = source if source == "all worlds" else world_label(source)
        ax.bar(x, p, w, yerr=np.clip(np.nan_to_num(err), 0, None), capsize=3, label=label)
    ax.set_xticks(np.arange(len(metrics)), [metric_label(m, n) for m in metrics])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("P(observed ranking = true ranking)")
    ax.legend(fontsize=8)
    return _png(fig)


@literal_text
def estimator_figure(best: pd.DataFrame, estimates: pd.DataFrame, *, k: int, max_rel_rmse: float) -> bytes:
    """Worst relative RMSE vs n: best estimator per size (labelled) and the naive sampled metric, one y scale."""
    metrics = list(dict.fromkeys(best["metric"]))
    fig, axes = _axes(len(metrics), sharey=True)
    for ax, metric in zip(axes, metrics):
        b = best[best["metric"] == metric].sort_values("n")
        ax.plot(b["n"], b["worst_rel_rmse"], "o-", color="tab:green", label="best estimator")
        for _, r in b.iterrows():
            ax.annotate(
                estimator_label(r["estimator"]),
                (r["n"], r["worst_rel_rmse"]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
        naive = estimates[(estimates["metric"] == metric) & (estimates["k"] == k) & (estimates["estimator"] == "naive")]
        if len(naive):
            nv = naive.groupby("n")["rel_rmse"].max()
            ax.plot(nv.index, nv.to_numpy(), "s--", color="tab:gray", label="naive (sampled metric)")
        ax.axhline(max_rel_rmse, color="tab:red", lw=0.8, ls=":", label=f"threshold {max_rel_rmse:g}")
        plain_log_axis(ax, "x")
        plain_log_axis(ax, "y")
        ax.set_xticks(sorted(set(b["n"])), [str(int(v)) for v in sorted(set(b["n"]))])  # the sizes tried
        ax.set_xlabel("sampled items n")
        ax.set_title(metric_label(metric, k))
    axes[0].set_ylabel(f"worst relative RMSE at K = {k}")
    axes[0].legend(fontsize=8)
    return _png(fig)


@literal_text
def sim_to_real_figure(values: pd.DataFrame, n: int | None = None) -> bytes:
    """Per metric: each algorithm's value on the data (black) and in each world, with intervals (``values``:
    ``sim_to_real.csv``; ``n``: N). One panel per metric, each on its own scale from 0 (module docstring)."""
    metrics = list(dict.fromkeys(values["metric"]))
    recs = list(dict.fromkeys(values["algorithm"]))
    worlds = list(dict.fromkeys(values["world"]))
    fig, axes = _axes(len(metrics), width=max(3.6, 1.1 * len(recs) * (1 + len(worlds)) / 2))
    step = 0.8 / (1 + len(worlds))

    def bars(ax: Any, x: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray, **kw: Any) -> None:
        yerr = np.clip(np.nan_to_num(np.vstack([y - lo, hi - y])), 0, None)
        ax.errorbar(x, y, yerr=yerr, fmt=kw.pop("fmt", "o"), capsize=3, **kw)

    for ax, metric in zip(axes, metrics):
        sub = values[values["metric"] == metric]
        real = sub.drop_duplicates("algorithm").set_index("algorithm").reindex(recs)
        x0 = np.arange(len(recs)) - 0.4 + step / 2
        bars(
            ax,
            x0,
            *(real[c].to_numpy(dtype=float) for c in ("real", "real_low", "real_high")),
            fmt="s",
            color="black",
            label="your data",
        )
        for w, world in enumerate(worlds):
            part = sub[sub["world"] == world].set_index("algorithm").reindex(recs)
            bars(
                ax,
                x0 + (w + 1) * step,
                *(part[c].to_numpy(dtype=float) for c in ("sim", "sim_low", "sim_high")),
                label=world_label(world),
            )
        ax.set_ylim(bottom=0)
        ax.set_xticks(np.arange(len(recs)), recs, rotation=20, ha="right")
        ax.set_title(metric_label(metric, n))
    axes[0].set_ylabel("observed value")
    axes[0].legend(fontsize=8)
    return _png(fig)
