"""Estimators of a global metric from sampled ranks, as values (what to compute, not how).

Each estimator is a small frozen dataclass naming one estimator of
T = (1/M) Σ_u F(R_u) from the sampled ranks r_u and its parameters; its
:attr:`~Estimator.name` is the label used in output tables (``"BV(gamma=0.1)"``,
``"MN_MLE"``, ``"mapping:beta@P"``). Names are produced for tables and never
parsed: code that runs estimators (e.g. :func:`simrec.stress.run_stress`)
dispatches on the objects' types. The computations live in
:mod:`.corrections`, :mod:`.distribution` and :mod:`.mapping`; every
estimator is fitted the same way, ``estimator.fit(sampled_ranks,
scheme).estimate(metric)`` (:mod:`.fitted`: an :class:`~._results.Estimate`
with a bootstrap interval over users).

* per-rank corrections F̂ (Krichene & Rendle 2020; Li's dissertation §2.5):
  :class:`Naive`, :class:`RankEstimate`, :class:`LeastSquares`,
  :class:`ConstrainedLeastSquares`, :class:`BiasVariance` (uniform or an
  estimated prior), :class:`MSEOptimal` (Li's MN, eq. 45),
  :class:`BiasVarianceInverseUsers` (BV at γ = 1/M);
* rank-distribution estimators (Li's dissertation §2.4, §2.6): :class:`MLE`,
  :class:`WeightedMLE`, :class:`MES`, :class:`AdaptiveMLE`;
* Li & Jin's mappings (KDD 2020), Recall/HR only: :class:`MappingEstimator`.

Priors over global ranks estimated from the same sampled ranks, for the
linear estimators with a prior (dissertation §2.5: BV_MLE, MN_MES, ...):
:class:`MLEPrior`, :class:`MESPrior`.

Interval kinds (issue 22)
-------------------------
Every interval of :mod:`simrec.sampling` is a bootstrap percentile interval
(sampling variability only), so its coverage depends on the estimator's bias.
:attr:`Estimator.interval_kind` is ``IntervalKind.SAMPLING_BIASED`` (coverage
known to fail) when the estimator's bias is fixed by construction — it does
not shrink with the number of users M while the interval does — **and** the
stress harness measured its coverage collapsing; ``IntervalKind.SAMPLING``
otherwise. The measurement (the numbers in each estimator's
``interval_kind``): the leave-one-out ranks of MovieLens 100K written by
``simrec ranks <ml-100k> -r popular -r item_knn -r implicit_mf`` (default
seed; about N = 1,577 candidates per user) for Popular, LensKit's ItemKNN and
ImplicitMF; :func:`simrec.stress.run_stress` at n = 100 with
``StressConfig(repeats=50, k_max=50, n_boot=100)`` and ``rng=11``, 95%
intervals, Recall, NDCG and AP at K = 1..50; (a) M = 943 users, binomial and
hypergeometric sampling (900 cells per estimator, 300 for the recall-only
mappings), and (b) the users resampled with replacement to M = 5,658 (about
ML-1M's M), binomial (450 / 150 cells). An estimator is marked when more
than 10% of its cells cover the exact metric in fewer than half of the
repeats in (a) or (b). The split is sharp in (b): the marked estimators miss
in 24-100% of their cells, every other one in at most 2% (in (a): 2-100%
and 0%; with more users the fixed bias stands out against a narrower
interval). This is the coverage of these data; ``coverage.csv`` of a stress
run with ``n_boot`` measures it on others.

Marked (``SAMPLING_BIASED``): :class:`Naive`, :class:`RankEstimate`,
:class:`ConstrainedLeastSquares`, :class:`BiasVariance` with the uniform
prior at γ >= 0.01, :class:`WeightedMLE` and every :class:`MappingEstimator`
(``bound`` included). Not marked: :class:`LeastSquares` (minimal bias, an
interval as wide as its unusable estimates), BV uniform at γ < 0.01, every
estimator with an estimated prior (BV_MLE, BV_MES, MN_MLE, MN_MES, BV at
1/M), :class:`MSEOptimal` and :class:`BiasVarianceInverseUsers` with the
uniform prior (their bias term is weighted by 1/M and vanishes as M grows;
not measured), :class:`MLE`, :class:`MES` and :class:`AdaptiveMLE`.

Example
-------
>>> from simrec.sampling import BiasVariance, MESPrior, MSEOptimal, MLEPrior
>>> BiasVariance(0.1).name, BiasVariance(0.01, prior=MLEPrior()).name, MSEOptimal(MESPrior()).name
('BV(gamma=0.1)', 'BV_MLE(gamma=0.01)', 'MN_MES')
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simrec._random import RNGLike
from simrec._validation import check_choice, check_in_range
from simrec.sampling._results import IntervalKind

if TYPE_CHECKING:
    from simrec.sampling.fitted import FittedEstimator
    from simrec.sampling.ranks import SamplingScheme

__all__ = [
    "Estimator",
    "MLEPrior",
    "MESPrior",
    "Naive",
    "RankEstimate",
    "LeastSquares",
    "ConstrainedLeastSquares",
    "BiasVariance",
    "MSEOptimal",
    "BiasVarianceInverseUsers",
    "MLE",
    "WeightedMLE",
    "MES",
    "AdaptiveMLE",
    "MappingEstimator",
    "MAPPINGS",
    "BETA_A_VALUES",
]

#: Kinds of :class:`MappingEstimator` (Li & Jin 2020: linear eq. 9, bound eq. 13, beta@a eqs. 16-18
#: with a given, beta@P eq. 19 with a fitted).
MAPPINGS: tuple[str, ...] = ("linear", "bound", "beta", "beta@P")
#: Li & Jin's fixed beta@a mappings (their Table 7 columns beta@1, beta@0.5, beta@0.2).
BETA_A_VALUES: tuple[float, ...] = (1.0, 0.5, 0.2)


class Estimator(abc.ABC):
    """An estimator of a global metric from sampled ranks; :attr:`Estimator.name` labels it in tables."""

    __slots__ = ()

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The estimator's label in output tables (never parsed)."""

    @property
    @abc.abstractmethod
    def interval_kind(self) -> IntervalKind:
        """What this estimator's bootstrap interval accounts for (:class:`~._results.IntervalKind`).

        ``SAMPLING_BIASED`` where the estimator's bias does not shrink with
        the number of users, so its interval's coverage is known to fail;
        each estimator's docstring gives the evidence (the papers and the
        stress harness's measured coverage). Carried by every
        :class:`~._results.Estimate` and shown in the stress and assess tables.
        """

    def __str__(self) -> str:
        return self.name

    def fit(
        self,
        sampled_ranks: object,
        scheme: SamplingScheme,
        *,
        n_boot: int = 200,
        confidence: float = 0.95,
        max_iter: int = 300,
        rng: RNGLike = None,
        refit: bool = False,
    ) -> FittedEstimator:
        """Fit to the sampled ranks of M users; ``.estimate(metric)`` then gives an estimate with an interval.

        The one call shape of every estimator family (corrections,
        distribution estimators, mappings)::

            BiasVariance(0.1).fit(sampled_ranks, scheme, rng=0).estimate(ndcg(10))

        Parameters
        ----------
        sampled_ranks : array-like of int, shape (M,)
            Sampled ranks r_u in [1, n] (checked against ``scheme``); M, the
            number of users, is their count (MN uses it).
        scheme : SamplingScheme
            N, n and with/without replacement of the sampling that produced them.
        n_boot : int >= 2, default 200
            Bootstrap replicates (users resampled with replacement; see
            :mod:`.fitted`).
        confidence : float in (0, 1), default 0.95
            Level of the percentile interval.
        max_iter : int, default 300
            EM iterations (MLE, WMLE and the MLE prior).
        rng : Generator or seed
            Draws the bootstrap replicates.
        refit : bool, default False
            The fitted estimators (MLE, WMLE, MES and the linear estimators
            with an estimated prior): refit every replicate instead of the
            linearised bootstrap (exact gradient of the estimate through the
            fit; see :func:`~.fitted.bootstrap_estimates`).

        Returns
        -------
        FittedEstimator
        """
        from simrec.sampling.fitted import fit  # the fitting engine imports this module

        return fit(
            self, sampled_ranks, scheme, n_boot=n_boot, confidence=confidence, max_iter=max_iter, rng=rng, refit=refit
        )


