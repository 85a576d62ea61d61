"""Compiled kernels over the sorted rows of canonical CSR patterns: set difference, overlap, allowed values.

Each row of a canonical CSR array holds its column indices ascending and
distinct. scipy combines two such rows by a merge in C++ (``a - a.multiply(b)``,
``a.multiply(b).count_nonzero()``) but writes a whole sparse result per
operation (index and data arrays of the operands' size, fresh memory at
ML-20M size) and then prunes it; here one row is stamped in a reused table of
the columns and the other read against it (no branch per entry, where a merge
mispredicts about every other step), and each answer is written once, in its
final array, or not at all:

* :func:`rows_minus`: row ``a_rows[u]`` of A minus row u of B, every row
  (:func:`simrec.experiment.true_relevance`: the truth's row minus the
  training row);
* :func:`rows_overlap`: whether some row of A and the same row of B share a
  column (:func:`simrec.recommenders._base.check_relevant`: relevant training
  pairs, usually none);
* :func:`rows_partition`: every row split in two by positions drawn in it
  (:func:`simrec.split.holdout`: the test positions and the rest);
* :func:`column_counts`: the entries of every column
  (:meth:`simrec.interactions.Interactions.item_counts`: ``np.bincount``
  converts int32 indices to intp first, slice by slice);
* :func:`nth_outside`: the j-th (0-based) value outside the union of a row of
  A and the same row of B, for queries grouped by row
  (:func:`simrec._sampling.nth_allowed`'s answer, by a binary search in the
  row's own merged values instead of a search of keys of every row).

numba, deterministic and single-threaded (integers only, exact). Compiled on
first use and cached in the user's cache folder
(:func:`simrec._cache.cached_njit`); importing this module imports numba, so
callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["column_counts", "nth_outside", "rows_minus", "rows_overlap", "rows_partition"]


@cached_njit(nogil=True)
def _minus(
    a_ptr: np.ndarray,
    a_idx: np.ndarray,
    a_rows: np.ndarray,
    b_ptr: np.ndarray,
    b_idx: np.ndarray,
    n_cols: int,
    out_ptr: np.ndarray,
    out: np.ndarray,
) -> None:
    marked = np.full(max(n_cols, 1), -1, dtype=np.int64)  # the row of B that holds the column: nothing to clear
    j = 0
    out_ptr[0] = 0
    for u in range(a_rows.shape[0]):
        for q in range(b_ptr[u], b_ptr[u + 1]):
            marked[b_idx[q]] = u
        r = a_rows[u]
        for p in range(a_ptr[r], a_ptr[r + 1]):
            x = a_idx[p]
            out[j] = x
            j += marked[x] != u  # no branch: kept unless marked
        out_ptr[u + 1] = j


def rows_minus(
    a_ptr: np.ndarray, a_idx: np.ndarray, a_rows: np.ndarray, b_ptr: np.ndarray, b_idx: np.ndarray, n_cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """Row ``a_rows[u]`` of A minus row u of B, for every u: ``(indptr, indices)``.

    Parameters
    ----------
    a_ptr, a_idx : ndarray of int
        CSR structure of A (canonical rows).
    a_rows : ndarray of int64, shape (n_rows,)
        The row of A of each output row.
    b_ptr, b_idx : ndarray of int
        CSR structure of B, ``n_rows`` rows.
    n_cols : int
        Columns of A and B.

    Returns
    -------
    indptr : ndarray of int64, shape (n_rows + 1,)
    indices : ndarray of ``a_idx``'s dtype, shape (indptr[-1],)
        Each row's columns, ascending (a view of a buffer of the selected
        A rows' total size: only the first ``indptr[-1]`` entries are
        written). Row u of B is stamped with u in a reused table of
        ``n_cols`` entries and row ``a_rows[u]`` of A read against it (no
        branch per entry: a merge of the two sorted rows mispredicts about
        every other step; no pass to clear the marks).
    """
    a_rows = np.asarray(a_rows, dtype=np.int64)
    upper = int((a_ptr[a_rows + 1] - a_ptr[a_rows]).sum()) if len(a_rows) else 0
    out = np.empty(max(upper, 1), dtype=a_idx.dtype)  # one slot more than needed when empty: no guard per entry
    out_ptr = np.empty(len(a_rows) + 1, dtype=np.int64)
    _minus(a_ptr, a_idx, a_rows, b_ptr, b_idx, int(n_cols), out_ptr, out)
    return out_ptr, out[: out_ptr[-1]]


@cached_njit(nogil=True)
def _overlap(a_ptr: np.ndarray, a_idx: np.ndarray, b_ptr: np.ndarray, b_idx: np.ndarray, n_cols: int) -> bool:
    marked = np.full(max(n_cols, 1), -1, dtype=np.int64)  # the row of B that holds the column: nothing to clear
    for u in range(a_ptr.shape[0] - 1):
        for q in range(b_ptr[u], b_ptr[u + 1]):
            marked[b_idx[q]] = u
        hit = False
        for p in range(a_ptr[u], a_ptr[u + 1]):
            hit |= marked[a_idx[p]] == u
        if hit:
            return True
    return False


def rows_overlap(a_ptr: np.ndarray, a_idx: np.ndarray, b_ptr: np.ndarray, b_idx: np.ndarray, n_cols: int) -> bool:
    """Whether some row u of A and row u of B (the same rows and ``n_cols`` columns) share a column.

    Each row of B is stamped in a reused table of ``n_cols`` entries and the
    same row of A read against it (as :func:`rows_minus`).
    """
    return bool(_overlap(a_ptr, a_idx, b_ptr, b_idx, int(n_cols)))


@cached_njit(nogil=True)
def _nth_outside(
    a_ptr: np.ndarray,
    a_idx: np.ndarray,
    b_ptr: np.ndarray,
    b_idx: np.ndarray,
    q_rows: np.ndarray,
    q_j: np.ndarray,
    out: np.ndarray,
) -> None:
    width = 0
    for i in range(q_rows.shape[0]):
        r = q_rows[i]
        width = max(width, (a_ptr[r + 1] - a_ptr[r]) + (b_ptr[r + 1] - b_ptr[r]))
    d = np.empty(max(width, 1), dtype=np.int64)
    n_d = 0
    row = -1
    for i in range(q_rows.shape[0]):
        r = q_rows[i]
        if r != row:  # the row's excluded values merged, as d_t = e_t - t (non-decreasing)
            row = r
            p, p_end = a_ptr[r], a_ptr[r + 1]
            q, q_end = b_ptr[r], b_ptr[r + 1]
            n_d = 0
            while p < p_end or q < q_end:
                if q == q_end or (p < p_end and a_idx[p] < b_idx[q]):
                    x = a_idx[p]
                    p += 1
                else:
                    x = b_idx[q]
                    q += 1
                d[n_d] = x - n_d
                n_d += 1
        j = q_j[i]
        lo, hi = 0, n_d  # the answer is j + |{t : d_t <= j}|
        while lo < hi:
            mid = (lo + hi) >> 1
            if d[mid] <= j:
                lo = mid + 1
            else:
                hi = mid
        out[i] = j + lo


def nth_outside(
    a_ptr: np.ndarray,
    a_idx: np.ndarray,
    b_ptr: np.ndarray | None,
    b_idx: np.ndarray | None,
    q_rows: np.ndarray,
    q_j: np.ndarray,
) -> np.ndarray:
    """The ``q_j``-th (0-based) non-negative integer outside row ``q_rows`` of A and of B.

    Parameters
    ----------
    a_ptr, a_idx : ndarray of int
        CSR structure of A (canonical rows).
    b_ptr, b_idx : ndarray of int or None
        CSR structure of B, the same rows, each row disjoint from A's (None: no B).
    q_rows, q_j : ndarray of int64, shape (n_queries,)
        Queries, each row's consecutive (a row's values are merged once per run
        of its queries).

    Returns
    -------
    ndarray of int64, shape (n_queries,)
        :func:`simrec._sampling.nth_allowed` of the rows' excluded values:
        :math:`j + |\\{t : e_t - t \\le j\\}|` with :math:`e_0 < e_1 < \\dots`
        the row's values of A and B.
    """
    if b_ptr is None or b_idx is None:
        b_ptr, b_idx = np.zeros(len(a_ptr), dtype=a_ptr.dtype), a_idx[:0]  # A's types: one compiled version
    out = np.empty(len(q_rows), dtype=np.int64)
    _nth_outside(a_ptr, a_idx, b_ptr, b_idx, np.asarray(q_rows, dtype=np.int64), np.asarray(q_j, dtype=np.int64), out)
    return out


@cached_njit(nogil=True)
def _partition(
    indptr: np.ndarray,
    indices: np.ndarray,
    sizes: np.ndarray,
    positions: np.ndarray,
    rest: np.ndarray,
    chosen: np.ndarray,
) -> None:
    width = 1
    for u in range(indptr.shape[0] - 1):
        width = max(width, indptr[u + 1] - indptr[u])
    stamp = np.full(width, -1, dtype=np.int64)  # the row whose chosen position it is
    s = 0
    a = 0
    b = 0
    for u in range(indptr.shape[0] - 1):
        for t in range(s, s + sizes[u]):
            stamp[positions[t]] = u
        s += sizes[u]
        p0 = indptr[u]
        for t in range(indptr[u + 1] - p0):  # no branch: both slots written, one of them kept
            x = indices[p0 + t]
            c = stamp[t] == u
            rest[a] = x
            chosen[b] = x
            a += 1 - c
            b += c


def rows_partition(
    indptr: np.ndarray, indices: np.ndarray, sizes: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's entries at its chosen positions, and the others: ``(rest, chosen)`` column indices.

    Parameters
    ----------
    indptr, indices : ndarray of int
        A CSR structure.
    sizes : ndarray of int64, shape (n_rows,)
        Chosen positions per row.
    positions : ndarray of int64, shape (sizes.sum(),)
        Row after row, distinct positions within each row (0-based, in any order).

    Returns
    -------
    rest, chosen : ndarray of ``indices``' dtype
        The entries outside / at the chosen positions, row after row, each
        row's in their order in ``indices`` (so sorted rows stay sorted).
    """
    n_chosen = int(len(positions))
    rest = np.empty(len(indices) - n_chosen + 1, dtype=indices.dtype)  # one slot more: the last write is free
    chosen = np.empty(n_chosen + 1, dtype=indices.dtype)
    _partition(indptr, indices, np.asarray(sizes, dtype=np.int64), np.asarray(positions, dtype=np.int64), rest, chosen)
    return rest[:-1], chosen[:-1]


@cached_njit(nogil=True)
def column_counts(indices: np.ndarray, n_cols: int) -> np.ndarray:
    """Entries per column, int64 (n_cols,): ``np.bincount(indices, minlength=n_cols)``."""
    counts = np.zeros(n_cols, dtype=np.int64)
    for t in range(indices.shape[0]):
        counts[indices[t]] += 1
    return counts
