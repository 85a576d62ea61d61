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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from simrec._validation import check_in_range, check_int
from simrec.sampling._em import EM_TOL, em, em_gradient, em_jvp
from simrec.sampling._mes import MES_MAX_ITER, MES_PUBLISHED, MES_TOL, MESObjective, mes_gradient, mes_jvp
from simrec.sampling.distribution import RankDistribution, decay_weights, mes, mle, weighted_mle
from simrec.sampling.functions import ndcg
from simrec.sampling.histograms import FitLimits, FitRecord, Linearisation, RankFit, memo
from simrec.sampling.scheme import SamplingScheme

__all__ = ["MLEPrior", "MESPrior", "WeightedMLEFit", "PooledPrior", "Prior", "check_prior"]


def _ranks_of(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(1, counts.size + 1), counts)


def _record(d: RankDistribution) -> FitRecord:
    return FitRecord(d.probabilities, d.n_iter, d.converged)


class _EMFit(RankFit):
    """An EM fit of π to (possibly reweighted) sampled-rank frequencies, linearised through its iterations."""

    __slots__ = ()

    def stopping(self, max_iter: int) -> tuple[int, float, bool]:
        """(iteration cap, tolerance, fixed): simrec's rule, the caller's ``max_iter`` with :data:`EM_TOL`.

        ``fixed`` True: the fit runs exactly its cap (a fixed number of
        epochs, as the authors' code does) and counts as converged there.
        """
        return max_iter, EM_TOL, False

    def limits(self, max_iter: int) -> FitLimits:
        cap, tol, fixed = self.stopping(max_iter)
        return ("EM, fixed epochs" if fixed else "EM"), cap, tol

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
            fits,
            ("em-history", self, max_iter, counts.tobytes()),
            lambda: _em_history(scheme, p, *self.stopping(max_iter)),
        )
        pi = record.value

        def vjp(g: np.ndarray) -> np.ndarray:
            return em_gradient(hist, pi, g, scheme.n)

        def jvp(d: np.ndarray) -> np.ndarray:
            return em_jvp(hist, pi, d)

        return Linearisation(record, vjp, jvp, dp)


def _em_history(scheme: SamplingScheme, p: np.ndarray, cap: int, tol: float, fixed: bool) -> tuple[FitRecord, list]:
    """The EM fit of :func:`~simrec.sampling.distribution.mle` / :func:`~simrec.sampling.distribution.weighted_mle` with its iterates."""
    hist: list = []
    pi, it, converged, _ = em(scheme.blocks, p, cap, tol, history=hist)
    return FitRecord(pi, it, converged or fixed), hist