# ---------------------------------------------------------------------------
# priors over global ranks (estimated from the sampled ranks)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MLEPrior:
    """Prior π = the maximum-likelihood P(R) fitted by EM (:func:`~.distribution.mle`).

    .. math:: π_R \\leftarrow \\sum_{r=1}^n \\hat P(r)\\, \\frac{π_R P(r|R)}{\\sum_{j=1}^N π_j P(r|j)}

    Li's dissertation §2.4.3 (eqs. 31-33); the prior of BV_MLE and MN_MLE
    (§2.5). EM iterations come from the caller (e.g. ``StressConfig.max_iter``).
    """

    @property
    def name(self) -> str:
        """``"MLE"`` (the tag in ``"BV_MLE(gamma=...)"``, ``"MN_MLE"``)."""
        return "MLE"


@dataclass(frozen=True)
class MESPrior:
    """Prior π = the maximal-entropy, minimal-bias P(R) (:func:`~.distribution.mes`).

    .. math::

        \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2

    Li's dissertation §2.4.4 (eq. 38); the prior of BV_MES and MN_MES (§2.5).

    Parameters
    ----------
    eta : float > 0, default 0.001
        η, the entropy weight (the dissertation's value).
    """

    eta: float = 0.001

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", check_in_range("eta", self.eta, 0, None, low_open=True))

    @property
    def name(self) -> str:
        """``"MES"`` (the tag in ``"BV_MES(gamma=...)"``, ``"MN_MES"``)."""
        return "MES"


