"""Tukey's HSD for all pairs of k recommenders evaluated on the same users.

Per-user metric values of k systems form a randomized complete block design:
the users are blocks, every system is measured on every user. Tukey's
honestly significant difference on that design (two-way ANOVA without
replication, systems x users; Tukey 1953) compares every pair of systems
with the studentized range of the k system means, using the residual mean
square of the two-way model, so the user effect (some users are easy for
every system) is removed as in a paired test. It is the multiple-comparison
procedure Carterette recommends for IR experiments ("Multiple testing in
statistical analysis of systems-based information retrieval experiments",
*ACM TOIS* 30(1), 2012) and Sakai's (*Laboratory Experiments in Information
Retrieval*, 2018) randomised Tukey HSD's parametric counterpart.

:func:`scipy.stats.tukey_hsd` is the one-way (independent groups) form: it
ignores the pairing and treats the user-to-user spread as noise, so it is far
less powerful on per-user metrics; it is here as the named variant
:func:`tukey_hsd_independent`, for comparison with scripts that call scipy.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats

from simrec.significance._common import check_confidence, warn_undefined

__all__ = ["AllPairsResult", "tukey_hsd", "tukey_hsd_independent"]


@dataclass(frozen=True, eq=False)
class AllPairsResult:
    """Every pair of k systems, per replicate; p-values already adjusted for the k(k-1)/2 pairs.

    Attributes
    ----------
    method : str
        ``"tukey_hsd"`` (blocked by user) or ``"tukey_hsd_independent"``.
    pairs : ndarray of int, shape (P, 2)
        System indices (i, j), i < j, in ``itertools.combinations`` order.
    mean_difference : ndarray, shape (..., P)
        Mean of system i minus mean of system j over the users used.
    statistic : ndarray, shape (..., P)
        q = mean_difference / sqrt(MSE/n) (signed studentized range; NaN
        where MSE = 0). For the independent variant, scipy's statistic (the
        mean difference).
    p_value : ndarray, shape (..., P)
        P(Q_{k, df} >= |q|), simultaneous over the pairs.
    ci_low, ci_high : ndarray, shape (..., P)
        Simultaneous intervals of the mean differences at ``confidence``.
    confidence : float
    n_used : ndarray of int, shape (...)
        Users with every system defined (listwise deletion).
    df : ndarray of float, shape (...)
        Residual degrees of freedom.
    """

    method: str
    pairs: np.ndarray
    mean_difference: np.ndarray
    statistic: np.ndarray
    p_value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    confidence: float
    n_used: np.ndarray
    df: np.ndarray


def _values(values: object) -> np.ndarray:
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`values` must be an array of numbers; got {values!r:.60}") from None
    if x.ndim < 2 or x.shape[-2] < 2 or x.shape[-1] == 0:
        raise ValueError(
            "`values` must have shape (k, n_users) or (n_replicates, k, n_users) with k >= 2 systems and at "
            f"least one user; got {x.shape}"
        )
    if np.isinf(x).any():
        raise ValueError("`values` must be finite or NaN (NaN marks a user whose metric is undefined); got inf")
    return x


def tukey_hsd(values: object, *, confidence: float = 0.95) -> AllPairsResult:
    """Tukey's HSD for all pairs of k systems measured on the same users (users as blocks).

    .. math:: \\mathrm{MSE} = \\frac{\\sum_{s,u} (x_{su} - \\bar x_{s\\cdot} - \\bar x_{\\cdot u}
              + \\bar x_{\\cdot\\cdot})^2}{(k - 1)(n - 1)}, \\qquad
              q_{ij} = \\frac{\\bar x_{i\\cdot} - \\bar x_{j\\cdot}}{\\sqrt{\\mathrm{MSE}/n}}, \\qquad
              p_{ij} = P(Q_{k,\\,(k-1)(n-1)} \\ge |q_{ij}|)

    and the simultaneous intervals x̄_i - x̄_j ± q_{1-α; k, df} sqrt(MSE/n)
    (Tukey 1953; the randomized-block form, e.g. Montgomery, *Design and
    Analysis of Experiments*, §4.1; module docstring). The studentized range
    distribution is :data:`scipy.stats.studentized_range`. With k = 2 it is
    the paired t-test: q = sqrt(2) t, the same p-value (tested).

    Parameters
    ----------
    values : array-like of float, shape (k, n_users) or (n_replicates, k, n_users)
        Per-user metric values of k systems (any leading batch axes); NaN =
        undefined: a user enters a replicate only where every system is
        defined (listwise deletion).
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    AllPairsResult

    Notes
    -----
    MSE = 0 (every pair's differences constant across users; up to rounding,
    1e-13 of the values' scale): statistic NaN, p = 1 for a pair with equal
    means (up to 1e-12 of the scale) and 0 otherwise, the interval the
    point. Fewer than two users: NaN with an
    :class:`~simrec.significance.UndefinedStatisticWarning`. The studentized
    range's cdf and quantile are numerical integrals in scipy (one per pair
    and replicate, one quantile per distinct df): they dominate the cost
    (``bench/bench_significance.py``).
    """
    confidence = check_confidence(confidence)
    x = _values(values)
    batch, k, n_cols = x.shape[:-2], x.shape[-2], x.shape[-1]
    x = x.reshape(-1, k, n_cols)
    valid = ~np.isnan(x).any(axis=-2)  # (R, n_cols)
    n = valid.sum(axis=-1)
    xv = np.where(valid[:, None, :], x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        nn = np.maximum(n, 1)[:, None]
        sys_mean = xv.sum(axis=-1) / nn  # (R, k)
        user_mean = xv.mean(axis=-2)  # (R, n_cols)
        grand = sys_mean.mean(axis=-1)  # (R,)
        resid = xv - sys_mean[:, :, None] - user_mean[:, None, :] + grand[:, None, None]
        resid = np.where(valid[:, None, :], resid, 0.0)
        df = (k - 1.0) * (n - 1.0)
        mse = (resid**2).sum(axis=(-2, -1)) / df
        se = np.sqrt(mse / n)
    pairs = np.array(list(combinations(range(k), 2)), dtype=np.int64)
    diff = sys_mean[:, pairs[:, 0]] - sys_mean[:, pairs[:, 1]]  # (R, P)
    undefined = n < 2
    # rounding: a residual sum of squares ~1e-30 of exactly additive data is 0
    scale = np.abs(xv).sum(axis=(-2, -1)) / np.maximum(n * k, 1)
    flat = ~undefined & (se <= 1e-13 * np.maximum(scale, 1e-300))
    tested = ~undefined & ~flat
    stat = np.full(diff.shape, np.nan)
    pval = np.full(diff.shape, np.nan)
    half = np.full(diff.shape, np.nan)
    if tested.any():
        q = diff[tested] / se[tested, None]
        stat[tested] = q
        dfs = np.broadcast_to(df[tested, None], q.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's integration notices
            pval[tested] = stats.studentized_range.sf(np.abs(q), k, dfs)
            for d in np.unique(df[tested]):
                rows = tested & (df == d)
                half[rows] = stats.studentized_range.ppf(confidence, k, d) * se[rows, None]
    pval = np.clip(pval, 0.0, 1.0)
    pval[flat] = np.where(np.abs(diff[flat]) <= 1e-12 * scale[flat, None], 1.0, 0.0)
    half[flat] = 0.0
    warn_undefined("Tukey HSD", undefined, "fewer than 2 users with every system defined")
    shape = (*batch, len(pairs))
    return AllPairsResult(
        "tukey_hsd",
        pairs,
        diff.reshape(shape),
        stat.reshape(shape),
        pval.reshape(shape),
        (diff - half).reshape(shape),
        (diff + half).reshape(shape),
        confidence,
        n.reshape(batch),
        np.where(undefined, np.nan, df).reshape(batch),
    )


def tukey_hsd_independent(values: object, *, confidence: float = 0.95) -> AllPairsResult:
    """:func:`scipy.stats.tukey_hsd` on the k systems' per-user values as independent groups (named variant).

    One-way Tukey-Kramer: MSE is the pooled within-system variance, so the
    users' common difficulty counts as noise (module docstring). Each system
    keeps its own defined users (NaN dropped per system, not listwise), as
    independent groups would. One scipy call per replicate.

    Parameters
    ----------
    values : array-like of float, shape (k, n_users) or (n_replicates, k, n_users)
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    AllPairsResult
        ``statistic`` is scipy's (the mean difference); ``n_used`` the
        smallest group; ``df`` = N - k.
    """
    confidence = check_confidence(confidence)
    x = _values(values)
    batch, k = x.shape[:-2], x.shape[-2]
    x = x.reshape(-1, k, x.shape[-1])
    pairs = np.array(list(combinations(range(k), 2)), dtype=np.int64)
    R, P = x.shape[0], len(pairs)
    stat, pval, low, high = (np.full((R, P), np.nan) for _ in range(4))
    n_used = np.zeros(R, dtype=np.int64)
    df = np.full(R, np.nan)
    undefined = np.zeros(R, bool)
    for r in range(R):
        groups = [row[~np.isnan(row)] for row in x[r]]
        sizes = np.array([g.size for g in groups])
        n_used[r] = sizes.min()
        if sizes.min() < 1 or sizes.sum() <= k:
            undefined[r] = True
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.tukey_hsd(*groups)
            ci = res.confidence_interval(confidence)
        i, j = pairs[:, 0], pairs[:, 1]
        stat[r], pval[r] = res.statistic[i, j], res.pvalue[i, j]
        low[r], high[r] = ci.low[i, j], ci.high[i, j]
        df[r] = sizes.sum() - k
    warn_undefined("Tukey HSD (independent groups)", undefined, "a system with no user or no residual df")
    shape = (*batch, P)
    return AllPairsResult(
        "tukey_hsd_independent",
        pairs,
        stat.reshape(shape),
        stat.reshape(shape),
        pval.reshape(shape),
        low.reshape(shape),
        high.reshape(shape),
        confidence,
        n_used.reshape(batch),
        df.reshape(batch),
    )
