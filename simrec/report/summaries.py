"""Tidy summaries of a run's results: the missing-data error, t intervals, Wilson intervals, the thesis's Table 3.

Everything here reads the tidy results frame (:data:`simrec.experiment.RESULT_COLUMNS`);
aggregation over replicates happens here and only here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special as _sp  # not scipy.stats, slow to import (docs/design.md §9), for two quantiles

from simrec._validation import check_in_range

__all__ = ["errors", "summarize", "wilson_interval", "share_verdict", "pairwise_wins"]

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
        return (np.nan,) * 4 + (0,)
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


def share_verdict(published: float, successes: int, n: int, level: float = 0.95) -> str:
    """A reproduced share against a published one: ``"coin flip"``, ``"match"`` or ``"differs"``.

    Parameters
    ----------
    published : float
        The published share, in percent (e.g. Tian 2019, Table 3's 47).
    successes, n : int
        Our replicates with the event (e.g. Oracle beats Popular) and the replicates run.
    level : float, default 0.95
        Level of the Wilson interval (:func:`wilson_interval`).

    Returns
    -------
    str
        ``"coin flip"`` when our interval holds 50 % (the replicates cannot tell the event from a coin: never
        reported as a match, whatever the published value, issue 27's wording rule); else ``"match"`` when it
        holds the published share, else ``"differs"``.
    """
    lo, hi = (100 * float(v[0]) for v in wilson_interval(np.array([successes]), np.array([n]), level))
    if lo <= 50 <= hi:
        return "coin flip"
    return "match" if lo <= published <= hi else "differs"


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
