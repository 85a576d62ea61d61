"""The four key statistics of a calibrated simulation against the reference.

One 4-panel figure per sweep cell, as the thesis's Figures 3-20: item
popularity and user activity (log-log, mass per count bin), item-item and
user-user cosine similarity (mass per cosine bin).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._figures import literal_text, plain_log_axis
from .._io import atomic_write
from .._random import task_seed
from ..stats import STATISTICS, KeyStatistics, kl_by_statistic
from .search import Trial

if TYPE_CHECKING:
    from .objective import Objective

__all__ = ["plot_statistics", "plot_cell"]

_TITLES = {
    "item_popularity": "item popularity",
    "user_activity": "user activity",
    "item_similarity": "item-item cosine similarity",
    "user_similarity": "user-user cosine similarity",
}


def _x(stats: KeyStatistics, name: str) -> np.ndarray:
    b = stats.bins
    if name == "item_popularity":
        return b.popularity_edges.astype(float)
    if name == "user_activity":
        return b.activity_edges.astype(float)
    e = b.similarity_edges
    return (e[:-1] + e[1:]) / 2


@literal_text
def plot_statistics(reference: KeyStatistics, simulated: KeyStatistics, path: str | Path, title: str = "") -> Path:
    """Write a 2 x 2 figure of the four statistics, reference vs simulated, with each KL."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kls = kl_by_statistic(reference, simulated)
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5))
    for ax, name in zip(axes.flat, STATISTICS):
        x = _x(reference, name)
        for stats, label, style in (
            (reference, "reference", dict(color="black", marker="o", ms=3, lw=1)),
            (simulated, "simulated", dict(color="tab:orange", marker="s", ms=3, lw=1)),
        ):
            y = np.asarray(stats[name], dtype=float)
            keep = y > 0
            ax.plot(x[keep], y[keep], label=label, **style)
        if name in ("item_popularity", "user_activity"):
            plain_log_axis(ax, "x")
            ax.set_xlabel("count (bin start)")
        else:
            ax.set_xlabel("cosine similarity")
        plain_log_axis(ax, "y")
        ax.set_ylabel("share")
        ax.set_title(f"{_TITLES[name]}  (KL {kls[name]:.3g})", fontsize=10)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=110))
    plt.close(fig)
    return out


def plot_cell(objective: Objective, trial: Trial, search_seed: int, path: str | Path) -> Path:
    """Re-run the logged ``trial`` of a search (same seed) and plot it against the reference."""
    seed = task_seed(search_seed, trial.index).spawn(2)[1]
    _, stats = objective.statistics_at(trial.params, seed)
    params = ", ".join(f"{k}={v:.3g}" for k, v in trial.params.items())
    title = f"{objective.target.name}: {objective.cell.preference} preference, {objective.cell.observation} observation\n{params}"
    return plot_statistics(objective.target.reference, stats, path, title)
