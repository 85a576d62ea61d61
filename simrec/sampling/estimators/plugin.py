"""The rank-distribution estimators: T̂ = Σ_R π̂_R F(R) with π̂ fitted to the sampled ranks (MLE, WMLE, MES).

Li's dissertation §2.4: π̂ is fitted once per histogram and gives every metric
and every K at once; the fits (their objectives, stopping rules and
derivatives) are :mod:`.priors`'s, shared with the linear estimators that use
them as a prior (BV_MLE, MN_MES, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from simrec._validation import check_in_range
from simrec.sampling._mes import MES_PUBLISHED, MESObjective
from simrec.sampling._results import IntervalKind
from simrec.sampling.estimators.base import PlugInEstimator
from simrec.sampling.estimators.priors import MESPrior, MLEPrior, WeightedMLEFit

__all__ = ["MLE", "WeightedMLE", "MES"]


@dataclass(frozen=True)
class MLE(PlugInEstimator):
    """Plug-in estimate T̂ = Σ_R π̂_R F(R) with π̂ the maximum-likelihood P(R) (EM).

    Li's dissertation §2.4.3 (eqs. 31-33); :func:`~simrec.sampling.distribution.mle`.
    ``MLE()`` is simrec's EM (at most ``max_iter`` iterations, tolerance
    1e-9); ``MLE(epochs=100)`` the authors' fixed 100 EM epochs
    (``"MLE[100 epochs]"``). The estimate depends on the number of
    iterations: :class:`~.priors.MLEPrior` gives the measurements.

    Parameters
    ----------
    epochs : int >= 1, optional
        A fixed number of EM iterations (the authors' variant); None: simrec's rule.
    """

    epochs: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epochs", self.prior.epochs)  # validated by the prior

    @property
    def name(self) -> str:
        """``"MLE"`` or ``"MLE[100 epochs]"``."""
        return self.prior.name

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: maximum likelihood (Li's dissertation §2.4.3).

        Harness (:mod:`simrec.sampling.estimators`): coverage below 0.5 in 0% of the cells at
        M = 943 and M = 5,658 (median 0.90, 0.92), with the EM stopped at its
        300-iteration default.
        """
        return IntervalKind.SAMPLING

    @property
    def prior(self) -> MLEPrior:
        """The fitted distribution, as a prior (shared with BV_MLE / MN_MLE of the same stopping rule)."""
        return MLEPrior(self.epochs)

    @property
    def rank_fit(self) -> MLEPrior:
        """:attr:`prior`."""
        return self.prior


@dataclass(frozen=True)
class WeightedMLE(PlugInEstimator):
    """Weighted MLE: the plug-in of EM on the reweighted sampled-rank distribution w(r) P̂(r), w(r) = F_NDCG(r / C).

    Li's dissertation §2.4.3 (eqs. 34-35); the fit, its formula and its
    stopping rule are :class:`~.priors.WeightedMLEFit`'s.

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

    @property
    def rank_fit(self) -> WeightedMLEFit:
        """EM on the reweighted frequencies (:class:`~.priors.WeightedMLEFit` of the same C)."""
        return WeightedMLEFit(self.scale)


@dataclass(frozen=True)
class MES(PlugInEstimator):
    """Plug-in estimate T̂ = Σ_R π̂_R F(R) with π̂ of maximal entropy and minimal distribution bias.

    .. math::

        \\hat π = \\arg\\max_{π \\in Δ_N}\\; η H(π) - \\sum_{r=1}^n w_r \\Big(\\sum_R P(r|R) π_R - \\hat P(r)\\Big)^2

    Li's dissertation §2.4.4 (eqs. 37-38); :func:`~simrec.sampling.distribution.mes`.
    Which objective (issue 27; :mod:`simrec.sampling._mes`):

    * ``MES()``: the **published** one (default): eq. 37 sums the squared
      error over the M users, so each rank's error is weighted by how often it
      was observed, w_r = M P̂(r); η = 0.001 (the dissertation's value).
      Label ``"MES"``.
    * ``MES(objective=MES_AUTHORS_NOTEBOOK)``: the authors' code (``MES.ipynb``
      of dli12/AAAI23-Towards-Reliable-Item-Sampling-for-Recommendation-Evaluation),
      w_r = n P̂(r), η = 0.01. Label ``"MES[notebook]"``.
    * ``MES(objective=MES_UNWEIGHTED)``: w_r = 1, η = 0.001, simrec's objective
      before issue 27. Label ``"MES[unweighted]"``.

    The published weights make the squared errors M times heavier than the
    entropy, so at η = 0.001 π̂ is nearly a least-squares fit of a mixture
    that is not identified: measured on synthetic ranks (docs/design.md,
    tests/sampling/test_mes_objectives.py, test_linearize.py) it can pile a
    sampled rank's mass on one global rank, its estimate is about 4x as
    variable as the other two objectives', and its linearised bootstrap needs
    more users (standard errors 16-53% above the refitted ones at M = 3,000,
    within 10% at M = 30,000): prefer ``refit=True`` with few users.

    Parameters
    ----------
    eta : float > 0, optional
        η; default the objective's (0.001 published and unweighted, 0.01 notebook).
    objective : MESObjective, default MES_PUBLISHED
    """

    eta: float | None = None
    objective: MESObjective = MES_PUBLISHED

    def __post_init__(self) -> None:
        object.__setattr__(self, "eta", self.prior.eta)  # validated by the prior

    @property
    def name(self) -> str:
        """``"MES"``, ``"MES[notebook]"`` or ``"MES[unweighted]"``."""
        return self.prior.name

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING``: maximal entropy with a small weight η, close to the MLE's fit.

        Harness (:mod:`simrec.sampling.estimators`), measured with the
        unweighted objective (issue 22): coverage below 0.5 in 0% of the cells
        at M = 943 and 1% at M = 5,658 (median 0.94, 0.90). The weighted
        objectives fit the observed ranks more tightly (closer to the MLE's
        fit, also ``SAMPLING``); not re-measured.
        """
        return IntervalKind.SAMPLING

    @property
    def prior(self) -> MESPrior:
        """The fitted distribution, as a prior (shared with BV_MES / MN_MES of the same η and objective)."""
        return MESPrior(self.eta, self.objective)

    @property
    def rank_fit(self) -> MESPrior:
        """:attr:`prior`."""
        return self.prior
