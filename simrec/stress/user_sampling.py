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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, check_in_range, check_int
from simrec.sampling import (
    AdaptiveMLE,
    Estimator,
    SamplingScheme,
    bonferroni_z,
    estimate_histograms,
    hoeffding_margin,
    metric_table,
    percentile_interval,
    single_threaded_blas,
)
from simrec.significance import bonferroni, t_test_from_summary, z_test_from_summary
from simrec.stress.harness import METRIC_FAMILIES, StressResult, estimator_items, rank_sampler
from simrec.stress.sources import RecommenderRanks

__all__ = [
    "UserSamplingConfig",
    "UserSamplingResult",
    "PairTests",
    "common_users",
    "run_user_sampling",
    "pair_tests",
    "bonferroni_z",
    "user_sampling_table",
    "user_sampling_tests",
    "user_sampling_errors",
    "user_sampling_wide",
    "size_label",
    "TEST_COLUMNS",
    "ERROR_COLUMNS",
    "ITEM_SCHEMES",
    "user_sampling_estimator_table",
    "user_sampling_estimator_tests",
    "user_sampling_estimator_errors",
    "user_sampling_estimator_wide",
    "ESTIMATOR_TEST_COLUMNS",
]

#: Item-sampling schemes of the estimator part (fixed n: the adaptive scheme has its own estimator only).
ITEM_SCHEMES: tuple[str, ...] = ("binomial", "hypergeometric", "popularity")


@dataclass(frozen=True)
class UserSamplingConfig:
    """What the user-sampling experiment computes.

    Parameters
    ----------
    sizes : tuple of int
        User-sample sizes m (each >= 2 and <= the population M, checked by
        :func:`run_user_sampling`), e.g. (1000, 5000, 10000) as in the
        dissertation.
    repeats : int, default 100
        Independent samples of users per size.
    metrics : tuple of str, default ("recall", "ndcg", "average_precision")
        Families of :data:`~simrec.stress.harness.METRIC_FAMILIES`, each at K = 1..k_max.
    k_max : int, default 50
    confidence : float in (0, 1), default 0.95
        Level of the intervals; α = 1 − confidence is the tests' level.
    estimators : tuple of Estimator, default ()
        Item-sampling estimators also run on each user sample's sampled
        ranks (module section "Item-sampling estimators on the user
        samples"); () for the dissertation's experiment only. Distinct
        names; not :class:`~simrec.sampling.AdaptiveMLE`.
    item_scheme : {"binomial", "hypergeometric", "popularity"}, default "binomial"
        How the sampled ranks are drawn (the harness's schemes).
    item_sizes : tuple of int, default ()
        Sample-set sizes n of the estimator part (each >= 2; required with
        ``estimators``).
    n_boot : int, default 0
        Bootstrap replicates over the users of each sample for the
        estimators' intervals and tests; 0 for none, else >= 2. Costs up to
        ``n_boot`` refits of every fitted estimator per repeat, n and
        recommender.
    max_iter : int, default 300
        EM iterations of the fitted estimators (the harness's).
    """

    sizes: tuple[int, ...]
    repeats: int = 100
    metrics: tuple[str, ...] = ("recall", "ndcg", "average_precision")
    k_max: int = 50
    confidence: float = 0.95
    estimators: tuple[Estimator, ...] = ()
    item_scheme: str = "binomial"
    item_sizes: tuple[int, ...] = ()
    n_boot: int = 0
    max_iter: int = 300

    def __post_init__(self) -> None:
        if not self.sizes:
            raise ValueError("`sizes` must hold at least one user-sample size; got none")
        for m in self.sizes:
            check_int("sizes", m, low=2)
        if len(set(self.sizes)) != len(self.sizes):
            raise ValueError(f"`sizes` must be distinct; got {list(self.sizes)}")
        check_int("repeats", self.repeats, low=1)
        check_int("k_max", self.k_max, low=1)
        if not self.metrics:
            raise ValueError("`metrics` must name at least one metric family; got none")
        for f in self.metrics:
            if f not in METRIC_FAMILIES:
                raise ValueError(f"`metrics` must be among {', '.join(METRIC_FAMILIES)}; got {f!r}")
        check_in_range("confidence", self.confidence, 0, 1, low_open=True, high_open=True)
        for e in self.estimators:
            if isinstance(e, AdaptiveMLE):
                raise ValueError("`estimators` must not hold AdaptiveMLE(): the estimator part uses one fixed n")
            if not isinstance(e, Estimator):
                raise TypeError(f"`estimators` must hold estimator objects of simrec.sampling (e.g. MLE()); got {e!r}")
        names = [e.name for e in self.estimators]
        if len(set(names)) != len(names):
            raise ValueError(f"`estimators` must have distinct names; got {names}")
        check_choice("item_scheme", self.item_scheme, ITEM_SCHEMES)
        for n in self.item_sizes:
            check_int("item_sizes", n, low=2)
        if len(set(self.item_sizes)) != len(self.item_sizes):
            raise ValueError(f"`item_sizes` must be distinct; got {list(self.item_sizes)}")
        if self.estimators and not self.item_sizes:
            raise ValueError(
                "`item_sizes` must hold at least one sample-set size n when `estimators` are given; got none"
            )
        check_int("n_boot", self.n_boot, low=0)
        if self.n_boot == 1:
            raise ValueError("`n_boot` must be 0 (no intervals) or >= 2; got 1")
        check_int("max_iter", self.max_iter, low=1)
        object.__setattr__(self, "sizes", tuple(int(m) for m in self.sizes))
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "estimators", tuple(self.estimators))
        object.__setattr__(self, "item_sizes", tuple(int(n) for n in self.item_sizes))

    @property
    def families(self) -> tuple[str, ...]:
        """Metric family of each metric column, shape (J,), family-major."""
        return tuple(f for f in self.metrics for _ in range(self.k_max))

    @property
    def ks(self) -> np.ndarray:
        """Cutoff K of each metric column, shape (J,)."""
        return np.tile(np.arange(1, self.k_max + 1), len(self.metrics))

    def f_table(self) -> np.ndarray:
        """F_j(R) for R = 1..k_max and a last row of zeros for R > k_max, shape (k_max + 1, J).

        Raises
        ------
        ValueError
            A family whose F@K does not vanish beyond K (e.g. an untruncated
            metric): the histograms of capped ranks cannot represent it.
        """
        ms = [METRIC_FAMILIES[f](k) for f in self.metrics for k in range(1, self.k_max + 1)]
        table = metric_table(ms, self.k_max + 1)
        beyond = [f for f, v in zip(self.families, table[-1]) if v != 0]
        if beyond:
            raise ValueError(
                f"user sampling needs top-K metrics (F@K = 0 for ranks > K); {', '.join(dict.fromkeys(beyond))} is not"
            )
        return table