@dataclass(frozen=True)
class MLEPrior(_EMFit):
    """Prior π = the maximum-likelihood P(R) fitted by EM (:func:`~simrec.sampling.distribution.mle`).

    .. math:: π_R \\leftarrow \\sum_{r=1}^n \\hat P(r)\\, \\frac{π_R P(r|R)}{\\sum_{j=1}^N π_j P(r|j)}

    Li's dissertation §2.4.3 (eqs. 31-33); the fit of :class:`~.plugin.MLE`
    and the prior of BV_MLE and MN_MLE (§2.5). EM starts from the uniform π.

    The stopping rule is part of the estimator (issue 27): on a mixture that
    is not identified (N > n) EM does not converge in any practical number of
    iterations (the mean log-likelihood per user still gains 1.2e-6 per
    iteration after 100 iterations, 4.8e-7 after 300, 2.5e-8 after 3,000 at
    N = 2,000, n = 100, M = 3,000) and its estimate moves with it (Recall@1
    0.008 / 0.012 / 0.035 against a truth of 0 there;
    tests/sampling/test_fitted.py), so the cap acts as the estimator's
    regularisation:

    * ``MLEPrior()`` (simrec): at most the caller's ``max_iter`` iterations
      (``fit(..., max_iter=300)``, ``StressConfig.max_iter``), stopping early
      when the log-likelihood changes by at most :data:`~simrec.sampling._em.EM_TOL`;
      an estimate stopped at the cap says so (``Estimate.converged`` False,
      ``n_iter``; one :class:`~simrec.sampling.ConvergenceWarning` per
      process for each estimator and cap). Label ``"MLE"``.
    * ``MLEPrior(epochs=100)``: the authors' code (``estimator/MLE.ipynb`` of
      dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation:
      ``epoch = 100`` EM iterations from the uniform π, no tolerance):
      exactly ``epochs`` iterations whatever ``max_iter`` is, reported as
      converged (its rule is met). Label ``"MLE[100 epochs]"``.

    Parameters
    ----------
    epochs : int >= 1, optional
        A fixed number of EM iterations (the authors' variant); None: simrec's rule.
    """

    epochs: int | None = None

    def __post_init__(self) -> None:
        if self.epochs is not None:
            object.__setattr__(self, "epochs", check_int("epochs", self.epochs, low=1))

    @property
    def name(self) -> str:
        """``"MLE"`` or ``"MLE[100 epochs]"`` (the tag in ``"BV_MLE(gamma=...)"``, ``"MN_MLE"``)."""
        return "MLE" if self.epochs is None else f"MLE[{self.epochs} epochs]"

    def stopping(self, max_iter: int) -> tuple[int, float, bool]:
        return (max_iter, EM_TOL, False) if self.epochs is None else (self.epochs, 0.0, True)

    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        cap, tol, fixed = self.stopping(max_iter)
        d = mle(_ranks_of(counts), scheme, max_iter=cap, tol=tol)
        return FitRecord(d.probabilities, d.n_iter, d.converged or fixed)


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

        \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n w_r \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2

    Li's dissertation §2.4.4 (eqs. 37-38); the fit of :class:`~.plugin.MES`
    and the prior of BV_MES and MN_MES (§2.5). The objective (the weights
    w_r and the default η), its stopping rule and its derivative are
    :mod:`simrec.sampling._mes`'s:

    * ``objective=MES_PUBLISHED`` (default): eq. 37 as printed, the squared error
      summed over the M users, w_r = M P̂(r); η = 0.001;
    * ``MES_AUTHORS_NOTEBOOK``: the authors' ``MES.ipynb``, w_r = n P̂(r), η = 0.01
      (tag ``"MES[notebook]"``);
    * ``MES_UNWEIGHTED``: w_r = 1, η = 0.001, simrec's objective before issue 27
      (tag ``"MES[unweighted]"``).

    Parameters
    ----------
    eta : float > 0, optional
        η, the entropy weight; default the objective's.
    objective : MESObjective, default MES_PUBLISHED
    """

    eta: float | None = None
    objective: MESObjective = MES_PUBLISHED

    def __post_init__(self) -> None:
        if not isinstance(self.objective, MESObjective):
            raise TypeError(
                f"`objective` must be an MESObjective (MES_PUBLISHED, MES_AUTHORS_NOTEBOOK, MES_UNWEIGHTED); got {self.objective!r}"
            )
        eta = self.objective.eta if self.eta is None else check_in_range("eta", self.eta, 0, None, low_open=True)
        object.__setattr__(self, "eta", eta)

    @property
    def name(self) -> str:
        """``"MES"`` and the objective's tag (the tag in ``"BV_MES(gamma=...)"``, ``"MN_MES[notebook]"``)."""
        return "MES" + self.objective.tag

    def limits(self, max_iter: int) -> FitLimits:
        return "L-BFGS", MES_MAX_ITER, MES_TOL

    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        return _record(
            mes(_ranks_of(counts), scheme, eta=self.eta, objective=self.objective, max_iter=MES_MAX_ITER, tol=MES_TOL)
        )

    def linearise(
        self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme, max_iter: int, fits: dict | None
    ) -> Linearisation:
        """The implicit-function theorem at the dual optimum (:func:`~simrec.sampling._mes.mes_gradient`)."""
        record = memo(fits, (self, max_iter, counts.tobytes()), lambda: self.fit(counts, scheme, max_iter))
        pi = record.value
        n_users = int(counts.sum())
        p = counts / n_users
        w = self.objective.weights(p, n_users, scheme.n)
        slope = self.objective.log_weight_slope(p)
        eta = cast(float, self.eta)  # set by __post_init__

        def vjp(g: np.ndarray) -> np.ndarray:
            return mes_gradient(scheme.blocks, pi, eta, g, p, w, slope)

        def jvp(d: np.ndarray) -> np.ndarray:
            return mes_jvp(scheme.blocks, pi, eta, d, p, w, slope)

        return Linearisation(record, vjp, jvp, dh / n_users)


