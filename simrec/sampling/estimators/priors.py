"""The distributions over global ranks that estimators fit to the sampled ranks: MLE, MES and WMLE's weighted EM.

Each is a :class:`~simrec.sampling.histograms.RankFit`: it fits π̂ to one histogram of
sampled ranks with its own objective and stopping rule, and linearises the
fit for the bootstrap (:func:`~simrec.sampling.fitted.bootstrap_estimates`). The plug-in
estimators (:class:`~.plugin.MLE`, :class:`~.plugin.MES`,
:class:`~.plugin.WeightedMLE`) estimate π̂^T F with them; the linear estimators
with an estimated prior (BV_MLE, MN_MES, ...; :mod:`.linear`) use
:class:`MLEPrior` and :class:`MESPrior` as their prior. Estimators with equal
fits share one fit per histogram.

Stopping rules: the EM fits (:class:`MLEPrior`, :class:`WeightedMLEFit`) run at
most the caller's ``max_iter`` iterations with tolerance
:data:`~simrec.sampling._em.EM_TOL` on the mean log-likelihood per user; MES solves its dual
by L-BFGS (:data:`~simrec.sampling._mes.MES_MAX_ITER` iterations, gradient tolerance
:data:`~simrec.sampling._mes.MES_TOL`; ``max_iter`` does not apply). The objectives and
their derivatives are in :mod:`simrec.sampling._em` and :mod:`simrec.sampling._mes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._validation import check_in_range
from simrec.sampling._em import EM_TOL, em, em_gradient, em_jvp
from simrec.sampling._mes import MES_MAX_ITER, MES_TOL, mes_gradient, mes_jvp
from simrec.sampling.distribution import RankDistribution, decay_weights, mes, mle, weighted_mle
from simrec.sampling.functions import ndcg
from simrec.sampling.histograms import FitLimits, FitRecord, Linearisation, RankFit, memo
from simrec.sampling.scheme import SamplingScheme

__all__ = ["MLEPrior", "MESPrior", "WeightedMLEFit", "Prior", "check_prior"]


def _ranks_of(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(1, counts.size + 1), counts)


def _record(d: RankDistribution) -> FitRecord:
    return FitRecord(d.probabilities, d.n_iter, d.converged)


class _EMFit(RankFit):
    """An EM fit of π to (possibly reweighted) sampled-rank frequencies, linearised through its iterations."""

    __slots__ = ()

    def limits(self, max_iter: int) -> FitLimits:
        return "EM", max_iter, EM_TOL

    def _frequencies(self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme) -> tuple[np.ndarray, np.ndarray]:
        """The frequencies the EM fits and the replicates' directions in them, (n,) and (B, n)."""
        n_users = int(counts.sum())
        return counts / n_users, dh / n_users

    def linearise(
        self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme, max_iter: int, fits: dict | None
    ) -> Linearisation:
        """Reverse (or forward) mode through the EM iterations run (:func:`~simrec.sampling._em.em_gradient`)."""
        p, dp = self._frequencies(counts, dh, scheme)
        record, hist = memo(
            fits, ("em-history", self, max_iter, counts.tobytes()), lambda: _em_history(scheme, p, max_iter)
        )
        pi = record.value

        def vjp(g: np.ndarray) -> np.ndarray:
            return em_gradient(hist, pi, g, scheme.n)

        def jvp(d: np.ndarray) -> np.ndarray:
            return em_jvp(hist, pi, d)

        return Linearisation(record, vjp, jvp, dp)


def _em_history(scheme: SamplingScheme, p: np.ndarray, max_iter: int) -> tuple[FitRecord, list]:
    """The EM fit of :func:`~simrec.sampling.distribution.mle` / :func:`~simrec.sampling.distribution.weighted_mle` with its iterates."""
    hist: list = []
    pi, it, converged, _ = em(scheme.blocks, p, max_iter, EM_TOL, history=hist)
    return FitRecord(pi, it, converged), hist


