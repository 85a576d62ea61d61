"""MNAR corrections on sampled metrics: propensity (SNIPS) weights on top of the sampled-rank estimators.

No published work combines the two corrections; this module derives the
combination, and tests/debias/test_estimators.py checks it: with equal
weights it is the unweighted estimators, and with inverse propensities the
weighted MLE lands within 4 bootstrap standard errors of the relevant
pairs' metric where the unweighted MLE is more than 8 off.

Setting. Each evaluated unit j (a user's held-out observed test pair; one
per user in leave-one-out evaluation) has a global rank :math:`R_j` among
the N candidates and a sampled rank :math:`r_j` among n sampled items
(:mod:`simrec.sampling`: :math:`r_j \\sim P(r \\mid R_j)`, drawn independently
of how the pair came to be observed). The pair was observed with propensity
:math:`p_j` and carries the weight :math:`w_j` (SNIPS: :math:`w_j = 1/p_j`).
The target is the metric over the *relevant* pairs,

.. math:: T = \\frac{1}{|\\mathrm{Rel}|} \\sum_{j \\in \\mathrm{Rel}} F(R_j),

which the naive sampled evaluation misses twice: the observed pairs are an
MNAR subset of the relevant ones (missing-data error), and only their
sampled ranks are seen (sampling error).

1. Per-rank corrections :math:`\\hat F` (naive, LS, BV, ... of
   :mod:`simrec.sampling`): the weighted estimate

   .. math:: \\hat T = \\frac{\\sum_{j \\in S} w_j \\hat F(r_j)}{\\sum_{j \\in S} w_j}

   (:meth:`WeightedSampledRanks.correction_mean`). With :math:`\\tilde F(R) =
   E[\\hat F(r) \\mid R] = \\sum_r P(r \\mid R) \\hat F(r)`, observation
   independent across pairs and :math:`w_j = 1/p_j`, the numerator has
   expectation :math:`\\sum_{j \\in \\mathrm{Rel}} \\tilde F(R_j)` and the
   denominator :math:`|\\mathrm{Rel}|` (both Horvitz-Thompson sums), so
   :math:`\\hat T` is a ratio estimator consistent for :math:`\\frac{1}
   {|\\mathrm{Rel}|}\\sum_{\\mathrm{Rel}} \\tilde F(R_j)`: for :math:`T` itself
   when :math:`\\hat F` is conditionally unbiased (:math:`\\tilde F = F`, e.g.
   least squares when P(r | R) has full rank), and otherwise with the
   correction's own bias, now averaged over the relevant rather than the
   observed pairs. The numerator alone, divided by a known
   :math:`|\\mathrm{Rel}|`, is exactly unbiased (IPS; the Horvitz-Thompson identity).
2. The prior. BV and MN weigh their objective by a prior over global ranks;
   the consistent prior is the rank distribution of the target population,
   :math:`\\pi^w_R = \\sum_j w_j 1[R_j = R] / \\sum_j w_j`, not that of the
   observed pairs.
3. Rank-distribution estimators (MLE). The weighted histogram of the
   sampled ranks, :math:`\\hat h^w(r) = \\sum_j w_j 1[r_j = r] / \\sum_j
   w_j`, converges to :math:`\\sum_R \\pi^w_R P(r \\mid R)`: the same mixture
   as the unweighted histogram, with :math:`\\pi` replaced by
   :math:`\\pi^w`. EM on :math:`\\hat h^w` (the weighted pseudo-likelihood
   :math:`\\sum_j w_j \\log \\sum_R \\pi_R P(r_j \\mid R)`) is therefore
   consistent for :math:`\\pi^w` wherever the MLE is consistent for
   :math:`\\pi` (:meth:`WeightedSampledRanks.rank_distribution`, through
   :func:`simrec.sampling.weighted_mle` with per-rank weights
   :math:`\\hat h^w(r) / \\hat h(r)`), and :math:`\\hat T = \\sum_R \\hat
   \\pi^w_R F(R)`. BV_MLE with SNIPS weights is the BV correction with this
   prior, averaged with the weights (:meth:`WeightedSampledRanks.bias_variance`).

Which users' average. With :math:`w_j = 1/p_j` the target is the mean over
relevant *pairs* (micro-average). For the mean over users of each user's
mean over its relevant pairs (Yang et al.'s per-user form), use
:math:`w_j = 1/(p_j\\, n_u)` with :math:`n_u = |\\mathrm{Rel}_u|` known or
estimated; with one held-out pair per user the per-user self-normalisation of
:class:`~simrec.debias.SNIPS` cancels the weight and gives back the naive
value, so the weights must be normalised across users, as here. The
variance grows with the spread of the weights: the effective number of
users is Kish's :math:`(\\sum_j w_j)^2 / \\sum_j w_j^2`
(:attr:`WeightedSampledRanks.n_eff`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int
from simrec.sampling import (
    RankCorrection,
    RankDistribution,
    RankMetric,
    SamplingScheme,
    bias_variance,
    weighted_mle,
)

__all__ = ["WeightedSampledRanks"]


@dataclass(frozen=True, eq=False)
class WeightedSampledRanks:
    """Sampled ranks with per-unit MNAR weights (module docstring).

    Parameters
    ----------
    sampled_ranks : ndarray of int, shape (M,)
        :math:`r_j \\in [1, n]`.
    weights : ndarray of float, shape (M,)
        :math:`w_j \\ge 0`, positive sum (e.g. :math:`1/p_j`).
    scheme : SamplingScheme
        N, n, with or without replacement.
    """

    sampled_ranks: np.ndarray
    weights: np.ndarray
    scheme: SamplingScheme

    def __post_init__(self) -> None:
        if not isinstance(self.scheme, SamplingScheme):
            raise TypeError(f"`scheme` must be a SamplingScheme; got {type(self.scheme).__name__}")
        r = np.asarray(self.sampled_ranks)
        if r.ndim != 1 or not len(r) or not np.issubdtype(r.dtype, np.integer):
            raise ValueError(
                f"`sampled_ranks` must be a non-empty 1-d integer array; got shape {r.shape}, dtype {r.dtype}"
            )
        if r.min() < 1 or r.max() > self.scheme.n:
            raise ValueError(
                f"`sampled_ranks` must be integers in [1, {self.scheme.n}]; got range [{r.min()}, {r.max()}]"
            )
        w = np.asarray(self.weights, dtype=np.float64)
        if w.shape != r.shape:
            raise ValueError(f"`weights` must have shape {r.shape} (one per sampled rank); got {w.shape}")
        if not np.isfinite(w).all() or w.min() < 0 or w.sum() <= 0:
            raise ValueError("`weights` must be finite, non-negative and not all 0")
        object.__setattr__(self, "sampled_ranks", r.astype(np.int64))
        object.__setattr__(self, "weights", w)

    @property
    def n_eff(self) -> float:
        """Kish's effective sample size :math:`(\\sum w)^2 / \\sum w^2`."""
        w = self.weights
        return float(w.sum() ** 2 / (w @ w))

    def histogram(self) -> np.ndarray:
        """:math:`\\hat h^w(r)` for r = 1..n, float64 (n,), summing to 1."""
        h = np.bincount(self.sampled_ranks - 1, weights=self.weights, minlength=self.scheme.n)
        return h / h.sum()

    def correction_mean(self, correction: RankCorrection) -> float:
        """:math:`\\sum_j w_j \\hat F(r_j) / \\sum_j w_j` for a per-rank correction of this scheme."""
        if not isinstance(correction, RankCorrection):
            raise TypeError(f"`correction` must be a RankCorrection; got {type(correction).__name__}")
        if correction.scheme.n != self.scheme.n or correction.scheme.n_items != self.scheme.n_items:
            raise ValueError("`correction` must be computed for this scheme (same N and n)")
        return float(self.histogram() @ correction.values)

    def rank_distribution(self, *, max_iter: int = 300, tol: float = 1e-9) -> RankDistribution:
        """:math:`\\hat\\pi^w`: EM on the weighted histogram (:func:`simrec.sampling.weighted_mle`)."""
        counts = np.bincount(self.sampled_ranks - 1, minlength=self.scheme.n).astype(np.float64)
        h_w = np.bincount(self.sampled_ranks - 1, weights=self.weights, minlength=self.scheme.n)
        per_rank = np.divide(h_w, counts, out=np.zeros(self.scheme.n), where=counts > 0)
        return weighted_mle(self.sampled_ranks, self.scheme, per_rank, max_iter=max_iter, tol=tol)

    def mle(self, metric: RankMetric, *, max_iter: int = 300, tol: float = 1e-9) -> float:
        """:math:`\\sum_R \\hat\\pi^w_R F(R)`, the weighted MLE's estimate."""
        return self.rank_distribution(max_iter=max_iter, tol=tol).expectation(metric)

    def bias_variance(self, metric: RankMetric, gamma: float, *, prior: RankDistribution | None = None) -> float:
        """BV γ with the weighted prior (default: :meth:`rank_distribution`), averaged with the weights."""
        prior = self.rank_distribution() if prior is None else prior
        return self.correction_mean(bias_variance(metric, self.scheme, gamma, prior=prior))

    def bootstrap_interval(
        self, correction: RankCorrection, *, n_boot: int = 200, level: float = 0.95, rng: RNGLike = None
    ) -> tuple[float, float]:
        """Percentile interval of :meth:`correction_mean` over a Poisson bootstrap of the units.

        Each replicate reweights unit j by :math:`m_j w_j`, :math:`m_j \\sim`
        Poisson(1) (vectorised: one (n_boot, M) draw and one product with
        :math:`\\hat F`); the correction itself is held fixed (its prior's
        own uncertainty is not propagated).
        """
        n_boot = check_int("n_boot", n_boot, low=2)
        level = check_in_range("level", level, 0, 1, low_open=True, high_open=True)
        gen = as_generator(rng)
        m = gen.poisson(1.0, size=(n_boot, len(self.weights))) * self.weights
        f = correction.values[self.sampled_ranks - 1]
        den = m.sum(axis=1)
        est = np.divide(m @ f, den, out=np.full(n_boot, np.nan), where=den > 0)
        a = (1.0 - level) / 2.0
        lo, hi = np.nanquantile(est, [a, 1.0 - a])
        return float(lo), float(hi)
