"""Sampled evaluation and its estimators (docs/design.md §5).

Global ranks R (one held-out item per user among N items) become sampled ranks
r among n sampled items (uniform sampling and P(r|R) :mod:`.scheme`, scores,
weighted sampling and item draws :mod:`.ranks`, adaptive sampling
:mod:`.adaptive`); metric functions F map ranks to scores (:mod:`.functions`);
the global metric T = (1/M) Σ_u F(R_u) is estimated from the sampled ranks by

* per-rank corrections F̂ (:mod:`.corrections`: naive, rank estimate, LS, CLS,
  BV γ, MN) — Krichene & Rendle 2020; Li's dissertation §2.5;
* rank-distribution estimators (:mod:`.distribution`: MLE, weighted MLE, MES,
  adaptive MLE) — Li's dissertation §2.4, §2.6;
* mapping functions SHR@k ≈ HR@f(k) (:mod:`.mapping`) — Li & Jin 2020;

each named as a value by :mod:`.estimators` (``BiasVariance(0.1, prior=MLEPrior())``,
whose ``.name`` is the table label ``"BV_MLE(gamma=0.1)"``) that carries its own
fitting, and fitted the same way, ``estimator.fit(sampled_ranks,
scheme).estimate(metric)``, into an :class:`Estimate` with a bootstrap
interval over users (:mod:`.fitted`, :mod:`.bootstrap`; the adaptive MLE,
which fits each user's own sample size, is its own type, :class:`AdaptiveMLE`),

and user sampling is sized and tested with :mod:`.users` (dissertation §2.7).

The API rule
------------
**Estimators (the one call shape).** Every estimator family is used as
``estimator.fit(sampled_ranks, scheme).estimate(metric)`` (or
``.estimates(metrics)``) and returns an :class:`Estimate` with an interval.

**Functional layer (the building blocks, one rule).** Arguments come in the
order *(what is estimated, scheme, parameters, keyword-only data/prior)*:

* a per-rank correction is computed *for a metric*:
  ``f(metric, scheme, [gamma], *, [sampled_ranks=], prior=None)`` returns a
  :class:`RankCorrection` F̂, applied to data with ``.mean(sampled_ranks)``
  (:func:`naive`, :func:`rank_estimate`, :func:`least_squares`,
  :func:`constrained_least_squares`, :func:`bias_variance`,
  :func:`mse_optimal`, :func:`bias_variance_inverse_users`);
* a rank distribution is estimated *from data*:
  ``f(sampled_ranks, scheme, ...)`` returns a :class:`RankDistribution` π̂,
  applied to a metric with ``.expectation(metric)`` (:func:`mle`,
  :func:`weighted_mle`, :func:`mes`, :func:`bias_variance_distribution`);
  the mappings take ``(sampled_ranks, n_items, n)`` (they do not depend on
  with/without replacement);
* nothing takes the number of users M by hand: it is always the count of
  ``sampled_ranks`` (:func:`mse_optimal` and
  :func:`bias_variance_inverse_users`, the corrections that depend on M, take
  ``sampled_ranks=``; their old positional ``n_users`` still works but warns,
  ``DeprecationWarning``);
* wherever sampled ranks enter they are checked against the scheme: integers
  in [1, n], non-empty, one dimension (``"`sampled_ranks` must be integers in
  [1, 100]; got 101 at position 3"``).

Example
-------
>>> import numpy as np
>>> from simrec.sampling import MLE, BiasVariance, SamplingScheme, ndcg
>>> scheme = SamplingScheme(n_items=10_000, n=100)
>>> R = np.random.default_rng(0).integers(1, 10_001, size=5_000)
>>> r = scheme.sample(R, rng=1)
>>> bv = BiasVariance(0.1).fit(r, scheme, rng=2).estimate(ndcg(10))   # bv.lower, bv.upper: 95% interval
>>> p = MLE().fit(r, scheme, n_boot=20, rng=2).estimate(ndcg(10))
>>> from simrec.sampling import bias_variance, mle, mse_optimal
>>> t_bv = bias_variance(ndcg(10), scheme, 0.1).mean(r)                 # the functional layer: point estimates
>>> t_mn = mse_optimal(ndcg(10), scheme, sampled_ranks=r, prior=mle(r, scheme)).mean(r)
>>> t_mle = mle(r, scheme).expectation(ndcg(10))
"""

