"""Tidy summaries, the thesis's Table 3, and figures of a run's results.

Everything here reads the tidy results frame (:data:`simrec.experiment.RESULT_COLUMNS`);
aggregation over replicates happens here and only here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as _st

from ._validation import check_in_range

__all__ = ["errors", "summarize", "wilson_interval", "pairwise_wins", "plot_results"]

_KEYS = ["world", "preference", "observation", "recommender", "metric"]


def errors(results: pd.DataFrame) -> pd.DataFrame:
    """Per-replicate missing-data error M_obs − M_truth.

    Returns the rows of ``results`` reshaped to one row per replicate x world x
    recommender x metric with columns ``observed``, ``true`` and
    ``error = observed − true`` (NaN where either side is undefined).
    """
    wide = results.pivot_table(index=["replicate", *_KEYS], columns="truth", values="value", aggfunc="first", dropna=False)
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
        half = float(_st.t.ppf(0.5 + level / 2, n - 1) * sd / np.sqrt(n))
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
    z = _st.norm.ppf(0.5 + level / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = successes / n
        denom = 1 + z**2 / n
        center = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    return center - half, center + half


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
        return pd.DataFrame(columns=["world", "metric", "truth", "wins", "n_replicates", "percent", "ci_low", "ci_high"])
    wide["win"] = wide[winner] > wide[loser]
    tab = wide.groupby(["world", "preference", "observation", "metric", "truth"])["win"].agg(["sum", "count"]).reset_index()
    tab = tab.rename(columns={"sum": "wins", "count": "n_replicates"})
    lo, hi = wilson_interval(tab["wins"].to_numpy(), tab["n_replicates"].to_numpy(), level)
    tab["percent"] = 100 * tab["wins"] / tab["n_replicates"]
    tab["ci_low"] = 100 * lo
    tab["ci_high"] = 100 * hi
    tab["wins"] = tab["wins"].astype(int)
    return tab


def plot_results(results: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Figures in the style of the thesis's Figures 21-28.

    For every metric: ``values_<metric>.png`` (box plots of the per-replicate
    metric against observed and true relevance, per recommender, one panel per
    world) and ``error_<metric>.png`` (the error observed − true, with a zero
    line). Files are written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ._io import atomic_write

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    err = errors(results)
    worlds = list(dict.fromkeys(results["world"]))
    col_wrap = min(3, len(worlds))
    sns.set_theme(style="whitegrid", context="paper")
    for metric in dict.fromkeys(results["metric"]):
        sub = results[results["metric"] == metric]
        g = sns.catplot(
            data=sub, x="recommender", y="value", hue="truth", col="world", col_order=worlds,
            col_wrap=col_wrap, kind="box", height=3, aspect=1.2, sharey=False, hue_order=["observed", "true"],
        )
        g.set_titles("{col_name}")
        g.set_axis_labels("", metric)
        g.figure.suptitle(f"{metric}: observed vs true relevance", y=1.02)
        written.append(atomic_write(out / f"values_{metric}.png", lambda p: g.figure.savefig(p, format="png", dpi=110, bbox_inches="tight")))
        plt.close(g.figure)

        sub_e = err[err["metric"] == metric]
        g = sns.catplot(
            data=sub_e, x="recommender", y="error", col="world", col_order=worlds, col_wrap=col_wrap,
            kind="box", height=3, aspect=1.2, sharey=False, color="tab:red",
        )
        for ax in g.axes.flat:
            ax.axhline(0, color="black", lw=0.8)
        g.set_titles("{col_name}")
        g.set_axis_labels("", f"{metric} error (observed − true)")
        g.figure.suptitle(f"{metric}: missing-data error", y=1.02)
        written.append(atomic_write(out / f"error_{metric}.png", lambda p: g.figure.savefig(p, format="png", dpi=110, bbox_inches="tight")))
        plt.close(g.figure)
    return written
