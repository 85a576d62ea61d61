"""The ``[debias]`` section of a run scenario: the MNAR-correction harness (issue 25).

.. code-block:: toml

    [debias]
    metrics = ["recall", "ndcg"]          # linear metrics (simrec.debias.harness.LINEAR_METRICS)
    k = 10                                # their cut-off (default: the list length N)
    estimators = ["naive", "ips", "snips", "dr", "stratified"]   # simrec.debias.harness.ESTIMATORS
    propensities = ["world", "fitted"]    # world | fitted | popularity_only | uniform
    level = 0.95                          # the intervals' nominal coverage

    [debias.sampled]                      # optional: the corrections on sampled ranks (both errors at once)
    n = 100                               # sample-set size: the test pair and n - 1 sampled candidates
    replace = true                        # with replacement (binomial) or without (hypergeometric)
    metrics = ["recall"]                  # recall | ndcg: simrec.sampling's F(R) at k
    estimators = ["naive", "bv_mle", "mle"]   # naive | bv | bv_mle | mle, each unweighted and with SNIPS weights
    gamma = 0.01                          # of bv and bv_mle

With it, ``simrec run`` also writes ``debias.parquet`` (one row per
replicate x world x recommender x metric x estimator x propensity: estimate,
interval, truth), ``debias_summary.csv`` (bias, RMSE, coverage) and
``debias_order.csv`` (probability of the true order of the recommenders),
on the same replicates as the run's results (:mod:`simrec.debias.harness`);
with ``[debias.sampled]`` those tables also hold the rows of
:mod:`simrec.debias.combined` (metric ``sampled<n>:<F>``, estimators
``naive+<E>`` and ``SNIPS+<E>``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from simrec.config.base import Strict, no_repeats
from simrec.config.cost import Work
from simrec.debias.combined import SAMPLED_ESTIMATORS, SAMPLED_METRICS, SampledDesign
from simrec.debias.harness import ESTIMATORS, LINEAR_METRICS, PROPENSITY_KINDS, DebiasDesign

__all__ = ["DebiasSpec", "SampledSpec"]


class SampledSpec(Strict):
    """``[debias.sampled]``: the MNAR corrections on sampled ranks (:mod:`simrec.debias.combined`)."""

    n: int = Field(ge=2, description="sample-set size: the test pair and n - 1 sampled candidates")
    replace: bool = True
    metrics: list[Literal[SAMPLED_METRICS]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["recall"], min_length=1
    )
    estimators: list[Literal[tuple(SAMPLED_ESTIMATORS)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["naive", "bv_mle", "mle"], min_length=1
    )
    gamma: float = Field(default=0.01, ge=0, le=1)

    @model_validator(mode="after")
    def _unique(self) -> SampledSpec:
        no_repeats(self, "metrics", "estimators")
        return self

    def build(self, k: int | None) -> SampledDesign:
        return SampledDesign(self.n, tuple(self.metrics), tuple(self.estimators), k, self.replace, self.gamma)


class DebiasSpec(Strict):
    """``[debias]``: which estimators, propensity kinds and metrics the harness crosses."""

    metrics: list[Literal[tuple(LINEAR_METRICS)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["recall", "ndcg"], min_length=1
    )
    k: int | None = Field(default=None, ge=1, description="the metrics' cut-off (default: the list length N)")
    estimators: list[Literal[tuple(ESTIMATORS)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["naive", "ips", "snips", "dr", "stratified"], min_length=1
    )
    propensities: list[Literal[tuple(PROPENSITY_KINDS)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["world", "fitted"], min_length=1
    )
    level: float = Field(default=0.95, gt=0, lt=1)
    sampled: SampledSpec | None = None

    @model_validator(mode="after")
    def _unique(self) -> DebiasSpec:
        no_repeats(self, "metrics", "estimators", "propensities")
        return self

    def work(self, *, replicate: Work, n_users: float, n_recommenders: int) -> Work:
        """One task's work (:mod:`simrec.config.cost`): the replicate regenerated with its lists (``replicate``),
        every recommender x metric x estimator (x propensity kind, for an estimator that reads propensities)
        estimated over the ``n_users`` evaluated users, and with ``[debias.sampled]`` its sampled candidates."""
        per_metric = sum(len(self.propensities) if ESTIMATORS[e]().uses_propensity else 1 for e in self.estimators)
        out = replicate + Work(estimates=float(n_users) * n_recommenders * len(self.metrics) * per_metric)
        if self.sampled is not None:
            out = out + Work(draws=float(n_users) * self.sampled.n * n_recommenders)
        return out

    def build(self) -> DebiasDesign:
        """The typed :class:`~simrec.debias.harness.DebiasDesign`."""
        return DebiasDesign(
            metrics=tuple(LINEAR_METRICS[m](self.k) for m in self.metrics),
            estimators=tuple(ESTIMATORS[e]() for e in self.estimators),
            propensities=tuple(self.propensities),
            level=self.level,
            sampled=None if self.sampled is None else self.sampled.build(self.k),
        )
