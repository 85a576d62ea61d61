"""What a stress cell computes and what it returns (simrec issue 6; split from :mod:`.harness`, issue 23).

The schemes, metric families and default estimators of the harness,
:class:`StressConfig` (what to compute for each recommender, scheme and n),
:class:`StressResult` (one cell's repeats) and the estimators a configuration
runs under each scheme. The decisions behind them are in :mod:`.harness`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simrec._validation import check_choice, check_in_range, check_int
from simrec.sampling import (
    BETA_A_VALUES,
    MES,
    MLE,
    AdaptiveMLE,
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
    RankMetric,
    WeightedMLE,
    auc,
    average_precision,
    ndcg,
    recall,
)
from simrec.stress.sources import RecommenderRanks

__all__ = [
    "SCHEMES",
    "DEFAULT_ESTIMATORS",
    "METRIC_FAMILIES",
    "UNTRUNCATED_METRICS",
    "METRIC_NAMES",
    "PRIOR_PER",
    "StressConfig",
    "StressResult",
    "estimator_items",
    "estimator_names",
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


def _estimators_of(config: StressConfig, scheme: str) -> tuple[Estimator | AdaptiveMLE, ...]:
    check_choice("scheme", scheme, SCHEMES)
    if scheme == "adaptive":
        return (AdaptiveMLE(),)
    return config.estimators
