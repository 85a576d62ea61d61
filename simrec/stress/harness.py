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

The module is the public entry, :func:`run_stress`; its phases live in modules of one theme (issue 23):
:mod:`.spec` (the configuration and result), :mod:`.values` (exact, true and expected metric values) and
:mod:`.estimation` (the draws and the repeats of each scheme). Every name importable from here before the
split still is.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice
from simrec.sampling import single_threaded_blas
from simrec.stress.estimation import adaptive_cell, fixed_cell, rank_sampler
from simrec.stress.sources import RecommenderRanks
from simrec.stress.spec import (
    DEFAULT_ESTIMATORS,
    METRIC_FAMILIES,
    METRIC_NAMES,
    PRIOR_PER,
    SCHEMES,
    UNTRUNCATED_METRICS,
    StressConfig,
    StressResult,
    estimator_items,
    estimator_names,
)
from simrec.stress.values import (
    expected_sampled_metrics,
    metric_values,
    true_metric_values,
    untruncated_values,
)

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
    "metric_values",
    "true_metric_values",
    "untruncated_values",
    "expected_sampled_metrics",
    "run_stress",
    "rank_sampler",
]


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
    with single_threaded_blas():
        if scheme == "adaptive":
            return adaptive_cell(ranks, n, N, config, gen, progress, t0)
        return fixed_cell(ranks, scheme, n, N, config, gen, progress, t0)
