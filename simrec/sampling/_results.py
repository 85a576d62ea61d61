"""The result every sampled-metric estimator returns, and what its interval is."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Estimate", "IntervalKind"]


class IntervalKind(str, enum.Enum):
    """What an estimator's bootstrap interval accounts for (:attr:`.Estimator.interval_kind`).

    Every interval of :mod:`simrec.sampling` is a bootstrap percentile
    interval: it measures the estimate's variability over the sampling of
    users and of items, and is centred on the estimator's expectation, not on
    the metric. Whether it can be trusted depends on the estimator's bias:

    * ``SAMPLING`` (``"sampling"``): the estimator is consistent or
      minimal-bias, so its bias is small beside the interval and the interval
      covered the metric near its nominal level where the stress harness
      measured it (it may still under-cover in places, e.g. with an EM
      stopped at its cap; ``coverage.csv`` has the coverage per cell);
    * ``SAMPLING_BIASED`` (``"sampling_biased"``): the interval still
      measures sampling variability only, but the estimator's bias does not
      shrink with the number of users M while the interval does, so its
      coverage is **known to fail** (below half the repeats in a quarter to
      all of the harness's cells at M = 5,658).

    The rule and the measurements are in :mod:`simrec.sampling.estimators`;
    each estimator's ``interval_kind`` gives its own numbers.
    """

    SAMPLING = "sampling"
    SAMPLING_BIASED = "sampling_biased"

    @property
    def coverage_known_to_fail(self) -> bool:
        """True for :attr:`SAMPLING_BIASED`."""
        return self is IntervalKind.SAMPLING_BIASED


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
        NaN with fewer than 2 users (M < 2: resampling one user gives no
        spread, so the bootstrap says nothing).
    n_users : int
        M, the number of evaluated users the estimate is based on.
    lower, upper : float
        The bootstrap percentile interval at level ``confidence`` (NaN where
        no replicate is defined, and with M < 2). Like ``std_error`` it does
        not correct for bias: ``interval_kind`` says whether the estimator's
        bias is known to make its coverage fail.
    confidence : float
        The interval's nominal level, e.g. 0.95.
    n_boot : int
        Bootstrap replicates behind ``std_error`` and the interval.
    interval_kind : IntervalKind
        What the interval accounts for: sampling variability of a consistent
        or minimal-bias estimator (``SAMPLING``), or of an estimator whose
        bias makes coverage fail (``SAMPLING_BIASED``).
    converged : bool
        Whether every iterative fit behind the estimate and its interval
        (EM of MLE, WMLE, the MLE prior and adaptive MLE; L-BFGS of MES and
        the MES prior; beta@P's fixed point) met its tolerance before its
        iteration cap. True for the closed-form estimators. A fit stopped at
        the cap warns (:class:`~simrec.sampling.ConvergenceWarning`).
    n_iter : int
        Iterations run by the point estimate's fit (0 for the closed-form
        estimators: naive, rank estimate, LS, CLS, BV and MN with the uniform
        prior, the fixed mappings).
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
    interval_kind: IntervalKind
    converged: bool
    n_iter: int

    @property
    def coverage_known_to_fail(self) -> bool:
        """True when the estimator's bias is known to make the interval's coverage fail."""
        return self.interval_kind.coverage_known_to_fail
