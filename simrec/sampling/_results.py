"""The result every sampled-metric estimator returns."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Estimate"]


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
        The bootstrap standard deviation of the estimate over ``n_boot``
        replicates (resampled users; see :mod:`.fitted`). It measures the
        estimate's variability only and ignores its bias: ``estimate ±
        1.96 std_error`` is not a confidence interval for a biased estimator.
    n_users : int
        M, the number of evaluated users the estimate is based on.
    lower, upper : float
        The bootstrap percentile interval at level ``confidence`` (NaN where
        no replicate is defined). Like ``std_error`` it does not correct for
        bias; the stress harness reports each estimator's actual coverage.
    confidence : float
        The interval's nominal level, e.g. 0.95.
    n_boot : int
        Bootstrap replicates behind ``std_error`` and the interval.
    """

    estimator: str
    metric: str
    k: int | None
    estimate: float
    std_error: float
    n_users: int
    lower: float
    upper: float
    confidence: float
    n_boot: int
