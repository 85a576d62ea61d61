"""Correcting missing-data error: estimators of a metric's value on the true preferences (issue 25).

An offline evaluation scores a recommender's lists against the observed
test items; the observation is missing not at random (popular and liked
items are observed more), so that number is biased for the metric on the
true preferences. This package estimates the latter from the observed data:

* metrics (:mod:`.metrics`): the metrics linear in the relevance, the only
  ones a propensity weighting can correct — hits, precision, recall,
  truncated recall, DCG, nDCG, mean DCG, Yang's per-item AUC;
* the test pairs with their positions (:mod:`.ranked`: :func:`rank_test`,
  once per recommender);
* estimators (one call, ``estimator.estimate(ranked, metric, propensity)``
  -> :class:`Estimation`): :class:`Naive` (today's number), :class:`IPS`
  and :class:`SNIPS` (Yang et al. 2018; Schnabel et al. 2016), :class:`DR`
  and :class:`SNDR` with an imputation model (Saito 2020;
  :mod:`.imputation`), :class:`WeightedResampling` (Carraro & Bridge 2020;
  :mod:`.resampling`), :class:`Stratified` (Jadidinejad, Macdonald & Ounis
  2021; :mod:`.stratified`);
* propensity kinds (:mod:`.propensity`), each
  ``kind.propensities(context, rng) -> Propensities``: the world's own
  (:class:`WorldPropensity`), Yang's fitted popularity power law
  (:class:`PopularityPowerLaw`, exponent by
  :func:`fit_popularity_exponent`), and deliberately misspecified ones
  (:class:`MisspecifiedPropensity`);
* the combination with sampled metrics (:mod:`.sampled`:
  :class:`WeightedSampledRanks`, SNIPS weights on top of the per-rank
  corrections and the rank-distribution MLE of :mod:`simrec.sampling`; in
  the harness, :mod:`.combined`: :class:`SampledDesign`, the
  ``[debias.sampled]`` section);
* per-user IPS values beside the per-user truth, for paired tests
  (:mod:`.per_user`: :func:`ips_per_user`);
* the harness (:mod:`.harness`: :func:`debias_replicate`,
  :func:`summarize_debias`, :func:`order_accuracy`), run by ``simrec run``
  for a scenario with a ``[debias]`` section (:mod:`simrec.config.debias`).

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from simrec.debias import IPS, SNIPS, Naive, Recall, rank_test
>>> lists = np.array([[0, 1, 2], [3, 2, 1]])
>>> test = sp.csr_array(np.array([[1, 0, 0, 1], [0, 1, 0, 1]]))
>>> ranked = rank_test(lists, test, n_relevant=np.array([4.0, 6.0]))  # |Rel_u|, known in a simulation
>>> p = np.array([0.5, 0.25, 0.5, 0.5])        # one per test pair, row by row
>>> round(Naive().estimate(ranked, Recall()).value, 3)
0.75
>>> round(IPS().estimate(ranked, Recall(), p).value, 3), round(SNIPS().estimate(ranked, Recall(), p).value, 3)
(0.583, 0.667)
"""

from typing import TYPE_CHECKING

from simrec.debias.combined import SAMPLED_ESTIMATORS, SAMPLED_METRICS, SampledDesign
from simrec.debias.estimators import DR, IPS, SNDR, SNIPS, Naive
from simrec.debias.harness import (
    DEBIAS_COLUMNS,
    ESTIMATORS,
    LINEAR_METRICS,
    PROPENSITY_KINDS,
    DebiasDesign,
    ObservedReplicate,
    debias_replicate,
    observed_replicate,
    order_accuracy,
    summarize_debias,
)
from simrec.debias.imputation import ConstantImputation, DenseImputation, ItemRate, TrainPopularity
from simrec.debias.metrics import (
    DCG,
    DISCOUNTS,
    NDCG,
    AUCGain,
    Hits,
    LinearMetric,
    MeanDCG,
    Precision,
    Recall,
    RecallTruncated,
    linear_metric,
)
from simrec.debias.per_user import PerUserEstimate, ips_per_user
from simrec.debias.popularity_fit import PowerLawFit, fit_popularity_exponent, presentation_frequency
from simrec.debias.propensity import (
    MisspecifiedPropensity,
    ObservationContext,
    PopularityPowerLaw,
    Propensities,
    WorldPropensity,
    holdout_propensity,
)
from simrec.debias.ranked import RankedTest, rank_test
from simrec.debias.resampling import (
    InversePropensityWeights,
    SkewWeights,
    WeightedResampling,
    WTDWeights,
    resample_test,
)
from simrec.debias.result import Estimation, Strata
from simrec.debias.stratified import Stratified, propensity_strata

if TYPE_CHECKING:
    from simrec.debias.sampled import WeightedSampledRanks

__all__ = [
    # metrics
    "LinearMetric",
    "Hits",
    "Precision",
    "Recall",
    "RecallTruncated",
    "DCG",
    "NDCG",
    "MeanDCG",
    "AUCGain",
    "DISCOUNTS",
    "linear_metric",
    # inputs and results
    "RankedTest",
    "rank_test",
    "Estimation",
    "Strata",
    # estimators
    "Naive",
    "IPS",
    "SNIPS",
    "DR",
    "SNDR",
    "WeightedResampling",
    "Stratified",
    # imputation models
    "ItemRate",
    "ConstantImputation",
    "DenseImputation",
    "TrainPopularity",
    # resampling
    "SkewWeights",
    "WTDWeights",
    "InversePropensityWeights",
    "resample_test",
    "propensity_strata",
    # propensities
    "Propensities",
    "ObservationContext",
    "WorldPropensity",
    "MisspecifiedPropensity",
    "PopularityPowerLaw",
    "holdout_propensity",
    "PowerLawFit",
    "fit_popularity_exponent",
    "presentation_frequency",
    # sampled metrics
    "WeightedSampledRanks",
    "SampledDesign",
    "SAMPLED_ESTIMATORS",
    "SAMPLED_METRICS",
    # the harness
    "DebiasDesign",
    "debias_replicate",
    "ObservedReplicate",
    "observed_replicate",
    "PerUserEstimate",
    "ips_per_user",
    "summarize_debias",
    "order_accuracy",
    "DEBIAS_COLUMNS",
    "ESTIMATORS",
    "LINEAR_METRICS",
    "PROPENSITY_KINDS",
]


def __getattr__(name: str) -> object:
    # lazy: simrec.debias.sampled imports simrec.sampling, which ``simrec run`` (the harness's command) does not need
    if name == "WeightedSampledRanks":
        from simrec.debias.sampled import WeightedSampledRanks

        globals()[name] = WeightedSampledRanks
        return WeightedSampledRanks
    raise AttributeError(f"module 'simrec.debias' has no attribute {name!r}")