#: An estimated prior over global ranks, or None for the uniform prior π = 1/N.
Prior = MLEPrior | MESPrior | None


def _check_prior(prior: object, *, required: bool = False) -> None:
    if prior is None and not required:
        return
    if not isinstance(prior, (MLEPrior, MESPrior)):
        allowed = "MLEPrior() or MESPrior(eta)" + ("" if required else " or None (uniform)")
        raise TypeError(f"`prior` must be {allowed}; got {prior!r}")


# ---------------------------------------------------------------------------
# per-rank corrections
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Naive(Estimator):
    """The uncorrected sampled metric: F̂(r) = F(r) on a ranking of n items.

    .. math:: \\hat T = \\frac1M \\sum_u F(r_u)

    Krichene & Rendle 2020 §4 (biased for every metric but AUC);
    :func:`~.corrections.naive`.
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
        (§5.5); AUC is the exception (§4.4). Harness (module docstring): coverage
        below 0.5 in 100% of the cells at M = 943 and at M = 5,658 (median 0).
        """
        return IntervalKind.SAMPLING_BIASED


@dataclass(frozen=True)
class RankEstimate(Estimator):
    """K&R's rank-estimate correction: F̂(r) = F(⌊1 + (N - 1)(r - 1)/(n - 1)⌋).

    Krichene & Rendle 2020 eq. 20 (§5.1); :func:`~.corrections.rank_estimate`.
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


@dataclass(frozen=True)
class LeastSquares(Estimator):
    """Minimal-bias least squares with the uniform prior (the γ → 0 member of the linear family).

    .. math:: \\hat F = \\arg\\min_{x \\in R^n} \\sum_R π_R \\Big(\\sum_r P(r|R) x_r - F(R)\\Big)^2

    Krichene & Rendle 2020 eqs. 21-23; minimum-norm solution
    (:func:`~.corrections.least_squares`).
    """

    @property
    def name(self) -> str:
        """``"LS"``."""
        return "LS"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: minimal bias (K&R 2020 eq. 21).

        Its interval is as wide as its estimates are unusable (fitting warns).
        Harness (module docstring): coverage below 0.5 in 0% of the cells at
        M = 943 and M = 5,658 (median 0.94).
        """
        return IntervalKind.SAMPLING


