"""Both errors at once in the harness: MNAR corrections on sampled ranks (issue 25, "combined with sampled metrics").

A sampled evaluation of MNAR test data is off twice: its test pairs are a
missing-not-at-random subset of the relevant ones, and each test pair is
ranked only among n - 1 sampled negatives. :class:`SampledDesign` (the
``[debias.sampled]`` section of a run scenario) crosses, per recommender,

* the weighting of the observed test pairs (the missing-data correction):
  ``naive`` — each user's observed pairs weighed equally, :math:`w_{ui} =
  1/|S_u|` (today's sampled number) — and, per propensity kind,
  ``SNIPS`` — :math:`w_{ui} = (1/p_{ui}) / \\hat n_u`, :math:`\\hat n_u =
  \\sum_{S_u} 1/p` (Yang et al. 2018's SNIPS, per user, then averaged over
  users), a pair with a NaN propensity weighing 0;
* with the sampled-rank estimator (the sampling-error correction,
  :mod:`simrec.sampling`): ``naive`` (:math:`F(r)` read at the sampled rank),
  ``bv`` (Krichene & Rendle's BV γ, uniform prior), ``bv_mle`` (BV γ with the
  *weighted* prior :math:`\\hat\\pi^w`) and ``mle`` (the weighted
  rank-distribution MLE), each through
  :class:`~simrec.debias.WeightedSampledRanks` (whose docstring derives why the
  weighted histogram and prior are the consistent ones).

Units, ranks and target. Every observed test pair (u, i) is a unit: its global
rank :math:`R_{ui}` among the user's candidates (the :math:`N_u` items it has
not trained on), from the recommender's scores with random tie-breaks
(:func:`simrec.sampling.global_ranks`, as ``simrec stress`` ranks), then its
sampled rank :math:`r_{ui}` among n uniformly sampled candidates
(:func:`simrec.sampling.sample_ranks_binomial` or ``_hypergeometric`` with the
pair's own :math:`N_u`; the estimators take :math:`N = \\mathrm{round}(\\bar
N_u)`, the stress harness's decision). Because the weights sum to 1 in every
user, the estimate is a mean over users of each user's weighted mean of
:math:`\\hat F(r)`, and its target is Yang et al.'s per-user form
:math:`\\frac{1}{|U|} \\sum_u \\frac{1}{n_u} \\sum_{i \\in \\mathrm{Rel}_u}
F(R_{ui})` over the true relevant pairs' global ranks (the ``truth`` column;
for ``recall`` it is recall@K of the full ranking, for ``ndcg`` the per-item
DCG@K averaged over the relevant items, :class:`~simrec.debias.MeanDCG`).
With no sampling (n = N, sampled = global ranks) ``SNIPS+naive`` is
:class:`~simrec.debias.SNIPS` of that metric exactly (tested).

Intervals: for the per-rank corrections (``naive``, ``bv``, ``bv_mle``) the
normal interval over users of the per-user values (the prior held fixed);
``mle`` is not a mean over users: no interval (NaN), as the stratified
estimator. The rows join the harness's tidy rows with metric label
``"sampled<n>:<F>"`` (e.g. ``sampled100:Recall@10``) and estimator label
``"<weighting>+<estimator>"`` (e.g. ``SNIPS+BV_MLE``), so
:func:`~simrec.debias.summarize_debias` and
:func:`~simrec.debias.order_accuracy` read them unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:  # simrec.sampling is imported when the rows are computed: ``simrec run`` without them never needs it
    from simrec.debias.sampled import WeightedSampledRanks
    from simrec.sampling import RankMetric

__all__ = ["SampledDesign", "SAMPLED_ESTIMATORS", "SAMPLED_METRICS", "pair_global_ranks", "sampled_rows"]

#: Per-pair metric functions F(R) by scenario name: :func:`simrec.sampling.recall` and :func:`simrec.sampling.ndcg`.
SAMPLED_METRICS: tuple[str, ...] = ("recall", "ndcg")


def _rank_metric(name: str, k: int) -> RankMetric:
    from simrec import sampling

    return getattr(sampling, name)(k)


class _SampledEstimator(Protocol):
    """An estimator of :data:`SAMPLED_ESTIMATORS`: (value, per-pair F̂ or None) from weighted sampled ranks."""

    @property
    def label(self) -> str: ...

    def estimate(
        self, wsr: WeightedSampledRanks, metric: RankMetric, gamma: float
    ) -> tuple[float, np.ndarray | None]: ...


@dataclass(frozen=True)
class _Naive:
    label = "naive"

    def estimate(self, wsr: WeightedSampledRanks, metric: RankMetric, gamma: float) -> tuple[float, np.ndarray]:
        from simrec.sampling import naive

        corr = naive(metric, wsr.scheme)
        return wsr.correction_mean(corr), corr.values


@dataclass(frozen=True)
class _BV:
    label = "BV"

    def estimate(self, wsr: WeightedSampledRanks, metric: RankMetric, gamma: float) -> tuple[float, np.ndarray]:
        from simrec.sampling import bias_variance

        corr = bias_variance(metric, wsr.scheme, gamma)
        return wsr.correction_mean(corr), corr.values


@dataclass(frozen=True)
class _BVMLE:
    label = "BV_MLE"

    def estimate(self, wsr: WeightedSampledRanks, metric: RankMetric, gamma: float) -> tuple[float, np.ndarray]:
        from simrec.sampling import bias_variance

        corr = bias_variance(metric, wsr.scheme, gamma, prior=wsr.rank_distribution())
        return wsr.correction_mean(corr), corr.values


@dataclass(frozen=True)
class _MLE:
    label = "MLE"

    def estimate(self, wsr: WeightedSampledRanks, metric: RankMetric, gamma: float) -> tuple[float, None]:
        return wsr.mle(metric), None


#: Sampled-rank estimator by scenario name: ``estimate(weighted_ranks, metric, gamma) -> (value, F̂ per rank or None)``.
SAMPLED_ESTIMATORS: dict[str, _SampledEstimator] = {"naive": _Naive(), "bv": _BV(), "bv_mle": _BVMLE(), "mle": _MLE()}


@dataclass(frozen=True)
class SampledDesign:
    """What the combined rows cross (module docstring).

    Parameters
    ----------
    n : int
        Sample-set size (the test pair and n - 1 sampled candidates), >= 2.
    metrics : tuple of str
        Names of :data:`SAMPLED_METRICS`.
    estimators : tuple of str
        Names of :data:`SAMPLED_ESTIMATORS`.
    k : int, optional
        The metrics' cut-off K (default: the list length N of the evaluation).
    replace : bool, default True
        Sampling with replacement (binomial, K&R §4.3) or without
        (hypergeometric: needs n <= every user's candidate count).
    gamma : float, default 0.01
        γ of ``bv`` and ``bv_mle`` (one of K&R's values).
    """

    n: int
    metrics: tuple[str, ...] = ("recall",)
    estimators: tuple[str, ...] = ("naive", "bv_mle", "mle")
    k: int | None = None
    replace: bool = True
    gamma: float = 0.01

    def __post_init__(self) -> None:
        if not isinstance(self.n, (int, np.integer)) or self.n < 2:
            raise ValueError(f"`n` must be an integer >= 2; got {self.n!r}")
        bad = [m for m in self.metrics if m not in SAMPLED_METRICS]
        if not self.metrics or bad:
            raise ValueError(f"`metrics` must be among {', '.join(SAMPLED_METRICS)}; got {bad or 'none'}")
        bad = [e for e in self.estimators if e not in SAMPLED_ESTIMATORS]
        if not self.estimators or bad:
            raise ValueError(f"`estimators` must be among {', '.join(SAMPLED_ESTIMATORS)}; got {bad or 'none'}")
        if self.k is not None and (not isinstance(self.k, (int, np.integer)) or self.k < 1):
            raise ValueError(f"`k` must be an integer >= 1 or None; got {self.k!r}")
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"`gamma` must be in [0, 1]; got {self.gamma}")


def pair_global_ranks(
    scores: Callable[[np.ndarray], np.ndarray],
    train: sp.csr_array,
    pairs: sp.csr_array,
    rng: np.random.Generator,
    block: int = 1 << 21,
) -> np.ndarray:
    """Global rank of every stored pair of ``pairs`` among its user's candidates (row order, int64 (pairs.nnz,)).

    ``scores(rows)`` gives the recommender's (len(rows), n_items) scores of
    those rows; candidates are the items not in ``train``; non-finite scores
    rank below every finite one; ties are broken at random
    (:func:`simrec.sampling.global_ranks`). Scored by blocks of about
    ``block`` entries.
    """
    from simrec.sampling import global_ranks

    n_users, n_items = pairs.shape
    out = np.empty(pairs.nnz, dtype=np.int64)
    step = max(1, block // max(n_items, 1))
    for r0 in range(0, n_users, step):
        rows = np.arange(r0, min(r0 + step, n_users))
        lo, hi = pairs.indptr[r0], pairs.indptr[rows[-1] + 1]
        if lo == hi:
            continue
        s = np.asarray(scores(rows), dtype=np.float64)
        s = np.where(np.isfinite(s), s, -np.inf)
        excluded = train[rows].toarray().astype(bool)
        pu = np.repeat(np.arange(len(rows)), np.diff(pairs.indptr[rows[0] : rows[-1] + 2]))
        pi = pairs.indices[lo:hi]
        for p0 in range(0, len(pu), step):
            bu, bi = pu[p0 : p0 + step], pi[p0 : p0 + step]
            out[lo + p0 : lo + p0 + len(bu)] = global_ranks(s[bu], bi, exclude=excluded[bu], rng=rng)
    return out


def _user_mean(rows: np.ndarray, values: np.ndarray, n_users: int) -> np.ndarray:
    n = np.bincount(rows, minlength=n_users)
    s = np.bincount(rows, weights=values, minlength=n_users)
    return np.divide(s, n, out=np.full(n_users, np.nan), where=n > 0)


def sampled_rows(
    design: SampledDesign,
    k: int,
    test: sp.csr_array,
    true_rel: sp.csr_array,
    train: sp.csr_array,
    test_ranks: np.ndarray,
    true_ranks: np.ndarray,
    propensities: dict[str, np.ndarray],
    rng: np.random.Generator,
    z: float,
) -> list[tuple[str, str, str, float, float, float, float, int]]:
    """One recommender's combined rows: (metric, estimator, propensity, value, lower, upper, truth, n_users).

    ``test_ranks`` and ``true_ranks`` are :func:`pair_global_ranks` of the
    observed test pairs and of the true relevant pairs; ``propensities`` the
    test pairs' propensities per kind (the harness's). The sampled ranks are
    drawn once per recommender (from ``rng``) and shared by every weighting
    and estimator.
    """
    from simrec.debias.sampled import WeightedSampledRanks
    from simrec.sampling import SamplingScheme, sample_ranks_binomial, sample_ranks_hypergeometric

    n_users, n_items = test.shape
    n_cand = (n_items - np.diff(train.indptr)).astype(np.int64)
    t_rows = np.repeat(np.arange(n_users), np.diff(test.indptr))
    r_rows = np.repeat(np.arange(n_users), np.diff(true_rel.indptr))
    pair_n = n_cand[t_rows]
    if len(pair_n) and pair_n.min() < design.n and not design.replace:
        raise ValueError(
            f"`debias.sampled.n` must be <= every evaluated user's candidate count without replacement "
            f"(smallest: {int(pair_n.min())}); got {design.n}"
        )
    draw = sample_ranks_binomial if design.replace else sample_ranks_hypergeometric
    sampled = draw(test_ranks, pair_n, design.n, rng=rng)
    scheme = SamplingScheme(int(np.rint(n_cand[np.unique(t_rows)].mean())), design.n, replace=design.replace)
    observed_n = np.bincount(t_rows, minlength=n_users).astype(np.float64)
    weightings = [("naive", "none", 1.0 / observed_n[t_rows])]
    for kind, p in propensities.items():
        inv = np.where(np.isnan(p), 0.0, 1.0 / np.where(np.isnan(p), 1.0, p))
        n_hat = np.bincount(t_rows, weights=inv, minlength=n_users)
        weightings.append(
            ("SNIPS", kind, np.divide(inv, n_hat[t_rows], out=np.zeros(len(inv)), where=n_hat[t_rows] > 0))
        )
    rows = []
    for name in design.metrics:
        metric = _rank_metric(name, k)
        label = f"sampled{design.n}:{metric.label}"
        truth_users = _user_mean(r_rows, metric(true_ranks, int(n_cand.max())), n_users)
        truth = float(np.nanmean(truth_users)) if (~np.isnan(truth_users)).any() else float("nan")
        for weighting, kind, w in weightings:
            wsr = WeightedSampledRanks(sampled, w, scheme)
            user_w = np.bincount(t_rows, weights=w, minlength=n_users)
            counted = user_w > 0
            for est_name in design.estimators:
                value, fhat = SAMPLED_ESTIMATORS[est_name].estimate(wsr, metric, design.gamma)
                lo = hi = float("nan")
                if fhat is not None and counted.sum() >= 2:
                    per_user = np.bincount(t_rows, weights=w * fhat[sampled - 1], minlength=n_users)[counted]
                    half = z * float(per_user.std(ddof=1)) / np.sqrt(counted.sum())
                    lo, hi = value - half, value + half
                estimator = f"{weighting}+{SAMPLED_ESTIMATORS[est_name].label}"
                rows.append((label, estimator, kind, value, lo, hi, truth, int(counted.sum())))
    return rows