@dataclass(frozen=True, eq=False)
class UserSamplingResult:
    """Sufficient statistics of ``repeats`` user samples of one size.

    Attributes
    ----------
    size : int
        m, users per sample.
    n_population : int
        M, the users sampled from.
    recommenders : tuple of str, shape (R,)
    pairs : ndarray of int, shape (P, 2)
        Index pairs (a, b), a < b, of the recommenders compared.
    families : tuple of str, shape (J,)
    ks : ndarray of int, shape (J,)
    exact : ndarray, shape (R, J)
        T over the M users.
    mean, mean_sq : ndarray, shape (repeats, R, J)
        (1/m) Σ_{u∈S} F(R_u) and (1/m) Σ_{u∈S} F(R_u)².
    mean_cross : ndarray, shape (repeats, P, J)
        (1/m) Σ_{u∈S} F(R_{A,u}) F(R_{B,u}) of each pair.
    confidence : float
    estimators : tuple of str, shape (E,)
        Names of the item-sampling estimators run on the samples (() for none).
    item_scheme : str
        Their sampling scheme ("" for none).
    item_sizes : ndarray of int, shape (I,)
        Their sample-set sizes n.
    item_estimates : ndarray of shape (repeats, I, R, E, J) or None
        Each estimator's estimate from the sampled ranks of the sample's users.
    item_lower, item_upper, item_se : ndarray of shape (repeats, I, R, E, J) or None
        Bootstrap percentile interval and standard error over the sample's users (``n_boot`` >= 2).
    item_pair_se : ndarray of shape (repeats, I, P, E, J) or None
        Bootstrap standard error of T̂_A − T̂_B over the same resampled users.
    n_boot : int
    """

    size: int
    n_population: int
    recommenders: tuple[str, ...]
    pairs: np.ndarray
    families: tuple[str, ...]
    ks: np.ndarray
    exact: np.ndarray
    mean: np.ndarray
    mean_sq: np.ndarray
    mean_cross: np.ndarray
    confidence: float
    estimators: tuple[str, ...] = ()
    item_scheme: str = ""
    item_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    item_estimates: np.ndarray | None = None
    item_lower: np.ndarray | None = None
    item_upper: np.ndarray | None = None
    item_se: np.ndarray | None = None
    item_pair_se: np.ndarray | None = None
    n_boot: int = 0

    @property
    def fpc(self) -> float:
        """Finite-population correction 1 − m/M."""
        return 1.0 - self.size / self.n_population

    def variance(self) -> np.ndarray:
        """Sample variance s² (ddof = 1) of F over each sample, shape (repeats, R, J)."""
        m = self.size
        return np.maximum(self.mean_sq - self.mean**2, 0.0) * (m / (m - 1))

    def standard_error(self) -> np.ndarray:
        """se(T̂) = sqrt(s²/m · (1 − m/M)), shape (repeats, R, J)."""
        return np.sqrt(self.variance() / self.size * self.fpc)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of a shard (inverse of :meth:`from_arrays`)."""
        return {
            "size": np.array(self.size),
            "n_population": np.array(self.n_population),
            "recommenders": np.array(self.recommenders),
            "pairs": self.pairs,
            "families": np.array(self.families),
            "ks": self.ks,
            "exact": self.exact,
            "mean": self.mean,
            "mean_sq": self.mean_sq,
            "mean_cross": self.mean_cross,
            "confidence": np.array(self.confidence),
        } | self._item_arrays()

    def _item_arrays(self) -> dict[str, np.ndarray]:
        if self.item_estimates is None:
            return {}
        out = {
            "estimators": np.array(self.estimators),
            "item_scheme": np.array(self.item_scheme),
            "item_sizes": self.item_sizes,
            "item_estimates": self.item_estimates,
            "n_boot": np.array(self.n_boot),
        }
        if self.item_se is not None:
            out.update(
                item_lower=self.item_lower,
                item_upper=self.item_upper,
                item_se=self.item_se,
                item_pair_se=self.item_pair_se,
            )
        return out

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> UserSamplingResult:
        item = {}
        if "item_estimates" in a:
            item = {
                "estimators": tuple(str(e) for e in a["estimators"]),
                "item_scheme": str(a["item_scheme"]),
                "item_sizes": a["item_sizes"],
                "item_estimates": a["item_estimates"],
                "n_boot": int(a["n_boot"]),
                **{k: a.get(k) for k in ("item_lower", "item_upper", "item_se", "item_pair_se")},
            }
        return cls(
            int(a["size"]),
            int(a["n_population"]),
            tuple(str(r) for r in a["recommenders"]),
            a["pairs"].reshape(-1, 2),
            tuple(str(f) for f in a["families"]),
            a["ks"],
            a["exact"],
            a["mean"],
            a["mean_sq"],
            a["mean_cross"].reshape(a["mean"].shape[0], a["pairs"].size // 2, a["exact"].shape[1]),
            float(a["confidence"]),
            **item,
        )


def common_users(recommenders: Sequence[RecommenderRanks]) -> np.ndarray:
    """Global ranks of the users every recommender evaluated, aligned, shape (M, R).

    When all recommenders list the same users in the same order (dataset and
    simulation sources) these are their ranks as they are; otherwise the
    users whose labels all recommenders share, in sorted label order.

    Raises
    ------
    ValueError
        No recommender, or no user common to all of them.
    """
    rows = _common_rows(recommenders)
    return np.stack([r.ranks[rows[:, j]] for j, r in enumerate(recommenders)], axis=1)


def _common_rows(recommenders: Sequence[RecommenderRanks]) -> np.ndarray:
    """Row of each common user in each recommender's arrays, shape (M, R) (see :func:`common_users`)."""
    if not recommenders:
        raise ValueError("`recommenders` must hold at least one RecommenderRanks; got none")
    first = np.asarray(recommenders[0].users)
    if all(np.array_equal(np.asarray(r.users), first) for r in recommenders[1:]):
        return np.repeat(np.arange(first.size)[:, None], len(recommenders), axis=1)
    labels = [np.asarray(r.users).astype(str) for r in recommenders]
    common = labels[0]
    for lab in labels[1:]:
        common = np.intersect1d(common, lab)
    common = np.unique(common)
    if common.size == 0:
        raise ValueError("the recommenders share no evaluated user; user sampling compares them on common users")
    cols = []
    for lab in labels:
        order = np.argsort(lab, kind="stable")
        cols.append(order[np.searchsorted(lab[order], common)])
    return np.stack(cols, axis=1)


