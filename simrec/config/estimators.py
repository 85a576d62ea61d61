"""The ``[estimators]`` table of a stress scenario: estimator families by name, built into objects.

This is the one place where estimator *names* become estimator *objects*
(:mod:`simrec.sampling.estimators`); the stress harness receives only the
objects and never parses a name.

.. code-block:: toml

    [estimators]
    names = ["naive", "CLS", "BV", "MLE", "MN_MLE", "mapping"]   # default: all 15 families
    bv_gammas = [1.0, 0.1, 0.01, 0.001]   # one BV / BV_MLE / BV_MES per γ
    wmle_scale = 10.0                     # C of WMLE's weights F_NDCG(r / C)
    mes_objective = "published"           # MES's objective: "published" (eq. 37), "authors_notebook", "unweighted"
    mes_eta = 0.001                       # η of MES and the MES prior (default: the objective's own)
    max_iter = 300                        # EM iterations (MLE, WMLE, adaptive MLE)
    mle_epochs = 100                      # optional: the authors' fixed EM epochs for MLE and the MLE prior
    prior_per = "repeat"                  # or "dataset": BV_/MN_ priors averaged over the repeats (authors)
    n_boot = 0                            # bootstrap replicates per repeat for intervals (0: none)
    confidence = 0.95                     # level of the intervals

``MN_MLE`` / ``MN_MES`` are Li's MN as published (dissertation eq. 45);
``BV_MLE_inverse_users`` / ``BV_MES_inverse_users`` are BV at γ = 1/M with
that prior (simrec's "MN" before issue 10; labelled ``BV_MLE(gamma=1/M)``).

The families are a registry, :data:`ESTIMATORS`: one line each, a name and
the estimators it stands for, built from the table's parameters. Adding an
estimator is its own file in :mod:`simrec.sampling.estimators` (a class that
carries its fitting) and one line here (docs/design.md, "Adding an
estimator"); a family registered later (:meth:`EstimatorFamilies.register`,
or :meth:`EstimatorFamilies.extended` for a test) is accepted by every
``[estimators]`` table validated after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticKnownError, core_schema

from simrec.config.base import Strict, no_repeats
from simrec.config.union import literal_choices
from simrec.sampling import (
    BETA_A_VALUES,
    MES,
    MES_OBJECTIVES,
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

__all__ = ["ESTIMATORS", "ESTIMATOR_FAMILIES", "EstimatorFamily", "EstimatorFamilies", "EstimatorsSpec"]


@dataclass(frozen=True)
class EstimatorFamily:
    """A name ``[estimators] names`` may list, and the estimators it stands for.

    Attributes
    ----------
    name : str
        The family's name in scenario files (``"BV"``, ``"MN_MLE"``).
    build : callable
        ``build(spec)`` gives the family's estimator objects from the table's
        parameters (an :class:`EstimatorsSpec`), e.g. one BV per γ.
    """

    name: str
    build: Callable[[EstimatorsSpec], Iterable[Estimator]]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"`name` must be a non-empty string; got {self.name!r}")
        if not callable(self.build):
            raise TypeError(f"`build` must be callable (spec -> estimators); got {self.build!r}")


class EstimatorFamilies:
    """The estimator families scenario files may name, in table order: the registry.

    Parameters
    ----------
    *families : EstimatorFamily
        In simrec's order (the default ``names``, hence the order of the
        tables); a family added later is appended.
    """

    def __init__(self, *families: EstimatorFamily) -> None:
        self._by_name: dict[str, EstimatorFamily] = {}
        for family in families:
            self.register(family)

    def register(self, family: EstimatorFamily) -> EstimatorFamily:
        """Append a family; TypeError if it is not one or its name is taken."""
        if not isinstance(family, EstimatorFamily):
            raise TypeError(f"`family` must be an EstimatorFamily(name, build); got {family!r}")
        if family.name in self._by_name:
            raise TypeError(f"estimator family {family.name!r} is already registered")
        self._by_name[family.name] = family
        return family

    @contextmanager
    def extended(self, *families: EstimatorFamily) -> Iterator[EstimatorFamilies]:
        """Register ``families`` for the duration of a ``with`` block (e.g. an estimator defined in a test)."""
        before = dict(self._by_name)
        try:
            for family in families:
                self.register(family)
            yield self
        finally:
            self._by_name = before

    @property
    def names(self) -> tuple[str, ...]:
        """The families' names, in order."""
        return tuple(self._by_name)

    def __getitem__(self, name: str) -> EstimatorFamily:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[EstimatorFamily]:
        return iter(tuple(self._by_name.values()))

    def __repr__(self) -> str:
        return f"EstimatorFamilies({', '.join(self.names)})"

    # -- the pydantic type of one name ---------------------------------------------------------------------------
    def _validate_name(self, value: Any) -> str:
        if isinstance(value, str) and value in self._by_name:
            return value
        raise PydanticKnownError("literal_error", {"expected": literal_choices(self.names)})  # a Literal's message

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        """A family name, checked against the families registered when the file is validated."""
        return core_schema.no_info_after_validator_function(self._validate_name, core_schema.any_schema())


