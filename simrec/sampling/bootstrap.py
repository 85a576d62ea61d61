"""The bootstrap over users and the :class:`~._results.Estimate` objects it gives.

**Bootstrap over users, on the rank histogram.** Every estimator of
:mod:`simrec.sampling` depends on the sampled ranks only through their
histogram h (n counts summing to M). Resampling M users with replacement is
the same as drawing h* ~ Multinomial(M, h/M) (:func:`bootstrap_histograms`),
so a replicate costs O(n) to draw, not O(M).

The interval is the percentile interval [q_{α/2}, q_{1-α/2}] of the B
replicate estimates (:func:`percentile_interval`; Efron & Tibshirani 1993,
§13.3). It measures the estimator's variability over the sampling of users
*and* of items (each user's sampled rank is one draw); it does **not**
correct for bias: a biased estimator's interval is centred on its
expectation, not on the metric (:class:`~._results.IntervalKind`).

Decisions
---------
* Estimates outside the metric's range [min F, max F] over ranks 1..N warn
  (:class:`OutOfRangeWarning`); an estimator that does not estimate a metric
  gives NaN with a warning.
* A cutoff K > N is refused (:func:`_check_cutoffs`).
* With M < 2 users the interval and standard error are NaN with a warning,
  never of zero width.
* A fit stopped at its cap gives one
  :class:`~.histograms.ConvergenceWarning` per estimate, and
  ``Estimate.converged = False``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_int
from simrec.sampling._results import Estimate, IntervalKind
from simrec.sampling.functions import RankMetric
from simrec.sampling.histograms import FitLimits, FitStatus

__all__ = ["OutOfRangeWarning", "bootstrap_histograms", "percentile_interval"]


class OutOfRangeWarning(RuntimeWarning):
    """An estimate lies outside the range of its metric."""


def bootstrap_histograms(counts: np.ndarray, n_boot: int, rng: RNGLike = None) -> np.ndarray:
    """B bootstrap histograms h* ~ Multinomial(M, h/M), shape (n_boot, n): resampling the M users.

    Parameters
    ----------
    counts : ndarray of int, shape (n,)
        The histogram h of the sampled ranks.
    n_boot : int >= 1
    rng : Generator or seed
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_boot = check_int("n_boot", n_boot, low=1)
    m = int(counts.sum())
    return as_generator(rng).multinomial(m, counts / m, size=n_boot)


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval [q_{α/2}, q_{1-α/2}] of bootstrap replicates along axis 0 (NaN replicates dropped)."""
    alpha = 1.0 - confidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        lo, hi = np.nanquantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    return lo, hi


def _check_metrics(metrics: Sequence[RankMetric]) -> list[RankMetric]:
    metrics = list(metrics)
    if not metrics:
        raise ValueError("`metrics` must hold at least one RankMetric; got none")
    for m in metrics:
        if not isinstance(m, RankMetric):
            raise TypeError(f"`metrics` must hold RankMetric objects (e.g. ndcg(10)); got {type(m).__name__}")
    return metrics


def _check_cutoffs(metrics: Sequence[RankMetric], n_items: int) -> None:
    """Refuse a cutoff above the number of items N (decision, issue 22).

    Every global rank is at most N, so a cutoff K > N truncates nothing:
    Recall@K would be 1 for every recommender and every estimator, and a
    top-K list cannot hold K items. It is a mistaken argument, not a metric
    to estimate (the stress harness refuses ``k_max > N`` the same way). A
    cutoff above the sample size n (n < K <= N) is what the estimators are
    for and is accepted; only the naive estimator cannot honour it
    (:meth:`~.estimators.fixed.Naive.check_metrics`).
    """
    for m in metrics:
        if m.k is not None and m.k > n_items:
            raise ValueError(
                f"`metrics`: the cutoff of {m.label} must be <= the number of items N = {n_items} (a larger K "
                f"truncates nothing); got K = {m.k}"
            )


def _no_interval_below_two(
    name: str, n_users: int, lo: np.ndarray, hi: np.ndarray, sd: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NaN intervals and standard errors, with a warning, when M < 2 (decision, issue 22).

    Resampling one user gives that user back in every replicate: the
    interval would have zero width, a claim of certainty from a single rank.
    The point estimate is kept (it is defined); its spread is not.
    """
    if n_users >= 2:
        return lo, hi, sd
    warnings.warn(
        f"{name}: a bootstrap interval needs at least 2 users; got M = {n_users}: the interval and the "
        "standard error are NaN",
        RuntimeWarning,
        stacklevel=4,
    )
    nan = np.full_like(np.asarray(lo, dtype=np.float64), np.nan)
    return nan, nan.copy(), nan.copy()


def _warn_out_of_range(name: str, label: str, value: float, low: float, high: float) -> None:
    tol = 1e-9 * max(1.0, abs(high - low))
    if value < low - tol or value > high + tol:
        warnings.warn(
            f"{name} estimate of {label} is {value:.4g}, outside the metric's range [{low:g}, {high:g}]",
            OutOfRangeWarning,
            stacklevel=4,
        )


class _Replicated(Protocol):
    """What :func:`_replicate_estimates` reads of its estimator (an Estimator or AdaptiveMLE; not imported: a cycle)."""

    @property
    def name(self) -> str: ...
    @property
    def interval_kind(self) -> IntervalKind: ...
    def fit_limits(self, max_iter: int) -> FitLimits | None: ...


def _replicate_estimates(
    estimator: _Replicated,
    metrics: Sequence[RankMetric],
    values: np.ndarray,
    table: np.ndarray,
    status: FitStatus,
    max_iter: int,
    n_users: int,
    confidence: float,
) -> list[Estimate]:
    """One :class:`~._results.Estimate` per metric from the point estimates and their bootstrap replicates.

    Parameters
    ----------
    estimator : Estimator or AdaptiveMLE
        Gives the name, the interval kind and the iterative fit (``fit_limits``:
        its convergence warning names them).
    metrics : sequence of RankMetric, length J
    values : ndarray, shape (1 + B, J)
        Row 0 the point estimates, rows 1..B the replicates (B = 0: no interval, NaN).
    table : ndarray, shape (N, J)
        The metrics' values on ranks 1..N (their range, for the warning).
    status : FitStatus, shape (1 + B, 1)
        The fits behind the estimates (row 0: the point fit).
    max_iter : int
        EM's cap.
    n_users : int
    confidence : float
    """
    name, kind, limits = estimator.name, estimator.interval_kind, estimator.fit_limits(max_iter)
    if values.shape[0] > 1:
        lo, hi = percentile_interval(values[1:], confidence)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sd = np.nanstd(values[1:], axis=0, ddof=1) if values.shape[0] > 2 else np.full(len(metrics), np.nan)
        lo, hi, sd = _no_interval_below_two(name, n_users, lo, hi, sd)
    else:  # n_boot = 0: the point estimate alone
        lo = hi = sd = np.full(len(metrics), np.nan)
    converged, n_iter = status.summary(0, name, limits)
    out = []
    for j, m in enumerate(metrics):
        est = float(values[0, j])
        if np.isnan(est):
            warnings.warn(f"{name} does not estimate {m.label}; returning NaN", RuntimeWarning, stacklevel=3)
        else:
            _warn_out_of_range(name, m.label, est, float(table[:, j].min()), float(table[:, j].max()))
        out.append(
            Estimate(
                name,
                m.label,
                m.k,
                est,
                float(sd[j]),
                n_users,
                float(lo[j]),
                float(hi[j]),
                confidence,
                values.shape[0] - 1,
                kind,
                converged,
                n_iter,
            )
        )
    return out