@dataclass(frozen=True)
class MLEPrior(_EMFit):
    """Prior π = the maximum-likelihood P(R) fitted by EM (:func:`~simrec.sampling.distribution.mle`).

    .. math:: π_R \\leftarrow \\sum_{r=1}^n \\hat P(r)\\, \\frac{π_R P(r|R)}{\\sum_{j=1}^N π_j P(r|j)}

    Li's dissertation §2.4.3 (eqs. 31-33); the fit of :class:`~.plugin.MLE`
    and the prior of BV_MLE and MN_MLE (§2.5). EM iterations come from the
    caller (e.g. ``StressConfig.max_iter``).
    """

    @property
    def name(self) -> str:
        """``"MLE"`` (the tag in ``"BV_MLE(gamma=...)"``, ``"MN_MLE"``)."""
        return "MLE"

    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        return _record(mle(_ranks_of(counts), scheme, max_iter=max_iter, tol=EM_TOL))


@dataclass(frozen=True)
class WeightedMLEFit(_EMFit):
    """The weighted MLE's fit: EM on w(r) P̂(r) renormalised, w(r) = F_NDCG(r / C) (:class:`~.plugin.WeightedMLE`).

    .. math:: π_R \\leftarrow \\frac{\\sum_r w(r) \\hat P(r)\\, π_R P(r|R) / \\sum_j π_j P(r|j)}{\\sum_r w(r) \\hat P(r)}

    Li's dissertation §2.4.3 (eqs. 34-35); :func:`~simrec.sampling.distribution.weighted_mle`
    with :func:`~simrec.sampling.distribution.decay_weights` ``(ndcg(), n, scale)``.

    Parameters
    ----------
    scale : float > 0
        C of the weights.
    """

    scale: float

    @property
    def name(self) -> str:
        """``"WMLE"``."""
        return "WMLE"

    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        w = decay_weights(ndcg(), scheme.n, self.scale)
        return _record(weighted_mle(_ranks_of(counts), scheme, w, max_iter=max_iter, tol=EM_TOL))

    def _frequencies(self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme) -> tuple[np.ndarray, np.ndarray]:
        """p_w = (w ⊙ h)/(w^T h), and its directions dp_w = w ⊙ dh/(w^T h) - p_w (w^T dh)/(w^T h)."""
        w = decay_weights(ndcg(), scheme.n, self.scale)
        wh = counts * w
        p_fit = wh / wh.sum()
        return p_fit, (dh * w) / wh.sum() - np.outer(dh @ w / wh.sum(), p_fit)


@dataclass(frozen=True)
class MESPrior(RankFit):
    """Prior π = the maximal-entropy, minimal-bias P(R) (:func:`~simrec.sampling.distribution.mes`).

    .. math::

        \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2

    Li's dissertation §2.4.4 (eq. 38); the fit of :class:`~.plugin.MES` and
    the prior of BV_MES and MN_MES (§2.5). The objective, its stopping rule and
    its derivative are :mod:`simrec.sampling._mes`'s.

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

    def limits(self, max_iter: int) -> FitLimits:
        return "L-BFGS", MES_MAX_ITER, MES_TOL

    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        return _record(mes(_ranks_of(counts), scheme, eta=self.eta, max_iter=MES_MAX_ITER, tol=MES_TOL))

    def linearise(
        self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme, max_iter: int, fits: dict | None
    ) -> Linearisation:
        """The implicit-function theorem at the dual optimum (:func:`~simrec.sampling._mes.mes_gradient`)."""
        record = memo(fits, (self, max_iter, counts.tobytes()), lambda: self.fit(counts, scheme, max_iter))
        pi = record.value

        def vjp(g: np.ndarray) -> np.ndarray:
            return mes_gradient(scheme.blocks, pi, self.eta, g)

        def jvp(d: np.ndarray) -> np.ndarray:
            return mes_jvp(scheme.blocks, pi, self.eta, d)

        return Linearisation(record, vjp, jvp, dh / int(counts.sum()))


#: An estimated prior over global ranks, or None for the uniform prior π = 1/N.
Prior = MLEPrior | MESPrior | None


def check_prior(prior: object, *, required: bool = False) -> None:
    """TypeError unless ``prior`` is :class:`MLEPrior`, :class:`MESPrior` (or None when not ``required``)."""
    if prior is None and not required:
        return
    if not isinstance(prior, (MLEPrior, MESPrior)):
        allowed = "MLEPrior() or MESPrior(eta)" + ("" if required else " or None (uniform)")
        raise TypeError(f"`prior` must be {allowed}; got {prior!r}")
