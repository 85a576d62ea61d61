"""Stress harness for sampled-metric estimators (simrec issue 6; docs/design.md §5-6).

Global ranks of held-out items (:mod:`.sources`: a simulation, a real dataset
or a user's ranks file) -> repeated sampled evaluation under several schemes
and sizes with every estimator of :mod:`simrec.sampling` (:mod:`.harness`; repeats
with the same sampled-rank histogram computed once per process, :mod:`.memo`) ->
tidy tables (:mod:`.tables`), the total-error decomposition in simulations
(:mod:`.decomposition`) and figures (:mod:`.figures`); the user-sampling
experiment of Li's dissertation §2.7 (Tables 6-7) is :mod:`.user_sampling`. Stress scenarios
(``kind = "stress"``, :mod:`simrec.config.stress`) run with ``simrec stress
SCENARIO --out DIR`` (:mod:`simrec.studies.stress`).

Example
-------
>>> import numpy as np
>>> from simrec.sampling import MLE, Naive
>>> from simrec.stress import RecommenderRanks, StressConfig, run_stress, estimate_table
>>> R = np.random.default_rng(0).integers(1, 2001, size=500)
>>> ranks = RecommenderRanks("A", R, np.full(500, 2000), np.arange(500))
>>> res = run_stress(ranks, "binomial", 100, StressConfig(repeats=5, estimators=(Naive(), MLE())), rng=1)
>>> table = estimate_table([res])
"""

from simrec.stress.decomposition import DECOMPOSITION_COLUMNS, decomposition_table
from simrec.stress.harness import (
    DEFAULT_ESTIMATORS,
    METRIC_FAMILIES,
    METRIC_NAMES,
    SCHEMES,
    UNTRUNCATED_METRICS,
    StressConfig,
    StressResult,
    estimator_items,
    estimator_names,
    expected_sampled_metrics,
    metric_values,
    rank_sampler,
    run_stress,
    true_metric_values,
    untruncated_values,
)
from simrec.stress.memo import REPEAT_MEMO, RepeatMemo
from simrec.stress.sources import (
    CANDIDATE_SETS,
    RANKS_FILE_COLUMNS,
    LooData,
    RanksFileError,
    RankSource,
    RecommenderRanks,
    check_candidates,
    loo_data,
    ranks_frame,
    read_ranks_file,
    score_ranks,
    simulate_loo_data,
)
from simrec.stress.tables import (
    COVERAGE_COLUMNS,
    ESTIMATE_COLUMNS,
    coverage_table,
    estimate_table,
    expected_table,
    fitted_a_table,
    hit_ratio_table,
    mapping_error_table,
    ordering_table,
    relative_error_table,
    winner_table,
)
from simrec.stress.user_sampling import (
    PairTests,
    UserSamplingConfig,
    UserSamplingResult,
    bonferroni_z,
    common_users,
    pair_tests,
    run_user_sampling,
    size_label,
    user_sampling_errors,
    user_sampling_estimator_errors,
    user_sampling_estimator_table,
    user_sampling_estimator_tests,
    user_sampling_estimator_wide,
    user_sampling_table,
    user_sampling_tests,
    user_sampling_wide,
)

__all__ = [
    "REPEAT_MEMO",
    "RepeatMemo",
    # sources
    "CANDIDATE_SETS",
    "check_candidates",
    "RecommenderRanks",
    "RankSource",
    "LooData",
    "RanksFileError",
    "RANKS_FILE_COLUMNS",
    "loo_data",
    "simulate_loo_data",
    "score_ranks",
    "read_ranks_file",
    "ranks_frame",
    # harness
    "SCHEMES",
    "DEFAULT_ESTIMATORS",
    "METRIC_FAMILIES",
    "METRIC_NAMES",
    "UNTRUNCATED_METRICS",
    "StressConfig",
    "StressResult",
    "estimator_items",
    "estimator_names",
    "metric_values",
    "true_metric_values",
    "untruncated_values",
    "expected_sampled_metrics",
    "run_stress",
    "rank_sampler",
    # tables
    "ESTIMATE_COLUMNS",
    "COVERAGE_COLUMNS",
    "estimate_table",
    "coverage_table",
    "fitted_a_table",
    "relative_error_table",
    "mapping_error_table",
    "ordering_table",
    "winner_table",
    "hit_ratio_table",
    "expected_table",
    "decomposition_table",
    "DECOMPOSITION_COLUMNS",
    # user sampling
    "UserSamplingConfig",
    "UserSamplingResult",
    "PairTests",
    "common_users",
    "run_user_sampling",
    "pair_tests",
    "bonferroni_z",
    "size_label",
    "user_sampling_table",
    "user_sampling_tests",
    "user_sampling_errors",
    "user_sampling_wide",
    "user_sampling_estimator_table",
    "user_sampling_estimator_tests",
    "user_sampling_estimator_errors",
    "user_sampling_estimator_wide",
]
