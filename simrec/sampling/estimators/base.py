"""The two shapes most estimators take: a per-rank correction averaged over users, or a fitted distribution's plug-in.

A new estimator is usually one small class of one of these shapes, in a file
of its own (docs/design.md, "Adding an estimator"):

* :class:`CorrectionEstimator`: T̂ = (1/M) Σ_u F̂(r_u) = p^T F̂ for a
  per-rank correction F̂ (n, J): implement :meth:`~CorrectionEstimator.correction`
  (given the linear family's problem, the metrics' tables and M). Without a
  prior F̂ is computed once per scheme and metrics and applied to every
  histogram in one product; with one (:attr:`~CorrectionEstimator.prior`, a
  :class:`~simrec.sampling.histograms.RankFit`) it is solved per histogram on the fitted
  prior, shared by every estimator of that prior.
* :class:`PlugInEstimator`: T̂ = π̂^T F for a distribution π̂ over global
  ranks fitted to the histogram: give :attr:`~PlugInEstimator.rank_fit`.

Anything else implements :meth:`~simrec.sampling.fitted.Estimator.estimate_counts` directly
(the Li & Jin mappings do: :mod:`.mappings`).
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from simrec.sampling.fitted import Estimator
from simrec.sampling.functions import RankMetric
from simrec.sampling.histograms import FitLimits, FitRecord, FittedDistribution, Histograms, MetricTables, RankFit
from simrec.sampling.problem import CorrectionProblem
from simrec.sampling.scheme import SamplingScheme

__all__ = ["CorrectionEstimator", "PlugInEstimator", "fixed_corrections"]


class CorrectionEstimator(Estimator):
    """T̂ = (1/M) Σ_u F̂(r_u) = p^T F̂: a per-rank correction F̂ averaged over the users' sampled ranks.

    Subclasses implement :meth:`correction`; one with an estimated prior
    overrides :attr:`prior` (a field of the dataclass), one whose F̂ depends on
    the number of users M sets :attr:`depends_on_users`.
    """

    __slots__ = ()

    @abc.abstractmethod
    def correction(self, problem: CorrectionProblem, tables: MetricTables, n_users: int) -> np.ndarray:
        """F̂ for the metrics of ``tables``, shape (n, J), given the problem of the prior and M.

        ``problem`` is the uniform-prior problem of the scheme
        (:attr:`prior` None) or the one of the prior fitted to the histogram.
        """

    @property
    def prior(self) -> RankFit | None:
        """The prior π over global ranks estimated from the same sampled ranks, or None (uniform)."""
        return None

    @property
    def estimated_prior(self) -> RankFit | None:
        """:attr:`prior`."""
        return self.prior

    def with_priors(self, priors: Mapping[RankFit, RankFit]) -> Estimator:
        """A copy whose :attr:`prior` (a dataclass field) is ``priors[prior]``; itself when ``prior`` is not a key."""
        if self.prior is None or self.prior not in priors:
            return self
        replaced: Estimator = dataclasses.replace(
            cast(Any, self), prior=priors[self.prior]
        )  # subclasses are dataclasses
        return replaced

    @property
    def depends_on_users(self) -> bool:
        """Whether F̂ depends on the number of users M (MN, BV at 1/M)."""
        return False

    @property
    def data_independent(self) -> bool:
        """Whether F̂ depends on neither the sampled ranks nor their count (no prior, not on M)."""
        return self.prior is None and not self.depends_on_users

    @property
    def rank_fit(self) -> RankFit | None:
        return self.prior

    def fit_limits(self, max_iter: int) -> FitLimits | None:
        """The fit of the prior: e.g. ``("EM of its MLE prior", max_iter, 1e-9)``; None without a prior."""
        if self.prior is None:
            return None
        what, cap, tol = self.prior.limits(max_iter)
        return f"{what} of its {self.prior.name} prior", cap, tol

    def estimate_counts(self, rows: Histograms, record: Callable[[int, FitRecord], None]) -> np.ndarray:
        key = (self, rows.n_users if self.depends_on_users else None)
        values = rows.fixed(key, lambda: self.correction(rows.uniform_problem, rows.tables, rows.n_users))
        return rows.p @ values

    def estimate_fitted(self, fitted: FittedDistribution, rows: Histograms, row: int) -> np.ndarray:
        return rows.p[row] @ self.correction(fitted.problem, rows.tables, rows.n_users)


class PlugInEstimator(Estimator):
    """T̂ = π̂^T F = Σ_R π̂_R F(R): the metric's expectation under a distribution fitted to the sampled ranks.

    Subclasses give :attr:`rank_fit` (e.g. :class:`~.priors.MLEPrior`); the
    estimate is linearised through the fit (its gradient in π̂ is the metric
    table F).
    """

    __slots__ = ()

    @property
    @abc.abstractmethod
    def rank_fit(self) -> RankFit:
        """The distribution over global ranks fitted to each histogram."""

    @property
    def linearisable(self) -> bool:
        return True

    def estimate_fitted(self, fitted: FittedDistribution, rows: Histograms, row: int) -> np.ndarray:
        return fitted.pi @ rows.tables.table

    def linearise(
        self, fitted: FittedDistribution, p: np.ndarray, tables: MetricTables, n_users: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        return fitted.pi @ tables.table, tables.table, None


def fixed_corrections(estimator: Estimator, scheme: SamplingScheme, metrics: Sequence[RankMetric]) -> np.ndarray:
    """F̂ (n, J) of an estimator whose per-rank correction does not depend on the data.

    Naive, rank estimate, CLS, and LS and BV with the uniform prior
    (:attr:`CorrectionEstimator.data_independent`; MN and BV at 1/M depend
    on M and are not accepted). Used for exact expectations such as K&R's
    corrected curve.
    """
    if isinstance(estimator, CorrectionEstimator) and estimator.data_independent:
        tables = MetricTables(scheme, tuple(metrics))
        return estimator.correction(CorrectionProblem.from_prior(scheme, None), tables, 1)
    raise TypeError(
        f"`estimator` must have a data-independent correction (naive, rank estimate, CLS, LS, BV with "
        f"the uniform prior); got {getattr(estimator, 'name', type(estimator).__name__)}"
    )
