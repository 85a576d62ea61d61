"""Rank metric functions F(R): the score a single held-out item earns at rank R.

With one relevant item per user (leave-one-out) every top-K metric reduces to a
function of the relevant item's rank (Krichene & Rendle 2020, §3.1, eqs. 7-13;
Li's dissertation §2.2.2, eq. 2):

.. math::

    \\mathrm{Recall@K}(R) = \\mathrm{HR@K}(R) = 1[R \\le K], \\quad
    \\mathrm{Precision@K}(R) = 1[R \\le K] / K,

    \\mathrm{NDCG@K}(R) = \\frac{1[R \\le K]}{\\log_2(R + 1)}, \\quad
    \\mathrm{AP@K}(R) = \\mathrm{RR@K}(R) = \\frac{1[R \\le K]}{R}, \\quad
    \\mathrm{AUC}(R) = \\frac{N - R}{N - 1}.

The metric over M users is T = (1/M) Σ_u F(R_u) = Σ_R P(R) F(R). A *sampled*
metric applies the same F to the sampled rank r on the domain [1, n]; only AUC
depends on the domain size (``(n - r)/(n - 1)``), so every function takes the
size of the ranking it scores.

Decision: AP and NDCG without ``k`` are the untruncated metrics (K&R eqs.
12-13, used in their Tables 1-2); Recall and Precision always need ``k``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from simrec._validation import check_int

__all__ = [
    "RankMetric",
    "recall",
    "hit_ratio",
    "precision",
    "ndcg",
    "average_precision",
    "reciprocal_rank",
    "auc",
    "metric_table",
]


@dataclass(frozen=True)
class RankMetric:
    """A metric function F over ranks, with its name and cutoff.

    Parameters
    ----------
    name : str
        Base name, e.g. ``"NDCG"``.
    k : int or None
        Cutoff K >= 1, or None (untruncated, or AUC).
    fn : callable ``(ranks: ndarray[float], size: int) -> ndarray[float]``
        F evaluated elementwise at ``ranks`` (values in [1, size]) of a ranking
        of ``size`` items. Real-valued ranks are allowed (mapping functions use
        them). Not part of equality.

    Use the constructors (:func:`recall`, :func:`ndcg`, ...) rather than this
    class directly, unless you define a new metric.
    """

    name: str
    k: int | None
    fn: Callable[[np.ndarray, int], np.ndarray] = field(compare=False, repr=False)

    @property
    def label(self) -> str:
        """``"NDCG@10"``, or the bare name when there is no cutoff."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    def __call__(self, ranks: object, size: int) -> np.ndarray:
        """F at ``ranks`` (array-like of values in [1, size]) for a ranking of ``size`` items."""
        size = check_int("size", size, low=1)
        r = np.asarray(ranks, dtype=np.float64)
        if r.size and (not np.isfinite(r).all() or r.min() < 1 or r.max() > size):
            raise ValueError(f"`ranks` must lie in [1, {size}]; got values in [{np.nanmin(r):g}, {np.nanmax(r):g}]")
        return self.fn(r, size)

    def table(self, size: int) -> np.ndarray:
        """F(1), ..., F(size) as a float64 array of shape (size,)."""
        size = check_int("size", size, low=1)
        return self.fn(np.arange(1, size + 1, dtype=np.float64), size)


def _cut(r: np.ndarray, k: int | None) -> np.ndarray:
    return np.ones_like(r) if k is None else (r <= k).astype(np.float64)


def recall(k: int) -> RankMetric:
    """Recall@K = HR@K: ``1[R <= K]`` (K&R eq. 9; dissertation eq. 2)."""
    k = check_int("k", k, low=1)
    return RankMetric("Recall", k, lambda r, size: _cut(r, k))


def hit_ratio(k: int) -> RankMetric:
    """Hit ratio HR@K = ``1[R <= K]``, Li & Jin's name for Recall@K with one relevant item."""
    k = check_int("k", k, low=1)
    return RankMetric("HR", k, lambda r, size: _cut(r, k))


def precision(k: int) -> RankMetric:
    """Precision@K = ``1[R <= K] / K`` (K&R eq. 8)."""
    k = check_int("k", k, low=1)
    return RankMetric("Precision", k, lambda r, size: _cut(r, k) / k)


def ndcg(k: int | None = None) -> RankMetric:
    """NDCG@K = ``1[R <= K] / log2(R + 1)`` (K&R eq. 11); untruncated (eq. 13) if ``k`` is None."""
    if k is not None:
        k = check_int("k", k, low=1)
    return RankMetric("NDCG", k, lambda r, size: _cut(r, k) / np.log2(r + 1.0))


def average_precision(k: int | None = None) -> RankMetric:
    """AP@K = ``1[R <= K] / R`` (K&R eq. 10); untruncated (eq. 12) if ``k`` is None.

    With one relevant item AP equals the reciprocal rank (:func:`reciprocal_rank`).
    """
    if k is not None:
        k = check_int("k", k, low=1)
    return RankMetric("AP", k, lambda r, size: _cut(r, k) / r)


def reciprocal_rank(k: int | None = None) -> RankMetric:
    """RR@K = ``1[R <= K] / R``: the same function as AP@K, under the name MRR papers use."""
    if k is not None:
        k = check_int("k", k, low=1)
    return RankMetric("RR", k, lambda r, size: _cut(r, k) / r)


def _auc(r: np.ndarray, size: int) -> np.ndarray:
    if size < 2:
        raise ValueError(f"AUC needs a ranking of at least 2 items; got size {size}")
    return (size - r) / (size - 1.0)


def auc() -> RankMetric:
    """AUC = ``(N - R) / (N - 1)`` for a ranking of N items (K&R eq. 7).

    Sampled AUC uses the sample-set size n in place of N and is unbiased for
    the global AUC (K&R §4.4.1).
    """
    return RankMetric("AUC", None, _auc)


def metric_table(metrics: Sequence[RankMetric], size: int) -> np.ndarray:
    """F_j(R) for every metric j and rank R = 1..size, shape (size, len(metrics)).

    ``P @ metric_table(metrics, N)`` evaluates every metric at once from a rank
    distribution P of length N.
    """
    if len(metrics) == 0:
        raise ValueError("`metrics` must not be empty")
    return np.column_stack([m.table(size) for m in metrics])
