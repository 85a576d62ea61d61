"""User sampling, the run: draw samples of users and keep their metrics' sufficient statistics.

:func:`run_user_sampling` draws ``repeats`` samples of m users (the same users
for every recommender, :func:`common_users`) and keeps per repeat the means of
F, F² and F_A·F_B of every metric (:class:`UserSamplingResult`); with
item-sampling estimators (:class:`UserSamplingConfig` ``estimators``) it also
estimates each metric from the sampled ranks of each sample's users, with
bootstrap intervals. The formulas and decisions are in
:mod:`simrec.stress.user_sampling`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, check_in_range, check_int
from simrec.sampling import (
    AdaptiveMLE,
    Estimator,
    SamplingScheme,
    estimate_histograms,
    metric_table,
    percentile_interval,
    single_threaded_blas,
)
from simrec.stress.harness import METRIC_FAMILIES, estimator_items, rank_sampler
from simrec.stress.sources import RecommenderRanks

__all__ = ["ITEM_SCHEMES", "UserSamplingConfig", "UserSamplingResult", "common_users", "run_user_sampling"]

#: Item-sampling schemes of the estimator part (fixed n: the adaptive scheme has its own estimator only).
ITEM_SCHEMES: tuple[str, ...] = ("binomial", "hypergeometric", "popularity")


def _check_sizes(name: str, sizes: tuple[int, ...], what: str) -> None:
    """``sizes``: at least one, each an integer >= 2, distinct."""
    if not sizes:
        raise ValueError(f"`{name}` must hold at least one {what}; got none")
    for m in sizes:
        check_int(name, m, low=2)
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"`{name}` must be distinct; got {list(sizes)}")


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
        self._check_users()
        self._check_items()
        check_int("n_boot", self.n_boot, low=0)
        if self.n_boot == 1:
            raise ValueError("`n_boot` must be 0 (no intervals) or >= 2; got 1")
        check_int("max_iter", self.max_iter, low=1)
        object.__setattr__(self, "sizes", tuple(int(m) for m in self.sizes))
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "estimators", tuple(self.estimators))
        object.__setattr__(self, "item_sizes", tuple(int(n) for n in self.item_sizes))

    def _check_users(self) -> None:
        """The user part: sizes, repeats, metrics, confidence."""
        _check_sizes("sizes", self.sizes, "user-sample size")
        check_int("repeats", self.repeats, low=1)
        check_int("k_max", self.k_max, low=1)
        if not self.metrics:
            raise ValueError("`metrics` must name at least one metric family; got none")
        for f in self.metrics:
            if f not in METRIC_FAMILIES:
                raise ValueError(f"`metrics` must be among {', '.join(METRIC_FAMILIES)}; got {f!r}")
        check_in_range("confidence", self.confidence, 0, 1, low_open=True, high_open=True)

    def _check_items(self) -> None:
        """The estimator part: estimators (fixed-n, distinct names), scheme, sample-set sizes."""
        for e in self.estimators:
            if isinstance(e, AdaptiveMLE):
                raise ValueError("`estimators` must not hold AdaptiveMLE(): the estimator part uses one fixed n")
            if not isinstance(e, Estimator):
                raise TypeError(f"`estimators` must hold estimator objects of simrec.sampling (e.g. MLE()); got {e!r}")
        names = [e.name for e in self.estimators]
        if len(set(names)) != len(names):
            raise ValueError(f"`estimators` must have distinct names; got {names}")
        check_choice("item_scheme", self.item_scheme, ITEM_SCHEMES)
        if self.item_sizes or self.estimators:
            _check_sizes("item_sizes", self.item_sizes, "sample-set size n when `estimators` are given")

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
        out: dict[str, Any] = {
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
        item: dict[str, Any] = {}
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
        self.caches: list[list[dict[Any, Any]]] = [
            [{} for _ in range(I)] for _ in range(R)
        ]  # data-independent F̂, per (recommender, n)
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
            per_rec = []
            for j in range(R):
                fits: dict = {}
                kw: dict[str, Any] = {"max_iter": cfg.max_iter, "cache": self.caches[j][i], "fits": fits}
                point = estimate_histograms(cfg.estimators, hists[j][i][:1], self.schemes[j][i], self.metrics, **kw)
                rest = (
                    [estimate_histograms(cfg.estimators, hists[j][i][1:], self.schemes[j][i], self.metrics, **kw)]
                    if B
                    else []
                )
                per_rec.append(np.concatenate([point, *rest]))
            vals = np.stack(per_rec)  # (R, 1 + B, E, J)
            self.est[rep, i] = vals[:, 0]
            # (the intervals are arrays exactly when B > 0)
            if self.lower is not None and self.upper is not None and self.se is not None and self.pair_se is not None:
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