from simrec.sampling._mes import MES_AUTHORS_NOTEBOOK, MES_OBJECTIVES, MES_PUBLISHED, MES_UNWEIGHTED, MESObjective
from simrec.sampling._results import Estimate, IntervalKind
from simrec.sampling._threads import single_threaded_blas
from simrec.sampling.adaptive import AdaptiveMLE, AdaptiveRanks, fit_adaptive, sample_ranks_adaptive
from simrec.sampling.bootstrap import OutOfRangeWarning, bootstrap_histograms, percentile_interval
from simrec.sampling.corrections import (
    RankCorrection,
    bias_variance,
    bias_variance_distribution,
    bias_variance_inverse_users,
    constrained_least_squares,
    least_squares,
    mse_optimal,
    naive,
    rank_estimate,
    unrounded_rank_estimates,
)
from simrec.sampling.distribution import (
    RankDistribution,
    decay_weights,
    mes,
    mle,
    mle_adaptive,
    weighted_mle,
)
from simrec.sampling.estimators import (
    BETA_A_VALUES,
    MAPPINGS,
    MES,
    MLE,
    BiasVariance,
    BiasVarianceInverseUsers,
    ConstrainedLeastSquares,
    LeastSquares,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    PooledPrior,
    RankEstimate,
    WeightedMLE,
    fixed_corrections,
)
from simrec.sampling.fitted import (
    Estimator,
    FittedEstimator,
    bootstrap_estimates,
    estimate_histograms,
    fit,
    fit_limits,
)
from simrec.sampling.functions import (
    RankMetric,
    auc,
    average_precision,
    hit_ratio,
    metric_table,
    ndcg,
    precision,
    recall,
    reciprocal_rank,
)
from simrec.sampling.histograms import ConvergenceWarning, FitStatus
from simrec.sampling.mapping import (
    Mapping,
    beta_mapping,
    bound_mapping,
    fit_beta_mapping,
    linear_mapping,
    sampled_hit_ratio_curve,
)
from simrec.sampling.problem import CorrectionProblem
from simrec.sampling.ranks import (
    above_weight_share,
    global_ranks,
    sample_ranks_by_draws,
    sample_ranks_from_shares,
)
from simrec.sampling.scheme import (
    SamplingScheme,
    conditional_rank_matrix,
    log_conditional_rank_probabilities,
    log_rank_probabilities_from_shares,
    rank_histogram,
    sample_ranks_binomial,
    sample_ranks_hypergeometric,
)
from simrec.sampling.users import (
    HypothesisTest,
    SampleSize,
    bonferroni,
    bonferroni_z,
    hoeffding_bound,
    hoeffding_margin,
    hoeffding_sample_size,
    mean_t_test,
    proportion_difference_interval,
    proportion_sample_size,
    proportion_z_test,
    two_proportion_sample_size,
)

__all__ = [
    "MESObjective",
    "MES_PUBLISHED",
    "MES_AUTHORS_NOTEBOOK",
    "MES_UNWEIGHTED",
    "MES_OBJECTIVES",
    # results
    "Estimate",
    "IntervalKind",
    # ranks
    "SamplingScheme",
    "conditional_rank_matrix",
    "log_conditional_rank_probabilities",
    "log_rank_probabilities_from_shares",
    "global_ranks",
    "sample_ranks_binomial",
    "sample_ranks_hypergeometric",
    "above_weight_share",
    "sample_ranks_from_shares",
    "sample_ranks_by_draws",
    "AdaptiveRanks",
    "sample_ranks_adaptive",
    "rank_histogram",
    # functions
    "RankMetric",
    "recall",
    "hit_ratio",
    "precision",
    "ndcg",
    "average_precision",
    "reciprocal_rank",
    "auc",
    "metric_table",
    # corrections
    "RankCorrection",
    "CorrectionProblem",
    "naive",
    "rank_estimate",
    "unrounded_rank_estimates",
    "least_squares",
    "constrained_least_squares",
    "bias_variance",
    "mse_optimal",
    "bias_variance_inverse_users",
    "bias_variance_distribution",
    # distribution
    "RankDistribution",
    "mle",
    "weighted_mle",
    "decay_weights",
    "mes",
    "mle_adaptive",
    # estimators (values naming what to compute)
    "Estimator",
    "MLEPrior",
    "MESPrior",
    "PooledPrior",
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
    # fitting with bootstrap intervals
    "FittedEstimator",
    "FitStatus",
    "OutOfRangeWarning",
    "ConvergenceWarning",
    "fit",
    "fit_adaptive",
    "fit_limits",
    "estimate_histograms",
    "fixed_corrections",
    "bootstrap_histograms",
    "bootstrap_estimates",
    "percentile_interval",
    # mapping
    "Mapping",
    "linear_mapping",
    "bound_mapping",
    "beta_mapping",
    "fit_beta_mapping",
    "sampled_hit_ratio_curve",
    # users
    "SampleSize",
    "HypothesisTest",
    "proportion_sample_size",
    "two_proportion_sample_size",
    "hoeffding_bound",
    "hoeffding_margin",
    "bonferroni_z",
    "hoeffding_sample_size",
    "proportion_z_test",
    "proportion_difference_interval",
    "mean_t_test",
    "bonferroni",
    # threads
    "single_threaded_blas",
]
