"""User sampling: evaluate on m sampled users instead of all M (Li's dissertation §2.7, Tables 6-7).

The full-ranking metric of a recommender over all M evaluated users,
T = (1/M) Σ_u F(R_u), is estimated from a simple random sample S of m users
drawn without replacement, T̂ = (1/m) Σ_{u∈S} F(R_u) (the dissertation's
"user-sampling based unbiased average estimation", §2.7.1). For each sample
size m, :func:`run_user_sampling` draws ``repeats`` samples of users, the same
users for every recommender, and keeps per repeat the sufficient statistics
(means of F, F² and of F_A·F_B for each pair of recommenders) of every metric
F ∈ {Recall, NDCG, AP} at K = 1..k_max. The tables (:func:`user_sampling_table`,
:func:`user_sampling_tests`, :func:`user_sampling_errors`,
:func:`user_sampling_wide`) compute from them

* the relative error |T̂ − T|/T averaged over K = 1..k_max, in %, beside the
  item-sampling estimator's (dissertation Tables 6-7: columns item100,
  item500 for MN_MES at n = 100, 500 and user1K, user5K, user10K);
* a confidence interval for T from each sample and its coverage of T, per
  model and simultaneously for all models (Bonferroni, §2.7.2);
* the tests of §2.7.2 between every pair of recommenders on each sample
  (two-sample z-test of proportions for Recall, eq. 53; two-sample t-test for
  NDCG and AP), with the paired t-test as a named variant, uncorrected and
  with the Bonferroni correction over the pairs.

Everything is computed from histograms of the capped ranks min(R_u, k_max + 1)
(F(R) = 0 beyond k_max): a repeat costs one ``bincount`` over its m users and
O(k_max² J) per pair, never a loop over users.

Decisions
---------
* **The reference is the full population of evaluated users.** The
  dissertation treats users as i.i.d. draws (eq. 49); here T is the metric of
  the M users at hand and S is drawn from them without replacement, so every
  variance carries the finite-population correction (1 − m/M) (Cochran,
  *Sampling Techniques*, 1977, eq. 2.12): s²/m · (1 − m/M) with s² the
  sample variance (ddof = 1). For m ≪ M it is ≈ 1 and the formulas are the
  dissertation's; at m = M the estimate is T exactly, with zero width.
* **Intervals** are the normal (Wald) intervals T̂ ± z·se with
  z = Φ⁻¹(1 − α/2) (eq. 50's z; for Recall s² = p̂(1 − p̂)·m/(m − 1), eq. 50's
  variance up to m/(m − 1)). The simultaneous intervals use
  z = Φ⁻¹(1 − α/(2·n_recommenders)): Bonferroni over the models (§2.7.2
  "the statistical results for all the models hold true"), for one metric at
  one K. The one-sample test "does T̂ differ from the full-population
  value" is the dual of the interval: it rejects exactly when the interval
  misses T, so its rejection rate is 1 − coverage.
* **Tests** (per repeat, per pair of recommenders, per metric at K):
  ``two_sample`` is the dissertation's: for Recall (a proportion, eq. 49) the
  pooled two-proportion z-test of eq. 53,
  z = (p̂_A − p̂_B)/sqrt(2 p̄(1 − p̄)/m · (1 − m/M)); for NDCG and AP
  (§2.7.2 "two-sample t-test", variance assumption unstated) Welch's t-test
  with Welch-Satterthwaite degrees of freedom. ``paired`` is the variant
  for models evaluated on the same users (more powerful; the two-sample
  tests ignore the positive correlation and are conservative):
  t = d̄/sqrt(s_d²/m · (1 − m/M)), m − 1 degrees of freedom. Both are
  two-sided. Bonferroni's family is the pairs of recommenders compared on
  one sample at one metric and K (H0 rejected where p ≤ α/n_pairs), as in
  the dissertation's "compare any two models or pick the winners from a
  list of models". The t and z tests and the correction are
  :mod:`simrec.significance`'s (:func:`~simrec.significance.t_test_from_summary`,
  :func:`~simrec.significance.z_test_from_summary`,
  :func:`~simrec.significance.bonferroni`), from these moments. A zero standard error (m = M, or identical values) gives
  p = 0 when the difference is not 0 and p = 1 when it is.
* **Relative error, Tables 6-7.** The dissertation prints "the average
  relative error between estimated T@K (K from 1 to 50) and the ground true
  ones" ± a spread. User sampling is unbiased, so the error of the mean over
  repeats would be ≈ 0; the printed values (9% at 1K users falling as
  1/sqrt(m)) are the error of *one* sampled evaluation. So here
  e_K = mean over repeats of |T̂_K − T_K|/T_K, averaged over K (cells with
  T_K = 0 left out), ± the sd over K of e_K (the spread convention of
  :func:`simrec.stress.tables.relative_error_table`); the sd over repeats of
  the K-averaged error is a further column. The item-sampling columns come
  from the harness's repeats of one estimator (default MN_MES, as in the
  dissertation) under one scheme (default binomial) on all users, with the
  *same* per-repeat definition (so they differ from ``relative_error.csv``,
  which is the error of the mean over repeats, i.e. the bias).
* **Population.** Recommenders are compared on the same users: the users
  evaluated by every recommender (all of them for dataset and simulation
  sources; the common user labels of a ranks file). A size above that
  population is an error.

Item-sampling estimators on the user samples (simrec's extension)
------------------------------------------------------------------
The dissertation does **not** combine the two kinds of sampling: in Tables
6-7 the item columns (item100, item500) are MN_MES on the sampled ranks of
*all* users and the user columns (user1K, ...) the exact full-ranking metric
of m sampled users (§2.7.1, "user-sampling based unbiased average
estimation"); §2.7 gives intervals and tests for the user average only. What
a practitioner who samples both users and items gets is measured here as a
named extension: with ``config.estimators`` set, each repeat's user sample S
is also evaluated by every listed item-sampling estimator on the *sampled*
ranks r_u, u ∈ S, under ``config.item_scheme`` at each n in
``config.item_sizes``:

.. math:: \\hat T^{(e)}_{S} = e\\big(\\{r_u\\}_{u \\in S}\\big),
          \\qquad \\text{error } |\\hat T^{(e)}_{S} - T| / T,

T the exact full-ranking metric of all M users (the reference of the user
part too). Decisions:

* **The item draws are the harness's.** Repeat k uses the sampled ranks
  that :func:`~simrec.stress.harness.run_stress` drew in its repeat k for
  the same recommender, scheme and n (the study passes the harness's task
  seeds as ``item_rngs``; :func:`~simrec.stress.harness.rank_sampler`
  replays them), restricted to the users of S. So at m = M the estimate is
  the harness's estimate of that repeat exactly (tested), and the columns
  ``item100+user1K`` of :func:`user_sampling_estimator_wide` read as "the
  harness's item-sampled evaluation, on 1K of its users". Without
  ``item_rngs`` the draws come from children of ``rng``.
* **Estimation** works on the histogram of the m sampled ranks with
  :func:`simrec.sampling.estimate_histograms` (N = the recommender's
  :func:`~simrec.stress.harness.estimator_items`: the catalogue does not
  change with the users), so a repeat costs O(M) for the draw, O(m) for the
  histogram and the fits, never a loop over users.
* **Intervals** (``n_boot`` >= 2): the percentile bootstrap over the users
  of S (Efron & Tibshirani 1993 §13.3), the machinery of
  :mod:`simrec.sampling.fitted` — each replicate resamples m users of S with
  replacement *with their sampled ranks for every recommender* (one
  resample shared by the recommenders, so pairs keep their correlation) and
  reruns every estimator on the replicate's histogram (the harness's exact
  percentile bootstrap; duplicate histograms are fitted once through
  ``fits``). The dissertation gives no interval for an item-sampling
  estimate. The bootstrap treats S as drawn with replacement: for m near M
  it overstates the user part of the variance (no finite-population
  correction, which would wrongly shrink the item-sampling part too), so it
  is conservative there; like every bootstrap interval here it does not
  correct an estimator's bias, which :func:`user_sampling_estimator_table`'s
  coverage exposes.
* **Tests** (per pair, estimator, metric, K; ``n_boot`` >= 2): the
  dissertation's tests need per-user values F(R_u), which an estimate from
  sampled ranks does not have, so the bootstrap standard errors replace
  them: ``two_sample`` z = (T̂_A − T̂_B)/sqrt(se_A² + se_B²) (the two-sample
  form of eq. 53 / Welch, ignoring the shared users), ``paired``
  z = (T̂_A − T̂_B)/se(T̂*_A − T̂*_B) (the bootstrap of the difference over
  the same resampled users); two-sided normal p-values, Bonferroni over the
  pairs (p <= α/P) and the right-winner rates as in
  :func:`user_sampling_tests`. ``order_rate`` (no test: the sign of
  T̂_A − T̂_B is that of T_A − T_B; NaN for an exact tie) needs no bootstrap.
* **Relative error, Tables 6-7 layout**: the per-repeat definition of the
  user columns (mean over repeats of |T̂ − T|/T, averaged over K, ± sd over
  K), beside the same for the harness's estimate on all users (column
  ``item100``), so ``item100`` → ``item100+user1K`` is the error added by
  sampling the users as well.

Modules
-------
* :mod:`.run` — the experiment: :class:`UserSamplingConfig`, :func:`run_user_sampling` and its
  :class:`UserSamplingResult` (the samples' sufficient statistics, the estimators' estimates);
* :mod:`.tests` — the tests between pairs of recommenders: :func:`pair_tests`, :func:`estimator_pair_tests`;
* :mod:`.tables` — the tables, one builder each for both parts of the experiment.
"""

