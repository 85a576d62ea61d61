"""Compiled kernel: check top-N list arrays and find their relevant entries, one user at a time.

:class:`simrec.metrics.lists._Prepared` checks every list array
(:func:`simrec.metrics._common.check_lists`: range, trailing padding, no
repeated item), lays the arrays side by side, looks every entry up in a
bitmap of the relevant pairs (:func:`~simrec.metrics._common.membership`)
and reads the table back (``nonzero``, row sums, ``argmax``): about ten
passes over the entries of every array, and a copy of them all. Here one
pass: per user, its relevant items are stamped in a reused table of
``n_items`` entries (the user's index: nothing to clear), and each array's
row is read once against it, stamping its own items in a second table to
find a repeat. Outputs are the (row, position) pairs of the relevant entries
and the real length of every list, as :func:`~simrec.metrics._common.long_list_hits`
gives them for long lists; the first broken rule stops the pass, and the
caller then runs :func:`~simrec.metrics._common.check_lists` for its
message.

numba, deterministic and single-threaded (integers only). Compiled on first
use and cached in the user's cache folder (:func:`simrec._cache.cached_njit`),
once per number of arrays (a tuple of arrays is one type per length);
importing this module imports numba, so callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["discounted_sums", "short_list_hits"]


@cached_njit(nogil=True)
def _hits(
    lists: tuple[np.ndarray, ...],
    indptr: np.ndarray,
    indices: np.ndarray,
    n_items: int,
    length: np.ndarray,
    offsets: np.ndarray,
    hit_rows: np.ndarray,
    hit_cols: np.ndarray,
    n_hits: np.ndarray,
    row_hits: np.ndarray,
) -> bool:
    n_users = indptr.shape[0] - 1
    n_arrays = len(lists)
    relevant = np.full(max(n_items, 1), -1, dtype=np.int64)  # the user whose relevant item it is
    seen = np.full(max(n_items, 1), -1, dtype=np.int64)  # the (user, array) whose list holds it
    for a in range(n_arrays):
        n_hits[a] = 0
    for u in range(n_users):
        for p in range(indptr[u], indptr[u + 1]):
            relevant[indices[p]] = u
        for a in range(n_arrays):
            arr = lists[a]
            mark = u * n_arrays + a
            n = arr.shape[1]
            real = n
            h = n_hits[a]
            at = offsets[a]
            for j in range(n):
                x = arr[u, j]
                if x < 0:
                    if x != -1:
                        return False
                    if real == n:
                        real = j
                    continue
                if x >= n_items or real < n or seen[x] == mark:  # out of range, after padding, repeated
                    return False
                seen[x] = mark
                if relevant[x] == u:
                    hit_rows[at + h] = u
                    hit_cols[at + h] = j
                    h += 1
            row_hits[a, u] = h - n_hits[a]
            n_hits[a] = h
            length[a, u] = real
    return True


def short_list_hits(
    lists: tuple[np.ndarray, ...], indptr: np.ndarray, indices: np.ndarray, n_items: int
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None:
    """Every array's ``(length, hit_rows, hit_cols, n_hits)`` against the relevance rows, or None if a list breaks a rule.

    Parameters
    ----------
    lists : tuple of ndarray of int64, each C-contiguous, shape (n_users, N_a)
        List arrays of the same users, -1 as trailing padding.
    indptr, indices : ndarray of int
        The canonical relevance sets (CSR structure), n_users rows.
    n_items : int

    Returns
    -------
    list of tuple, or None
        Per array: the real length of each list (int64 (n_users,)) and the
        row and position of each relevant entry (int32 where they fit, else
        int64; sorted by (row, position): ``np.nonzero`` of its membership
        table). None when an
        entry is outside [-1, n_items), an item follows padding, or a list
        repeats an item (the caller's :func:`~simrec.metrics._common.check_lists`
        names which).
    """
    n_users = len(indptr) - 1
    sizes = np.array([a.shape[1] for a in lists], dtype=np.int64) * n_users
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    length = np.empty((len(lists), n_users), dtype=np.int64)
    # only the hits are written (touched); int32 when the users and positions fit: half the memory
    pos = np.int32 if max(n_users, max((a.shape[1] for a in lists), default=0)) < 2**31 else np.int64
    hit_rows = np.empty(max(int(offsets[-1]), 1), dtype=pos)
    hit_cols = np.empty(max(int(offsets[-1]), 1), dtype=pos)
    n_hits = np.zeros(len(lists), dtype=np.int64)
    row_hits = np.empty((len(lists), n_users), dtype=np.int64)
    if not _hits(lists, indptr, indices, int(n_items), length, offsets, hit_rows, hit_cols, n_hits, row_hits):
        return None
    out = []
    for a in range(len(lists)):
        span = slice(int(offsets[a]), int(offsets[a] + n_hits[a]))
        out.append((length[a], hit_rows[span], hit_cols[span], row_hits[a]))
    return out


@cached_njit(nogil=True)
def discounted_sums(rows: np.ndarray, cols: np.ndarray, discounts: np.ndarray, n_rows: int) -> np.ndarray:
    """Each row's sum of ``discounts[cols]`` over its hits, float64 (n_rows,), added in the hits' order.

    ``np.bincount(rows, weights=discounts[cols], minlength=n_rows)``: the
    same additions in the same order (so the same float64 sums), without
    the array of weights or bincount's intp copy of the rows.
    """
    out = np.zeros(n_rows, dtype=np.float64)
    for t in range(rows.shape[0]):
        out[rows[t]] += discounts[cols[t]]
    return out
