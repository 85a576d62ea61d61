"""Corrected sampled metrics: one function F̂ of the sampled rank, averaged over users.

Every estimator here produces a vector F̂ in R^n (:class:`RankCorrection`);
the estimate of T = (1/M) Σ_u F(R_u) is (1/M) Σ_u F̂(r_u). Computing F̂ once
and applying it to many repeats is cheap (:meth:`RankCorrection.mean` takes a
(repeats, M) array).

* :func:`naive`: F̂ = F on the sample, the uncorrected sampled metric.
* :func:`rank_estimate`: F̂(r) = F(⌊1 + (N-1)(r-1)/(n-1)⌋) (K&R 2020 eq. 20).
* The **linear family with a prior** π over global ranks (docs/design.md §5):

  .. math::

      \\hat F = \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D b,
      \\quad A_{R r} = P(r|R),\\; D = \\mathrm{diag}(π),\\; b_R = F(R),\\;
      c_r = \\textstyle\\sum_R π_R P(r|R),

  minimising Σ_R π_R [(E[F̂|R] - F(R))² + γ Var(F̂|R)] / (1 - γ) (K&R eq. 24).
  :func:`least_squares` is γ → 0 (minimal bias, K&R eqs. 21-23),
  :func:`bias_variance` any γ in [0, 1] (eq. 25; γ = 1 is the posterior mean
  Σ_R P(R|r) F(R), eq. 26), :func:`bias_variance_inverse_users` is γ = 1/M;
  :func:`mse_optimal` is Li's MN as published (dissertation §2.5, eq. 45,
  outside the family: its variance term is not weighted by π),
  :func:`constrained_least_squares` is the γ → 0 problem with F̂ non-increasing
  in r (K&R §5.2, "CLS").

The linear algebra (one eigendecomposition per scheme and prior serving every γ
and metric, the γ = 0 limit, ranks the prior makes impossible) is
:class:`~.problem.CorrectionProblem`'s (:mod:`.problem`).

Call shape (the functional rule of :mod:`simrec.sampling`): a correction is
computed for a metric, ``f(metric, scheme, [gamma], *, prior=None)``, and
applied with ``.mean(sampled_ranks)``. The two corrections that depend on the
number of users M (:func:`mse_optimal`, :func:`bias_variance_inverse_users`)
take the sampled ranks, ``sampled_ranks=``, checked against the scheme, and
use their count; passing M by hand (the old positional ``n_users``) is
deprecated and warns.

Functions given a bare :class:`~.scheme.SamplingScheme` use the uniform-prior
problem cached on the scheme (K&R's choice, π = 1/N).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from simrec._validation import check_in_range, check_int
from simrec.sampling._checks import check_probability_vector, check_rank_array
from simrec.sampling._threads import blas_single_thread
from simrec.sampling.distribution import RankDistribution
from simrec.sampling.functions import RankMetric
from simrec.sampling.problem import CorrectionProblem, Prior, _readonly
from simrec.sampling.scheme import SamplingScheme

__all__ = [
    "RankCorrection",
    "naive",
    "rank_estimate",
    "unrounded_rank_estimates",
    "least_squares",
    "constrained_least_squares",
    "bias_variance",
    "mse_optimal",
    "bias_variance_inverse_users",
    "bias_variance_distribution",
]


@dataclass(frozen=True, eq=False)
class RankCorrection:
    """A per-sampled-rank function F̂ (length n) estimating a metric's global value.

    Attributes
    ----------
    estimator : str
        e.g. ``"naive"``, ``"rank_estimate"``, ``"LS"``, ``"CLS"``,
        ``"BV(gamma=0.1)"``, ``"BV_MLE(gamma=0.01)"``, ``"MN_MLE"``.
    metric : RankMetric
    scheme : SamplingScheme
    values : ndarray of shape (n,), read-only
        F̂(1), ..., F̂(n).
    """

    estimator: str
    metric: RankMetric
    scheme: SamplingScheme
    values: np.ndarray

    def mean(self, sampled_ranks: object) -> float | np.ndarray:
        """(1/M) Σ_u F̂(r_u) along the last axis: a float for shape (M,), an array for (repeats, M).

        The point estimate only; for an :class:`~._results.Estimate` with a
        bootstrap interval use the estimator objects
        (``BiasVariance(0.1).fit(sampled_ranks, scheme).estimate(metric)``).
        """
        r = check_rank_array("sampled_ranks", sampled_ranks, self.scheme.n, ndim=(1, 2))
        out = self.values[r - 1].mean(axis=-1)
        return float(out) if r.ndim == 1 else out

    @property
    def estimate(self) -> NoReturn:
        """Not defined here (raises AttributeError naming what to call instead).

        A correction is applied to sampled ranks with :meth:`mean`; an
        :class:`~._results.Estimate` with an interval comes from the estimator
        objects (``BiasVariance(0.1).fit(sampled_ranks, scheme).estimate(metric)``).
        """
        raise AttributeError(
            f"{self.estimator} correction has no `.estimate`: use `.mean(sampled_ranks)` for the "
            f"point estimate, or e.g. `BiasVariance(0.1).fit(sampled_ranks, scheme).estimate(metric)` "
            f"for an Estimate with an interval"
        )

    @blas_single_thread
    def conditional_mean(self) -> np.ndarray:
        """E[F̂(r) | R] for R = 1..N, shape (N,) (``P(r|R) @ F̂``)."""
        return self.scheme.blocks.matvec(self.values)

    def expected(self, ranks: object) -> float:
        """Exact expectation of the estimate given the users' global ``ranks``."""
        return self.scheme.expected(self.values, ranks)

    def bias(self, prior: Prior = None) -> float:
        """Prior-weighted squared bias Σ_R π_R (E[F̂|R] - F(R))² (K&R eq. 21's objective); π uniform by default."""
        N = self.scheme.n_items
        pi = np.full(N, 1.0 / N) if prior is None else check_probability_vector("prior", _prior_array(prior), N)
        d = self.conditional_mean() - self.metric.table(N)
        return float(pi @ d**2)