from simrec.sampling import bonferroni_z
from simrec.stress.user_sampling.run import (
    ITEM_SCHEMES,
    UserSamplingConfig,
    UserSamplingResult,
    common_users,
    run_user_sampling,
)
from simrec.stress.user_sampling.tables import (
    ERROR_COLUMNS,
    ESTIMATOR_ERROR_COLUMNS,
    ESTIMATOR_TABLE_COLUMNS,
    ESTIMATOR_TEST_COLUMNS,
    TABLE_COLUMNS,
    TEST_COLUMNS,
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
from simrec.stress.user_sampling.tests import PairTests, estimator_pair_tests, pair_tests

__all__ = [
    "UserSamplingConfig",
    "UserSamplingResult",
    "PairTests",
    "common_users",
    "run_user_sampling",
    "pair_tests",
    "estimator_pair_tests",
    "bonferroni_z",
    "user_sampling_table",
    "user_sampling_tests",
    "user_sampling_errors",
    "user_sampling_wide",
    "size_label",
    "TABLE_COLUMNS",
    "TEST_COLUMNS",
    "ERROR_COLUMNS",
    "ITEM_SCHEMES",
    "user_sampling_estimator_table",
    "user_sampling_estimator_tests",
    "user_sampling_estimator_errors",
    "user_sampling_estimator_wide",
    "ESTIMATOR_TABLE_COLUMNS",
    "ESTIMATOR_TEST_COLUMNS",
    "ESTIMATOR_ERROR_COLUMNS",
]
