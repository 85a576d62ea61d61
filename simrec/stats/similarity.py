"""Item-item and user-user cosine-similarity distributions (Tian's thesis, §3.4.2).

Pairs of items (users) with at least ``min_observations`` pairs are sampled
without replacement (all of them when there are at most ``max_pairs``), and
the cosine of their binary vectors is

.. math:: \\cos(i, j) = \\frac{|U_i \\cap U_j|}{\\sqrt{|U_i|\\,|U_j|}}.

The intersection sizes are popcounts of bit-packed vectors: each entity's
set is packed into ``uint64`` words (built straight from the CSR, no dense
block), and a pair costs ``W = ceil(n_other / 64)`` AND + ``np.bitwise_count``
operations, in cache-sized chunks: O(pairs · W), an order of magnitude
faster at ML-1M size (1M pairs, W = 95 or 58) than multiplying sparse columns
(:func:`pair_intersections_sparse`, the method of the thesis code;
``bench/bench_stats.py`` times both, docs/design.md §9). When the
packed matrix would exceed ``bitset_max_bytes`` (e.g. items over millions of
users), the sparse method is used instead.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._random import RNGLike, as_generator
from .._validation import check_int
from ..interactions import Interactions
from .bins import StatisticBins

__all__ = [
    "CosineSample",
    "item_cosines",
    "user_cosines",
    "item_similarity",
    "user_similarity",
    "similarity_histogram",
    "sample_unique_pairs",
    "pack_rows",
    "pair_intersections",
    "pair_intersections_sparse",
    "DEFAULT_MAX_SIMILARITY_PAIRS",
]

#: Pairs sampled per similarity statistic in the thesis (§3.4.2).
DEFAULT_MAX_SIMILARITY_PAIRS = 1_000_000
#: Largest bit-packed matrix (bytes) before falling back to sparse products.
BITSET_MAX_BYTES = 1 << 30
#: Words gathered per side and chunk (1 MiB of uint64): keeps the gathers in cache.
_CHUNK_WORDS = 1 << 17


# -- pair sampling ----------------------------------------------------------
def _pair_index(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Map linear indices of the strict upper triangle (row-major) to (i, j), i < j."""
    i_all = np.arange(n - 1, dtype=np.int64)
    offsets = i_all * (2 * n - i_all - 1) // 2  # pairs before row i
    i = np.searchsorted(offsets, k, side="right") - 1
    j = k - offsets[i] + i + 1
    return i, j


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort + mask: faster than ``np.unique``; docs/design.md §9)."""
    x = np.sort(x)
    if len(x) < 2:
        return x
    return x[np.r_[True, x[1:] != x[:-1]]]


def _distinct_uniform(population: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` distinct integers of ``[0, population)``, a uniform random subset, sorted.

    Draws iid integers until ``size`` distinct ones are seen (their distinct set
    is, given its size, a uniform subset by exchangeability), then removes a
    uniform random surplus. For ``size > population / 2`` the complement is
    drawn instead, so at most ~1.4 * min(size, population - size) draws.
    """
    if size > population // 2:
        drop = _distinct_uniform(population, population - size, rng)
        keep = np.ones(population, dtype=bool)
        keep[drop] = False
        return np.flatnonzero(keep).astype(np.int64)
    if size == 0:
        return np.empty(0, dtype=np.int64)
    # expected draws to see `size` distinct values: -P log(1 - size/P)
    m = int(math.ceil(-population * math.log1p(-size / population) * 1.02)) + 64
    got = _sorted_unique(rng.integers(0, population, size=m, dtype=np.int64))
    while len(got) < size:
        more = rng.integers(0, population, size=max(64, 2 * (size - len(got))), dtype=np.int64)
        got = _sorted_unique(np.concatenate([got, more]))
    surplus = len(got) - size
    if surplus:
        got = np.delete(got, rng.choice(len(got), size=surplus, replace=False))
    return got


