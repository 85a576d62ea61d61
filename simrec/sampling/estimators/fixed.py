"""The corrections that do not depend on the data: the naive sampled metric, K&R's rank estimate and CLS.

Each F̂ depends on the scheme and the metric only, so it is computed once per
scheme and metrics and applied to every histogram (the sample and its
bootstrap replicates) in one product; the computations are the functional
layer's (:mod:`simrec.sampling.corrections`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simrec.sampling._results import IntervalKind
from simrec.sampling.corrections import rank_estimate
from simrec.sampling.estimators.base import CorrectionEstimator
from simrec.sampling.functions import RankMetric, metric_table
from simrec.sampling.histograms import MetricTables
from simrec.sampling.problem import CorrectionProblem
from simrec.sampling.scheme import SamplingScheme

__all__ = ["Naive", "RankEstimate", "ConstrainedLeastSquares"]


@dataclass(frozen=True)
class Naive(CorrectionEstimator):
    """The uncorrected sampled metric: F̂(r) = F(r) on a ranking of n items.

    .. math:: \\hat T = \\frac1M \\sum_u F(r_u)

    Krichene & Rendle 2020 §4 (biased for every metric but AUC);
    :func:`~simrec.sampling.corrections.naive`.
    """

    @property
    def name(self) -> str:
        """``"naive"``."""
        return "naive"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED``.

        Krichene & Rendle 2020 view the sampled metrics as "high-bias,
        low-variance estimators" whose bias is recommender-dependent (§1)
        and "will have a large error even in the limit of zero variance"
        (§5.5); AUC is the exception (§4.4). Harness (:mod:`simrec.sampling.estimators`): coverage
        below 0.5 in 100% of the cells at M = 943 and at M = 5,658 (median 0).
        """
        return IntervalKind.SAMPLING_BIASED

    def correction(self, problem: CorrectionProblem, tables: MetricTables, n_users: int) -> np.ndarray:
        """F on the sample's ranks 1..n."""
        return metric_table(tables.metrics, tables.scheme.n)

    def check_metrics(self, metrics: Sequence[RankMetric], scheme: SamplingScheme) -> None:
        """Warn once when a cutoff K is >= the sample size n (decision, issue 22).

        The naive estimate applies F to the sampled rank r <= n; with K >= n no
        sampled rank is cut off, so the estimate is that of K = n whatever K is:
        Recall/HR@K is 1 and Precision@K is 1/K for every recommender, NDCG@K
        and AP@K are the untruncated sampled metrics. The value is what naive
        computes (the sampled metric), so it is returned, with this warning
        rather than silently.
        """
        n = scheme.n
        wide = [m for m in metrics if m.k is not None and m.k >= n]
        if not wide:
            return
        table = metric_table(wide, n)
        const = [m.label for j, m in enumerate(wide) if np.ptp(table[:, j]) == 0]
        same = f"; {', '.join(const)} take(s) the same value for every set of ranks (e.g. Recall = 1)" if const else ""
        warnings.warn(
            f"naive: the cutoff of {', '.join(m.label for m in wide)} is >= the sample size n = {n}: a sampled list "
            f"of n items has every rank within it, so the naive estimate ignores the cutoff{same}; use a corrected "
            "estimator (e.g. MLE, BV_MLE) for cutoffs this large",
            RuntimeWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class RankEstimate(CorrectionEstimator):
    """K&R's rank-estimate correction: F̂(r) = F(⌊1 + (N - 1)(r - 1)/(n - 1)⌋).

    Krichene & Rendle 2020 eq. 20 (§5.1); :func:`~simrec.sampling.corrections.rank_estimate`.
    """

    @property
    def name(self) -> str:
        """``"rank_estimate"``."""
        return "rank_estimate"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED``.

        The rank is estimated without bias, but the metric of it is not:
        "whenever M is nonlinear, M̂(r̃) = M(r̂) is biased in general"
        (Krichene & Rendle 2020 §5.2). Harness (module
        docstring): coverage below 0.5 in 83% of the cells at M = 943 and 92%
        at M = 5,658 (median 0).
        """
        return IntervalKind.SAMPLING_BIASED

    def correction(self, problem: CorrectionProblem, tables: MetricTables, n_users: int) -> np.ndarray:
        return np.column_stack([rank_estimate(m, tables.scheme).values for m in tables.metrics])


@dataclass(frozen=True)
class ConstrainedLeastSquares(CorrectionEstimator):
    """Least squares subject to F̂(1) >= F̂(2) >= ... >= F̂(n), uniform prior ("CLS").

    Krichene & Rendle 2020 §5.2; :func:`~simrec.sampling.corrections.constrained_least_squares`.
    """

    @property
    def name(self) -> str:
        """``"CLS"``."""
        return "CLS"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED``.

        The ordering constraint and the uniform prior leave a bias that does
        not shrink with M and is large when the ranks are concentrated at the
        top (Krichene & Rendle 2020 §6.3 found CLS's expected values "close to
        the exact metric" on their ML-1M recommenders; its intervals are
        another matter).
        Harness (:mod:`simrec.sampling.estimators`): coverage below 0.5 in 21% of the cells at
        M = 943 (ItemKNN: 60%) and 54% at M = 5,658 (ItemKNN: 95%).
        """
        return IntervalKind.SAMPLING_BIASED

    def correction(self, problem: CorrectionProblem, tables: MetricTables, n_users: int) -> np.ndarray:
        """F̂ (n, J) of every metric, the right-hand sides in one product (:meth:`CorrectionProblem.solve_monotone_many`)."""
        uniform = CorrectionProblem.from_prior(tables.scheme, None)
        return uniform.solve_monotone_many(tables.rhs(uniform))
