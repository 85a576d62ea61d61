"""What an MNAR estimator returns: per-user values, their mean, and the counts behind it."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from simrec.metrics import UndefinedMetricWarning

__all__ = ["Estimation", "Strata"]


@dataclass(frozen=True, eq=False)
class Strata:
    """Per-stratum results of the propensity-stratified estimator (:class:`simrec.debias.Stratified`).

    Attributes
    ----------
    edges : ndarray of float64, shape (n_strata + 1,)
        Propensity bin edges (equal width over the test pairs' range).
    sizes : ndarray of int64, shape (n_strata,)
        Test pairs per stratum.
    values : ndarray of float64, shape (n_strata,)
        The naive metric on each stratum's test pairs (NaN for an empty stratum).
    weights : ndarray of float64, shape (n_strata,)
        Each stratum's weight in the combined value (summing to 1 over the non-empty strata).
    """

    edges: np.ndarray
    sizes: np.ndarray
    values: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True, eq=False)
class Estimation:
    """An estimate of a metric's value on the true preferences.

    Attributes
    ----------
    estimator : str
        The estimator's name (e.g. ``"SNIPS"``).
    metric : str
        The metric's label (e.g. ``"recall@10"``).
    value : float
        The mean of ``per_user`` over the users with a defined value (the
        combination of the strata for the stratified estimator); NaN if none.
    per_user : ndarray of float64, shape (n_users,), or None
        Each user's estimate, NaN where undefined or not evaluated; None for
        an estimator that is not a mean over users (stratified).
    n_users : int
        Users behind ``value``.
    n_undefined : int
        Evaluated users whose value is undefined (counted in the warning).
    strata : Strata, optional
        The stratified estimator's per-stratum results.
    """

    estimator: str
    metric: str
    value: float
    per_user: np.ndarray | None
    n_users: int
    n_undefined: int
    strata: Strata | None = None


def finish(
    estimator: str,
    metric: str,
    numerator: np.ndarray,
    normaliser: np.ndarray,
    undefined: np.ndarray,
    evaluated: np.ndarray | None = None,
    why: str = "",
) -> Estimation:
    """Per-user ``numerator / normaliser`` with the NaN policy of :mod:`simrec.metrics`.

    Users where ``undefined`` (evaluated ones) get NaN with one
    :class:`~simrec.metrics.UndefinedMetricWarning` giving their number;
    users outside ``evaluated`` get NaN silently.
    """
    mask = np.ones(len(numerator), dtype=bool) if evaluated is None else evaluated
    bad = undefined & mask
    out = np.full(len(numerator), np.nan)
    ok = mask & ~bad
    out[ok] = numerator[ok] / normaliser[ok]
    n_bad = int(bad.sum())
    if n_bad:
        warnings.warn(
            f"{estimator} {metric} is undefined for {n_bad} of {int(mask.sum())} users ({why}); their values are NaN",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    n_ok = int(ok.sum())
    value = float(out[ok].mean()) if n_ok else float("nan")
    return Estimation(estimator, metric, value, out, n_ok, n_bad)
