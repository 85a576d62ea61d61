"""Top-N list metrics against a relevance set, vectorized over users.

Every function takes ``lists`` (int, shape (n_users, N), -1 = trailing
padding) and ``relevant`` (csr_array (n_users, n_items), the relevance set
:math:`\\mathrm{Rel}_u` of each user), and returns float64 of shape (n_users,).
``N`` is always ``lists.shape[1]``, the nominal list length; for a metric "@k"
pass ``lists[:, :k]``. :math:`|L_u|` is the *real* length of user u's list (its
number of non-padding entries), :math:`\\mathrm{rel}_i = 1[L_{u,i} \\in
\\mathrm{Rel}_u]` and :math:`h_u = \\sum_{i \\le N} \\mathrm{rel}_i = |L_u \\cap
\\mathrm{Rel}_u|`. Definitions follow docs/design.md §4 (Tian's thesis §3.5:
Precision, Recall, MRR, nDCG as computed by LensKit). Relevance is binary
for every metric except :func:`ndcg_lenskit07`, which uses the per-pair gains
of an :class:`~simrec.interactions.Interactions` relevance set when it has
them (graded relevance, as LensKit 0.7 with a ``rating`` column).

NaN policy: users with an empty relevance set are not evaluated, so every
metric (even precision, which LensKit defines as 0 there) is NaN for them, with
one :class:`~simrec.metrics.UndefinedMetricWarning` per call giving their
number. ``evaluated`` (boolean (n_users,)) restricts the evaluation to some
users; the others get NaN without a warning.

Relationship with LensKit 2025.8 (``lenskit.metrics``), checked in
tests/test_metrics.py: ``precision`` = ``Precision()``; ``recall`` =
``Recall()`` (no ``n``); ``recall_truncated`` = ``Recall(n=N)``;
``reciprocal_rank`` = ``RecipRank()``; ``hit`` = ``Hit()``; ``ndcg`` =
``NDCG(n=N, weight=LogRankWeight(offset=1))`` but **not** LensKit's default
``NDCG(n=N)``, whose discount :math:`1/\\log_2 \\max(i, 2)` gives ranks 1 and
2 the same weight; ``average_precision`` = ``AveragePrecision(n=N)`` for lists
of full length N (LensKit divides by :math:`\\min(|\\mathrm{Rel}|, |L|)`, the
real length, where simrec uses the nominal N).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeAlias, cast

import numpy as np
import scipy.sparse as sp

from simrec._cache import use_kernel
from simrec._sampling import row_ids
from simrec.interactions import Interactions
from simrec.metrics._common import (
    as_relevance,
    check_evaluated,
    check_lists,
    finish,
    is_long,
    list_positions,
    long_list_hits,
    membership,
    relevance_gains,
)

__all__ = [
    "LIST_METRICS",
    "ndcg_lenskit07",
    "list_metrics",
    "list_metrics_many",
    "hits",
    "hit",
    "precision",
    "recall",
    "recall_truncated",
    "reciprocal_rank",
    "ndcg",
    "average_precision",
    "relevant_positions",
]

Relevance: TypeAlias = "sp.csr_array | Interactions"


class _Gains:
    """Graded relevance of a set of list arrays, looked up lazily and once.

    Only :func:`ndcg_lenskit07` reads gains, so nothing here is computed
    unless it is asked for; then the gain of every list entry (of all arrays
    side by side) is one :func:`membership` pass and each user's ideal DCG one
    sort of the relevance pairs, shared by every array.
    """

    __slots__ = ("lists", "rel", "gains", "_at", "_ideal")

    def __init__(self, lists: np.ndarray, rel: sp.csr_array, gains: np.ndarray) -> None:
        self.lists, self.rel, self.gains = lists, rel, gains
        self._at: np.ndarray | None = None
        self._ideal: np.ndarray | None = None

    def at(self, cols: slice) -> np.ndarray:
        """Gain of every entry of ``lists[:, cols]``, float64 (0 = not relevant or padding)."""
        if self._at is None:
            self._at = membership(self.lists, self.rel, self.gains).astype(np.float64, copy=False)
        return self._at[:, cols]

    def ideal(self) -> np.ndarray:
        """Each user's LensKit 0.7 ideal DCG, float64 (n_users,): :func:`_lenskit07_ideal`."""
        if self._ideal is None:
            self._ideal = _lenskit07_ideal(self.rel, self.gains)
        return self._ideal


