"""Figures of the MNAR-correction harness (matplotlib, Agg; written atomically as PNG).

``debias_<metric>.png``: one panel per world; one row per estimator x
propensity kind, in the summary's order; per recommender, the bias (mean
estimate minus mean truth over the replicates) as a dot with its ±2 Monte
Carlo standard errors, and a zero line. The coverage and the probability
of the true order are in the tables (``debias_summary.csv``,
``debias_order.csv``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simrec._figures import legend_label, literal_text
from simrec._io import atomic_write

__all__ = ["plot_debias"]


@literal_text
def plot_debias(summary: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Draw ``debias_<metric>.png`` per metric of ``summary`` (:func:`~simrec.debias.summarize_debias`).

    Parameters
    ----------
    summary : DataFrame
        The harness's summary (columns world, recommender, metric, estimator,
        propensity, bias, bias_se, ...).
    out_dir : folder

    Returns
    -------
    list of Path
        The files written, one per metric in order of first appearance.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    worlds = list(dict.fromkeys(summary["world"]))
    recs = list(dict.fromkeys(summary["recommender"]))
    offsets = np.linspace(-0.3, 0.3, len(recs)) if len(recs) > 1 else np.zeros(1)
    for metric, m in summary.groupby("metric", sort=False):
        rows = list(dict.fromkeys(zip(m["estimator"], m["propensity"])))
        labels = [e if p == "none" else f"{e} ({p})" for e, p in rows]
        at = {key: i for i, key in enumerate(rows)}
        height = 0.32 * len(rows) + 1.6
        fig, axes = plt.subplots(1, len(worlds), figsize=(4.2 * len(worlds) + 1.6, height), squeeze=False)
        for ax, world in zip(axes.flat, worlds):
            w = m[m["world"] == world]
            for off, rec in zip(offsets, recs):
                r = w[w["recommender"] == rec]
                y = np.array([at[k] for k in zip(r["estimator"], r["propensity"])], dtype=float) + off
                se = r["bias_se"].fillna(0).to_numpy()
                ax.errorbar(r["bias"], y, xerr=2 * se, fmt="o", ms=3, lw=0.8, label=legend_label(rec))
            ax.axvline(0, color="black", lw=0.8)
            ax.set_yticks(np.arange(len(rows)), labels if ax is axes.flat[0] else [""] * len(rows))
            ax.set_ylim(len(rows) - 0.5, -0.5)
            ax.set_title(world)
            ax.set_xlabel(f"bias of {metric} (estimate - truth; ±2 se)")
            ax.grid(axis="x", alpha=0.3)
        axes.flat[0].legend(loc="lower right", fontsize="small")
        fig.tight_layout()
        written.append(atomic_write(out / f"debias_{metric}.png", lambda p: fig.savefig(p, format="png", dpi=100)))
        plt.close(fig)
    return written
