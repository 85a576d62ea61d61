"""The ``[estimators]`` table of a stress scenario: estimator families by name, built into objects.

This is the one place where estimator *names* become estimator *objects*
(:mod:`simrec.sampling.estimators`); the stress harness receives only the
objects and never parses a name.

.. code-block:: toml

    [estimators]
    names = ["naive", "CLS", "BV", "MLE", "MN_MLE", "mapping"]   # default: all 15 families
    bv_gammas = [1.0, 0.1, 0.01, 0.001]   # one BV / BV_MLE / BV_MES per γ
    wmle_scale = 10.0                     # C of WMLE's weights F_NDCG(r / C)
    mes_eta = 0.001                       # η of MES (and of the MES prior)
    max_iter = 300                        # EM iterations (MLE, WMLE, adaptive MLE)
    n_boot = 0                            # bootstrap replicates per repeat for intervals (0: none)
    confidence = 0.95                     # level of the intervals

``MN_MLE`` / ``MN_MES`` are Li's MN as published (dissertation eq. 45);
``BV_MLE_inverse_users`` / ``BV_MES_inverse_users`` are BV at γ = 1/M with
that prior (simrec's "MN" before issue 10; labelled ``BV_MLE(gamma=1/M)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field, model_validator

from simrec.config.base import Strict, no_repeats
from simrec.sampling.estimators import (
    BETA_A_VALUES,
    MES,
    MLE,
    BiasVariance,
    BiasVarianceInverseUsers,
    ConstrainedLeastSquares,
    Estimator,
    LeastSquares,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    RankEstimate,
    WeightedMLE,
)

__all__ = ["ESTIMATOR_FAMILIES", "EstimatorsSpec"]

#: Estimator families a stress scenario may name, in the default (table) order.
ESTIMATOR_FAMILIES: tuple[str, ...] = (
    "naive",
    "rank_estimate",
    "LS",
    "CLS",
    "BV",
    "MLE",
    "WMLE",
    "MES",
    "MN_MLE",
    "MN_MES",
    "BV_MLE_inverse_users",
    "BV_MES_inverse_users",
    "BV_MLE",
    "BV_MES",
    "mapping",
)


class EstimatorsSpec(Strict):
    """Which estimators a stress scenario runs, and their parameters.

    Attributes
    ----------
    names : list of str, default all of :data:`ESTIMATOR_FAMILIES`
        Families, in output order; ``"BV"``, ``"BV_MLE"`` and ``"BV_MES"``
        expand to one estimator per ``bv_gammas``, ``"mapping"`` to the three
        mappings (linear, bound, beta@a for a = 1, 0.5, 0.2, beta@P).
    bv_gammas : list of float in [0, 1], default [1, 0.1, 0.01, 0.001]
        K&R's γ values.
    wmle_scale : float > 0, default 10
        C of the weighted MLE's weights F_NDCG(r / C) (dissertation §2.4.3).
    mes_eta : float > 0, default 0.001
        η of MES and of the MES prior (the dissertation's value).
    max_iter : int >= 1, default 300
        EM iterations (MLE, WMLE, adaptive MLE); a harness setting
        (``StressConfig.max_iter``), not part of :meth:`build`.
    n_boot : int >= 0, default 0
        Bootstrap replicates per repeat (``StressConfig.n_boot``): every
        estimator's percentile interval and the coverage table; 0 for none
        (the fitted estimators' replicates are linearised, a few fits per
        repeat: :func:`simrec.sampling.bootstrap_estimates`).
    confidence : float in (0, 1), default 0.95
        Level of the intervals (``StressConfig.confidence``).
    """

    names: list[Literal[ESTIMATOR_FAMILIES]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(ESTIMATOR_FAMILIES), min_length=1
    )
    bv_gammas: list[Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=lambda: [1.0, 0.1, 0.01, 0.001])
    wmle_scale: float = Field(default=10.0, gt=0)
    mes_eta: float = Field(default=0.001, gt=0)
    max_iter: int = Field(default=300, ge=1)
    n_boot: int = Field(default=0, ge=0)
    confidence: float = Field(default=0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _unique(self) -> EstimatorsSpec:
        no_repeats(self, "names")
        return self

    def build(self) -> tuple[Estimator, ...]:
        """The estimator objects, in the order of ``names`` (families expanded in place).

        Returns
        -------
        tuple of Estimator
            E.g. the defaults give ``Naive(), RankEstimate(), LeastSquares(),
            ConstrainedLeastSquares(), BiasVariance(1.0), ..., MLE(),
            WeightedMLE(10.0), MES(0.001), MSEOptimal(MLEPrior()), ...,
            MappingEstimator("beta@P")``.
        """
        gammas = [float(g) for g in self.bv_gammas]
        mes_prior = MESPrior(self.mes_eta)
        families: dict[str, Callable[[], list[Estimator]]] = {
            "naive": lambda: [Naive()],
            "rank_estimate": lambda: [RankEstimate()],
            "LS": lambda: [LeastSquares()],
            "CLS": lambda: [ConstrainedLeastSquares()],
            "BV": lambda: [BiasVariance(g) for g in gammas],
            "MLE": lambda: [MLE()],
            "WMLE": lambda: [WeightedMLE(self.wmle_scale)],
            "MES": lambda: [MES(self.mes_eta)],
            "MN_MLE": lambda: [MSEOptimal(MLEPrior())],
            "MN_MES": lambda: [MSEOptimal(mes_prior)],
            "BV_MLE_inverse_users": lambda: [BiasVarianceInverseUsers(MLEPrior())],
            "BV_MES_inverse_users": lambda: [BiasVarianceInverseUsers(mes_prior)],
            "BV_MLE": lambda: [BiasVariance(g, MLEPrior()) for g in gammas],
            "BV_MES": lambda: [BiasVariance(g, mes_prior) for g in gammas],
            "mapping": lambda: [
                MappingEstimator("linear"),
                MappingEstimator("bound"),
                *(MappingEstimator("beta", a) for a in BETA_A_VALUES),
                MappingEstimator("beta@P"),
            ],
        }
        return tuple(e for name in self.names for e in families[name]())