@dataclass(frozen=True)
class ConstrainedLeastSquares(Estimator):
    """Least squares subject to F̂(1) >= F̂(2) >= ... >= F̂(n), uniform prior ("CLS").

    Krichene & Rendle 2020 §5.2; :func:`~.corrections.constrained_least_squares`.
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
        Harness (module docstring): coverage below 0.5 in 21% of the cells at
        M = 943 (ItemKNN: 60%) and 54% at M = 5,658 (ItemKNN: 95%).
        """
        return IntervalKind.SAMPLING_BIASED


@dataclass(frozen=True)
class BiasVariance(Estimator):
    """The bias-variance trade-off BV γ, with the uniform or an estimated prior.

    .. math:: \\hat F = \\big((1-γ) A^\\top D A + γ\\,\\mathrm{diag}(c)\\big)^{-1} A^\\top D b,
              \\quad A_{Rr} = P(r|R),\\; D = \\mathrm{diag}(π),\\; c = A^\\top π

    Krichene & Rendle 2020 eqs. 24-26 (uniform prior π = 1/N; γ = 1 is the
    posterior mean); with π estimated by MLE or MES from the same sampled
    ranks, Li's dissertation §2.5 (BV_MLE, BV_MES).
    :func:`~.corrections.bias_variance`.

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
        _check_prior(self.prior)

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
        Harness (module docstring), share of cells with coverage below 0.5
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


@dataclass(frozen=True)
class MSEOptimal(Estimator):
    """Li's MSE-optimal linear estimator MN, exactly as published (dissertation §2.5, eq. 45).

    .. math:: \\hat F = \\Big(A^\\top D A - \\tfrac1M A^\\top A + \\tfrac1M Λ_1\\Big)^{-1} A^\\top D b,
              \\quad Λ_1 = \\mathrm{diag}\\Big(\\sum_{R} P(r|R)\\Big),\\; D = \\mathrm{diag}(π)

    minimises the bias term weighted by the prior plus the variance term
    (1/M) Σ_R Var[F̂|R] summed over R *without* the prior (eq. 44 as printed;
    the authors' code, ``new_PR_gpu`` in dli12/AAAI23-Towards-Reliable-Item-
    Sampling-for-Recommendation-Evaluation, computes the same matrix). M is
    taken from the sampled ranks at :meth:`fit`. With π from MLE or MES this
    is MN_MLE / MN_MES. :func:`~.corrections.mse_optimal`. The variant with
    the variance weighted by π is :class:`BiasVarianceInverseUsers`.

    Parameters
    ----------
    prior : MLEPrior, MESPrior or None, default None
        The estimated prior (None: uniform π = 1/N, named ``"MN"``).
    """

    prior: Prior = None

    def __post_init__(self) -> None:
        _check_prior(self.prior)

    @property
    def name(self) -> str:
        """``"MN_MLE"``, ``"MN_MES"`` (or ``"MN"`` with the uniform prior)."""
        return "MN" if self.prior is None else f"MN_{self.prior.name}"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: the variance term is weighted by 1/M, so the bias it buys shrinks as M grows.

        Harness (module docstring): MN_MLE and MN_MES have coverage below 0.5
        in 0% of the cells at M = 943 and M = 5,658 (medians 0.90-0.94). The
        uniform-prior MN tends to least squares as M grows (not measured).
        """
        return IntervalKind.SAMPLING