#: (row, position) of every relevant entry of a list array.
_Hits: TypeAlias = tuple[np.ndarray, np.ndarray]

#: List entries from which :meth:`_Prepared.many` checks and looks up top-N lists with the compiled kernel
#: (:mod:`simrec.metrics._hits_kernel`; the same values and errors): below it, importing numba and loading
#: the kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_ENTRIES = 1 << 23


def _compiled_hits(
    arrs: list[np.ndarray], rel: sp.csr_array
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None:
    """Each top-N array's ``(length, hit_rows, hit_cols, n_hits)`` by :func:`simrec.metrics._hits_kernel.short_list_hits`.

    None when the kernel does not apply (no arrays, fewer than
    ``_KERNEL_MIN_ENTRIES`` entries with numba not loaded, an array that is
    not a 2-d integer array of the relevance's users, long lists) or when a
    list breaks a rule (the caller's checks then raise the usual error).
    """
    if not arrs or not use_kernel(sum(a.size for a in arrs), _KERNEL_MIN_ENTRIES):
        return None
    n_users, n_items = rel.shape
    for a in arrs:
        if a.ndim != 2 or a.shape[0] != n_users or a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
            return None
        if is_long(a, n_items):
            return None
    from simrec.metrics._hits_kernel import short_list_hits

    lists = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in arrs)
    return short_list_hits(lists, rel.indptr, rel.indices, n_items)


