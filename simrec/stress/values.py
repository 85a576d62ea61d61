"""Exact, true and expected metric values of global ranks (simrec issue 6; split from :mod:`.harness`, issue 23).

F(R) of cutoff metrics from their table on ranks 1..k_max, of metrics
without a cutoff on each user's N_u, the true metric of a simulation
("leave-one-out in the truth") and the exact expectation of a sampled metric
under uniform sampling with replacement (K&R Figure 6).
"""

from __future__ import annotations

import warnings
from typing import cast

import numpy as np

from simrec._validation import check_int
from simrec.sampling import (
    Estimator,
    Naive,
    RankMetric,
    SamplingScheme,
    fixed_corrections,
    log_rank_probabilities_from_shares,
    metric_table,
)
from simrec.stress.sources import RecommenderRanks
from simrec.stress.spec import estimator_items

__all__ = ["metric_values", "true_metric_values", "untruncated_values", "expected_sampled_metrics"]


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