def sample_unique_pairs(n: int, max_pairs: int, rng: RNGLike) -> tuple[np.ndarray, np.ndarray, bool]:
    """Unique unordered pairs ``(i, j)``, ``0 <= i < j < n``: all, or a uniform sample.

    Parameters
    ----------
    n : int
        Number of entities, ``>= 0``.
    max_pairs : int
        Sample size; when ``n(n-1)/2 <= max_pairs`` every pair is returned.
    rng : Generator or seed
        Not used when every pair is returned.

    Returns
    -------
    left, right : ndarray of int64, shape (n_pairs,)
        ``left < right``, sorted lexicographically (cache-friendly gathers).
    exact : bool
        True when these are all the pairs.
    """
    n = check_int("n", n, low=0)
    max_pairs = check_int("max_pairs", max_pairs, low=1)
    total = n * (n - 1) // 2
    if total <= max_pairs:
        k = np.arange(total, dtype=np.int64)
        exact = True
    else:
        k = _distinct_uniform(total, max_pairs, as_generator(rng))
        exact = False
    left, right = _pair_index(k, n)
    return left, right, exact


# -- intersections ----------------------------------------------------------
def pack_rows(rows: sp.csr_array) -> np.ndarray:
    """Bit-pack the rows of a binary CSR matrix into ``uint64`` words.

    Bit ``c`` of row ``r`` is set when ``rows[r, c] != 0`` (NumPy ``packbits``
    big-endian order within bytes; only popcounts are taken, so the order is
    irrelevant). Built with one ``np.add.reduceat`` over the stored entries
    (distinct bits of a byte add up to their OR), no dense block.

    Parameters
    ----------
    rows : scipy.sparse.csr_array, shape (n_rows, n_cols)

    Returns
    -------
    ndarray of uint64, shape (n_rows, ceil(n_cols / 64))
    """
    rows = sp.csr_array(rows)
    rows.sort_indices()
    n_rows, n_cols = rows.shape
    n_bytes = (n_cols + 63) // 64 * 8
    out = np.zeros(n_rows * n_bytes, dtype=np.uint8)
    if rows.nnz:
        r = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(rows.indptr))
        c = rows.indices.astype(np.int64)
        key = r * n_bytes + (c >> 3)
        mask = np.left_shift(np.uint8(1), (7 - (c & 7)).astype(np.uint8))
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        out[key[starts]] = np.add.reduceat(mask, starts)
    return out.view(np.uint64).reshape(n_rows, n_bytes // 8)


def _popcount_pairs(bits: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    n_words = bits.shape[1]
    out = np.empty(len(left), dtype=np.int64)
    if n_words == 0:
        out[:] = 0
        return out
    chunk = max(64, _CHUNK_WORDS // n_words)
    buf_a = np.empty((chunk, n_words), dtype=np.uint64)
    buf_b = np.empty((chunk, n_words), dtype=np.uint64)
    cnt = np.empty((chunk, n_words), dtype=np.uint8)
    # a row sum of popcounts fits in uint16 up to 1023 words, else use int64
    acc = np.uint16 if n_words * 64 < 2**16 else np.int64
    for s in range(0, len(left), chunk):
        e = min(s + chunk, len(left))
        a, b, c = buf_a[: e - s], buf_b[: e - s], cnt[: e - s]
        np.take(bits, left[s:e], axis=0, out=a)
        np.take(bits, right[s:e], axis=0, out=b)
        np.bitwise_and(a, b, out=a)
        np.bitwise_count(a, out=c)
        out[s:e] = c.sum(axis=1, dtype=acc)
    return out


def pair_intersections_sparse(
    rows: sp.csr_array, left: np.ndarray, right: np.ndarray, *, chunk: int = 20_000
) -> np.ndarray:
    """``|row_left ∩ row_right|`` by multiplying sparse rows (reference method).

    The vectorized method of the thesis code, on rows instead of columns:
    ``rows[left].multiply(rows[right]).sum(axis=1)`` in chunks of ``chunk``
    pairs. Exact; an order of magnitude slower than :func:`pair_intersections`
    (``bench/bench_stats.py``), but needs no packed matrix.

    Parameters
    ----------
    rows : scipy.sparse.csr_array, shape (n_rows, n_cols)
        Binary; one row per entity (items: the transpose of the user x item matrix).
    left, right : ndarray of int, shape (n_pairs,)
    chunk : int
        Pairs per sparse product. Default 20,000.

    Returns
    -------
    ndarray of int64, shape (n_pairs,)
    """
    chunk = check_int("chunk", chunk, low=1)
    r = sp.csr_array(rows).astype(np.float32)
    out = np.empty(len(left), dtype=np.int64)
    for s in range(0, len(left), chunk):
        e = min(s + chunk, len(left))
        out[s:e] = np.rint(np.asarray(r[left[s:e]].multiply(r[right[s:e]]).sum(axis=1)).ravel())
    return out


def pair_intersections(
    rows: sp.csr_array, left: np.ndarray, right: np.ndarray, *, bitset_max_bytes: int = BITSET_MAX_BYTES
) -> np.ndarray:
    """``|row_left ∩ row_right|`` for each pair, by bit-packed popcounts.

    Packs every row (:func:`pack_rows`) and sums ``np.bitwise_count(a & b)``
    over words, in chunks; falls back to :func:`pair_intersections_sparse` when
    the packed matrix would exceed ``bitset_max_bytes`` (default 1 GiB).

    Parameters
    ----------
    rows : scipy.sparse.csr_array, shape (n_rows, n_cols)
        Binary, one row per entity.
    left, right : ndarray of int, shape (n_pairs,)
        Row indices of each pair.

    Returns
    -------
    ndarray of int64, shape (n_pairs,)
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    if left.shape != right.shape or left.ndim != 1:
        raise ValueError(f"`left` and `right` must be 1-d of equal length; got {left.shape} and {right.shape}")
    n_rows, n_cols = rows.shape
    if len(left) and (min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= n_rows):
        raise ValueError(f"`left`/`right` must index rows in [0, {n_rows}); got values outside")
    if n_rows * ((n_cols + 63) // 64) * 8 > bitset_max_bytes:
        return pair_intersections_sparse(rows, left, right)
    return _popcount_pairs(pack_rows(rows), left, right)


# -- cosine samples and histograms -----------------------------------------
@dataclass(frozen=True, eq=False)
class CosineSample:
    """Cosine similarities of sampled (or all) pairs of eligible entities.

    Attributes
    ----------
    left, right : ndarray of int64, shape (n_pairs,)
        Entity indices (item columns or user rows of the matrix), ``left < right``.
    cosines : ndarray of float64, shape (n_pairs,)
        ``|∩| / sqrt(n_left n_right)``, in [0, 1].
    n_eligible : int
        Entities with at least ``min_observations`` pairs.
    exact : bool
        True when ``cosines`` covers every eligible pair (no sampling).
    """

    left: np.ndarray
    right: np.ndarray
    cosines: np.ndarray
    n_eligible: int
    exact: bool


def _cosines(
    entity_rows: sp.csr_array, counts: np.ndarray, min_observations: int, max_pairs: int, rng: RNGLike
) -> CosineSample:
    eligible = np.flatnonzero(counts >= min_observations)
    left, right, exact = sample_unique_pairs(len(eligible), max_pairs, rng)
    sub = entity_rows[eligible] if len(eligible) < entity_rows.shape[0] else entity_rows
    inter = pair_intersections(sp.csr_array(sub), left, right)
    c = counts[eligible].astype(np.float64)
    cos = inter / np.sqrt(c[left] * c[right])
    return CosineSample(eligible[left], eligible[right], cos, len(eligible), exact)


def _check_args(inter: object, min_observations: object, max_pairs: object) -> tuple[int, int]:
    if not isinstance(inter, Interactions):
        raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
    return check_int("min_observations", min_observations, low=1), check_int("max_pairs", max_pairs, low=1)


def item_cosines(
    inter: Interactions,
    rng: RNGLike,
    *,
    min_observations: int = 5,
    max_pairs: int = DEFAULT_MAX_SIMILARITY_PAIRS,
) -> CosineSample:
    """Item-item cosines over user sets ``U_i`` (thesis §3.4.2).

    Up to ``max_pairs`` unique pairs of items with ``|U_i| >= min_observations``,
    uniformly without replacement (every pair when there are fewer).

    Parameters
    ----------
    inter : Interactions, shape (n_users, n_items)
    rng : Generator or seed
    min_observations : int
        Default 5 (thesis).
    max_pairs : int
        Default 1,000,000 (thesis).
    """
    min_observations, max_pairs = _check_args(inter, min_observations, max_pairs)
    items = sp.csr_array(inter.matrix.T.tocsr())
    return _cosines(items, inter.item_counts(), min_observations, max_pairs, rng)


def user_cosines(
    inter: Interactions,
    rng: RNGLike,
    *,
    min_observations: int = 5,
    max_pairs: int = DEFAULT_MAX_SIMILARITY_PAIRS,
) -> CosineSample:
    """User-user cosines over item sets ``I_u`` (thesis §3.4.2); see :func:`item_cosines`."""
    min_observations, max_pairs = _check_args(inter, min_observations, max_pairs)
    return _cosines(inter.matrix, inter.user_counts(), min_observations, max_pairs, rng)


def similarity_histogram(cosines: np.ndarray, n_bins: int, *, what: str = "similarity") -> np.ndarray:
    """Normalised histogram of cosines on ``n_bins`` equal bins of [0, 1].

    ``np.histogram(cosines, bins=n_bins, range=(0, 1))`` (last bin closed)
    divided by the number of pairs: probability masses summing to 1. (The
    thesis normalises to a density; with equal bins the two differ by the
    constant bin width, which cancels in the KL divergence.) NaN with a warning
    when there is no pair.
    """
    n_bins = check_int("n_bins", n_bins, low=1)
    c = np.asarray(cosines, dtype=np.float64)
    if len(c) == 0:
        warnings.warn(f"{what}: fewer than 2 eligible entities, no pair; returning NaN", RuntimeWarning, stacklevel=3)
        return np.full(n_bins, np.nan)
    hist, _ = np.histogram(c, bins=n_bins, range=(0.0, 1.0))
    return hist / len(c)


def item_similarity(
    inter: Interactions, bins: StatisticBins, rng: RNGLike, *, max_pairs: int = DEFAULT_MAX_SIMILARITY_PAIRS
) -> np.ndarray:
    """Distribution of item-item cosine similarity (thesis §3.4.2).

    Parameters
    ----------
    inter : Interactions
    bins : StatisticBins
        Gives ``n_similarity_bins`` and ``min_observations``.
    rng : Generator or seed
        Pair sampling.
    max_pairs : int
        Default 1,000,000.

    Returns
    -------
    ndarray of float64, shape (bins.n_similarity_bins,)
        Masses summing to 1 (NaN with a warning if fewer than 2 eligible items).
    """
    if not isinstance(bins, StatisticBins):
        raise TypeError(f"`bins` must be a StatisticBins; got {type(bins).__name__}")
    s = item_cosines(inter, rng, min_observations=bins.min_observations, max_pairs=max_pairs)
    return similarity_histogram(s.cosines, bins.n_similarity_bins, what="item similarity")


def user_similarity(
    inter: Interactions, bins: StatisticBins, rng: RNGLike, *, max_pairs: int = DEFAULT_MAX_SIMILARITY_PAIRS
) -> np.ndarray:
    """Distribution of user-user cosine similarity (thesis §3.4.2); see :func:`item_similarity`."""
    if not isinstance(bins, StatisticBins):
        raise TypeError(f"`bins` must be a StatisticBins; got {type(bins).__name__}")
    s = user_cosines(inter, rng, min_observations=bins.min_observations, max_pairs=max_pairs)
    return similarity_histogram(s.cosines, bins.n_similarity_bins, what="user similarity")