def _prior_array(prior: object) -> object:
    return prior.probabilities if isinstance(prior, RankDistribution) else prior


def _problem(scheme: object, prior: Prior) -> CorrectionProblem:
    if isinstance(scheme, CorrectionProblem):
        if prior is not None:
            raise ValueError("pass `prior` either in the CorrectionProblem or here, not both")
        return scheme
    if not isinstance(scheme, SamplingScheme):
        raise TypeError(f"`scheme` must be a SamplingScheme or CorrectionProblem; got {type(scheme).__name__}")
    if isinstance(prior, RankDistribution):
        cache = prior._cache.setdefault("problems", {})
        key = (scheme.n_items, scheme.n, scheme.replace, scheme.tail_cutoff)
        if key not in cache:
            cache[key] = CorrectionProblem.from_prior(scheme, prior)
        return cache[key]
    return CorrectionProblem.from_prior(scheme, prior)


def _check_metric(metric: object) -> RankMetric:
    if not isinstance(metric, RankMetric):
        raise TypeError(f"`metric` must be a RankMetric (e.g. ndcg(10)); got {type(metric).__name__}")
    return metric


def _tag(base: str, problem: CorrectionProblem) -> str:
    return base if problem.prior_name == "uniform" else f"{base}_{problem.prior_name}"


def _result(name: str, metric: RankMetric, scheme: SamplingScheme, values: np.ndarray) -> RankCorrection:
    return RankCorrection(name, metric, scheme, _readonly(values))


def naive(metric: RankMetric, scheme: SamplingScheme | CorrectionProblem) -> RankCorrection:
    """The uncorrected sampled metric: F̂(r) = F(r) on a ranking of n items.

    For AUC this is ``(n - r)/(n - 1)``, unbiased for the global AUC (K&R §4.4.1).
    """
    metric = _check_metric(metric)
    scheme = _problem(scheme, None).scheme
    return _result("naive", metric, scheme, metric.table(scheme.n))