@dataclass(frozen=True)
class BiasVarianceInverseUsers(Estimator):
    """BV at γ = 1/M: the MSE bound with the variance weighted by the prior (not the published MN).

    .. math:: \\hat F = \\Big(\\big(1 - \\tfrac1M\\big) A^\\top D A + \\tfrac1M \\mathrm{diag}(c)\\Big)^{-1} A^\\top D b,
              \\quad c = A^\\top π

    The minimiser of Σ_R π_R (E[F̂|R] - F(R))² + (1/M) Σ_R π_R Var[F̂|R] (K&R's
    BV, eq. 25, at γ = 1/M): the expected squared error of the estimate over
    M users with ranks drawn from π, bounded by Jensen. simrec's "MN" before
    issue 10; the published MN (:class:`MSEOptimal`, eq. 45) leaves the
    variance unweighted. :func:`~.corrections.bias_variance_inverse_users`.

    Parameters
    ----------
    prior : MLEPrior, MESPrior or None, default None

    Notes
    -----
    Name: ``"BV(gamma=1/M)"``, ``"BV_MLE(gamma=1/M)"`` or ``"BV_MES(gamma=1/M)"``.
    """

    prior: Prior = None

    def __post_init__(self) -> None:
        _check_prior(self.prior)

    @property
    def name(self) -> str:
        tag = "BV" if self.prior is None else f"BV_{self.prior.name}"
        return f"{tag}(gamma=1/M)"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: γ = 1/M, so the bias it buys shrinks as M grows.

        Harness (module docstring): BV_MLE and BV_MES at γ = 1/M have
        coverage below 0.5 in 0% of the cells at M = 943 and M = 5,658.
        """
        return IntervalKind.SAMPLING


# ---------------------------------------------------------------------------
# rank-distribution estimators
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MLE(Estimator):
    """Plug-in estimate T̂ = Σ_R π̂_R F(R) with π̂ the maximum-likelihood P(R) (EM).

    Li's dissertation §2.4.3 (eqs. 31-33); :func:`~.distribution.mle`.
    """

    @property
    def name(self) -> str:
        """``"MLE"``."""
        return "MLE"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: maximum likelihood (Li's dissertation §2.4.3).

        Harness (module docstring): coverage below 0.5 in 0% of the cells at
        M = 943 and M = 5,658 (median 0.90, 0.92), with the EM stopped at its
        300-iteration default.
        """
        return IntervalKind.SAMPLING

    @property
    def prior(self) -> MLEPrior:
        """The fitted distribution, as a prior (shared with BV_MLE / MN_MLE)."""
        return MLEPrior()


