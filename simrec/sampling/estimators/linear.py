"""The linear estimators of K&R's family: LS, BV γ and BV at 1/M with the uniform or an estimated prior, and Li's MN.

Each is a per-rank correction F̂ solving a small system of the banded P(r|R)
and a prior π over global ranks (:class:`~simrec.sampling.problem.CorrectionProblem`):

.. math:: \\hat F = \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D b

for the γ family (K&R 2020 eqs. 21-26: LS at γ → 0, BV at any γ, BV at 1/M),
and Li's eq. 45 for MN. With the uniform prior F̂ is computed once per scheme
and metrics (and M where it depends on it); with a prior estimated from the
same sampled ranks (:class:`~.priors.MLEPrior`, :class:`~.priors.MESPrior`:
BV_MLE, MN_MES, ...) it is solved on each histogram's fitted prior, and the
bootstrap is linearised through the prior (the chain rule of
:meth:`~simrec.sampling.problem.CorrectionProblem.prior_gradient`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from simrec._validation import check_in_range
from simrec.sampling._results import IntervalKind
from simrec.sampling.estimators.base import CorrectionEstimator
from simrec.sampling.estimators.priors import Prior, check_prior
from simrec.sampling.histograms import FittedDistribution, MetricTables
from simrec.sampling.problem import CorrectionProblem

__all__ = ["LeastSquares", "BiasVariance", "MSEOptimal", "BiasVarianceInverseUsers"]

_LS_WARNING = (
    "LS (least squares, γ → 0) is unusable as an estimator: P(r|R) is a Bernstein basis, so the normal "
    "equations are severely ill-conditioned and the minimal-bias F̂ oscillates with values far outside the "
    "metric's range; its estimates have a huge variance (e.g. 612.7 ± 496.6 for a Recall@10 of 0.188). "
    "Use BV with γ >= 0.01, MN or CLS instead (Krichene & Rendle 2020 §5.2 make the same point)."
)


class _GammaFamily(CorrectionEstimator):
    """K&R's γ family (eq. 25) on the prior of :attr:`prior`, at the γ of :meth:`gamma_of`."""

    __slots__ = ()

    @abc.abstractmethod
    def gamma_of(self, n_users: int) -> float:
        """γ for M = ``n_users`` users."""

    @property
    def linearisable(self) -> bool:
        return self.prior is not None

    def correction(self, problem: CorrectionProblem, tables: MetricTables, n_users: int) -> np.ndarray:
        """Every metric's F̂ from the problem's eigendecomposition (through the first k_max rows when truncated)."""
        g = self.gamma_of(n_users)
        if tables.truncated:
            return problem.solve_many(tables.f_top, (g,), tables.a_top)[g]
        return np.column_stack([problem.solve(m, g) for m in tables.metrics])  # untruncated (AUC): per metric

    def linearise(
        self, fitted: FittedDistribution, p: np.ndarray, tables: MetricTables, n_users: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        values = self.correction(fitted.problem, tables, n_users)
        gradient = fitted.problem.prior_gradient(values, p, tables.table, self.gamma_of(n_users), n_users)
        return p @ values, gradient, values


@dataclass(frozen=True)
class LeastSquares(_GammaFamily):
    """Minimal-bias least squares with the uniform prior (the γ → 0 member of the linear family).

    .. math:: \\hat F = \\arg\\min_{x \\in R^n} \\sum_R π_R \\Big(\\sum_r P(r|R) x_r - F(R)\\Big)^2

    Krichene & Rendle 2020 eqs. 21-23; minimum-norm solution
    (:func:`~simrec.sampling.corrections.least_squares`).
    """

    @property
    def name(self) -> str:
        """``"LS"``."""
        return "LS"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: minimal bias (K&R 2020 eq. 21).

        Its interval is as wide as its estimates are unusable (fitting warns).
        Harness (:mod:`simrec.sampling.estimators`): coverage below 0.5 in 0% of the cells at
        M = 943 and M = 5,658 (median 0.94).
        """
        return IntervalKind.SAMPLING

    @property
    def fit_warnings(self) -> tuple[str, ...]:
        """Least squares is unusable (its F̂ solves an ill-conditioned system): it warns when fitted."""
        return (_LS_WARNING,)

    def gamma_of(self, n_users: int) -> float:
        """γ = 0."""
        return 0.0


@dataclass(frozen=True)
class BiasVariance(_GammaFamily):
    """The bias-variance trade-off BV γ, with the uniform or an estimated prior.

    .. math:: \\hat F = \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D b,
              \\quad A_{Rr} = P(r|R),\\; D = \\mathrm{diag}(π),\\; c = A^\\top π

    Krichene & Rendle 2020 eqs. 24-26 (uniform prior π = 1/N; γ = 1 is the
    posterior mean); with π estimated by MLE or MES from the same sampled
    ranks, Li's dissertation §2.5 (BV_MLE, BV_MES).
    :func:`~simrec.sampling.corrections.bias_variance`.

    Parameters
    ----------
    gamma : float in [0, 1]
        γ (K&R use 1, 0.1, 0.01, 0.001).
    prior : MLEPrior, MESPrior or None, default None
        None for the uniform prior.

    Notes
    -----
    Name: ``"BV(gamma=g)"``, ``"BV_MLE(gamma=g)"`` or ``"BV_MES(gamma=g)"``,
    g formatted with ``{:g}``.
    """

    gamma: float
    prior: Prior = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "gamma", check_in_range("gamma", self.gamma, 0, 1))
        check_prior(self.prior)

    @property
    def name(self) -> str:
        tag = "BV" if self.prior is None else f"BV_{self.prior.name}"
        return f"{tag}(gamma={self.gamma:g})"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED`` with the uniform prior at γ >= 0.01, else ``SAMPLING``.

        With the uniform prior the bias is weighted by a prior unlike the
        recommender's ranks and γ trades it for variance ("the lower the
        bias in the corrected metric (e.g., the lower γ)", Krichene & Rendle
        2020 §7); it does not shrink with M.
        Harness (:mod:`simrec.sampling.estimators`), share of cells with coverage below 0.5
        at M = 943 / 5,658: γ = 1: 100% / 100%; γ = 0.1: 31% / 76%;
        γ = 0.01: 2% / 24% (ItemKNN: 69%); γ = 0.001: 0% / 2%. Values
        between 0.001 and 0.01 are not measured and not marked. With an
        estimated prior (BV_MLE, BV_MES) the bias vanishes as the prior
        approaches the rank distribution: averaged over users, F̂ satisfies
        c^T F̂ = π^T F for every γ (multiply eq. 25 by 1^T), so the estimate
        is unbiased under the prior it was built with; measured: 0% of the
        cells below 0.5 for every γ at both M.
        """
        return IntervalKind.SAMPLING_BIASED if self.prior is None and self.gamma >= 0.01 else IntervalKind.SAMPLING

    @property
    def linearisable(self) -> bool:
        """With an estimated prior and γ > 0 (at γ = 0 the estimate is not differentiable in the prior)."""
        return self.prior is not None and self.gamma > 0

    def gamma_of(self, n_users: int) -> float:
        """γ (fixed)."""
        return self.gamma


@dataclass(frozen=True)
class MSEOptimal(CorrectionEstimator):
    """Li's MSE-optimal linear estimator MN, exactly as published (dissertation §2.5, eq. 45).

    .. math:: \\hat F = \\Big(A^\\top D A - \\tfrac1M A^\\top A + \\tfrac1M Λ_1\\Big)^{-1} A^\\top D b,
              \\quad Λ_1 = \\mathrm{diag}\\Big(\\sum_{R} P(r|R)\\Big),\\; D = \\mathrm{diag}(π)

    minimises the bias term weighted by the prior plus the variance term
    (1/M) Σ_R Var[F̂|R] summed over R *without* the prior (eq. 44 as printed;
    the authors' code, ``new_PR_gpu`` in dli12/AAAI23-Towards-Reliable-Item-
    Sampling-for-Recommendation-Evaluation, computes the same matrix). M is
    taken from the sampled ranks at :meth:`fit`. With π from MLE or MES this
    is MN_MLE / MN_MES. :func:`~simrec.sampling.corrections.mse_optimal`. The variant with
    the variance weighted by π is :class:`BiasVarianceInverseUsers`.

    Parameters
    ----------
    prior : MLEPrior, MESPrior or None, default None
        The estimated prior (None: uniform π = 1/N, named ``"MN"``).
    """

    prior: Prior = None

    def __post_init__(self) -> None:
        check_prior(self.prior)

    @property
    def name(self) -> str:
        """``"MN_MLE"``, ``"MN_MES"`` (or ``"MN"`` with the uniform prior)."""
        return "MN" if self.prior is None else f"MN_{self.prior.name}"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: the variance term is weighted by 1/M, so the bias it buys shrinks as M grows.

        Harness (:mod:`simrec.sampling.estimators`): MN_MLE and MN_MES have coverage below 0.5
        in 0% of the cells at M = 943 and M = 5,658 (medians 0.90-0.94). The
        uniform-prior MN tends to least squares as M grows (not measured).
        """
        return IntervalKind.SAMPLING

    @property
    def depends_on_users(self) -> bool:
        return True

    @property
    def linearisable(self) -> bool:
        return self.prior is not None

    def correction(self, problem: CorrectionProblem, tables: MetricTables, n_users: int) -> np.ndarray:
        """Eq. 45 by Cholesky (:meth:`~simrec.sampling.problem.CorrectionProblem.solve_eq45`)."""
        return problem.solve_eq45(tables.rhs(problem), n_users)

    def linearise(
        self, fitted: FittedDistribution, p: np.ndarray, tables: MetricTables, n_users: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        values = self.correction(fitted.problem, tables, n_users)
        return p @ values, fitted.problem.prior_gradient(values, p, tables.table, None, n_users), values


@dataclass(frozen=True)
class BiasVarianceInverseUsers(_GammaFamily):
    """BV at γ = 1/M: the MSE bound with the variance weighted by the prior (not the published MN).

    .. math:: \\hat F = \\Big(\\big(1 - \\tfrac1M\\big) A^\\top D A + \\tfrac1M \\mathrm{diag}(c)\\Big)^{-1} A^\\top D b,
              \\quad c = A^\\top π

    The minimiser of Σ_R π_R (E[F̂|R] - F(R))² + (1/M) Σ_R π_R Var[F̂|R] (K&R's
    BV, eq. 25, at γ = 1/M): the expected squared error of the estimate over
    M users with ranks drawn from π, bounded by Jensen. simrec's "MN" before
    issue 10; the published MN (:class:`MSEOptimal`, eq. 45) leaves the
    variance unweighted. :func:`~simrec.sampling.corrections.bias_variance_inverse_users`.

    Parameters
    ----------
    prior : MLEPrior, MESPrior or None, default None

    Notes
    -----
    Name: ``"BV(gamma=1/M)"``, ``"BV_MLE(gamma=1/M)"`` or ``"BV_MES(gamma=1/M)"``.
    """

    prior: Prior = None

    def __post_init__(self) -> None:
        check_prior(self.prior)

    @property
    def name(self) -> str:
        tag = "BV" if self.prior is None else f"BV_{self.prior.name}"
        return f"{tag}(gamma=1/M)"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: γ = 1/M, so the bias it buys shrinks as M grows.

        Harness (:mod:`simrec.sampling.estimators`): BV_MLE and BV_MES at γ = 1/M have
        coverage below 0.5 in 0% of the cells at M = 943 and M = 5,658.
        """
        return IntervalKind.SAMPLING

    @property
    def depends_on_users(self) -> bool:
        return True

    def gamma_of(self, n_users: int) -> float:
        """γ = 1/M."""
        return 1.0 / n_users
