"""One stress cell's repeats: draws and estimates per scheme (simrec issue 6; split from :mod:`.harness`, issue 23).

The phases of :func:`~simrec.stress.harness.run_stress` after validation:
the draws of the sampled ranks (:func:`rank_sampler`), the metric columns
(:func:`metric_columns`), the repeats of the ``adaptive`` scheme
(:func:`adaptive_cell`) and of the fixed-size schemes (:func:`fixed_cell`),
each repeat memoised by its histogram (:mod:`.memo`), with the per-process
caches of the data-independent corrections. The decisions are in
:mod:`.harness`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import numpy as np

from simrec.sampling import (
    AdaptiveRanks,
    Estimator,
    FitStatus,
    MappingEstimator,
    PooledPrior,
    RankMetric,
    SamplingScheme,
    beta_mapping,
    bootstrap_estimates,
    bootstrap_histograms,
    bound_mapping,
    estimate_histograms,
    fit_adaptive,
    fit_beta_mapping,
    linear_mapping,
    metric_table,
    mle_adaptive,
    percentile_interval,
    sample_ranks_adaptive,
    sample_ranks_binomial,
    sample_ranks_from_shares,
    sample_ranks_hypergeometric,
)
from simrec.sampling.histograms import RankFit
from simrec.stress.memo import REPEAT_MEMO
from simrec.stress.sources import RecommenderRanks
from simrec.stress.spec import StressConfig, StressResult, _estimators_of
from simrec.stress.values import _true_mean, metric_values, untruncated_values

__all__ = ["Columns", "metric_columns", "rank_sampler", "adaptive_cell", "fixed_cell"]


def _pooled(
    estimators: tuple[Estimator, ...], draws: list[np.ndarray], sch: SamplingScheme, max_iter: int
) -> tuple[Estimator, ...]:
    """The estimators with each estimated prior fitted per dataset: averaged over the repeats' draws."""
    hists = [np.bincount(r - 1, minlength=sch.n) for r in draws]
    priors = cast(set[RankFit], {e.estimated_prior for e in estimators} - {None})
    pooled = {p: PooledPrior.pool(p, hists, sch, max_iter) for p in priors}
    return tuple(e.with_priors(pooled) for e in estimators)


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


@dataclass(frozen=True)
class Columns:
    """The metric columns of one cell and their exact and true values.

    ``metrics`` are the cutoff columns (the first ``len(metrics)``), ``untr`` the metrics without a cutoff after
    them; ``families``/``ks`` name every column (:meth:`StressConfig.columns`); ``f_top`` (k_max, len(metrics)) is
    F on ranks 1..k_max; ``exact`` (J,) the metric on the global ranks, ``true`` (J,) the true metric or None.
    """

    metrics: list[RankMetric]
    untr: list[RankMetric]
    families: tuple[str, ...]
    ks: np.ndarray
    f_top: np.ndarray
    exact: np.ndarray
    true: np.ndarray | None


def metric_columns(ranks: RecommenderRanks, config: StressConfig) -> Columns:
    """The columns of ``config`` on ``ranks``: the metrics, F's table, the exact and (simulations) true values."""
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
    return Columns(metrics, untr, families, ks, f_top, exact, true)


@dataclass(frozen=True)
class _Repeats:
    """What every repeat records, filled in place: estimates (R, E, J), intervals (with ``n_boot``), fit status."""

    est: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    n_iter: np.ndarray
    converged: np.ndarray

    @classmethod
    def empty(cls, config: StressConfig, n_estimators: int, n_columns: int) -> _Repeats:
        est = np.full((config.repeats, n_estimators, n_columns), np.nan)
        return cls(
            est,
            np.full_like(est, np.nan) if config.n_boot else None,
            np.full_like(est, np.nan) if config.n_boot else None,
            np.zeros((config.repeats, n_estimators), dtype=np.int64),
            np.ones((config.repeats, n_estimators), dtype=bool),
        )

    def result_fields(self) -> dict[str, Any]:
        """The keyword arguments of :class:`StressResult` these records fill."""
        return {"lower": self.lower, "upper": self.upper, "n_iter": self.n_iter, "converged": self.converged}


