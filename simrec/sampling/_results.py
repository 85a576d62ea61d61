"""The result every sampled-metric estimator returns."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["Estimate", "mean_and_se"]


@dataclass(frozen=True)
class Estimate:
    """One estimate of a global metric T = (1/M) sum_u F(R_u) from sampled ranks.

    Attributes
    ----------
    estimator : str
        What produced it, e.g. ``"naive"``, ``"rank_estimate"``, ``"BV(gamma=0.1)"``,
        ``"BV_MLE(gamma=0.1)"``, ``"MN_MLE"``, ``"MLE"``, ``"MES"``, ``"mapping:beta@0.5"``.
    metric : str
        The metric's label, e.g. ``"NDCG@10"``, ``"AP"`` (untruncated), ``"AUC"``.
    k : int or None
        The metric's cutoff K (None for untruncated metrics and AUC).
    estimate : float
        The estimate of T.
    std_error : float
        Standard error where it has a closed form: for estimators that average
        a per-rank function over users, ``sd(F̂(r_u)) / sqrt(M)``, the usual
        standard error of a mean over users drawn i.i.d. from a population
        (it covers the sampling of users *and* of items; given fixed users
        only the item-sampling part remains, which is smaller). NaN where
        there is none (rank-distribution estimators, mappings): use repeats.
    n_users : int
        M, the number of evaluated users the estimate is based on.
    """

    estimator: str
    metric: str
    k: int | None
    estimate: float
    std_error: float
    n_users: int


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Mean of per-user values and its standard error ``sd(ddof=1)/sqrt(M)``.

    With a single user the standard error is undefined: NaN with a warning.
    """
    m = values.shape[-1]
    mean = float(values.mean())
    if m < 2:
        warnings.warn("standard error undefined for a single user; returning NaN", RuntimeWarning, stacklevel=3)
        return mean, math.nan
    return mean, float(values.std(ddof=1) / math.sqrt(m))