@dataclass(frozen=True)
class WeightedMLE(Estimator):
    """Weighted MLE: EM on the reweighted sampled-rank distribution w(r) P̂(r), w(r) = F_NDCG(r / C).

    .. math:: π_R \\leftarrow \\frac{\\sum_r w(r) \\hat P(r)\\, π_R P(r|R) / \\sum_j π_j P(r|j)}{\\sum_r w(r) \\hat P(r)}

    Li's dissertation §2.4.3 (eqs. 34-35); :func:`~.distribution.weighted_mle`
    with :func:`~.distribution.decay_weights` ``(ndcg(), n, scale)``.

    Parameters
    ----------
    scale : float > 0, default 10
        C of the weights.
    """

    scale: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_in_range("scale", self.scale, 0, None, low_open=True))

    @property
    def name(self) -> str:
        """``"WMLE"``."""
        return "WMLE"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED``.

        The fitted mixture reproduces the *reweighted* sampled-rank
        distribution, tilting π̂ toward the top ranks by design (dissertation
        eqs. 34-35), a bias that does not shrink with M. Harness (module
        docstring): coverage below 0.5 in 100% of the cells at M = 943 and
        M = 5,658 (median 0).
        """
        return IntervalKind.SAMPLING_BIASED


@dataclass(frozen=True)
class MES(Estimator):
    """Plug-in estimate T̂ = Σ_R π̂_R F(R) with π̂ of maximal entropy and minimal distribution bias.

    .. math::

        \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2

    Li's dissertation §2.4.4 (eq. 38); :func:`~.distribution.mes`.

    Parameters
    ----------
    eta : float > 0, default 0.001
        η (the dissertation's value).
    """

    eta: float = 0.001

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", check_in_range("eta", self.eta, 0, None, low_open=True))

    @property
    def name(self) -> str:
        """``"MES"``."""
        return "MES"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: maximal entropy with a small weight η, close to the MLE's fit.

        Harness (module docstring): coverage below 0.5 in 0% of the cells at
        M = 943 and 1% at M = 5,658 (median 0.94, 0.90).
        """
        return IntervalKind.SAMPLING

    @property
    def prior(self) -> MESPrior:
        """The fitted distribution, as a prior (shared with BV_MES / MN_MES of the same η)."""
        return MESPrior(self.eta)


@dataclass(frozen=True)
class AdaptiveMLE(Estimator):
    """MLE of P(R) from adaptive sampling, each user with its own sample-set size n_u.

    EM of Li's dissertation §2.6.2 (eqs. 46-47) on the ranks of Algorithm 1
    (:func:`~.ranks.sample_ranks_adaptive`); :func:`~.distribution.mle_adaptive`.
    """

    @property
    def name(self) -> str:
        """``"adaptive_MLE"``."""
        return "adaptive_MLE"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: the exact likelihood of the adaptive process (dissertation §2.6.2), as :class:`MLE`.

        Harness (module docstring's ranks, adaptive scheme from n0 = 100,
        Popular and ItemKNN, 30 repeats with 40 refitted replicates, M = 943):
        coverage below 0.5 in 0% of the 300 cells (minimum 0.87, median
        0.97-1.0).
        """
        return IntervalKind.SAMPLING


# ---------------------------------------------------------------------------
# mappings
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MappingEstimator(Estimator):
    r"""Li & Jin's mapping estimate of Recall/HR@K: the sampled hit ratio read off at f(k) = K.

    .. math:: \widehat{HR}@K = SHR@k \text{ at } f(k) = K \text{ (interpolated between cutoffs)}

    Li & Jin 2020 (KDD; Li's dissertation §2.3): ``"linear"`` f(k) =
    (k - 1)(N - 1)/(n - 1) + 1 (eq. 9), ``"bound"`` (eq. 13), ``"beta"``
    with a given a (beta@a, eqs. 16-18; they report a = 1, 0.5, 0.2) and
    ``"beta@P"`` with a fitted to the data (eq. 19). Defined for Recall only;
    see :class:`~.mapping.Mapping` (not to be confused with this estimator).

    Parameters
    ----------
    kind : {"linear", "bound", "beta", "beta@P"}
    a : float > 0, optional
        Required for ``"beta"``, not allowed otherwise.

    Notes
    -----
    Name: ``"mapping:<kind>"``, ``"mapping:beta@<a>"`` for ``"beta"``.
    """

    kind: str
    a: float | None = None

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, MAPPINGS)
        if self.kind == "beta":
            if self.a is None:
                raise ValueError("`a` must be given for the 'beta' mapping (e.g. 0.5); got None")
            object.__setattr__(self, "a", check_in_range("a", self.a, 0, None, low_open=True))
        elif self.a is not None:
            raise ValueError(f"`a` applies to the 'beta' mapping only; got a = {self.a} with kind {self.kind!r}")

    @property
    def name(self) -> str:
        return f"mapping:beta@{self.a:g}" if self.kind == "beta" else f"mapping:{self.kind}"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED`` for every kind, ``bound`` included.

        A mapping reads HR@K off the sampled curve at f(k) = K; Li & Jin
        (2020, §3-5) show SHR@k ≈ HR@f(k) as an approximation whose error
        depends on the rank distribution and on n, not on M (they find
        ``bound`` and beta@0.5 the most accurate alignments, their Table 5),
        and below f(1) the estimate interpolates between 0 and SHR@1.
        Harness (module docstring), share of Recall cells with coverage below
        0.5 at M = 943 / 5,658: linear 97% / 100%, bound 27% / 67%,
        beta@1 70% / 100%, beta@0.5 23% / 65%, beta@0.2 15% / 29%,
        beta@P 18% / 34% (every kind misses at K <= 5; ``bound`` also at
        Recall@10 for ItemKNN and ImplicitMF: coverage 0.00-0.16).
        """
        return IntervalKind.SAMPLING_BIASED