def unrounded_rank_estimates(n_items: int, n: int) -> np.ndarray:
    """Unbiased rank estimates r̂ = 1 + (N - 1)(r - 1)/(n - 1) for r = 1..n (K&R §5.1), unrounded.

    E[r̂ | R] = R exactly under sampling with and without replacement.
    """
    n_items = check_int("n_items", n_items, low=2)
    n = check_int("n", n, low=2, high=n_items)
    return 1.0 + (n_items - 1.0) * np.arange(n) / (n - 1.0)


def rank_estimate(metric: RankMetric, scheme: SamplingScheme | CorrectionProblem) -> RankCorrection:
    """K&R's rank-estimate correction (eq. 20): F̂(r) = F(⌊1 + (N - 1)(r - 1)/(n - 1)⌋).

    Rounded down, as in their experiments (§5.1), in exact integer arithmetic.
    """
    metric = _check_metric(metric)
    scheme = _problem(scheme, None).scheme
    N, n = scheme.n_items, scheme.n
    r_hat = 1 + ((N - 1) * np.arange(n, dtype=np.int64)) // (n - 1)
    return _result("rank_estimate", metric, scheme, metric.table(N)[r_hat - 1])


def least_squares(
    metric: RankMetric, scheme: SamplingScheme | CorrectionProblem, *, prior: Prior = None
) -> RankCorrection:
    """Minimal-bias least squares (K&R eqs. 21-23): the γ → 0 member of the linear family.

    .. math:: \\hat F = \\arg\\min_{x \\in R^n} \\sum_R π_R \\Big(\\sum_r P(r|R) x_r - F(R)\\Big)^2

    Minimum-norm solution (in the C-metric) with eigenvalues below ``rcond``
    dropped; see the module docstring.

    Parameters
    ----------
    metric : RankMetric
    scheme : SamplingScheme or CorrectionProblem
    prior : None, ndarray (N,) or RankDistribution, optional
        π (uniform by default); not with a CorrectionProblem (it has its own).
    """
    metric = _check_metric(metric)
    prob = _problem(scheme, prior)
    return _result(_tag("LS", prob), metric, prob.scheme, prob.solve(metric, 0.0))


def constrained_least_squares(
    metric: RankMetric, scheme: SamplingScheme | CorrectionProblem, *, prior: Prior = None
) -> RankCorrection:
    """CLS (K&R §5.2): least squares subject to F̂(1) >= F̂(2) >= ... >= F̂(n).

    Solved as bounded least squares on the decrements of F̂ on the n-dimensional
    problem (see :meth:`CorrectionProblem.solve_monotone`). Parameters as in
    :func:`least_squares`.
    """
    metric = _check_metric(metric)
    prob = _problem(scheme, prior)
    return _result(_tag("CLS", prob), metric, prob.scheme, prob.solve_monotone(metric))


def bias_variance(
    metric: RankMetric, scheme: SamplingScheme | CorrectionProblem, gamma: float, *, prior: Prior = None
) -> RankCorrection:
    """K&R's bias-variance trade-off BV γ (eqs. 24-26); with an estimated prior, BV_MLE / BV_MES.

    .. math:: \\hat F = \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D b

    γ = 1 gives the posterior mean Σ_R P(R|r) F(R) (eq. 26); γ = 0 is
    :func:`least_squares`. K&R use γ in {1, 0.1, 0.01, 0.001} with a uniform
    prior.

    Parameters
    ----------
    metric : RankMetric
    scheme : SamplingScheme or CorrectionProblem
    gamma : float in [0, 1]
    prior : None, ndarray (N,) or RankDistribution, optional
    """
    metric = _check_metric(metric)
    gamma = check_in_range("gamma", gamma, 0, 1)
    prob = _problem(scheme, prior)
    return _result(f"{_tag('BV', prob)}(gamma={gamma:g})", metric, prob.scheme, prob.solve(metric, gamma))