def run_user_sampling(
    recommenders: Sequence[RecommenderRanks],
    size: int,
    config: UserSamplingConfig,
    rng: RNGLike = None,
    item_rngs: Sequence[Sequence[RNGLike]] | None = None,
) -> UserSamplingResult:
    """Draw ``config.repeats`` samples of ``size`` users and record the metrics' sufficient statistics.

    .. math:: \\hat T = \\frac1m \\sum_{u \\in S} F(R_u), \\quad S \\subset \\{1..M\\},\\ |S| = m
              \\text{ drawn uniformly without replacement}

    (dissertation §2.7.1). The same S serves every recommender (see
    :func:`common_users`).

    Parameters
    ----------
    recommenders : sequence of RecommenderRanks, length R
    size : int
        m, with 2 <= m <= M (M = number of common users).
    config : UserSamplingConfig
        With ``config.estimators``, every listed item-sampling estimator is
        also run on the sampled ranks of each sample's users (module section
        "Item-sampling estimators on the user samples").
    rng : Generator or seed
        The draws of users (one ``Generator.choice`` per repeat, as without
        estimators); the bootstrap over users draws from its child
        ``rng.spawn(1)[0]``, which leaves those draws unchanged.
    item_rngs : sequence of R sequences of len(config.item_sizes) seeds, optional
        Seeds of the sampled ranks of recommender j at item size i, repeat
        after repeat: pass :func:`~simrec.stress.harness.run_stress`'s
        ``rng`` of (j, ``item_scheme``, n_i) to replay its draws. Default:
        the children ``rng.spawn(1 + R·I)[1:]``, recommender-major.

    Returns
    -------
    UserSamplingResult
    """
    if not isinstance(config, UserSamplingConfig):
        raise TypeError(f"`config` must be a UserSamplingConfig; got {type(config).__name__}")
    rows = _common_rows(recommenders)  # (M, R)
    ranks = np.stack([r.ranks[rows[:, j]] for j, r in enumerate(recommenders)], axis=1)
    M, R = ranks.shape
    size = check_int("size", size, low=2)
    if size > M:
        raise ValueError(
            f"user-sample size must be <= the number of users evaluated by every recommender ({M}); got {size}"
        )
    gen = as_generator(rng)
    item = None
    if config.estimators:
        kids = gen.spawn(1 + R * len(config.item_sizes))  # spawning draws nothing from gen
        if item_rngs is None:
            item_rngs = [kids[1 + j * len(config.item_sizes) : 1 + (j + 1) * len(config.item_sizes)] for j in range(R)]
        item = _ItemSampling(recommenders, rows, size, config, item_rngs, kids[0])
    kp = config.k_max + 1
    f = config.f_table()  # (kp, J)
    codes = np.minimum(ranks, kp) - 1  # (M, R) in 0..k_max
    pairs = np.array(list(combinations(range(R), 2)), dtype=np.int64).reshape(-1, 2)
    reps, J = config.repeats, f.shape[1]
    offsets = np.arange(R) * kp

    def moments(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = rows.shape[0]
        h = np.bincount((rows + offsets).ravel(), minlength=R * kp).reshape(R, kp).astype(np.float64)
        cross = np.empty((len(pairs), J))
        for p, (a, b) in enumerate(pairs):
            joint = np.bincount(rows[:, a] * kp + rows[:, b], minlength=kp * kp).reshape(kp, kp)
            cross[p] = ((joint @ f) * f).sum(axis=0)
        return h @ f / m, h @ (f * f) / m, cross / m

    exact = moments(codes)[0]
    mean = np.empty((reps, R, J))
    mean_sq = np.empty((reps, R, J))
    mean_cross = np.empty((reps, len(pairs), J))
    with single_threaded_blas():
        for rep in range(reps):
            idx = gen.choice(M, size, replace=False)
            mean[rep], mean_sq[rep], mean_cross[rep] = moments(codes[idx])
            if item is not None:
                item.repeat(rep, idx)
    extra = {} if item is None else item.result()
    return UserSamplingResult(
        size,
        M,
        tuple(r.name for r in recommenders),
        pairs,
        config.families,
        config.ks,
        exact,
        mean,
        mean_sq,
        mean_cross,
        config.confidence,
        **extra,
    )


class _ItemSampling:
    """The estimator part of :func:`run_user_sampling`: sampled ranks of each user sample, estimates, bootstrap."""

    def __init__(
        self,
        recommenders: Sequence[RecommenderRanks],
        rows: np.ndarray,
        size: int,
        config: UserSamplingConfig,
        item_rngs: Sequence[Sequence[RNGLike]],
        boot_rng: RNGLike,
    ) -> None:
        R, I = len(recommenders), len(config.item_sizes)
        if len(item_rngs) != R or any(len(seeds) != I for seeds in item_rngs):
            raise ValueError(
                f"`item_rngs` must hold {R} sequences (one per recommender) of {I} seeds (one per "
                f"item size); got {[len(x) for x in item_rngs]}"
            )
        self.rows, self.size, self.config = rows, size, config
        self.metrics = [METRIC_FAMILIES[f](k) for f in config.metrics for k in range(1, config.k_max + 1)]
        self.schemes: list[list[SamplingScheme]] = []
        self.draws: list[list] = []
        for j, rec in enumerate(recommenders):
            N = estimator_items(rec)
            if config.k_max > N:
                raise ValueError(
                    f"`k_max` must be <= N = {N} (the estimators' catalogue size of {rec.name!r}); got {config.k_max}"
                )
            if config.item_scheme == "popularity" and rec.popularity_shares is None:
                raise ValueError(f"item_scheme 'popularity' needs popularity shares; {rec.name!r} has none")
            schs = [
                SamplingScheme.cached(N, n, replace=config.item_scheme != "hypergeometric") for n in config.item_sizes
            ]
            self.schemes.append(schs)
            self.draws.append(
                [
                    rank_sampler(rec, config.item_scheme, sch.n, as_generator(seed))
                    for sch, seed in zip(schs, item_rngs[j])
                ]
            )
        self.caches = [[{} for _ in range(I)] for _ in range(R)]  # data-independent F̂, per (recommender, n)
        self.pairs = np.array(list(combinations(range(R), 2)), dtype=np.int64).reshape(-1, 2)
        self.boot_gen = as_generator(boot_rng)
        shape = (config.repeats, I, R, len(config.estimators), len(self.metrics))
        self.est = np.full(shape, np.nan)
        B = config.n_boot
        self.lower = np.full(shape, np.nan) if B else None
        self.upper = np.full(shape, np.nan) if B else None
        self.se = np.full(shape, np.nan) if B else None
        self.pair_se = np.full((config.repeats, I, len(self.pairs), *shape[3:]), np.nan) if B else None

    def repeat(self, rep: int, idx: np.ndarray) -> None:
        """Repeat ``rep`` on the users ``idx`` (indices of common users): one draw per recommender and n."""
        cfg, m, B = self.config, self.size, self.config.n_boot
        R, I = len(self.draws), len(cfg.item_sizes)
        # every (j, i) stream advances once per repeat, as in run_stress
        sampled = [[self.draws[j][i]()[self.rows[idx, j]] - 1 for i in range(I)] for j in range(R)]
        hists = [[np.zeros((1 + B, self.schemes[j][i].n), dtype=np.int64) for i in range(I)] for j in range(R)]
        for j in range(R):
            for i in range(I):
                hists[j][i][0] = np.bincount(sampled[j][i], minlength=hists[j][i].shape[1])
        for b in range(B):  # resample m users with replacement: the same users for every recommender and n
            w = np.bincount(self.boot_gen.integers(0, m, size=m), minlength=m)
            for j in range(R):
                for i in range(I):
                    hists[j][i][1 + b] = np.bincount(sampled[j][i], weights=w, minlength=hists[j][i].shape[1])
        for i in range(I):
            # the sample's histogram alone first (one row, as run_stress without intervals: bit-equal estimates),
            # then the replicates; ``fits`` fits a histogram that occurs again once
            vals = []
            for j in range(R):
                fits: dict = {}
                kw = {"max_iter": cfg.max_iter, "cache": self.caches[j][i], "fits": fits}
                point = estimate_histograms(cfg.estimators, hists[j][i][:1], self.schemes[j][i], self.metrics, **kw)
                rest = (
                    [estimate_histograms(cfg.estimators, hists[j][i][1:], self.schemes[j][i], self.metrics, **kw)]
                    if B
                    else []
                )
                vals.append(np.concatenate([point, *rest]))
            vals = np.stack(vals)  # (R, 1 + B, E, J)
            self.est[rep, i] = vals[:, 0]
            if B:
                boot = vals[:, 1:]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells (mappings beyond Recall)
                    self.lower[rep, i], self.upper[rep, i] = percentile_interval(
                        np.moveaxis(boot, 1, 0), cfg.confidence
                    )
                    self.se[rep, i] = np.nanstd(boot, axis=1, ddof=1)
                    a, b_ = self.pairs[:, 0], self.pairs[:, 1]
                    self.pair_se[rep, i] = np.nanstd(boot[a] - boot[b_], axis=1, ddof=1)

    def result(self) -> dict:
        cfg = self.config
        return {
            "estimators": tuple(e.name for e in cfg.estimators),
            "item_scheme": cfg.item_scheme,
            "item_sizes": np.array([sch.n for sch in self.schemes[0]], dtype=np.int64),
            "item_estimates": self.est,
            "item_lower": self.lower,
            "item_upper": self.upper,
            "item_se": self.se,
            "item_pair_se": self.pair_se,
            "n_boot": cfg.n_boot,
        }


@dataclass(frozen=True)
class PairTests:
    """Per-repeat tests between the pairs of one :class:`UserSamplingResult`.

    Attributes
    ----------
    test : str
        ``"two_sample"`` or ``"paired"``.
    statistic, p_value, difference : ndarray, shape (repeats, P, J)
        z or t, its two-sided p-value, and T̂_A − T̂_B.
    """

    test: str
    statistic: np.ndarray
    p_value: np.ndarray
    difference: np.ndarray


def pair_tests(result: UserSamplingResult, test: str = "two_sample") -> PairTests:
    """The tests of every pair of recommenders on every sample (see module decisions).

    .. math:: z = \\frac{\\hat p_A - \\hat p_B}{\\sqrt{2 \\bar p (1 - \\bar p)/m \\cdot (1 - m/M)}}
              \\ \\text{(Recall, eq. 53)}, \\qquad
              t = \\frac{\\hat T_A - \\hat T_B}{\\sqrt{(s_A^2 + s_B^2)/m \\cdot (1 - m/M)}}
              \\ \\text{(Welch)}, \\qquad
              t = \\frac{\\bar d}{\\sqrt{s_d^2/m \\cdot (1 - m/M)}} \\ \\text{(paired)}

    Parameters
    ----------
    result : UserSamplingResult
    test : {"two_sample", "paired"}, default "two_sample"
        The dissertation's tests (z for Recall, Welch t otherwise), or the
        paired t-test.
    """
    if test not in ("two_sample", "paired"):
        raise ValueError(f"`test` must be 'two_sample' or 'paired'; got {test!r}")
    m, fpc = result.size, result.fpc
    a, b = result.pairs[:, 0], result.pairs[:, 1]
    ma, mb = result.mean[:, a], result.mean[:, b]
    diff = ma - mb
    if test == "paired":
        msq_d = result.mean_sq[:, a] + result.mean_sq[:, b] - 2 * result.mean_cross
        var_d = np.maximum(msq_d - diff**2, 0.0) * (m / (m - 1))
        se = np.sqrt(var_d / m * fpc)
        df = np.full(diff.shape, m - 1.0)
        normal = np.zeros(diff.shape, bool)
    else:
        var = result.variance()
        va, vb = var[:, a] / m, var[:, b] / m
        se_t = np.sqrt((va + vb) * fpc)
        with np.errstate(invalid="ignore", divide="ignore"):
            df = (va + vb) ** 2 / ((va**2 + vb**2) / (m - 1))
        normal = np.broadcast_to(np.asarray(result.families) == "recall", diff.shape)
        pbar = (ma + mb) / 2
        se = np.where(normal, np.sqrt(2 * pbar * (1 - pbar) / m * fpc), se_t)
    t = t_test_from_summary(diff, se, df)
    z = z_test_from_summary(diff, se)
    return PairTests(test, t.statistic, np.where(normal, z.p_value, t.p_value), diff)


def size_label(method: str, size: int) -> str:
    """Column label as the dissertation prints it: ``user1K``, ``user5K``, ``user943``, ``item100``."""
    if size >= 1000 and size % 1000 == 0:
        return f"{method}{size // 1000}K"
    return f"{method}{size}"


def user_sampling_table(results: Sequence[UserSamplingResult]) -> pd.DataFrame:
    """Per recommender × size × metric × K: T, the estimates over repeats, intervals and their coverage.

    Columns: recommender, size, n_population, metric, k, exact (T), mean and
    sd of T̂ over repeats, mean_abs_rel_error (mean of |T̂ − T|/T, NaN where
    T = 0), mean_se, mean_half_width, coverage (share of repeats whose
    interval holds T; 1 − the rejection rate of H0: E T̂ = T), coverage_bonferroni
    (simultaneous over the recommenders: the Bonferroni z),
    hoeffding_half_width and coverage_hoeffding (the distribution-free
    interval T̂ ± sqrt(ln(2/α)/(2m)) of eq. 52 for metrics in [0, 1]; it also
    holds for sampling without replacement, Hoeffding 1963 §6, so no
    finite-population correction), nominal, z, z_bonferroni, n_repeats.
    """
    frames = []
    for res in results:
        R, J = res.exact.shape
        z = bonferroni_z(res.confidence, 1)
        zb = bonferroni_z(res.confidence, R)
        se = res.standard_error()
        err = np.abs(res.mean - res.exact)
        # tolerance: T̂ and T are sums of the same values in different orders
        tol = 1e-12 * np.maximum(1.0, np.abs(res.exact))
        cover = (err <= z * se + tol).mean(axis=0)
        cover_b = (err <= zb * se + tol).mean(axis=0)
        hoeffding = hoeffding_margin(res.size, confidence=res.confidence)
        cover_h = (err <= hoeffding + tol).mean(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(res.exact > 0, err / np.where(res.exact > 0, res.exact, 1.0), np.nan).mean(axis=0)
        reps = res.mean.shape[0]
        frames.append(
            pd.DataFrame(
                {
                    "recommender": np.repeat(res.recommenders, J),
                    "size": res.size,
                    "n_population": res.n_population,
                    "metric": np.tile(res.families, R),
                    "k": np.tile(res.ks, R),
                    "exact": res.exact.ravel(),
                    "mean": res.mean.mean(axis=0).ravel(),
                    "sd": (res.mean.std(axis=0, ddof=1) if reps > 1 else np.full((R, J), np.nan)).ravel(),
                    "mean_abs_rel_error": rel.ravel(),
                    "mean_se": se.mean(axis=0).ravel(),
                    "mean_half_width": (z * se).mean(axis=0).ravel(),
                    "coverage": cover.ravel(),
                    "coverage_bonferroni": cover_b.ravel(),
                    "hoeffding_half_width": hoeffding,
                    "coverage_hoeffding": cover_h.ravel(),
                    "nominal": res.confidence,
                    "z": z,
                    "z_bonferroni": zb,
                    "n_repeats": reps,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


TEST_COLUMNS = [
    "size",
    "metric",
    "k",
    "recommender_a",
    "recommender_b",
    "test",
    "statistic",
    "exact_difference",
    "mean_difference",
    "reject_rate",
    "reject_rate_bonferroni",
    "correct_rate_bonferroni",
    "wrong_sign_rate_bonferroni",
    "alpha",
    "n_pairs",
    "n_repeats",
]


def user_sampling_tests(results: Sequence[UserSamplingResult], ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Per size × metric × K × pair × test: how often a sample of m users tells the two models apart.

    Columns: size, metric, k, recommender_a, recommender_b, test
    (``two_sample``/``paired``), statistic (``z``, ``welch_t`` or
    ``paired_t``), exact_difference (T_A − T_B over all users), mean_difference,
    reject_rate (share of repeats with p <= α), reject_rate_bonferroni (p <=
    α/n_pairs), correct_rate_bonferroni (rejected *and* the sign of T̂_A − T̂_B
    is that of T_A − T_B: the right winner declared significant),
    wrong_sign_rate_bonferroni (rejected with the wrong sign), alpha,
    n_pairs, n_repeats. ``ks``: the cutoffs kept (default all).
    """
    rows = []
    for res in results:
        alpha = 1 - res.confidence
        n_pairs = len(res.pairs)
        if n_pairs == 0:
            continue
        keep = np.ones(len(res.ks), bool) if ks is None else np.isin(res.ks, list(ks))
        exact_diff = res.exact[res.pairs[:, 0]] - res.exact[res.pairs[:, 1]]  # (P, J)
        # equal metrics summed in another order (e.g. permuted ranks) differ by rounding only: a tie
        exact_diff = np.where(np.abs(exact_diff) <= 1e-12, 0.0, exact_diff)
        for test in ("two_sample", "paired"):
            t = pair_tests(res, test)
            rej = t.p_value <= alpha
            rej_b = bonferroni(t.p_value, alpha=alpha, axis=1, n_tests=n_pairs).reject
            sign_ok = np.sign(t.difference) == np.sign(exact_diff)
            P, J = exact_diff.shape
            fam = np.asarray(res.families)
            stat = np.where(fam == "recall", "z", "welch_t") if test == "two_sample" else np.full(J, "paired_t")
            frame = pd.DataFrame(
                {
                    "size": res.size,
                    "metric": np.tile(fam, P),
                    "k": np.tile(res.ks, P),
                    "recommender_a": np.repeat([res.recommenders[a] for a in res.pairs[:, 0]], J),
                    "recommender_b": np.repeat([res.recommenders[b] for b in res.pairs[:, 1]], J),
                    "test": test,
                    "statistic": np.tile(stat, P),
                    "exact_difference": exact_diff.ravel(),
                    "mean_difference": t.difference.mean(axis=0).ravel(),
                    "reject_rate": rej.mean(axis=0).ravel(),
                    "reject_rate_bonferroni": rej_b.mean(axis=0).ravel(),
                    "correct_rate_bonferroni": (rej_b & sign_ok & (exact_diff != 0)).mean(axis=0).ravel(),
                    "wrong_sign_rate_bonferroni": (rej_b & ~sign_ok).mean(axis=0).ravel(),  # T_A = T_B: any rejection
                    "alpha": alpha,
                    "n_pairs": n_pairs,
                    "n_repeats": res.mean.shape[0],
                }
            )
            rows.append(frame[np.tile(keep, P)])
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=TEST_COLUMNS)


def _abs_rel_errors(estimates: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|T̂ − T|/T per repeat, NaN where T = 0 or T̂ is NaN, shape of ``estimates``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(exact > 0, np.abs(estimates - exact) / np.where(exact > 0, exact, 1.0), np.nan)


def _summarise(errors: np.ndarray, families: np.ndarray) -> list[tuple[str, float, float, float, int, int]]:
    """Per family: mean % over repeats and K, sd over K of the per-K means, sd over repeats of the
    K-averaged error, number of K and of repeats; ``errors`` (repeats, J)."""
    out = []
    for fam in dict.fromkeys(families):
        e = errors[:, families == fam]
        ok_k = ~np.isnan(e).all(axis=0)
        e = e[:, ok_k]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            per_k = np.nanmean(e, axis=0) * 100
            per_rep = np.nanmean(e, axis=1) * 100
            out.append(
                (
                    str(fam),
                    float(np.mean(per_k)) if per_k.size else math.nan,
                    float(np.std(per_k, ddof=1)) if per_k.size > 1 else math.nan,
                    float(np.nanstd(per_rep, ddof=1)) if np.isfinite(per_rep).sum() > 1 else math.nan,
                    int(per_k.size),
                    int(np.isfinite(per_rep).sum()),
                )
            )
    return out


ERROR_COLUMNS = [
    "recommender",
    "metric",
    "method",
    "size",
    "label",
    "estimator",
    "scheme",
    "rel_error_pct",
    "rel_error_pct_sd",
    "rel_error_pct_sd_repeats",
    "n_k",
    "n_repeats",
]


def user_sampling_errors(
    user_results: Sequence[UserSamplingResult],
    item_results: Sequence[StressResult] = (),
    *,
    item_estimator: str | None = "MN_MES",
    item_scheme: str = "binomial",
) -> pd.DataFrame:
    """Dissertation Tables 6-7 in tidy form: relative error (%) averaged over K, ± sd over K.

    .. math:: e = \\frac{1}{|K|} \\sum_K \\frac{1}{n_{rep}} \\sum_{rep}
              \\frac{|\\hat T_{K,rep} - T_K|}{T_K} \\times 100

    One row per recommender × metric family × column: the item-sampling
    columns (``method = "item"``, ``size`` = n, from ``item_results`` cells
    of ``item_estimator`` under ``item_scheme``; none when ``item_estimator``
    is None) then the user-sampling columns (``method = "user"``, ``size`` = m).
    ``label`` is the dissertation's column name (``item100``, ``user1K``).
    """
    rows = []
    for res in item_results:
        if item_estimator is None or res.scheme != item_scheme or item_estimator not in res.estimators:
            continue
        e = res.estimators.index(item_estimator)
        cut = np.asarray(res.ks) > 0  # the cutoff families only: user sampling has no AUC / untruncated AP
        errs = _abs_rel_errors(res.estimates[:, e, cut], res.exact[cut])
        for fam, mean, sd_k, sd_r, n_k, n_r in _summarise(errs, np.asarray(res.families)[cut]):
            rows.append(
                (
                    res.recommender,
                    fam,
                    "item",
                    res.n,
                    size_label("item", res.n),
                    item_estimator,
                    item_scheme,
                    mean,
                    sd_k,
                    sd_r,
                    n_k,
                    n_r,
                )
            )
    for res in user_results:
        for r, name in enumerate(res.recommenders):
            errs = _abs_rel_errors(res.mean[:, r, :], res.exact[r])
            for fam, mean, sd_k, sd_r, n_k, n_r in _summarise(errs, np.asarray(res.families)):
                rows.append(
                    (
                        name,
                        fam,
                        "user",
                        res.size,
                        size_label("user", res.size),
                        "user_average",
                        "",
                        mean,
                        sd_k,
                        sd_r,
                        n_k,
                        n_r,
                    )
                )
    frame = pd.DataFrame(rows, columns=ERROR_COLUMNS)
    method_order = (frame["method"] != "item").astype(int)
    frame = frame.assign(_m=method_order).sort_values(["metric", "recommender", "_m", "size"], kind="stable")
    return frame.drop(columns="_m").reset_index(drop=True)


def user_sampling_wide(errors: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """Tables 6-7 as printed: one row per dataset × model × metric, one column per item/user size, cells "mean±sd".

    ``errors`` is :func:`user_sampling_errors`'s output; values in %, two decimals.
    """
    if not len(errors):
        return pd.DataFrame(columns=["dataset", "model", "metric"])
    labels = list(dict.fromkeys(errors.sort_values(["method", "size"], kind="stable")["label"]))
    cell = errors.assign(cell=[f"{m:.2f}±{s:.2f}" for m, s in zip(errors["rel_error_pct"], errors["rel_error_pct_sd"])])
    wide = cell.pivot_table(
        index=["metric", "recommender"], columns="label", values="cell", aggfunc="first", sort=False
    )
    wide = wide.reindex(columns=labels).reset_index().rename(columns={"recommender": "model"})
    wide.columns.name = None
    wide.insert(0, "dataset", dataset)
    return wide[["dataset", "model", "metric", *labels]]


# ---------------------------------------------------------------------------
# the item-sampling estimators on the user samples (module section of that name)
# ---------------------------------------------------------------------------
def _with_estimators(results: Sequence[UserSamplingResult]) -> list[UserSamplingResult]:
    return [res for res in results if res.item_estimates is not None]


def _tie_free(diff: np.ndarray) -> np.ndarray:
    """Exact differences with rounding noise (equal metrics summed in another order) set to 0."""
    return np.where(np.abs(diff) <= 1e-12, 0.0, diff)


def user_sampling_estimator_table(results: Sequence[UserSamplingResult]) -> pd.DataFrame:
    """Per recommender × m × scheme × n × estimator × metric × K: the estimator on m sampled users vs the exact T.

    .. math:: \\text{mean\\_abs\\_rel\\_error} = \\frac{1}{n_{rep}} \\sum_{rep}
              \\frac{|\\hat T^{(e)}_{S_{rep}} - T|}{T}

    Columns: recommender, size (m), n_population (M), scheme, n, estimator,
    metric, k, exact (T over all M users, full ranking), mean and sd of the
    estimate over repeats, mean_abs_rel_error (NaN where T = 0),
    mean_se (mean bootstrap standard error), mean_half_width (mean of
    (upper − lower)/2), coverage (share of repeats whose percentile interval
    holds T), nominal, n_boot, n_repeats (repeats with a defined estimate).
    The interval columns are NaN without bootstrap (``n_boot`` = 0).
    Results without the estimator part are skipped.
    """
    frames = []
    for res in _with_estimators(results):
        reps, I, R, E, J = res.item_estimates.shape
        exact = res.exact[None, None, :, None, :]  # (1, 1, R, 1, J)
        est = res.item_estimates
        ok = ~np.isnan(est)
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            rel = np.nanmean(_abs_rel_errors(est, exact), axis=0)
            mean = np.nanmean(est, axis=0)
            sd = np.nanstd(est, axis=0, ddof=1) if reps > 1 else np.full(mean.shape, np.nan)
            if res.item_se is not None:
                mean_se = np.nanmean(res.item_se, axis=0)
                half = np.nanmean((res.item_upper - res.item_lower) / 2, axis=0)
                tol = 1e-12 * np.maximum(1.0, np.abs(exact))
                held = (res.item_lower <= exact + tol) & (exact - tol <= res.item_upper)
                defined = ~np.isnan(res.item_lower) & ok
                cover = np.where(defined, held, False).sum(axis=0) / defined.sum(axis=0)
            else:
                mean_se = half = cover = np.full(mean.shape, np.nan)
        n_ok = ok.sum(axis=0)
        grid = np.meshgrid(np.arange(I), np.arange(R), np.arange(E), np.arange(J), indexing="ij")
        i, r, e, j = (g.ravel() for g in grid)
        frames.append(
            pd.DataFrame(
                {
                    "recommender": np.asarray(res.recommenders)[r],
                    "size": res.size,
                    "n_population": res.n_population,
                    "scheme": res.item_scheme,
                    "n": res.item_sizes[i],
                    "estimator": np.asarray(res.estimators)[e],
                    "metric": np.asarray(res.families)[j],
                    "k": res.ks[j],
                    "exact": res.exact[r, j],
                    "mean": mean.ravel(),
                    "sd": sd.ravel(),
                    "mean_abs_rel_error": rel.ravel(),
                    "mean_se": mean_se.ravel(),
                    "mean_half_width": half.ravel(),
                    "coverage": cover.ravel(),
                    "nominal": res.confidence,
                    "n_boot": res.n_boot,
                    "n_repeats": n_ok.ravel(),
                }
            )
        )
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(["recommender", "scheme", "n", "estimator", "size"], kind="stable", ignore_index=True)


ESTIMATOR_TEST_COLUMNS = [
    "size",
    "scheme",
    "n",
    "estimator",
    "metric",
    "k",
    "recommender_a",
    "recommender_b",
    "test",
    "exact_difference",
    "mean_difference",
    "order_rate",
    "reject_rate",
    "reject_rate_bonferroni",
    "correct_rate_bonferroni",
    "wrong_sign_rate_bonferroni",
    "alpha",
    "n_pairs",
    "n_boot",
    "n_repeats",
]


def user_sampling_estimator_tests(
    results: Sequence[UserSamplingResult], ks: Sequence[int] | None = None
) -> pd.DataFrame:
    """Per m × scheme × n × estimator × metric × K × pair × test: do the estimates on m users tell A and B apart?

    .. math:: z_{two\\_sample} = \\frac{\\hat T_A - \\hat T_B}{\\sqrt{se_A^2 + se_B^2}}, \\qquad
              z_{paired} = \\frac{\\hat T_A - \\hat T_B}{se(\\hat T^*_A - \\hat T^*_B)}

    with bootstrap standard errors over the sample's users (module section
    "Item-sampling estimators on the user samples"); two-sided normal
    p-values. Columns as :func:`user_sampling_tests` (exact_difference is
    T_A − T_B over all users, full ranking) plus scheme, n, estimator,
    order_rate (share of repeats where sign(T̂_A − T̂_B) = sign(T_A − T_B);
    NaN for an exact tie; the same in both ``test`` rows) and n_boot; the
    rejection columns are NaN without bootstrap. Repeats where an estimate is
    NaN are left out (``n_repeats`` counts the rest).
    """
    rows = []
    for res in _with_estimators(results):
        n_pairs = len(res.pairs)
        if n_pairs == 0:
            continue
        alpha = 1 - res.confidence
        a, b = res.pairs[:, 0], res.pairs[:, 1]
        est = res.item_estimates  # (reps, I, R, E, J)
        diff = est[:, :, a] - est[:, :, b]  # (reps, I, P, E, J)
        exact_diff = _tie_free(res.exact[a] - res.exact[b])[None, None, :, None, :]  # (1, 1, P, 1, J)
        ok = ~np.isnan(diff)
        n_ok = ok.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_diff = np.where(ok, diff, 0).sum(axis=0) / n_ok
            order = (ok & (np.sign(diff) == np.sign(exact_diff))).sum(axis=0) / n_ok
            order = np.where(exact_diff[0] != 0, order, np.nan)
        reps, I, P, E, J = diff.shape
        grid = np.meshgrid(np.arange(I), np.arange(P), np.arange(E), np.arange(J), indexing="ij")
        i, p, e, j = (g.ravel() for g in grid)
        keep = np.ones(j.size, bool) if ks is None else np.isin(res.ks[j], list(ks))
        for test in ("two_sample", "paired"):
            if res.item_se is None:
                rej = rej_b = correct = wrong = np.full(order.shape, np.nan)
            else:
                se = (
                    np.sqrt(res.item_se[:, :, a] ** 2 + res.item_se[:, :, b] ** 2)
                    if test == "two_sample"
                    else res.item_pair_se
                )
                pv = z_test_from_summary(diff, se).p_value
                defined = ok & ~np.isnan(se)
                sign_ok = np.sign(diff) == np.sign(exact_diff)
                with np.errstate(invalid="ignore", divide="ignore"):
                    cnt = defined.sum(axis=0)
                    rej = (defined & (pv <= alpha)).sum(axis=0) / cnt
                    hit_b = defined & bonferroni(pv, alpha=alpha, axis=2, n_tests=n_pairs).reject
                    rej_b = hit_b.sum(axis=0) / cnt
                    correct = (hit_b & sign_ok & (exact_diff != 0)).sum(axis=0) / cnt
                    wrong = (hit_b & ~sign_ok).sum(axis=0) / cnt
            frame = pd.DataFrame(
                {
                    "size": res.size,
                    "scheme": res.item_scheme,
                    "n": res.item_sizes[i],
                    "estimator": np.asarray(res.estimators)[e],
                    "metric": np.asarray(res.families)[j],
                    "k": res.ks[j],
                    "recommender_a": np.asarray(res.recommenders)[a[p]],
                    "recommender_b": np.asarray(res.recommenders)[b[p]],
                    "test": test,
                    "exact_difference": np.broadcast_to(exact_diff[0], (I, P, E, J)).ravel(),
                    "mean_difference": mean_diff.ravel(),
                    "order_rate": order.ravel(),
                    "reject_rate": rej.ravel(),
                    "reject_rate_bonferroni": rej_b.ravel(),
                    "correct_rate_bonferroni": correct.ravel(),
                    "wrong_sign_rate_bonferroni": wrong.ravel(),
                    "alpha": alpha,
                    "n_pairs": n_pairs,
                    "n_boot": res.n_boot,
                    "n_repeats": n_ok.ravel(),
                }
            )
            rows.append(frame[keep])
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=ESTIMATOR_TEST_COLUMNS)


ESTIMATOR_ERROR_COLUMNS = [
    "recommender",
    "metric",
    "estimator",
    "scheme",
    "n",
    "size",
    "label",
    "rel_error_pct",
    "rel_error_pct_sd",
    "rel_error_pct_sd_repeats",
    "n_k",
    "n_repeats",
]


def user_sampling_estimator_errors(
    user_results: Sequence[UserSamplingResult], item_results: Sequence[StressResult] = ()
) -> pd.DataFrame:
    """Tables 6-7 layout for the estimators on user samples: relative error (%) averaged over K, ± sd over K.

    .. math:: e = \\frac{1}{|K|} \\sum_K \\frac{1}{n_{rep}} \\sum_{rep}
              \\frac{|\\hat T_{K,rep} - T_K|}{T_K} \\times 100

    (the per-repeat definition of :func:`user_sampling_errors`). Per
    recommender × metric family × estimator × scheme × n: first the harness's
    estimate on all users (``label`` ``item100``, ``size`` = the users it
    used; from ``item_results`` of the same estimator, scheme and n), then
    the estimate on m sampled users (``item100+user1K``, ``size`` = m).
    """
    rows = []
    combos = set()
    for res in _with_estimators(user_results):
        for i, n in enumerate(res.item_sizes):
            for e, est in enumerate(res.estimators):
                combos.add((est, res.item_scheme, int(n)))
                for r, name in enumerate(res.recommenders):
                    errs = _abs_rel_errors(res.item_estimates[:, i, r, e, :], res.exact[r])
                    for fam, mean, sd_k, sd_r, n_k, n_r in _summarise(errs, np.asarray(res.families)):
                        rows.append(
                            (
                                name,
                                fam,
                                est,
                                res.item_scheme,
                                int(n),
                                res.size,
                                f"{size_label('item', int(n))}+{size_label('user', res.size)}",
                                mean,
                                sd_k,
                                sd_r,
                                n_k,
                                n_r,
                            )
                        )
    for res in item_results:
        cut = np.asarray(res.ks) > 0
        for e, est in enumerate(res.estimators):
            if (est, res.scheme, res.n) not in combos:
                continue
            errs = _abs_rel_errors(res.estimates[:, e, cut], res.exact[cut])
            for fam, mean, sd_k, sd_r, n_k, n_r in _summarise(errs, np.asarray(res.families)[cut]):
                rows.append(
                    (
                        res.recommender,
                        fam,
                        est,
                        res.scheme,
                        res.n,
                        res.n_users,
                        size_label("item", res.n),
                        mean,
                        sd_k,
                        sd_r,
                        n_k,
                        n_r,
                    )
                )
    frame = pd.DataFrame(rows, columns=ESTIMATOR_ERROR_COLUMNS)
    all_users = frame["label"].str.contains("+", regex=False).astype(int)
    frame = frame.assign(_u=all_users).sort_values(
        ["metric", "recommender", "estimator", "scheme", "n", "_u", "size"], kind="stable"
    )
    return frame.drop(columns="_u").reset_index(drop=True)


def user_sampling_estimator_wide(errors: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """One row per dataset × model × metric × estimator × scheme, one column per label (``item100``,
    ``item100+user1K``, ...), cells "mean±sd" in % (from :func:`user_sampling_estimator_errors`)."""
    keys = ["metric", "recommender", "estimator", "scheme"]
    if not len(errors):
        return pd.DataFrame(columns=["dataset", "model", "metric", "estimator", "scheme"])
    order = errors.assign(_u=errors["label"].str.contains("+", regex=False)).sort_values(
        ["n", "_u", "size"], kind="stable"
    )
    labels = list(dict.fromkeys(order["label"]))
    cell = errors.assign(cell=[f"{m:.2f}±{s:.2f}" for m, s in zip(errors["rel_error_pct"], errors["rel_error_pct_sd"])])
    wide = cell.pivot_table(index=keys, columns="label", values="cell", aggfunc="first", sort=False)
    wide = wide.reindex(columns=labels).reset_index().rename(columns={"recommender": "model"})
    wide.columns.name = None
    wide.insert(0, "dataset", dataset)
    return wide[["dataset", "model", "metric", "estimator", "scheme", *labels]]