def _adaptive_bootstrap_repeat(
    rec: _Repeats, rep: int, ad: AdaptiveRanks, N: int, cols: Columns, config: StressConfig, boot_gen: Any
) -> None:
    """Repeat ``rep`` of the adaptive scheme with intervals (:func:`simrec.sampling.fit_adaptive`), into ``rec``."""
    with warnings.catch_warnings():  # recorded in the result (converged, NaN intervals at M < 2)
        warnings.simplefilter("ignore", RuntimeWarning)
        ests = fit_adaptive(
            ad,
            N,
            cols.metrics + cols.untr,
            n_boot=config.n_boot,
            confidence=config.confidence,
            max_iter=config.max_iter,
            rng=boot_gen,
        )
    rec.est[rep, 0] = [e.estimate for e in ests]
    cast(np.ndarray, rec.lower)[rep, 0] = [e.lower for e in ests]  # set with n_boot
    cast(np.ndarray, rec.upper)[rep, 0] = [e.upper for e in ests]
    rec.n_iter[rep, 0], rec.converged[rep, 0] = ests[0].n_iter, ests[0].converged


def adaptive_cell(
    ranks: RecommenderRanks,
    n: int,
    N: int,
    config: StressConfig,
    gen: np.random.Generator,
    progress: Callable[[int], None] | None,
    t0: float,
) -> StressResult:
    """The repeats of the ``adaptive`` scheme (AdaptiveMLE only) from initial size ``n``, after validation."""
    n_max = min(config.adaptive_n_max, N)

    def draw_adaptive() -> AdaptiveRanks:
        return sample_ranks_adaptive(ranks.ranks, ranks.n_candidates, n, n_max=n_max, rng=gen)

    first = draw_adaptive()  # checks n against the sampler's rules before anything is set up
    cols = metric_columns(ranks, config)
    objects = _estimators_of(config, "adaptive")
    rec = _Repeats.empty(config, len(objects), len(cols.families))
    total = 0.0
    untr_table = metric_table(cols.untr, N) if cols.untr else None
    boot_gen = gen.spawn(1)[0] if config.n_boot else None
    space = REPEAT_MEMO.namespace(
        ("adaptive", N, first.replace, config.max_iter, tuple(cols.metrics), tuple(cols.untr))
    )
    for rep in range(config.repeats):
        ad = first if rep == 0 else draw_adaptive()
        total += ad.sizes.mean()
        if config.n_boot:
            _adaptive_bootstrap_repeat(rec, rep, ad, N, cols, config, boot_gen)
        else:
            compute = partial(_adaptive_row, ad, N, config, cols.f_top, untr_table)
            row, rec.n_iter[rep, 0], rec.converged[rep, 0] = REPEAT_MEMO.get_or_compute(
                space, _pair_histogram(ad, N), compute
            )
            rec.est[rep, 0] = row
        if progress is not None:
            progress(rep + 1)
    return StressResult(
        ranks.name,
        "adaptive",
        first.n0,
        N,
        ranks.n_users,
        cols.families,
        cols.ks,
        tuple(e.name for e in objects),
        cols.exact,
        rec.est,
        cols.true,
        mean_sample_size=total / config.repeats,
        seconds=time.perf_counter() - t0,
        confidence=config.confidence,
        interval_kinds=tuple(e.interval_kind.value for e in objects),
        **rec.result_fields(),
    )


def _mappings(estimators: tuple[Estimator, ...], N: int, n: int) -> dict[str, np.ndarray]:
    """f(k) of Li & Jin's data-independent mappings (linear, bound, each beta@a listed) on N items and n samples."""
    maps = {"linear": linear_mapping(N, n).values, "bound": bound_mapping(N, n).values}
    for e in estimators:
        if isinstance(e, MappingEstimator) and e.kind == "beta":
            maps[f"beta@{e.a:g}"] = beta_mapping(N, n, cast(float, e.a)).values  # kind "beta" has its a
    return maps