def _n_users(sampled_ranks: object, n_users: object, scheme: SamplingScheme, func: str) -> int:
    """M for the M-dependent corrections: the count of ``sampled_ranks`` (checked against the scheme).

    ``n_users`` is the deprecated way of passing M by hand (it cannot be
    checked against the ranks); it warns, and giving both raises.
    """
    if n_users is not None:
        if sampled_ranks is not None:
            raise TypeError(f"{func}: pass `sampled_ranks` only (M is their count), not also `n_users`")
        warnings.warn(
            f"{func}(metric, scheme, n_users) is deprecated: pass `sampled_ranks=` instead "
            f"(M is taken from the ranks, which are checked against the scheme)",
            DeprecationWarning,
            stacklevel=3,
        )
        return check_int("n_users", n_users, low=1)
    if sampled_ranks is None:
        raise TypeError(f"{func}: `sampled_ranks` is required (the M users' sampled ranks in [1, n]; M is their count)")
    return int(check_rank_array("sampled_ranks", sampled_ranks, scheme.n).size)


def mse_optimal(
    metric: RankMetric,
    scheme: SamplingScheme | CorrectionProblem,
    n_users: int | None = None,
    *,
    sampled_ranks: object = None,
    prior: Prior = None,
) -> RankCorrection:
    """The MSE-optimal linear estimator MN as published (Li's dissertation §2.5, eqs. 44-45).

    .. math:: \\hat F = \\Big(A^\\top D A - \\tfrac1M A^\\top A + \\tfrac1M Λ_1\\Big)^{-1} A^\\top D b,
              \\quad Λ_1 = \\mathrm{diag}\\Big(\\sum_{R=1}^N P(r|R)\\Big)

    Derivation (eq. 44): the bias term L1 = ||√D A x - √D b||² is weighted by
    the prior D = diag(P(R)); the variance term is written as
    L2 = (1/M)(||√Λ₁ x||² - ||A x||²) = (1/M) Σ_R Var[F̂(r) | R], summed over
    R **without** the prior weights. Setting the gradient of L1 + L2 to zero
    gives eq. 45. This is also what the authors' code computes
    (``new_PR_gpu`` in dli12/AAAI23-Towards-Reliable-Item-Sampling-for-
    Recommendation-Evaluation: ``AT@D@A - AT@A/H + diag(A.sum(0))/H``, H = M),
    so the printed formula and the code agree. With π from
    :func:`~.distribution.mle` or :func:`~.distribution.mes` this is MN_MLE /
    MN_MES (the name follows the prior's estimator).

    The variant that weights the variance by the prior,
    (1/M) Σ_R π_R Var[F̂|R], is BV at γ = 1/M: :func:`bias_variance_inverse_users`
    (what simrec called MN before; not the published estimator).

    Parameters
    ----------
    metric : RankMetric
    scheme : SamplingScheme or CorrectionProblem
    n_users : int, optional
        Deprecated (warns): M given by hand. Pass ``sampled_ranks`` instead.
    sampled_ranks : array-like of int, shape (M,)
        The sampled ranks r_u in [1, n] of the M evaluated users (required;
        checked against the scheme). Only their count M enters F̂; apply the
        result with ``.mean(sampled_ranks)``.
    prior : None, ndarray (N,) or RankDistribution, optional
        π (uniform by default), e.g. ``mle(sampled_ranks, scheme)`` for MN_MLE.

    Returns
    -------
    RankCorrection
        F̂ of shape (n,), named ``"MN"`` / ``"MN_MLE"`` / ``"MN_MES"``.

    Examples
    --------
    >>> from simrec.sampling import SamplingScheme, mle, mse_optimal, ndcg
    >>> s = SamplingScheme(1_000, 50)
    >>> r = s.sample(np.arange(1, 401), rng=0)
    >>> est = mse_optimal(ndcg(10), s, sampled_ranks=r, prior=mle(r, s)).mean(r)
    """
    metric = _check_metric(metric)
    prob = _problem(scheme, prior)
    m_users = _n_users(sampled_ranks, n_users, prob.scheme, "mse_optimal")
    return _result(_tag("MN", prob), metric, prob.scheme, prob.solve_eq45(prob.rhs(metric), m_users))


