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
  list of models". A zero standard error (m = M, or identical values) gives
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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int
from simrec.sampling import bonferroni_z, hoeffding_margin, metric_table
from simrec.stress.harness import METRIC_FAMILIES, StressResult
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
]


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
    """

    sizes: tuple[int, ...]
    repeats: int = 100
    metrics: tuple[str, ...] = ("recall", "ndcg", "average_precision")
    k_max: int = 50
    confidence: float = 0.95

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
        object.__setattr__(self, "sizes", tuple(int(m) for m in self.sizes))
        object.__setattr__(self, "metrics", tuple(self.metrics))

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
            raise ValueError(f"user sampling needs top-K metrics (F@K = 0 for ranks > K); "
                             f"{', '.join(dict.fromkeys(beyond))} is not")
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
        return {"size": np.array(self.size), "n_population": np.array(self.n_population),
                "recommenders": np.array(self.recommenders), "pairs": self.pairs, "families": np.array(self.families),
                "ks": self.ks, "exact": self.exact, "mean": self.mean, "mean_sq": self.mean_sq,
                "mean_cross": self.mean_cross, "confidence": np.array(self.confidence)}

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> UserSamplingResult:
        return cls(int(a["size"]), int(a["n_population"]), tuple(str(r) for r in a["recommenders"]),
                   a["pairs"].reshape(-1, 2), tuple(str(f) for f in a["families"]), a["ks"], a["exact"], a["mean"],
                   a["mean_sq"], a["mean_cross"].reshape(a["mean"].shape[0], a["pairs"].size // 2, a["exact"].shape[1]),
                   float(a["confidence"]))


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
    if not recommenders:
        raise ValueError("`recommenders` must hold at least one RecommenderRanks; got none")
    first = np.asarray(recommenders[0].users)
    if all(np.array_equal(np.asarray(r.users), first) for r in recommenders[1:]):
        return np.stack([r.ranks for r in recommenders], axis=1)
    labels = [np.asarray(r.users).astype(str) for r in recommenders]
    common = labels[0]
    for lab in labels[1:]:
        common = np.intersect1d(common, lab)
    common = np.unique(common)
    if common.size == 0:
        raise ValueError("the recommenders share no evaluated user; user sampling compares them on common users")
    cols = []
    for r, lab in zip(recommenders, labels):
        order = np.argsort(lab, kind="stable")
        cols.append(r.ranks[order[np.searchsorted(lab[order], common)]])
    return np.stack(cols, axis=1)


def run_user_sampling(
    recommenders: Sequence[RecommenderRanks],
    size: int,
    config: UserSamplingConfig,
    rng: RNGLike = None,
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
    rng : Generator or seed
        Used for the draws only (one ``Generator.choice`` per repeat).

    Returns
    -------
    UserSamplingResult
    """
    if not isinstance(config, UserSamplingConfig):
        raise TypeError(f"`config` must be a UserSamplingConfig; got {type(config).__name__}")
    ranks = common_users(recommenders)  # (M, R)
    M, R = ranks.shape
    size = check_int("size", size, low=2)
    if size > M:
        raise ValueError(f"user-sample size must be <= the number of users evaluated by every recommender "
                         f"({M}); got {size}")
    gen = as_generator(rng)
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
    for rep in range(reps):
        idx = gen.choice(M, size, replace=False)
        mean[rep], mean_sq[rep], mean_cross[rep] = moments(codes[idx])
    return UserSamplingResult(size, M, tuple(r.name for r in recommenders), pairs, config.families, config.ks, exact,
                              mean, mean_sq, mean_cross, config.confidence)


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
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.nan)
        p = 2 * np.where(normal, stats.norm.sf(np.abs(stat)), stats.t.sf(np.abs(stat), np.where(df > 0, df, 1.0)))
    p = np.where(se > 0, p, np.where(diff != 0, 0.0, 1.0))
    return PairTests(test, stat, p, diff)


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
        frames.append(pd.DataFrame({
            "recommender": np.repeat(res.recommenders, J), "size": res.size, "n_population": res.n_population,
            "metric": np.tile(res.families, R), "k": np.tile(res.ks, R), "exact": res.exact.ravel(),
            "mean": res.mean.mean(axis=0).ravel(),
            "sd": (res.mean.std(axis=0, ddof=1) if reps > 1 else np.full((R, J), np.nan)).ravel(),
            "mean_abs_rel_error": rel.ravel(), "mean_se": se.mean(axis=0).ravel(),
            "mean_half_width": (z * se).mean(axis=0).ravel(), "coverage": cover.ravel(),
            "coverage_bonferroni": cover_b.ravel(), "hoeffding_half_width": hoeffding,
            "coverage_hoeffding": cover_h.ravel(), "nominal": res.confidence, "z": z, "z_bonferroni": zb,
            "n_repeats": reps,
        }))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