#: Estimator families by name, in the default (table) order: the registry (one line per family).
ESTIMATORS = EstimatorFamilies(
    EstimatorFamily("naive", lambda s: [Naive()]),
    EstimatorFamily("rank_estimate", lambda s: [RankEstimate()]),
    EstimatorFamily("LS", lambda s: [LeastSquares()]),
    EstimatorFamily("CLS", lambda s: [ConstrainedLeastSquares()]),
    EstimatorFamily("BV", lambda s: [BiasVariance(g) for g in s.gammas]),
    EstimatorFamily("MLE", lambda s: [MLE(s.mle_epochs)]),
    EstimatorFamily("WMLE", lambda s: [WeightedMLE(s.wmle_scale)]),
    EstimatorFamily("MES", lambda s: [MES(s.mes_prior.eta, s.mes_prior.objective)]),
    EstimatorFamily("MN_MLE", lambda s: [MSEOptimal(s.mle_prior)]),
    EstimatorFamily("MN_MES", lambda s: [MSEOptimal(s.mes_prior)]),
    EstimatorFamily("BV_MLE_inverse_users", lambda s: [BiasVarianceInverseUsers(s.mle_prior)]),
    EstimatorFamily("BV_MES_inverse_users", lambda s: [BiasVarianceInverseUsers(s.mes_prior)]),
    EstimatorFamily("BV_MLE", lambda s: [BiasVariance(g, s.mle_prior) for g in s.gammas]),
    EstimatorFamily("BV_MES", lambda s: [BiasVariance(g, s.mes_prior) for g in s.gammas]),
    EstimatorFamily(
        "mapping",
        lambda s: [
            MappingEstimator("linear"),
            MappingEstimator("bound"),
            *(MappingEstimator("beta", a) for a in BETA_A_VALUES),
            MappingEstimator("beta@P"),
        ],
    ),
)

#: The names of simrec's estimator families, in the default (table) order.
ESTIMATOR_FAMILIES: tuple[str, ...] = ESTIMATORS.names

#: One name of ``[estimators] names``: a family registered in :data:`ESTIMATORS` when the file is validated.
EstimatorName = Annotated[str, ESTIMATORS]


class EstimatorsSpec(Strict):
    """Which estimators a stress scenario runs, and their parameters.

    Attributes
    ----------
    names : list of str, default every family of :data:`ESTIMATORS`
        Families, in output order; ``"BV"``, ``"BV_MLE"`` and ``"BV_MES"``
        expand to one estimator per ``bv_gammas``, ``"mapping"`` to the three
        mappings (linear, bound, beta@a for a = 1, 0.5, 0.2, beta@P).
    bv_gammas : list of float in [0, 1], default [1, 0.1, 0.01, 0.001]
        K&R's γ values.
    wmle_scale : float > 0, default 10
        C of the weighted MLE's weights F_NDCG(r / C) (dissertation §2.4.3).
    mes_objective : {"published", "authors_notebook", "unweighted"}, default "published"
        MES's objective, for MES and the MES prior of BV_MES / MN_MES /
        BV_MES_inverse_users (issue 27; :mod:`simrec.sampling._mes`): the
        dissertation's eq. 37 (squared errors summed over users, w_r = M P̂(r)),
        the authors' ``MES.ipynb`` (w_r = n P̂(r), η = 0.01; labels
        ``"MES[notebook]"``) or simrec's objective before issue 27 (w_r = 1;
        ``"MES[unweighted]"``).
    mes_eta : float > 0, optional
        η of MES and of the MES prior; default the objective's (0.001, the
        dissertation's value; 0.01 for the authors' notebook).
    max_iter : int >= 1, default 300
        EM iterations (MLE, WMLE, adaptive MLE); a harness setting
        (``StressConfig.max_iter``), not part of :meth:`build`.
    mle_epochs : int >= 1, optional
        The authors' variant of MLE and of the MLE prior (BV_MLE, MN_MLE,
        BV_MLE_inverse_users): exactly this many EM iterations (their code:
        100), labels ``"MLE[100 epochs]"``; default simrec's EM (``max_iter``
        with tolerance 1e-9). :class:`simrec.sampling.MLEPrior` says why the
        estimate depends on it.
    prior_per : {"repeat", "dataset"}, default "repeat"
        Where the priors of BV_MLE, BV_MES, MN_MLE, MN_MES and BV at 1/M are
        fitted (``StressConfig.prior_per``): on each repeat (simrec) or once
        per dataset, averaged over the repeats (the authors' code; labels
        ``"MN_MES@dataset"``).
    n_boot : int >= 0, default 0
        Bootstrap replicates per repeat (``StressConfig.n_boot``): every
        estimator's percentile interval and the coverage table; 0 for none
        (the fitted estimators' replicates are linearised, a few fits per
        repeat: :func:`simrec.sampling.bootstrap_estimates`).
    confidence : float in (0, 1), default 0.95
        Level of the intervals (``StressConfig.confidence``).
    """

    names: list[EstimatorName] = Field(default_factory=lambda: list(ESTIMATORS.names), min_length=1)
    bv_gammas: list[Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=lambda: [1.0, 0.1, 0.01, 0.001])
    wmle_scale: float = Field(default=10.0, gt=0)
    mes_objective: Literal["published", "authors_notebook", "unweighted"] = "published"
    mes_eta: float | None = Field(default=None, gt=0)
    max_iter: int = Field(default=300, ge=1)
    mle_epochs: int | None = Field(default=None, ge=1)
    prior_per: Literal["repeat", "dataset"] = "repeat"
    n_boot: int = Field(default=0, ge=0)
    confidence: float = Field(default=0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _unique(self) -> EstimatorsSpec:
        no_repeats(self, "names")
        return self

    @property
    def gammas(self) -> list[float]:
        """``bv_gammas`` as floats."""
        return [float(g) for g in self.bv_gammas]

    @property
    def mle_prior(self) -> MLEPrior:
        """The MLE fit of the table: simrec's EM or the authors' fixed epochs (MLE and the MLE prior share it)."""
        return MLEPrior(self.mle_epochs)

    @property
    def mes_prior(self) -> MESPrior:
        """The MES fit of the table: its objective and η (MES and the MES prior share it)."""
        return MESPrior(self.mes_eta, MES_OBJECTIVES[self.mes_objective])

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
        return tuple(e for name in self.names for e in ESTIMATORS[name].build(self))