def bias_variance_inverse_users(
    metric: RankMetric,
    scheme: SamplingScheme | CorrectionProblem,
    n_users: int | None = None,
    *,
    sampled_ranks: object = None,
    prior: Prior = None,
) -> RankCorrection:
    """BV at γ = 1/M: the MSE bound with the variance weighted by the prior (a variant of MN, not eq. 45).

    .. math:: \\hat F = \\Big(\\big(1 - \\tfrac1M\\big) A^\\top D A + \\tfrac1M \\mathrm{diag}(c)\\Big)^{-1} A^\\top D b,
              \\quad c = A^\\top π

    Derivation: the expected squared error of (1/M) Σ_u F̂(r_u) over M users
    with global ranks drawn from π is Σ_R π_R (E[F̂|R] - F(R))² + (1/M)
    Σ_R π_R Var[F̂|R] (bias² bound by Jensen plus variance/M); its minimiser is
    K&R's BV (eq. 25) at γ = 1/M. It differs from the published MN
    (:func:`mse_optimal`, eq. 45) only in weighting the variance by π; it was
    simrec's MN before issue 10. Named ``"BV(gamma=1/M)"`` (``"BV_MLE(gamma=1/M)"``
    with a prior).

    Parameters, returns and the M rule as in :func:`mse_optimal`
    (``sampled_ranks=`` required; ``n_users`` deprecated).
    """
    metric = _check_metric(metric)
    prob = _problem(scheme, prior)
    m_users = _n_users(sampled_ranks, n_users, prob.scheme, "bias_variance_inverse_users")
    return _result(f"{_tag('BV', prob)}(gamma=1/M)", metric, prob.scheme, prob.solve(metric, 1.0 / m_users))


def bias_variance_distribution(
    sampled_ranks: object, scheme: SamplingScheme, gamma: float, *, prior: Prior = None
) -> RankDistribution:
    """The dissertation's baseline P(R) from BV (eq. 27): P̂(R) = F̂_BV(R) - F̂_BV(R - 1) for Recall.

    .. math:: \\hat P(R) = \\hat P(r)^\\top \\big(\\hat F_{Recall@R} - \\hat F_{Recall@R-1}\\big)
              = \\hat P(r)^\\top \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D\\, e_R

    with F̂ the BV estimator of the Recall@R function (Li's dissertation §2.4.1,
    eq. 27, "our baseline for learning the empirical rank distribution").
    By linearity Σ_R P̂(R) F(R) is BV's estimate of every metric F: this
    gives BV's implied rank distribution, not a new metric estimator. P̂ is
    not constrained: entries may be negative and the sum is Σ_r P̂(r)
    E[Σ_R ...] (close to, not exactly, 1 for γ > 0); ``probabilities`` holds
    it as computed. Named ``"BV_PR(gamma=g)"``.

    Parameters
    ----------
    sampled_ranks : array-like of int, shape (M,)
    scheme : SamplingScheme
    gamma : float in [0, 1]
        K&R's γ (the dissertation's baseline uses BV's values, e.g. 0.1).
    prior : None, ndarray (N,) or RankDistribution, optional
        π (uniform by default, as in K&R and the dissertation's baseline).
    """
    if not isinstance(scheme, SamplingScheme):
        raise TypeError(f"`scheme` must be a SamplingScheme; got {type(scheme).__name__}")
    r = check_rank_array("sampled_ranks", sampled_ranks, scheme.n)
    gamma = check_in_range("gamma", gamma, 0, 1)
    prob = _problem(scheme, prior)
    pr = prob.rank_distribution(np.bincount(r - 1, minlength=scheme.n), gamma)
    return RankDistribution(f"BV_PR(gamma={gamma:g})", _readonly(pr), int(r.size), 1, True, np.zeros(1))