TEST_COLUMNS = ["size", "metric", "k", "recommender_a", "recommender_b", "test", "statistic", "exact_difference",
                "mean_difference", "reject_rate", "reject_rate_bonferroni", "correct_rate_bonferroni",
                "wrong_sign_rate_bonferroni", "alpha", "n_pairs", "n_repeats"]


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
            rej_b = t.p_value <= alpha / n_pairs
            sign_ok = np.sign(t.difference) == np.sign(exact_diff)
            P, J = exact_diff.shape
            fam = np.asarray(res.families)
            stat = np.where(fam == "recall", "z", "welch_t") if test == "two_sample" else np.full(J, "paired_t")
            frame = pd.DataFrame({
                "size": res.size, "metric": np.tile(fam, P), "k": np.tile(res.ks, P),
                "recommender_a": np.repeat([res.recommenders[a] for a in res.pairs[:, 0]], J),
                "recommender_b": np.repeat([res.recommenders[b] for b in res.pairs[:, 1]], J),
                "test": test, "statistic": np.tile(stat, P), "exact_difference": exact_diff.ravel(),
                "mean_difference": t.difference.mean(axis=0).ravel(), "reject_rate": rej.mean(axis=0).ravel(),
                "reject_rate_bonferroni": rej_b.mean(axis=0).ravel(),
                "correct_rate_bonferroni": (rej_b & sign_ok & (exact_diff != 0)).mean(axis=0).ravel(),
                "wrong_sign_rate_bonferroni": (rej_b & ~sign_ok).mean(axis=0).ravel(),  # T_A = T_B: any rejection
                "alpha": alpha, "n_pairs": n_pairs, "n_repeats": res.mean.shape[0],
            })
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
            out.append((str(fam), float(np.mean(per_k)) if per_k.size else math.nan,
                        float(np.std(per_k, ddof=1)) if per_k.size > 1 else math.nan,
                        float(np.nanstd(per_rep, ddof=1)) if np.isfinite(per_rep).sum() > 1 else math.nan,
                        int(per_k.size), int(np.isfinite(per_rep).sum())))
    return out


ERROR_COLUMNS = ["recommender", "metric", "method", "size", "label", "estimator", "scheme", "rel_error_pct",
                 "rel_error_pct_sd", "rel_error_pct_sd_repeats", "n_k", "n_repeats"]


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
            rows.append((res.recommender, fam, "item", res.n, size_label("item", res.n), item_estimator, item_scheme,
                         mean, sd_k, sd_r, n_k, n_r))
    for res in user_results:
        for r, name in enumerate(res.recommenders):
            errs = _abs_rel_errors(res.mean[:, r, :], res.exact[r])
            for fam, mean, sd_k, sd_r, n_k, n_r in _summarise(errs, np.asarray(res.families)):
                rows.append((name, fam, "user", res.size, size_label("user", res.size), "user_average", "",
                             mean, sd_k, sd_r, n_k, n_r))
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
    wide = cell.pivot_table(index=["metric", "recommender"], columns="label", values="cell", aggfunc="first", sort=False)
    wide = wide.reindex(columns=labels).reset_index().rename(columns={"recommender": "model"})
    wide.columns.name = None
    wide.insert(0, "dataset", dataset)
    return wide[["dataset", "model", "metric", *labels]]
