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
    """An estimator of a global metric from sampled ranks; :attr:`name` labels it in tables."""

    __slots__ = ()

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The estimator's label in output tables (never parsed)."""

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


@dataclass(frozen=True)
class RankEstimate(Estimator):
    """K&R's rank-estimate correction: F̂(r) = F(⌊1 + (N - 1)(r - 1)/(n - 1)⌋).

    Krichene & Rendle 2020 eq. 20 (§5.1); :func:`~.corrections.rank_estimate`.
    """

    @property
    def name(self) -> str:
        """``"rank_estimate"``."""
        return "rank_estimate"


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


@dataclass(frozen=True)
class ConstrainedLeastSquares(Estimator):
    """Least squares subject to F̂(1) >= F̂(2) >= ... >= F̂(n), uniform prior ("CLS").

    Krichene & Rendle 2020 §5.2; :func:`~.corrections.constrained_least_squares`.
    """

    @property
    def name(self) -> str:
        """``"CLS"``."""
        return "CLS"


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


# ---------------------------------------------------------------------------
# mappings
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MappingEstimator(Estimator):
    """Li & Jin's mapping estimate of Recall/HR@K: the sampled hit ratio read off at f(k) = K.

    .. math:: \\widehat{HR}@K = SHR@k \text{ at } f(k) = K \text{ (interpolated between cutoffs)}

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