class _Prepared:
    """Checked inputs and the per-user quantities every list metric uses.

    The relevant entries are known in one of two forms, each computed from
    the other only if a metric asks for it: the dense boolean table
    ``is_rel`` (n_users, N) of :func:`membership` (top-N lists), or their
    (row, position) pairs ``hits``, sorted, from :func:`long_list_hits`
    (lists covering a large share of the items, e.g. full rankings: checked
    and looked up in one pass, no table of every entry). Both give the same
    values: ``hits`` is ``np.nonzero(is_rel)``.
    """

    __slots__ = ("_is_rel", "_hits", "n_rel", "n_hits", "length", "evaluated", "N", "graded", "cols")

    def __init__(self, lists: object, relevant: object, evaluated: object) -> None:
        arr = np.asarray(lists)
        n_users = arr.shape[0] if arr.ndim == 2 else None
        rel = as_relevance(relevant, n_users)
        gains = relevance_gains(relevant)
        if is_long(arr, rel.shape[1]):
            length, rows, cols = long_list_hits(arr, rel)
            graded = None if gains is None else _Gains(arr, rel, gains)
            mask = check_evaluated(evaluated, arr.shape[0])
            self._set(arr.shape[1], rel, mask, None, (rows, cols), length, graded, slice(None))
            return
        arr = check_lists(lists, rel.shape[1])
        graded = None if gains is None else _Gains(arr, rel, gains)
        self._fill(arr, rel, check_evaluated(evaluated, arr.shape[0]), membership(arr, rel), graded, slice(None))

    @classmethod
    def many(cls, lists_seq: Sequence[object], relevant: object, evaluated: object) -> list[_Prepared]:
        """One :class:`_Prepared` per list array, with one membership look-up for all of them.

        The arrays (same users) are checked one by one, then laid side by
        side so that the relevance bitmap of :func:`membership` is built once
        (and, for graded relevance, the gain look-up and the ideal DCGs).
        Without graded relevance, arrays of long lists (:func:`is_long`) take
        :func:`long_list_hits` each instead.
        """
        arrs = [np.asarray(lists) for lists in lists_seq]
        n_users = arrs[0].shape[0] if arrs and arrs[0].ndim == 2 else None
        rel = as_relevance(relevant, n_users)
        gains = relevance_gains(relevant)
        compiled = _compiled_hits(arrs, rel) if gains is None else None
        if compiled is not None:
            mask = check_evaluated(evaluated, rel.shape[0])
            out = []
            for a, (length, rows, cols, n_hits) in zip(arrs, compiled):
                p = cls.__new__(cls)
                p._set(a.shape[1], rel, mask, None, (rows, cols), length, None, slice(None), n_hits)
                out.append(p)
            return out
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray] | None] = []
        for i, a in enumerate(arrs):  # checked in order, as check_lists would
            if gains is None and is_long(a, rel.shape[1]) and a.shape[0] == rel.shape[0]:
                found.append(long_list_hits(a, rel))
            else:
                arrs[i] = check_lists(a, rel.shape[1])
                found.append(None)
        bad = [a.shape[0] for a in arrs if a.shape[0] != rel.shape[0]]
        if bad:
            raise ValueError(f"`lists` must have {rel.shape[0]} rows (one per user) in every array; got {bad[0]}")
        mask = check_evaluated(evaluated, rel.shape[0])
        short = [a for a, hits in zip(arrs, found) if hits is None]
        side = np.hstack(short) if short else None
        is_rel = membership(side, rel) if side is not None else None  # side is None iff not short
        graded = None if gains is None or side is None else _Gains(side, rel, gains)
        out, start = [], 0
        for a, hits in zip(arrs, found):
            p = cls.__new__(cls)
            if hits is not None:
                length, rows, cols = hits
                p._set(a.shape[1], rel, mask, None, (rows, cols), length, None, slice(None))
            else:
                span = slice(start, start + a.shape[1])
                p._fill(a, rel, mask, cast(np.ndarray, is_rel)[:, span], graded, span)  # a short array: is_rel set
                start += a.shape[1]
            out.append(p)
        return out

    def _fill(
        self,
        arr: np.ndarray,
        rel: sp.csr_array,
        evaluated: np.ndarray,
        is_rel: np.ndarray,
        graded: _Gains | None,
        cols: slice,
    ) -> None:
        self._set(arr.shape[1], rel, evaluated, is_rel, None, (arr >= 0).sum(axis=1), graded, cols)

    def _set(
        self,
        N: int,
        rel: sp.csr_array,
        evaluated: np.ndarray,
        is_rel: np.ndarray | None,
        hits: _Hits | None,
        length: np.ndarray,
        graded: _Gains | None,
        cols: slice,
        n_hits: np.ndarray | None = None,
    ) -> None:
        self.evaluated = evaluated
        self._is_rel = is_rel
        self._hits = hits
        n_users = rel.shape[0]
        # exactly one of is_rel and hits is given; the hits per list may come with them
        if n_hits is None:
            n_hits = is_rel.sum(axis=1) if is_rel is not None else np.bincount(cast(_Hits, hits)[0], minlength=n_users)
        self.n_hits = n_hits
        self.n_rel = np.diff(rel.indptr).astype(np.int64)
        self.length = length
        self.N = N
        self.graded = graded
        self.cols = cols

    @property
    def is_rel(self) -> np.ndarray:
        """Boolean (n_users, N): is each entry relevant."""
        if self._is_rel is None:
            rows, cols = cast(_Hits, self._hits)  # one of the two is known
            self._is_rel = np.zeros((len(self.n_rel), self.N), dtype=bool)
            self._is_rel[rows, cols] = True
        return self._is_rel

    @property
    def hits(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, position) of every relevant entry, integers, sorted: ``np.nonzero(is_rel)``.

        Not kept when computed from the dense table (a temporary of each
        metric that reads it, as before: the lists of every recommender of a
        replicate are prepared at once).
        """
        if self._hits is not None:
            return self._hits
        rows, cols = np.nonzero(cast(np.ndarray, self._is_rel))  # one of the two is known; is_rel is 2-D
        return rows, cols

    def first_hit(self) -> np.ndarray:
        """0-based position of each list's first relevant entry (0 where it has none), int64 (n_users,)."""
        if self._is_rel is not None:
            return self._is_rel.argmax(axis=1)
        rows, cols = cast(_Hits, self._hits)  # one of the two is known
        first = np.zeros(len(self.n_rel), dtype=np.int64)
        at = np.flatnonzero(self.n_hits)
        first[at] = cols[np.cumsum(self.n_hits)[at] - self.n_hits[at]]
        return first

    def ratio(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.zeros(len(num), dtype=np.float64)
        np.divide(num, den, out=out, where=den > 0)
        return out


_EMPTY = "empty relevance set"


def hits(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Number of relevant items in each list.

    .. math:: h_u = |L_u \\cap \\mathrm{Rel}_u|

    Parameters
    ----------
    lists : ndarray of int, shape (n_users, N)
        Top-N lists, -1 as trailing padding.
    relevant : csr_array or Interactions, shape (n_users, n_items)
        Relevance sets.
    evaluated : ndarray of bool, shape (n_users,), optional
        Users to evaluate (default all); others get NaN.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        The count (float so that non-evaluated users can be NaN); NaN where
        :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _hits(_Prepared(lists, relevant, evaluated))


def _hits(p: _Prepared) -> np.ndarray:
    return finish(p.n_hits, p.n_rel == 0, p.evaluated, "hits", _EMPTY, 4)


def hit(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Hit indicator: 1 if the list holds at least one relevant item.

    .. math:: \\mathrm{Hit}_u = 1[L_u \\cap \\mathrm{Rel}_u \\neq \\emptyset]

    Its mean over users is the hit rate (Deshpande & Karypis; LensKit's
    ``Hit``). Parameters as :func:`hits`; NaN where
    :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _hit(_Prepared(lists, relevant, evaluated))


def _hit(p: _Prepared) -> np.ndarray:
    return finish((p.n_hits > 0).astype(np.float64), p.n_rel == 0, p.evaluated, "hit", _EMPTY, 4)


def precision(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Precision of each list, over its real length.

    .. math:: \\mathrm{P}_u = \\frac{|L_u \\cap \\mathrm{Rel}_u|}{|L_u|}

    :math:`|L_u|` counts the list's real entries, not the padding, as LensKit's
    ``Precision`` does (docs/design.md §4: "Precision uses the list's real
    length, as LensKit does"). Parameters as :func:`hits`.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        NaN where :math:`\\mathrm{Rel}_u = \\emptyset` (not evaluated; LensKit
        would give 0) or :math:`|L_u| = 0` (LensKit: NaN).
    """
    return _precision(_Prepared(lists, relevant, evaluated))


def _precision(p: _Prepared) -> np.ndarray:
    undefined = (p.n_rel == 0) | (p.length == 0)
    return finish(
        p.ratio(p.n_hits, p.length), undefined, p.evaluated, "precision", "empty relevance set or empty list", 4
    )


def recall(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Classic recall: the share of the relevance set found in the list.

    .. math:: \\mathrm{R}_u = \\frac{|L_u \\cap \\mathrm{Rel}_u|}{|\\mathrm{Rel}_u|}

    The recall under which Steck's unbiasedness result holds (items missing at
    random; Tian's thesis §4.2.1); LensKit's ``Recall()`` without ``n``.
    Parameters as :func:`hits`; NaN where :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _recall(_Prepared(lists, relevant, evaluated))


def _recall(p: _Prepared) -> np.ndarray:
    return finish(p.ratio(p.n_hits, p.n_rel), p.n_rel == 0, p.evaluated, "recall", _EMPTY, 4)


def recall_truncated(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Recall with the denominator capped at the list length N.

    .. math:: \\mathrm{R}^{\\mathrm{trunc}}_u =
        \\frac{|L_u \\cap \\mathrm{Rel}_u|}{\\min(|\\mathrm{Rel}_u|, N)}

    LensKit's ``Recall(n=N)`` (its Recall@k), which reaches 1 whenever the list
    is full of relevant items. ``N = lists.shape[1]`` (the nominal length,
    padding included); slice ``lists[:, :k]`` for another cut-off. Parameters
    as :func:`hits`; NaN where :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _recall_truncated(_Prepared(lists, relevant, evaluated))


def _recall_truncated(p: _Prepared) -> np.ndarray:
    den = np.minimum(p.n_rel, p.N)
    return finish(p.ratio(p.n_hits, den), p.n_rel == 0, p.evaluated, "recall_truncated", _EMPTY, 4)


def reciprocal_rank(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Reciprocal of the 1-based position of the first relevant item (0 if none).

    .. math:: \\mathrm{RR}_u = \\max_{i \\le N} \\frac{\\mathrm{rel}_i}{i}

    Its mean over users is MRR (Tian's thesis §4.2.3; LensKit's ``RecipRank``).
    Parameters as :func:`hits`; NaN where :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _reciprocal_rank(_Prepared(lists, relevant, evaluated))


def _reciprocal_rank(p: _Prepared) -> np.ndarray:
    if p.N == 0:
        rr = np.zeros(len(p.n_rel))
    else:
        rr = np.where(p.n_hits > 0, 1.0 / (p.first_hit() + 1.0), 0.0)
    return finish(rr, p.n_rel == 0, p.evaluated, "reciprocal_rank", _EMPTY, 4)


def _hit_discounts(p: _Prepared, discounts: np.ndarray) -> np.ndarray:
    """Each list's :math:`\\sum_i \\mathrm{rel}_i d_i` from its relevant entries: :func:`_discounted_sum` of ``p.is_rel``."""
    rows, cols = p.hits
    if use_kernel(len(rows), _KERNEL_MIN_ENTRIES):  # the same additions, in the same order
        from simrec.metrics._hits_kernel import discounted_sums

        return discounted_sums(rows, cols, np.ascontiguousarray(discounts, dtype=np.float64), len(p.n_rel))
    return np.bincount(rows, weights=discounts[cols], minlength=len(p.n_rel)).astype(np.float64, copy=False)


def _discounted_sum(gains: np.ndarray, discounts: np.ndarray) -> np.ndarray:
    """Each row's :math:`\\sum_i g_{u,i} d_i`, float64 (n_rows,), for gains (n_rows, N) bool or numeric.

    Summed over the row's non-zero entries, left to right (``np.nonzero`` then
    ``np.bincount``), not as a BLAS matrix-vector product: the product
    converted the whole gain matrix to float64 (180 MB for full rankings at
    ML-1M size), its first call in a process started OpenBLAS's threads
    (0.3 s), whose spinning then billed CPU time to the steps after it, and
    its summation order may depend on the BLAS build and thread count.
    """
    rows, cols = np.nonzero(gains)
    weights = discounts[cols] if gains.dtype == np.bool_ else gains[rows, cols] * discounts[cols]
    return np.bincount(rows, weights=weights, minlength=gains.shape[0]).astype(np.float64, copy=False)


def _discounts(N: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, N + 2, dtype=np.float64))


def ndcg(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Normalized discounted cumulative gain with the :math:`\\log_2(i+1)` discount.

    .. math::
        \\mathrm{DCG}_u = \\sum_{i=1}^{N} \\frac{\\mathrm{rel}_i}{\\log_2(i+1)}, \\qquad
        \\mathrm{IDCG}_u = \\sum_{i=1}^{\\min(|\\mathrm{Rel}_u|, N)} \\frac{1}{\\log_2(i+1)}, \\qquad
        \\mathrm{nDCG}_u = \\frac{\\mathrm{DCG}_u}{\\mathrm{IDCG}_u}

    (docs/design.md §4, binary gains). This is LensKit's
    ``NDCG(n=N, weight=LogRankWeight(offset=1))``; LensKit's *default*
    discount :math:`1/\\log_2 \\max(i, 2)` differs: its weight at rank
    :math:`i \\ge 2` is ours at rank :math:`i - 1` (rank 2 weighs as much as
    rank 1), so e.g. a single relevant item at position 2 out of
    :math:`|\\mathrm{Rel}| = 1` scores 1 there and :math:`1/\\log_2 3 \\approx
    0.631` here. Always binary: the gains an
    :class:`~simrec.interactions.Interactions` may carry (the LDA truth's like
    counts) are ignored (the graded reading is :func:`ndcg_lenskit07`'s, the
    thesis code's). Parameters as :func:`hits`; NaN where
    :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _ndcg(_Prepared(lists, relevant, evaluated))


def _ndcg(p: _Prepared) -> np.ndarray:
    disc = _discounts(p.N)
    dcg = _hit_discounts(p, disc)
    ideal_cum = np.concatenate(([0.0], np.cumsum(disc)))
    idcg = ideal_cum[np.minimum(p.n_rel, p.N)]
    return finish(p.ratio(dcg, idcg), p.n_rel == 0, p.evaluated, "ndcg", _EMPTY, 4)


def ndcg_lenskit07(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """nDCG as LensKit 0.7 computed it for Tian's thesis (a named variant of :func:`ndcg`).

    .. math::
        \\mathrm{DCG}_u = \\sum_{i=1}^{N} \\frac{g_u(L_{u,i})}{\\max(1, \\log_2 i)}, \\qquad
        \\mathrm{IDCG}_u = \\sum_{j=1}^{|\\mathrm{Rel}_u|} \\frac{g_u^{(j)}}{\\max(1, \\log_2 j)}, \\qquad
        \\mathrm{nDCG}_u = \\frac{\\mathrm{DCG}_u}{\\mathrm{IDCG}_u}

    where :math:`g_u(i)` is the gain of item i for user u (0 if i is not
    relevant or the entry is padding) and :math:`g_u^{(1)} \\ge g_u^{(2)} \\ge
    \\dots` are the gains of *all* of u's relevant items sorted in descending
    order. This is LensKit 0.7's ``lenskit.metrics.topn.ndcg`` with its
    default discount ``np.log2`` (its ``_dcg`` divides by the discount where it
    exceeds 1): with a ``rating`` column in the truth, the list's gains are the
    truth's ratings of its items and the ideal is the DCG of all the truth's
    ratings sorted descending, else both use gain 1.

    Gains. When ``relevant`` is an :class:`~simrec.interactions.Interactions`
    carrying ``gains`` (the LDA truth's like counts), they are used; otherwise
    (no gains, or a sparse array, whose stored values are never read as
    gains) every relevant item has gain 1 and :math:`g_u^{(j)} = 1`. This
    follows the thesis authors' code: its true relevance kept the LDA truth's
    summed per-topic counts as ``rating`` (the Uniform and IBP truths have
    1), while its observed data had ``rating = 1`` set before the split, so
    observed relevance is binary. simrec's pipeline does the same
    (:func:`simrec.experiment.run_replicate`).

    Two further differences from the standard :func:`ndcg` (which is always
    binary): the discount 1/max(1, log2 i) (ranks 1 and 2 weigh 1), and the
    ideal ranking over *all* of the user's relevant items, not the first N,
    so a list cannot reach 1 when :math:`|\\mathrm{Rel}_u| > N`: a 50-item
    list of relevant items with :math:`|\\mathrm{Rel}| = 200` scores 0.3845
    here and 1 in :func:`ndcg` (binary gains). Parameters as :func:`hits`
    (``relevant`` may carry gains); NaN where :math:`\\mathrm{Rel}_u = \\emptyset`.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        In [0, 1].
    """
    return _ndcg_lenskit07(_Prepared(lists, relevant, evaluated))


def _lenskit07_discounts(n: int) -> np.ndarray:
    return 1.0 / np.maximum(1.0, np.log2(np.arange(1, n + 1, dtype=np.float64)))


#: Relevant pairs per block of users in :func:`_lenskit07_ideal` (bounds its temporaries, ~40 B a pair).
_IDEAL_BLOCK_PAIRS = 1 << 18


def _lenskit07_ideal(rel: sp.csr_array, gains: np.ndarray) -> np.ndarray:
    """LensKit 0.7's ideal DCG of graded relevance sets, float64 (n_users,).

    Each user's gains sorted in descending order, weighted by
    1/max(1, log2 j) at position j and summed, vectorized over the users of
    a block of about ``_IDEAL_BLOCK_PAIRS`` relevant pairs (one sort of the
    block's pairs by (user, -gain); the Python loop runs over blocks, never
    over users). Integer gains (like counts) are sorted as one int64 key
    ``user * (top + 1) + top - gain`` (numpy's vectorized sort, about twice
    as fast as the general ``lexsort`` used for other gains).
    """
    n_users = rel.shape[0]
    out = np.zeros(n_users, dtype=np.float64)
    indptr = rel.indptr.astype(np.int64)
    sizes = np.diff(indptr)
    g_all = np.asarray(gains)
    if len(g_all) == 0:
        return out
    weights = _lenskit07_discounts(int(sizes.max()))
    top = int(np.ceil(g_all.max()))
    integral = (np.issubdtype(g_all.dtype, np.integer) or bool((g_all == np.floor(g_all)).all())) and n_users * (
        top + 1.0
    ) < 2.0**62
    cuts = np.searchsorted(indptr, np.arange(_IDEAL_BLOCK_PAIRS, indptr[-1], _IDEAL_BLOCK_PAIRS), side="right") - 1
    bounds = np.unique(np.concatenate(([0], cuts, [n_users])))
    for u0, u1 in zip(bounds[:-1], bounds[1:]):
        p0, p1 = indptr[u0], indptr[u1]
        rows = row_ids(sizes[u0:u1])
        g = g_all[p0:p1]
        if integral:
            key = rows * (top + 1) + (top - g.astype(np.int64))
            key.sort()  # rows stay in order; gains descending within each row
            np.remainder(key, top + 1, out=key)
            srt = (top - key).astype(np.float64)
            del key
        else:
            g = g.astype(np.float64)
            srt = g[np.lexsort((-g, rows))]
        position = np.arange(p1 - p0, dtype=np.int64)
        position -= np.repeat(indptr[u0:u1] - p0, sizes[u0:u1])
        srt *= weights[position]
        out[u0:u1] = np.bincount(rows, weights=srt, minlength=u1 - u0)
    return out


def _ndcg_lenskit07(p: _Prepared) -> np.ndarray:
    disc = _lenskit07_discounts(p.N)
    if p.graded is not None:
        dcg = _discounted_sum(p.graded.at(p.cols), disc)
        idcg = p.graded.ideal()
    else:
        dcg = _hit_discounts(p, disc)
        most = int(p.n_rel.max()) if len(p.n_rel) else 0
        ideal_cum = np.concatenate(([0.0], np.cumsum(_lenskit07_discounts(most))))
        idcg = ideal_cum[p.n_rel]
    return finish(p.ratio(dcg, idcg), p.n_rel == 0, p.evaluated, "ndcg_lenskit07", _EMPTY, 4)


def average_precision(lists: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Average precision at N, normalised by :math:`\\min(|\\mathrm{Rel}_u|, N)`.

    .. math::
        \\mathrm{AP@N}_u = \\frac{1}{\\min(|\\mathrm{Rel}_u|, N)}
        \\sum_{i=1}^{N} \\mathrm{P@}i \\cdot \\mathrm{rel}_i, \\qquad
        \\mathrm{P@}i = \\frac{1}{i}\\sum_{j \\le i} \\mathrm{rel}_j

    The normaliser :math:`\\min(|\\mathrm{Rel}|, N)` is the common AP@N
    convention (e.g. the ``apk`` of Kaggle's ml_metrics, and LensKit's
    ``AveragePrecision(n=N)``, which uses the real list length
    :math:`\\min(|\\mathrm{Rel}|, |L|)` instead of N: the two agree on lists of
    full length and whenever the list holds every candidate). It makes a list
    whose first :math:`\\min(|\\mathrm{Rel}|, N)` entries are relevant score 1.
    ``N = lists.shape[1]``. Parameters as :func:`hits`; NaN where
    :math:`\\mathrm{Rel}_u = \\emptyset`.
    """
    return _average_precision(_Prepared(lists, relevant, evaluated))


def _average_precision(p: _Prepared) -> np.ndarray:
    rel = p.is_rel.astype(np.float64)
    prec_at = np.cumsum(rel, axis=1) / np.arange(1, p.N + 1, dtype=np.float64)
    num = (prec_at * rel).sum(axis=1)
    den = np.minimum(p.n_rel, p.N)
    return finish(p.ratio(num, den), p.n_rel == 0, p.evaluated, "average_precision", _EMPTY, 4)


def relevant_positions(lists: np.ndarray, relevant: Relevance) -> tuple[np.ndarray, np.ndarray]:
    """Where each relevant pair sits in its user's list, and each list's real length.

    The per-pair view of the list metrics' look-up (the same checks and
    errors, the same two paths: top-N lists through the membership bitmap,
    long lists such as full rankings through the one-pass scatter), for
    estimators that weigh every relevant pair by its own rank, e.g. the
    propensity-weighted estimators of :mod:`simrec.debias`.

    Parameters
    ----------
    lists : ndarray of int, shape (n_users, N)
        Top-N lists or full rankings, -1 as trailing padding.
    relevant : csr_array or Interactions, shape (n_users, n_items)
        Relevance sets.

    Returns
    -------
    position : ndarray of int64, shape (nnz,)
        1-based position of every relevant pair in its user's list, 0 where
        the list does not hold it; aligned with the stored pairs of the
        canonical relevance matrix (sorted item indices per row, duplicates
        summed, explicit zeros dropped: the pairs every metric reads).
    length : ndarray of int64, shape (n_users,)
        :math:`|L_u|`, the real (non-padding) length of each list.
    """
    arr = np.asarray(lists)
    rel = as_relevance(relevant, arr.shape[0] if arr.ndim == 2 else None)
    if not is_long(arr, rel.shape[1]):
        arr = check_lists(lists, rel.shape[1])
        if arr.shape[0] != rel.shape[0]:
            raise ValueError(f"`lists` must have {rel.shape[0]} rows (one per user); got {arr.shape[0]}")
        # the list cells write their column into a bitmap that each relevant pair reads (list_positions)
        # padding is trailing (checked): a row whose last cell is an item is full, only the others are counted
        length = np.full(arr.shape[0], arr.shape[1], dtype=np.int64)
        if arr.shape[1]:
            short = np.flatnonzero(arr[:, -1] < 0)
            length[short] = (arr[short] >= 0).sum(axis=1)
        return list_positions(arr, rel), length
    length, rows, cols = long_list_hits(arr, rel)
    n_items = rel.shape[1]
    keys = row_ids(np.diff(rel.indptr)) * n_items + rel.indices  # sorted: canonical rows
    at = np.searchsorted(keys, rows.astype(np.int64) * n_items + arr[rows, cols])
    position = np.zeros(rel.nnz, dtype=np.int64)
    position[at] = cols + 1
    return position, length


_CORES = {
    "hits": _hits,
    "hit": _hit,
    "precision": _precision,
    "recall": _recall,
    "recall_truncated": _recall_truncated,
    "reciprocal_rank": _reciprocal_rank,
    "ndcg": _ndcg,
    "ndcg_lenskit07": _ndcg_lenskit07,
    "average_precision": _average_precision,
}

#: Names accepted by :func:`list_metrics`.
LIST_METRICS: tuple[str, ...] = tuple(_CORES)


def _check_names(metrics: Iterable[object]) -> None:
    if isinstance(metrics, str):
        raise TypeError(f"`metrics` must be a sequence of names, not a string; got {metrics!r}")
    unknown = [m for m in metrics if m not in _CORES]
    if unknown:
        raise ValueError(f"`metrics` must name metrics among {', '.join(LIST_METRICS)}; got {unknown}")


def list_metrics(
    lists: np.ndarray,
    relevant: Relevance,
    metrics: Sequence[str] = ("precision", "recall", "reciprocal_rank", "ndcg"),
    *,
    evaluated: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Several list metrics of the same lists at once (one relevance look-up).

    Same values (and warnings) as calling each function of this module; the
    inputs are checked and the membership table built once, which is what
    makes measuring many metrics cheap.

    Parameters
    ----------
    lists : ndarray of int, shape (n_users, N)
    relevant : csr_array or Interactions, shape (n_users, n_items)
    metrics : sequence of str
        Names among :data:`LIST_METRICS` (the function names of this module);
        default the thesis's four: precision, recall, reciprocal_rank, ndcg.
    evaluated : ndarray of bool, shape (n_users,), optional

    Returns
    -------
    dict
        ``{name: float64 (n_users,)}`` in the order of ``metrics``.
    """
    _check_names(metrics)
    p = _Prepared(lists, relevant, evaluated)
    return {m: _CORES[m](p) for m in metrics}


def list_metrics_many(
    lists_seq: Sequence[np.ndarray],
    relevant: Relevance,
    metrics: Sequence[str] = ("precision", "recall", "reciprocal_rank", "ndcg"),
    *,
    evaluated: np.ndarray | None = None,
) -> list[dict[str, np.ndarray]]:
    """:func:`list_metrics` of several list arrays against the same relevance sets.

    ``[list_metrics(lists, relevant, metrics, evaluated=evaluated) for lists
    in lists_seq]`` with identical values and warnings, but the relevance
    sets are checked and looked up once for all arrays (e.g. the lists of
    every recommender of a replicate): at ML-20M size the membership bitmap
    of the true relevance (about 24M pairs) was otherwise rebuilt per
    recommender.

    Parameters
    ----------
    lists_seq : sequence of ndarray of int, each shape (n_users, N_j)
        List arrays of the same users (lengths may differ).
    relevant : csr_array or Interactions, shape (n_users, n_items)
    metrics : sequence of str
        Names among :data:`LIST_METRICS`.
    evaluated : ndarray of bool, shape (n_users,), optional

    Returns
    -------
    list of dict
        One ``{name: float64 (n_users,)}`` per list array, in order.
    """
    _check_names(metrics)
    return [{m: _CORES[m](p) for m in metrics} for p in _Prepared.many(lists_seq, relevant, evaluated)]