@dataclass(frozen=True, eq=False)
class PooledPrior(RankFit):
    """A prior fitted once per *dataset*: π̄, the average of one fit over the repeats of a stress cell.

    The authors' BV_MES / MN_MES (``estimator/BV_MES_MLE.ipynb``,
    ``MN_MES_MLE.ipynb`` of
    dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation)
    fit MES (or MLE) on each of the 100 repeats of a dataset and model, average
    the fitted π over the repeats, and build every repeat's BV / MN correction
    on that one average; simrec's default fits the prior on each repeat's own
    sampled ranks (per repeat). :func:`simrec.stress.run_stress` with
    ``StressConfig(prior_per="dataset")`` builds one of these per prior and
    cell (:meth:`pool`). Within a repeat π̄ is fixed: it does not move with
    the repeat's bootstrap replicates (a zero derivative). Compared by
    identity (one object per cell).

    Attributes
    ----------
    of : MLEPrior or MESPrior
        The fit that was averaged.
    pi : ndarray, shape (N,)
        π̄.
    n_repeats : int
        How many fits were averaged.
    """

    of: RankFit
    pi: np.ndarray
    n_repeats: int

    @classmethod
    def pool(cls, of: RankFit, histograms: Sequence[np.ndarray], scheme: SamplingScheme, max_iter: int) -> PooledPrior:
        """Fit ``of`` to each histogram (n,) and average the fitted π."""
        fits = [of.fit(np.asarray(h), scheme, max_iter).value for h in histograms]
        return cls(of, np.mean(fits, axis=0), len(fits))

    @property
    def name(self) -> str:
        """The averaged fit's tag and ``@dataset``: ``"MES@dataset"`` (``"BV_MES@dataset(gamma=0.1)"``)."""
        return f"{self.of.name}@dataset"

    def limits(self, max_iter: int) -> FitLimits:
        return self.of.limits(max_iter)

    def fit(self, counts: np.ndarray, scheme: SamplingScheme, max_iter: int) -> FitRecord:
        return FitRecord(self.pi, 0, True)

    def linearise(
        self, counts: np.ndarray, dh: np.ndarray, scheme: SamplingScheme, max_iter: int, fits: dict | None
    ) -> Linearisation:
        """π̄ does not depend on the repeat's histogram: its derivative is zero."""

        def vjp(g: np.ndarray) -> np.ndarray:
            return np.zeros((scheme.n, np.shape(g)[1]))

        def jvp(d: np.ndarray) -> np.ndarray:
            return np.zeros((scheme.n_items, np.shape(d)[1]))

        return Linearisation(FitRecord(self.pi, 0, True), vjp, jvp, dh / int(counts.sum()))


#: An estimated prior over global ranks, or None for the uniform prior π = 1/N.
Prior = MLEPrior | MESPrior | PooledPrior | None


def check_prior(prior: object, *, required: bool = False) -> None:
    """TypeError unless ``prior`` is :class:`MLEPrior`, :class:`MESPrior`, :class:`PooledPrior` (or None when not ``required``)."""
    if prior is None and not required:
        return
    if not isinstance(prior, (MLEPrior, MESPrior, PooledPrior)):
        allowed = "MLEPrior() or MESPrior(eta, objective)" + ("" if required else " or None (uniform)")
        raise TypeError(f"`prior` must be {allowed}; got {prior!r}")
