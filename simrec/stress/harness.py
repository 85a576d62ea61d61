"""Repeat sampled evaluation and run every estimator of :mod:`simrec.sampling`.

For one recommender's global ranks, one sampling scheme and one sample size n,
:func:`run_stress` draws the sampled ranks ``repeats`` times and records, per
repeat, every estimator's estimate of every metric F ∈ {Recall, NDCG, AP} at
K = 1..k_max and, when asked for, of AUC and untruncated AP
(:data:`UNTRUNCATED_METRICS`; K&R Tables 3-4) (docs/design.md §5 "Stress
harness"; the dissertation's Tables 3-4 and Krichene & Rendle's Table 4 are
built from these by :mod:`.tables`).
The harness is a client of :mod:`simrec.sampling`: it draws with its samplers
and runs its estimators, adding only the repetition and the bookkeeping.

Schemes (the sampled rank r_u of user u with global rank R_u among N_u candidates;
which items are candidates, and so which can be drawn as negatives, is the
source's ``candidates``, :mod:`.sources`: the items the user has not trained
on, where ``hypergeometric`` is Li & Jin's "actual" block, or all items,
where ``binomial`` / ``hypergeometric`` are their "binom" / "hyper" blocks):

* ``binomial`` — uniform negatives with replacement, r − 1 ~ Bin(n − 1, θ_u),
  θ_u = (R_u − 1)/(N_u − 1) (K&R §4.3; :func:`simrec.sampling.sample_ranks_binomial`);
* ``hypergeometric`` — uniform without replacement,
  r − 1 ~ Hypergeom(N_u − 1, R_u − 1, n − 1)
  (:func:`simrec.sampling.sample_ranks_hypergeometric`, which needs n <= every N_u);
* ``popularity`` — negatives drawn with probability ∝ training popularity,
  with replacement: r − 1 ~ Bin(n − 1, s_u) with s_u the popularity share
  ranked above the held-out item (exact for actual weighted draws with
  replacement, :func:`simrec.sampling.above_weight_share`,
  :func:`simrec.sampling.sample_ranks_from_shares`). The estimators
  assume uniform sampling (what a paper's reader assumes), so this scheme
  measures their bias under popularity-weighted negatives;
* ``adaptive`` — Li's Algorithm 1 (dissertation §2.6) with replacement from
  n0 = n, doubling while r = 1 up to ``adaptive_n_max``
  (:func:`simrec.sampling.sample_ranks_adaptive`); estimated by
  :class:`~simrec.sampling.AdaptiveMLE` only (the other estimators assume one
  fixed n).

Estimators are the objects of :mod:`simrec.sampling.estimators` (their
``name`` labels the output tables; names are never parsed):

* per-rank corrections F̂ (uniform prior): :class:`~simrec.sampling.Naive`,
  :class:`~simrec.sampling.RankEstimate`, :class:`~simrec.sampling.LeastSquares`,
  :class:`~simrec.sampling.ConstrainedLeastSquares`,
  :class:`~simrec.sampling.BiasVariance` (``prior=None``);
* rank-distribution estimators, refitted on every repeat:
  :class:`~simrec.sampling.MLE`, :class:`~simrec.sampling.WeightedMLE`
  (weights F_NDCG(r/C)), :class:`~simrec.sampling.MES`;
* linear estimators with the estimated prior (refitted every repeat):
  :class:`~simrec.sampling.MSEOptimal` (Li's MN, dissertation eq. 45),
  :class:`~simrec.sampling.BiasVarianceInverseUsers` (BV at γ = 1/M) and
  :class:`~simrec.sampling.BiasVariance` with ``prior=MLEPrior()`` or
  ``MESPrior(eta)`` (one fit per distinct prior serves MLE/MES and every
  linear estimator using it);
* Li & Jin mappings, Recall only: :class:`~simrec.sampling.MappingEstimator`
  (HR@K read off the sampled curve at f(k), interpolated as in
  :meth:`simrec.sampling.Mapping.hit_ratio`).

Decisions
---------
* Metrics without a cutoff (``auc``: AUC(R) = (N − R)/(N − 1), K&R eq. 7;
  ``average_precision_full``: untruncated AP(R) = 1/R, K&R eq. 12, the
  reciprocal rank) are asked for by name beside the cutoff families; each is
  one metric column with K = 0 in :attr:`StressResult.ks` (an empty ``k`` in
  the tables). Their exact value uses each user's own N_u,
  (1/M) Σ_u F(R_u; N_u). Every estimator that is defined for any
  :class:`~simrec.sampling.RankMetric` runs on them, as K&R apply their
  corrections to AUC and AP too: naive (sampled AUC (n − r)/(n − 1), unbiased
  for AUC, K&R §4.4.1), rank estimate, LS, CLS, BV, MLE, WMLE, MES, MN and BV
  with an estimated prior (their F̂ go through the banded P(r|R)); the Li & Jin
  mappings estimate Recall/HR only, so their cells are NaN, as for NDCG. The
  untruncated metrics are estimated in a second call of
  :func:`simrec.sampling.estimate_histograms` (so the cutoff families'
  estimates are bit-identical with or without them); the two calls share the
  repeat's EM fits (MLE/MES/WMLE, its ``fits`` memo), so each is fitted once.
* Estimators are given one catalogue size N = round(mean_u N_u) (users'
  candidate counts differ by their training profiles); sampling itself uses
  each user's own N_u. With a common N_u (e.g. a ranks file) this is exact;
  otherwise the model mismatch is part of the measured error, as in practice.
* Recommenders are sampled independently (given only ranks, the joint
  distribution of two recommenders' sampled ranks is not determined).
* Every estimator here depends on the sampled ranks only through their
  histogram (n counts), so a repeat costs O(M) to draw plus the fits, all
  done by :func:`simrec.sampling.estimate_histograms` (one fit per distinct
  prior serves every estimator using it; the data-independent F̂ are computed
  once per process for each scheme and metric list and shared by its tasks;
  linear estimators of one prior share one eigendecomposition). With few
  users (few distinct sampled ranks) the EM fits run on the observed columns
  of P(r|R) only (:func:`simrec.sampling.mle`), so a repeat costs about the
  number of distinct sampled ranks times N, not n times N.
* Repeats whose sampled ranks have the same histogram (adaptive: the same
  counts of distinct (n_u, r_u) pairs) have the same estimates, fit records
  and beta@P fit, to the bit: without intervals they are computed once per
  process (:mod:`.memo`, keyed by the histogram and everything else the
  estimates depend on), so with few users a task costs its distinct
  histograms' fits, not one set per repeat.
* No warm starts across repeats: with N > n the EM's limit depends on its
  start (the mixture is not identifiable) and 300 iterations do not reach it,
  so starting a repeat from the previous repeat's fit would change its
  estimate and tie the repeats together; every repeat starts from the
  uniform π, as :func:`simrec.sampling.mle` does.
* Intervals (``n_boot > 0``): each repeat's histogram is resampled
  ``n_boot`` times (users with replacement, :func:`simrec.sampling.bootstrap_histograms`)
  and every estimator's replicates are computed by
  :func:`simrec.sampling.bootstrap_estimates`, the engine of
  ``estimator.fit(...).estimate(...)``: exactly for the cheap estimators,
  linearised (exact gradient through the fit, first order in the resampled
  histogram) for MLE, WMLE, MES and the linear estimators with an estimated
  prior, so an interval costs a few fits per repeat, not ``n_boot``; the
  percentile interval is recorded. The bootstrap draws come from a child of ``rng``
  (``Generator.spawn``), so the sampled ranks are those of ``n_boot = 0``.
* The rules of the samplers (n <= every N_u without replacement, n0 <=
  n_max) are checked by the samplers; the first repeat is drawn before any
  estimator is set up, so a broken rule fails fast.
* Every repeat records, per estimator, the iterations its fit ran and
  whether it met its tolerance before ``max_iter`` (``n_iter``,
  ``converged``; :class:`simrec.sampling.FitStatus`), and the result names
  each estimator's :class:`~simrec.sampling.IntervalKind` (issue 22); the
  tables report both. Nothing is warned per repeat: the stress study says
  once which estimators stopped at their cap. With one user (M < 2) the
  intervals are NaN: every bootstrap replicate would be that user, an
  interval of zero width.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, check_in_range, check_int
from simrec.sampling import (
    BETA_A_VALUES,
    MES,
    MLE,
    AdaptiveMLE,
    AdaptiveRanks,
    BiasVariance,
    BiasVarianceInverseUsers,
    ConstrainedLeastSquares,
    Estimator,
    FitStatus,
    LeastSquares,
    MappingEstimator,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    PooledPrior,
    RankEstimate,
    RankMetric,
    SamplingScheme,
    WeightedMLE,
    auc,
    average_precision,
    beta_mapping,
    bootstrap_estimates,
    bootstrap_histograms,
    bound_mapping,
    estimate_histograms,
    fit_adaptive,
    fit_beta_mapping,
    fixed_corrections,
    linear_mapping,
    log_rank_probabilities_from_shares,
    metric_table,
    mle_adaptive,
    ndcg,
    percentile_interval,
    recall,
    sample_ranks_adaptive,
    sample_ranks_binomial,
    sample_ranks_from_shares,
    sample_ranks_hypergeometric,
    single_threaded_blas,
)
from simrec.sampling.histograms import RankFit
from simrec.stress.memo import REPEAT_MEMO
from simrec.stress.sources import RecommenderRanks

__all__ = [
    "SCHEMES",
    "DEFAULT_ESTIMATORS",
    "METRIC_FAMILIES",
    "UNTRUNCATED_METRICS",
    "METRIC_NAMES",
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
]

SCHEMES: tuple[str, ...] = ("binomial", "hypergeometric", "popularity", "adaptive")
#: Metric families of the harness: name -> constructor of a RankMetric at cutoff K.
METRIC_FAMILIES = {"recall": recall, "ndcg": ndcg, "average_precision": average_precision}
#: Metrics without a cutoff: name -> constructor of the RankMetric (AUC, K&R eq. 7; untruncated AP, eq. 12).
UNTRUNCATED_METRICS = {"auc": auc, "average_precision_full": average_precision}
#: Every metric name a stress configuration accepts (the defaults are the families of METRIC_FAMILIES only).
METRIC_NAMES: tuple[str, ...] = (*METRIC_FAMILIES, *UNTRUNCATED_METRICS)
_BV_GAMMAS = (1.0, 0.1, 0.01, 0.001)  # K&R's γ values
#: Every estimator, in table order: K&R's corrections (BV at their γ values),
#: Li's distribution estimators (WMLE with C = 10, MES with η = 0.001), the
#: linear estimators with an estimated prior (MN as published, eq. 45, and its
#: γ = 1/M variant), Li & Jin's mappings.
DEFAULT_ESTIMATORS: tuple[Estimator, ...] = (
    Naive(),
    RankEstimate(),
    LeastSquares(),
    ConstrainedLeastSquares(),
    *(BiasVariance(g) for g in _BV_GAMMAS),
    MLE(),
    WeightedMLE(10.0),
    MES(0.001),
    MSEOptimal(MLEPrior()),
    MSEOptimal(MESPrior(0.001)),
    BiasVarianceInverseUsers(MLEPrior()),
    BiasVarianceInverseUsers(MESPrior(0.001)),
    *(BiasVariance(g, MLEPrior()) for g in _BV_GAMMAS),
    *(BiasVariance(g, MESPrior(0.001)) for g in _BV_GAMMAS),
    MappingEstimator("linear"),
    MappingEstimator("bound"),
    *(MappingEstimator("beta", a) for a in BETA_A_VALUES),
    MappingEstimator("beta@P"),
)


@dataclass(frozen=True)
class StressConfig:
    """What to compute for each (recommender, scheme, n).

    Parameters
    ----------
    repeats : int, default 100
        Independent samplings per task.
    metrics : tuple of str, default ("recall", "ndcg", "average_precision")
        Families of :data:`METRIC_FAMILIES`, each at K = 1..k_max, and
        metrics of :data:`UNTRUNCATED_METRICS` (``"auc"``,
        ``"average_precision_full"``), one column each (K = 0). Result
        columns: the cutoff families in the listed order, then the metrics
        without a cutoff in the listed order (:meth:`columns`).
    k_max : int, default 50
    estimators : tuple of Estimator, default :data:`DEFAULT_ESTIMATORS`
        Estimator objects of :mod:`simrec.sampling.estimators`, in table
        order, with distinct names. :class:`~simrec.sampling.AdaptiveMLE` is
        not listed: the ``adaptive`` scheme always uses it (and only it).
    max_iter : int, default 300
        EM iterations (MLE, WMLE, adaptive MLE).
    adaptive_n_max : int, default 3200
        Terminal sample size of adaptive sampling (capped at N).
    n_boot : int, default 0
        Bootstrap replicates per repeat for every estimator's percentile
        interval (:mod:`simrec.sampling.fitted`); 0 for none. With intervals
        the result holds ``lower``/``upper`` and :func:`~.tables.coverage_table`
        reports each interval's coverage of the exact metric. The fitted
        estimators' replicates are linearised
        (:func:`simrec.sampling.bootstrap_estimates`): one fit and one
        gradient pass per distinct fit and repeat, not ``n_boot`` refits.
    confidence : float in (0, 1), default 0.95
        Level of the intervals.
    prior_per : {"repeat", "dataset"}, default "repeat"
        Where the estimated priors of BV_MLE, BV_MES, MN_MLE, MN_MES and BV at
        1/M are fitted: on each repeat's own sampled ranks (simrec), or once
        per cell, the fits of the repeats averaged
        (:class:`~simrec.sampling.PooledPrior`, the authors' code; labels
        ``"MN_MES@dataset"``). MLE and MES themselves are fitted per repeat
        either way. State it beside any table compared with the authors'.
    """

    repeats: int = 100
    metrics: tuple[str, ...] = ("recall", "ndcg", "average_precision")
    k_max: int = 50
    estimators: tuple[Estimator, ...] = DEFAULT_ESTIMATORS
    max_iter: int = 300
    adaptive_n_max: int = 3200
    n_boot: int = 0
    confidence: float = 0.95
    prior_per: str = "repeat"

    def __post_init__(self) -> None:
        check_choice("prior_per", self.prior_per, PRIOR_PER)
        check_int("repeats", self.repeats, low=1)
        check_int("k_max", self.k_max, low=1)
        if not self.metrics:
            raise ValueError("`metrics` must name at least one metric family; got none")
        for m in self.metrics:
            check_choice("metrics", m, METRIC_NAMES)
        if len(set(self.metrics)) != len(self.metrics):
            raise ValueError(f"`metrics` must not repeat a name; got {list(self.metrics)}")
        if not self.estimators:
            raise ValueError("`estimators` must hold at least one estimator; got none")
        for e in self.estimators:
            if isinstance(e, AdaptiveMLE):
                raise ValueError(
                    "`estimators` must not list AdaptiveMLE(): the 'adaptive' scheme always uses it "
                    "and the other schemes cannot"
                )
            if not isinstance(e, Estimator):
                raise TypeError(
                    f"`estimators` must hold estimator objects of simrec.sampling (e.g. Naive(), "
                    f"BiasVariance(0.1)); got {e!r}"
                )
        names = [e.name for e in self.estimators]
        if len(set(names)) != len(names):
            dup = sorted({x for x in names if names.count(x) > 1})
            raise ValueError(f"`estimators` must have distinct names; got {', '.join(dup)} more than once")
        check_int("max_iter", self.max_iter, low=1)
        check_int("adaptive_n_max", self.adaptive_n_max, low=2)
        if self.n_boot:
            check_int("n_boot", self.n_boot, low=2)
        check_in_range("confidence", self.confidence, 0, 1, low_open=True, high_open=True)
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "estimators", tuple(self.estimators))

    def rank_metrics(self) -> list[RankMetric]:
        """Every family of :data:`METRIC_FAMILIES` at K = 1..k_max, family-major (the cutoff columns)."""
        return [METRIC_FAMILIES[m](k) for m in self.metrics if m in METRIC_FAMILIES for k in range(1, self.k_max + 1)]

    def untruncated_metrics(self) -> list[RankMetric]:
        """The metrics of :data:`UNTRUNCATED_METRICS` asked for (one column each, after the cutoff columns)."""
        return [UNTRUNCATED_METRICS[m]() for m in self.metrics if m in UNTRUNCATED_METRICS]

    def columns(self) -> tuple[tuple[str, ...], np.ndarray]:
        """Metric name and cutoff K (0: no cutoff) of each result column: the cutoff families, then the rest."""
        cut = [m for m in self.metrics if m in METRIC_FAMILIES]
        untr = tuple(m for m in self.metrics if m in UNTRUNCATED_METRICS)
        families = tuple(m for m in cut for _ in range(self.k_max)) + untr
        ks = np.concatenate([np.tile(np.arange(1, self.k_max + 1), len(cut)), np.zeros(len(untr), dtype=int)])
        return families, ks


@dataclass(frozen=True, eq=False)
class StressResult:
    """Per-repeat estimates of one (recommender, scheme, n).

    Attributes
    ----------
    recommender, scheme : str
    n : int
        Sample-set size (n0 for ``adaptive``).
    n_items : int
        N given to the estimators.
    n_users : int
        M.
    families : tuple of str, shape (J,)
        Metric family of each metric column.
    ks : ndarray of int, shape (J,)
        Cutoff K of each metric column; 0 for a metric without a cutoff
        (AUC, untruncated AP; the tables show an empty ``k``).
    estimators : tuple of str, shape (E,)
        The estimators' names (:func:`estimator_names`).
    exact : ndarray, shape (J,)
        The exact metric (1/M) Σ_u F(R_u).
    estimates : ndarray, shape (repeats, E, J)
        NaN where an estimator does not apply (mappings for NDCG, AP, AUC
        and untruncated AP) or failed.
    true : ndarray of shape (J,) or None
        Simulations: the true metric (see :func:`true_metric_values`).
    shr : ndarray of shape (n,) or None
        Sampled hit ratio SHR@k, k = 1..n, averaged over repeats (not for ``adaptive``).
    mapping_values : dict of str -> ndarray (n,)
        f(k) of each mapping (beta@P with the mean fitted a over repeats).
    global_hr_at_f : dict of str -> ndarray (n,)
        The exact global hit ratio HR@⌊f(k)⌋ (Li & Jin Figure 7 compares it with ``shr``).
    mean_sample_size : float
        Mean sample-set size per user (n, or more for ``adaptive``).
    seconds : float
    lower, upper : ndarray of shape (repeats, E, J) or None
        Bootstrap percentile intervals (``StressConfig.n_boot > 0``), NaN
        where the estimate is.
    confidence : float
        Their nominal level (NaN without intervals).
    fitted_a : ndarray of shape (repeats,) or None
        beta@P's fitted a per repeat (Li & Jin's Table 2), where it was
        defined; None when beta@P is not run.
    n_iter : ndarray of int, shape (repeats, E), or None
        Iterations of each estimator's fit per repeat (EM, MES's L-BFGS,
        beta@P; 0 for the closed forms); None in results written before
        it was recorded.
    converged : ndarray of bool, shape (repeats, E), or None
        Whether each repeat's fit met its tolerance before its cap
        (``StressConfig.max_iter`` for EM; refitted bootstrap replicates
        included); None as for ``n_iter``.
    interval_kinds : tuple of str, shape (E,), or None
        Each estimator's :class:`~simrec.sampling.IntervalKind` value
        (``"sampling"``, or ``"sampling_biased"``: its interval's coverage
        is known to fail); None as for ``n_iter``.
    """

    recommender: str
    scheme: str
    n: int
    n_items: int
    n_users: int
    families: tuple[str, ...]
    ks: np.ndarray
    estimators: tuple[str, ...]
    exact: np.ndarray
    estimates: np.ndarray
    true: np.ndarray | None = None
    shr: np.ndarray | None = None
    mapping_values: dict[str, np.ndarray] = field(default_factory=dict)
    global_hr_at_f: dict[str, np.ndarray] = field(default_factory=dict)
    mean_sample_size: float = math.nan
    seconds: float = math.nan
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    confidence: float = math.nan
    fitted_a: np.ndarray | None = None
    n_iter: np.ndarray | None = None
    converged: np.ndarray | None = None
    interval_kinds: tuple[str, ...] | None = None

    @property
    def metric_labels(self) -> list[str]:
        return [f"{f}@{k}" if k else f for f, k in zip(self.families, self.ks)]


def estimator_items(ranks: RecommenderRanks) -> int:
    """N given to the estimators: round(mean_u N_u) (see the module's decisions)."""
    return int(np.rint(ranks.n_candidates.mean()))


def estimator_names(config: StressConfig, scheme: str) -> tuple[str, ...]:
    """Names of the estimators ``config`` runs under ``scheme``, in table order (from the objects)."""
    return tuple(e.name for e in _estimators_of(config, scheme))


#: Where the estimated priors are fitted (:attr:`StressConfig.prior_per`).
PRIOR_PER: tuple[str, ...] = ("repeat", "dataset")


def _pooled(
    estimators: tuple[Estimator, ...], draws: list[np.ndarray], sch: SamplingScheme, max_iter: int
) -> tuple[Estimator, ...]:
    """The estimators with each estimated prior fitted per dataset: averaged over the repeats' draws."""
    hists = [np.bincount(r - 1, minlength=sch.n) for r in draws]
    priors = cast(set[RankFit], {e.estimated_prior for e in estimators} - {None})
    pooled = {p: PooledPrior.pool(p, hists, sch, max_iter) for p in priors}
    return tuple(e.with_priors(pooled) for e in estimators)


def _estimators_of(config: StressConfig, scheme: str) -> tuple[Estimator | AdaptiveMLE, ...]:
    check_choice("scheme", scheme, SCHEMES)
    if scheme == "adaptive":
        return (AdaptiveMLE(),)
    return config.estimators


def metric_values(ranks: np.ndarray, f_top: np.ndarray) -> np.ndarray:
    """F_j(R) for each rank, shape (len(ranks), J), from the table of F on ranks 1..k_max (0 beyond)."""
    k_max = f_top.shape[0]
    out = np.zeros((ranks.size, f_top.shape[1]))
    top = ranks <= k_max
    out[top] = f_top[ranks[top] - 1]
    return out


def true_metric_values(ranks: RecommenderRanks, f_top: np.ndarray) -> np.ndarray:
    """The true metric of a simulation, shape (J,).

    .. math:: T_{true} = \\frac1M \\sum_u \\frac{1}{|Rel_u|} \\sum_{i \\in Rel_u} F(R_u(i))

    with Rel_u = truth_u − train_u and R_u(i) the rank of i among u's
    candidates: the expected metric of leave-one-out evaluation had the
    held-out item been drawn uniformly from the user's true relevant
    candidates instead of from the observed ones ("leave-one-out in the
    truth"). Users without a true relevant candidate (impossible when
    observed ⊆ truth) would be left out with a warning.
    """
    if not ranks.has_truth:
        raise ValueError(f"recommender {ranks.name!r} has no true ranks (not a simulation)")
    return _true_mean(ranks, metric_values(cast(np.ndarray, ranks.true_ranks), f_top))  # has_truth


def untruncated_values(metrics: list[RankMetric], ranks: np.ndarray, n_candidates: np.ndarray) -> np.ndarray:
    """F_j(R_u; N_u) of metrics without a cutoff (AUC, untruncated AP), shape (len(ranks), J).

    Each rank is scored on its own user's candidate count N_u (AUC = (N_u − R_u)/(N_u − 1), K&R eq. 7),
    one vectorized call per distinct N_u (a handful in practice; at most the spread of the profile sizes).

    Parameters
    ----------
    metrics : list of RankMetric
        E.g. :func:`simrec.sampling.auc`, :func:`simrec.sampling.average_precision` without ``k``.
    ranks, n_candidates : ndarray of int, shape (P,)
        Global ranks R and the candidate counts N_u they were ranked among (1 <= R <= N_u).

    Returns
    -------
    ndarray, shape (P, len(metrics))
    """
    r = np.asarray(ranks, dtype=np.float64)
    sizes, inverse = np.unique(np.asarray(n_candidates, dtype=np.int64), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(sizes.size + 1))
    out = np.empty((r.size, len(metrics)))
    for i, size in enumerate(sizes):
        idx = order[bounds[i] : bounds[i + 1]]
        for j, m in enumerate(metrics):
            out[idx, j] = m(r[idx], int(size))
    return out


def _true_mean(ranks: RecommenderRanks, vals: np.ndarray) -> np.ndarray:
    """(1/M) Σ_u mean over u's true relevant candidates of ``vals`` (one row per true rank), shape (J,)."""
    m = ranks.n_users
    true_users = cast(np.ndarray, ranks.true_users)  # the callers' ranks have the truth
    counts = np.bincount(true_users, minlength=m).astype(np.float64)
    sums = np.stack([np.bincount(true_users, weights=vals[:, j], minlength=m) for j in range(vals.shape[1])], 1)
    ok = counts > 0
    if not ok.all():
        warnings.warn(
            f"{int((~ok).sum())} user(s) have no true relevant candidate; left out of the true metric",
            RuntimeWarning,
            stacklevel=2,
        )
    return (sums[ok] / counts[ok, None]).mean(axis=0)


def _nan_mean_sd(x: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, sd (ddof=1; NaN below 2 values) and count of the non-NaN values along ``axis``."""
    ok = ~np.isnan(x)
    cnt = ok.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, x, 0).sum(axis=axis) / cnt
        dev = np.where(ok, x - np.expand_dims(mean, axis), 0)
        sd = np.sqrt((dev**2).sum(axis=axis) / (cnt - 1))
    return mean, np.where(cnt > 1, sd, np.nan), cnt


def expected_sampled_metrics(
    ranks: RecommenderRanks, metrics: list[RankMetric], sizes: tuple[int, ...], estimator: Estimator | None = None
) -> np.ndarray:
    r"""E[sampled metric], naive or corrected, under uniform sampling with replacement, for each n in ``sizes``.

    .. math:: E\Big[\frac1M \sum_u \hat F(r_u)\Big] = \frac1M \sum_u \sum_{k=0}^{n-1}
              \binom{n-1}{k} θ_u^k (1-θ_u)^{n-1-k} \hat F(k+1),\quad θ_u = \frac{R_u - 1}{N_u - 1}

    exactly (K&R Figure 6: the sampled metric as a function of the sample
    size; with n = N_u the naive one is the exact metric). F̂ = F on n items
    for ``estimator`` None or :class:`~simrec.sampling.Naive`; a correction
    whose F̂ does not depend on the data (:class:`~simrec.sampling.RankEstimate`,
    :class:`~simrec.sampling.BiasVariance` with the uniform prior, ...) gives
    K&R's corrected curve, F̂ computed for N = :func:`estimator_items`.
    Computed on the distinct θ_u, with P(r | θ) from
    :func:`simrec.sampling.log_rank_probabilities_from_shares`.

    Returns
    -------
    ndarray, shape (len(sizes), len(metrics))
    """
    theta, counts = np.unique((ranks.ranks - 1) / (ranks.n_candidates - 1.0), return_counts=True)
    out = np.empty((len(sizes), len(metrics)))
    for i, n in enumerate(sizes):
        n = check_int("sizes", n, low=2)
        if estimator is None or isinstance(estimator, Naive):
            table = metric_table(metrics, n)
        else:
            table = _fixed_table(estimator, estimator_items(ranks), n, tuple(metrics))
        acc = np.zeros(len(metrics))
        step = max(1, (1 << 21) // n)
        for t0 in range(0, theta.size, step):
            p = np.exp(log_rank_probabilities_from_shares(theta[t0 : t0 + step], n))
            acc += counts[t0 : t0 + step] @ (p @ table)
        out[i] = acc / ranks.n_users
    return out


#: Per-process memo of :func:`_fixed_table` (recommenders of one source share N, n and the metrics).
_FIXED_TABLES: dict[tuple, np.ndarray] = {}


def _fixed_table(estimator: Estimator, n_items: int, n: int, metrics: tuple[RankMetric, ...]) -> np.ndarray:
    """F̂ (n, J) of a data-independent correction (:func:`simrec.sampling.fixed_corrections`), once per process."""
    key = (estimator, n_items, n, metrics)
    if key not in _FIXED_TABLES:
        if len(_FIXED_TABLES) >= 32:
            _FIXED_TABLES.pop(next(iter(_FIXED_TABLES)))
        table = np.array(fixed_corrections(estimator, SamplingScheme.cached(n_items, n), metrics))
        table.setflags(write=False)
        _FIXED_TABLES[key] = table
    return _FIXED_TABLES[key]


#: Per-process caches of :func:`~simrec.sampling.estimate_histograms` (data-independent F̂ such as CLS), one per
#: (scheme, metrics): tasks of one process with the same scheme and metrics (other recommenders) reuse them.
_CACHES: dict[tuple, dict] = {}


def _shared_cache(scheme: SamplingScheme, metrics: tuple[RankMetric, ...]) -> dict:
    key = (scheme.n_items, scheme.n, scheme.replace, scheme.tail_cutoff, metrics)
    if key not in _CACHES:
        if len(_CACHES) >= 8:
            _CACHES.pop(next(iter(_CACHES)))
        _CACHES[key] = {}
    return _CACHES[key]


def _repeat_estimates(
    estimators: tuple[Estimator, ...],
    config: StressConfig,
    h: np.ndarray,
    sch: SamplingScheme,
    groups: list[tuple[list[RankMetric], dict]],
    fit_a: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float | None]:
    """One repeat without intervals from its histogram ``h``: estimates (E, J), iterations, convergence, beta@P's a."""
    fits: dict | None = {} if len(groups) > 1 else None  # the EM fits of this repeat's rows serve both column groups
    status = FitStatus.new(1, len(estimators))  # filled alike by both column groups
    kw: dict[str, Any] = {"max_iter": config.max_iter, "fits": fits, "status": status}
    vals = np.concatenate(
        [estimate_histograms(estimators, h[None, :], sch, g, cache=cache, **kw) for g, cache in groups], axis=2
    )
    converged = cast(np.ndarray, status.converged.all(axis=0))  # (E,)
    return vals[0], status.n_iter[0], converged, _beta_a(h, sch.n_items, sch.n) if fit_a else None


def _beta_a(h: np.ndarray, N: int, n: int) -> float | None:
    """beta@P's fitted a on the sampled ranks of histogram ``h``; None where it diverges (every rank is n)."""
    try:
        return float(cast(float, fit_beta_mapping(np.repeat(np.arange(1, n + 1), h), N, n).a))  # a fitted beta@P's a
    except ValueError:
        return None


def _pair_histogram(ad: AdaptiveRanks, N: int) -> bytes:
    """The distinct (n_u, r_u) pairs of adaptive ranks and their counts, as bytes (what mle_adaptive depends on)."""
    pairs, counts = np.unique(ad.sizes.astype(np.int64) * (N + 1) + ad.ranks, return_counts=True)
    return pairs.tobytes() + counts.astype(np.int64).tobytes()


def _adaptive_row(
    ad: AdaptiveRanks, N: int, config: StressConfig, f_top: np.ndarray, untr_table: np.ndarray | None
) -> tuple[np.ndarray, int, bool]:
    """AdaptiveMLE's estimates (J,) of one repeat without intervals, its EM's iterations and convergence."""
    d = mle_adaptive(ad.ranks, ad.sizes, N, replace=ad.replace, max_iter=config.max_iter)
    pi = d.probabilities
    row = pi[: config.k_max] @ f_top
    if untr_table is not None:
        row = np.concatenate([row, pi @ untr_table])
    return row, d.n_iter, d.converged


def rank_sampler(ranks: RecommenderRanks, scheme: str, n: int, gen: np.random.Generator) -> Callable[[], np.ndarray]:
    """One draw of the sampled ranks (M,) per call under a fixed-size ``scheme``, each user with its own N_u.

    :func:`run_stress` draws repeat k's sampled ranks as the (k+1)-th call on a fresh generator of its ``rng``
    (nothing else draws from it), so :func:`simrec.stress.user_sampling.run_user_sampling` replays them.
    """
    if scheme == "binomial":
        return lambda: sample_ranks_binomial(ranks.ranks, ranks.n_candidates, n, rng=gen)
    if scheme == "hypergeometric":
        return lambda: sample_ranks_hypergeometric(ranks.ranks, ranks.n_candidates, n, rng=gen)
    return lambda: sample_ranks_from_shares(ranks.popularity_shares, n, rng=gen)


def run_stress(
    ranks: RecommenderRanks,
    scheme: str,
    n: int,
    config: StressConfig | None = None,
    rng: RNGLike = None,
    progress: Callable[[int], None] | None = None,
) -> StressResult:
    """Repeat sampled evaluation of one recommender and run every estimator.

    Parameters
    ----------
    ranks : RecommenderRanks
        Global ranks of the held-out items (and, in simulations, the truth's).
    scheme : {"binomial", "hypergeometric", "popularity", "adaptive"}
        See the module docstring. ``popularity`` needs ``ranks.popularity_shares``.
    n : int
        Sample-set size (held-out item + n − 1 negatives), 2 <= n <= N
        (:func:`estimator_items`; ``hypergeometric``: also <= every N_u); the
        initial size n0 for ``adaptive`` (<= min(adaptive_n_max, N)).
    config : StressConfig, optional
    rng : Generator or seed
        Used for the draws only, repeat after repeat.
    progress : callable, optional
        Called as ``progress(repeats_done)`` after every repeat (e.g. to
        advance a progress bar from inside a task); it must not draw random
        numbers. Nothing it does changes the results.

    Returns
    -------
    StressResult
    """
    config = StressConfig() if config is None else config
    if not isinstance(config, StressConfig):
        raise TypeError(f"`config` must be a StressConfig; got {type(config).__name__}")
    if not isinstance(ranks, RecommenderRanks):
        raise TypeError(f"`ranks` must be a RecommenderRanks; got {type(ranks).__name__}")
    check_choice("scheme", scheme, SCHEMES)
    N = estimator_items(ranks)
    if config.k_max > N:
        raise ValueError(f"`k_max` must be <= N = {N} (the estimators' catalogue size); got {config.k_max}")
    if scheme == "popularity" and ranks.popularity_shares is None:
        raise ValueError(f"scheme 'popularity' needs popularity shares; {ranks.name!r} has none")
    gen = as_generator(rng)
    t0 = time.perf_counter()
    M = ranks.n_users
    with single_threaded_blas():
        # the first draw checks n against the sampler's rules before anything is set up
        if scheme == "adaptive":
            n_max = min(config.adaptive_n_max, N)

            def draw_adaptive() -> AdaptiveRanks:
                return sample_ranks_adaptive(ranks.ranks, ranks.n_candidates, n, n_max=n_max, rng=gen)

            first_adaptive = draw_adaptive()
            n = first_adaptive.n0
        else:
            sch = SamplingScheme.cached(N, n, replace=scheme != "hypergeometric")  # checks 2 <= n <= N
            n = sch.n
            draw = rank_sampler(ranks, scheme, n, gen)
            first = draw()
        metrics = config.rank_metrics()  # cutoff columns: first J_cut
        untr = config.untruncated_metrics()  # then the metrics without a cutoff
        families, ks = config.columns()
        f_top = metric_table(metrics, config.k_max) if metrics else np.zeros((config.k_max, 0))
        exact = np.concatenate(
            [
                metric_values(ranks.ranks, f_top).mean(axis=0),
                untruncated_values(untr, ranks.ranks, ranks.n_candidates).mean(axis=0),
            ]
        )
        true = None
        if ranks.has_truth:
            true_ranks, true_users = cast(np.ndarray, ranks.true_ranks), cast(np.ndarray, ranks.true_users)  # has_truth
            tv = np.hstack(
                [
                    metric_values(true_ranks, f_top),
                    untruncated_values(untr, true_ranks, ranks.n_candidates[true_users]),
                ]
            )
            true = _true_mean(ranks, tv)
        objects = _estimators_of(config, scheme)
        names = tuple(e.name for e in objects)
        kinds = tuple(e.interval_kind.value for e in objects)
        est = np.full((config.repeats, len(names), len(families)), np.nan)
        lower = np.full_like(est, np.nan) if config.n_boot else None
        upper = np.full_like(est, np.nan) if config.n_boot else None
        n_iter = np.zeros((config.repeats, len(names)), dtype=np.int64)
        converged = np.ones((config.repeats, len(names)), dtype=bool)

        if scheme == "adaptive":
            total = 0.0
            untr_table = metric_table(untr, N) if untr else None
            boot_gen = gen.spawn(1)[0] if config.n_boot else None
            space_adaptive = REPEAT_MEMO.namespace(
                ("adaptive", N, first_adaptive.replace, config.max_iter, tuple(metrics), tuple(untr))
            )
            for rep in range(config.repeats):
                ad = first_adaptive if rep == 0 else draw_adaptive()
                total += ad.sizes.mean()
                if config.n_boot:
                    with warnings.catch_warnings():  # recorded in the result (converged, NaN intervals at M < 2)
                        warnings.simplefilter("ignore", RuntimeWarning)
                        ests = fit_adaptive(
                            ad,
                            N,
                            metrics + untr,
                            n_boot=config.n_boot,
                            confidence=config.confidence,
                            max_iter=config.max_iter,
                            rng=boot_gen,
                        )
                    est[rep, 0] = [e.estimate for e in ests]
                    cast(np.ndarray, lower)[rep, 0] = [e.lower for e in ests]  # set with n_boot
                    cast(np.ndarray, upper)[rep, 0] = [e.upper for e in ests]
                    n_iter[rep, 0], converged[rep, 0] = ests[0].n_iter, ests[0].converged
                else:

                    def adaptive_row(ad: AdaptiveRanks = ad) -> tuple[np.ndarray, int, bool]:
                        return _adaptive_row(ad, N, config, f_top, untr_table)

                    row, n_iter[rep, 0], converged[rep, 0] = REPEAT_MEMO.get_or_compute(
                        space_adaptive, _pair_histogram(ad, N), adaptive_row
                    )
                    est[rep, 0] = row
                if progress is not None:
                    progress(rep + 1)
            return StressResult(
                ranks.name,
                scheme,
                n,
                N,
                M,
                families,
                ks,
                names,
                exact,
                est,
                true,
                mean_sample_size=total / config.repeats,
                seconds=time.perf_counter() - t0,
                lower=lower,
                upper=upper,
                confidence=config.confidence,
                n_iter=n_iter,
                converged=converged,
                interval_kinds=kinds,
            )

        estimators = config.estimators
        draws = None
        if config.prior_per == "dataset":  # every repeat drawn first (the same draws), the priors averaged over them
            draws = [first] + [draw() for _ in range(config.repeats - 1)]
            estimators = _pooled(estimators, draws, sch, config.max_iter)
            names = tuple(e.name for e in estimators)
        recall_cols = np.flatnonzero(np.asarray(families) == "recall")
        maps = {"linear": linear_mapping(N, n).values, "bound": bound_mapping(N, n).values}
        for e in config.estimators:
            if isinstance(e, MappingEstimator) and e.kind == "beta":
                maps[f"beta@{e.a:g}"] = beta_mapping(N, n, cast(float, e.a)).values  # kind "beta" has its a
        beta = any(isinstance(e, MappingEstimator) and e.kind == "beta@P" for e in config.estimators)
        hist_sum = np.zeros(n)
        beta_a: list[float] = []
        groups = [(g, _shared_cache(sch, tuple(g))) for g in (metrics, untr) if g]  # cutoff columns, then the rest
        boot_gen = gen.spawn(1)[0] if config.n_boot else None  # the draws of r stay those of n_boot = 0
        fit_a = bool(beta and recall_cols.size)
        space = (
            REPEAT_MEMO.namespace(
                (
                    "fixed",
                    N,
                    n,
                    sch.replace,
                    sch.tail_cutoff,
                    tuple(metrics),
                    tuple(untr),
                    objects,
                    config.max_iter,
                    fit_a,
                )
            )
            if draws is None
            else None
        )
        for rep in range(config.repeats):
            r = draws[rep] if draws is not None else first if rep == 0 else draw()
            h = np.bincount(r - 1, minlength=n)
            hist_sum += h
            if config.n_boot:  # the library's bootstrap (linearised for the fitted estimators), same numbers
                status = FitStatus.new(1 + config.n_boot, len(names))  # filled alike by both column groups
                kw: dict[str, Any] = {
                    "max_iter": config.max_iter,
                    "fits": {} if len(groups) > 1 else None,
                    "status": status,
                }
                boot = bootstrap_histograms(h, config.n_boot, boot_gen)
                vals = np.concatenate(
                    [bootstrap_estimates(estimators, h, boot, sch, g, cache=cache, **kw) for g, cache in groups],
                    axis=2,
                )
                est[rep] = vals[0]
                n_iter[rep], converged[rep] = status.n_iter[0], status.converged.all(axis=0)
                if M >= 2:  # one user: every replicate is that user, a zero-width interval; NaN
                    cast(np.ndarray, lower)[rep], cast(np.ndarray, upper)[rep] = percentile_interval(  # set with n_boot
                        vals[1:], config.confidence
                    )
                a = _beta_a(h, N, n) if fit_a else None
            else:  # the same histogram gives the same numbers: computed once per process (.memo)
                compute = lambda h=h: _repeat_estimates(estimators, config, h, sch, groups, fit_a)  # noqa: E731
                if space is None:  # priors pooled over this task's draws: nothing to share
                    est[rep], n_iter[rep], converged[rep], a = compute()
                else:
                    est[rep], n_iter[rep], converged[rep], a = REPEAT_MEMO.get_or_compute(space, h.tobytes(), compute)
            if a is not None:
                beta_a.append(a)
            if progress is not None:
                progress(rep + 1)
        if beta_a:
            maps["beta@P"] = beta_mapping(N, n, float(np.mean(beta_a))).values
        fitted_a = np.asarray(beta_a) if beta else None
    sorted_r = np.sort(ranks.ranks)
    # HR@f(k) = share of R <= f(k). f(k) is often an integer in exact arithmetic (beta@1: k(N-1)/n + 1), so
    # floor it with a relative slack of 1e-9: rounding to 36.999999999 must not drop the users at rank 37
    ghr = {
        k: np.searchsorted(sorted_r, np.floor(f + 1e-9 * np.maximum(f, 1.0)), side="right") / M for k, f in maps.items()
    }
    return StressResult(
        ranks.name,
        scheme,
        n,
        N,
        M,
        families,
        ks,
        names,
        exact,
        est,
        true,
        shr=np.cumsum(hist_sum) / (M * config.repeats),
        mapping_values=maps,
        global_hr_at_f=ghr,
        mean_sample_size=float(n),
        seconds=time.perf_counter() - t0,
        lower=lower,
        upper=upper,
        confidence=config.confidence,
        fitted_a=fitted_a,
        n_iter=n_iter,
        converged=converged,
        interval_kinds=kinds,
    )