def _global_hr_at_f(ranks: RecommenderRanks, maps: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """HR@f(k) of the global ranks for each mapping f."""
    sorted_r = np.sort(ranks.ranks)
    # HR@f(k) = share of R <= f(k). f(k) is often an integer in exact arithmetic (beta@1: k(N-1)/n + 1), so
    # floor it with a relative slack of 1e-9: rounding to 36.999999999 must not drop the users at rank 37
    return {
        k: np.searchsorted(sorted_r, np.floor(f + 1e-9 * np.maximum(f, 1.0)), side="right") / ranks.n_users
        for k, f in maps.items()
    }


def _bootstrap_repeat(
    rec: _Repeats,
    rep: int,
    estimators: tuple[Estimator, ...],
    h: np.ndarray,
    sch: SamplingScheme,
    groups: list[tuple[list[RankMetric], dict]],
    config: StressConfig,
    boot_gen: Any,
    n_users: int,
) -> None:
    """Repeat ``rep`` of a fixed-size scheme with intervals, into ``rec``: the library's bootstrap (linearised for the
    fitted estimators), the same estimates as without intervals."""
    status = FitStatus.new(1 + config.n_boot, len(estimators))  # filled alike by both column groups
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
    rec.est[rep] = vals[0]
    rec.n_iter[rep], rec.converged[rep] = status.n_iter[0], status.converged.all(axis=0)
    if n_users >= 2:  # one user: every replicate is that user, a zero-width interval; NaN
        cast(np.ndarray, rec.lower)[rep], cast(np.ndarray, rec.upper)[rep] = percentile_interval(  # set with n_boot
            vals[1:], config.confidence
        )


def fixed_cell(
    ranks: RecommenderRanks,
    scheme: str,
    n: int,
    N: int,
    config: StressConfig,
    gen: np.random.Generator,
    progress: Callable[[int], None] | None,
    t0: float,
) -> StressResult:
    """The repeats of a fixed-size ``scheme`` (binomial, hypergeometric, popularity) of size ``n``, after validation."""
    sch = SamplingScheme.cached(N, n, replace=scheme != "hypergeometric")  # checks 2 <= n <= N
    n = sch.n
    draw = rank_sampler(ranks, scheme, n, gen)
    first = draw()  # the first draw checks n against the sampler's rules before anything is set up
    cols = metric_columns(ranks, config)
    objects = _estimators_of(config, scheme)
    rec = _Repeats.empty(config, len(objects), len(cols.families))
    estimators = config.estimators
    draws = None
    if config.prior_per == "dataset":  # every repeat drawn first (the same draws), the priors averaged over them
        draws = [first] + [draw() for _ in range(config.repeats - 1)]
        estimators = _pooled(estimators, draws, sch, config.max_iter)
    recall_cols = np.flatnonzero(np.asarray(cols.families) == "recall")
    maps = _mappings(config.estimators, N, n)
    beta = any(isinstance(e, MappingEstimator) and e.kind == "beta@P" for e in config.estimators)
    hist_sum = np.zeros(n)
    beta_a: list[float] = []
    groups = [(g, _shared_cache(sch, tuple(g))) for g in (cols.metrics, cols.untr) if g]  # cutoff columns, then rest
    boot_gen = gen.spawn(1)[0] if config.n_boot else None  # the draws of r stay those of n_boot = 0
    fit_a = bool(beta and recall_cols.size)
    space = None  # priors pooled over this task's draws: nothing to share
    if draws is None:
        space = REPEAT_MEMO.namespace(
            (
                "fixed",
                N,
                n,
                sch.replace,
                sch.tail_cutoff,
                tuple(cols.metrics),
                tuple(cols.untr),
                objects,
                config.max_iter,
                fit_a,
            )
        )
    for rep in range(config.repeats):
        r = draws[rep] if draws is not None else first if rep == 0 else draw()
        h = np.bincount(r - 1, minlength=n)
        hist_sum += h
        if config.n_boot:
            _bootstrap_repeat(rec, rep, estimators, h, sch, groups, config, boot_gen, ranks.n_users)
            a = _beta_a(h, N, n) if fit_a else None
        else:  # the same histogram gives the same numbers: computed once per process (.memo)
            compute = partial(_repeat_estimates, estimators, config, h, sch, groups, fit_a)
            out = compute() if space is None else REPEAT_MEMO.get_or_compute(space, h.tobytes(), compute)
            rec.est[rep], rec.n_iter[rep], rec.converged[rep], a = out
        if a is not None:
            beta_a.append(a)
        if progress is not None:
            progress(rep + 1)
    if beta_a:
        maps["beta@P"] = beta_mapping(N, n, float(np.mean(beta_a))).values
    return StressResult(
        ranks.name,
        scheme,
        n,
        N,
        ranks.n_users,
        cols.families,
        cols.ks,
        tuple(e.name for e in estimators),
        cols.exact,
        rec.est,
        cols.true,
        shr=np.cumsum(hist_sum) / (ranks.n_users * config.repeats),
        mapping_values=maps,
        global_hr_at_f=_global_hr_at_f(ranks, maps),
        mean_sample_size=float(n),
        seconds=time.perf_counter() - t0,
        confidence=config.confidence,
        fitted_a=np.asarray(beta_a) if beta else None,
        interval_kinds=tuple(e.interval_kind.value for e in objects),
        **rec.result_fields(),
    )
