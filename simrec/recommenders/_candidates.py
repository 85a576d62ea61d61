"""Random candidates of the baseline recommenders: relevant items, items outside excluded sets, whole rankings.

The draws of :class:`~simrec.recommenders.Random`,
:class:`~simrec.recommenders.Oracle` and
:class:`~simrec.recommenders.ProbabilisticOracle`
(:mod:`simrec.recommenders.baselines`): per user, uniform samples without
replacement of its relevant items or of the items outside its excluded ones
(training, or training and relevant), drawn by
:func:`~simrec._sampling.sample_distinct_chunks` and mapped to items chunk by
chunk, and full rankings by 2-D blocks of rows. No loop per user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from simrec._cache import use_kernel
from simrec._sampling import nth_allowed, permutation_chunks, row_ids, sample_distinct_chunks
from simrec.interactions import Interactions

__all__: list[str] = []


def _random_relevant(
    rel: sp.csr_array, t: np.ndarray, rng: np.random.Generator
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per user, ``t[u]`` items of its row of ``rel`` drawn uniformly without replacement, in random order.

    Yields chunks ``(rows, rank, items)`` (grouped rows, each entry's position
    in its user's draw, the item) as :func:`~simrec._sampling.sample_distinct_chunks`
    draws them: no arrays of the whole sample.
    """
    r = np.diff(rel.indptr).astype(np.int64)
    for rows, j, rank in sample_distinct_chunks(t, r, rng):
        yield rows, rank, rel.indices[np.take(rel.indptr, rows) + j]


class _Excluded:
    """Each user's excluded items: its row of one canonical csr_array, or the union of its rows of two disjoint ones.

    ``excluded(users)`` gives the rows of the distinct, ascending ``users``
    as one canonical csr_array (scipy merges the two arrays' sorted rows);
    :meth:`nth` answers :func:`~simrec._sampling.nth_allowed`'s queries from
    the arrays themselves (:func:`simrec._rows_kernel.nth_outside`).
    """

    __slots__ = ("a", "b")

    def __init__(self, a: sp.csr_array, b: sp.csr_array | None = None) -> None:
        self.a, self.b = a, b

    def __call__(self, users: np.ndarray) -> sp.csr_array:
        return self.a[users] if self.b is None else sp.csr_array(self.a[users] + self.b[users])

    def nth(self, rows: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The ``j``-th item outside row ``rows`` (queries grouped by row), compiled."""
        from simrec._rows_kernel import nth_outside

        b = self.b
        return nth_outside(
            self.a.indptr, self.a.indices, None if b is None else b.indptr, None if b is None else b.indices, rows, j
        )


def _random_outside(
    excluded: _Excluded,
    k: np.ndarray,
    allowed: np.ndarray,
    n_items: int,
    rng: np.random.Generator,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per user, ``k[u]`` distinct items drawn uniformly among its ``allowed[u]`` non-excluded ones, in random order.

    Yields chunks ``(rows, rank, items)`` like :func:`_random_relevant`.
    From ``_KERNEL_MIN_QUERIES`` items on (or once numba is loaded), each
    drawn index is mapped to its item by :meth:`_Excluded.nth` (one binary
    search in the user's excluded items, no copy of the chunk's rows), else
    by :func:`_allowed_items` on the chunk's rows: the same items.
    """
    compiled = use_kernel(int(k.sum()), _KERNEL_MIN_QUERIES)
    for rows, j, rank in sample_distinct_chunks(k, allowed, rng):
        head = rank == 0
        n_rows = int(np.count_nonzero(head))
        if compiled and n_rows * n_items > _BITMAP_CELLS_PER_QUERY * len(j):
            yield rows, rank, excluded.nth(rows, j)
        else:
            yield rows, rank, _allowed_items(excluded(rows[head]), head, j, n_items)


def _train_or_relevant(train: Interactions, rel: sp.csr_array) -> _Excluded:
    """``excluded`` of :func:`_random_outside` for the union of training and relevant items (disjoint)."""
    return _Excluded(train.matrix, rel)


#: :func:`_allowed_items` reads a bitmap of the rows' items when it has at most this many cells per query.
_BITMAP_CELLS_PER_QUERY = 4
#: Items drawn by :func:`_random_outside` from which they are mapped by the compiled search: below it,
#: importing numba and loading the kernel (about 0.4 s) costs more than it saves, unless numba is loaded.
_KERNEL_MIN_QUERIES = 1 << 22


def _allowed_items(excluded: sp.csr_array, head: np.ndarray, j: np.ndarray, n_items: int) -> np.ndarray:
    """The ``j``-th item outside its row's excluded items, for queries grouped by row.

    ``excluded`` holds the excluded items of the distinct rows of the
    queries, one CSR row each, in order (e.g. ``m[unique rows]``); ``head``
    marks each row's first query. :func:`~simrec._sampling.nth_allowed` on
    those rows alone, or, when the queries are dense (at most
    ``_BITMAP_CELLS_PER_QUERY`` cells of the rows' item range per query,
    e.g. the full rankings of Random and Oracle), the same answers read from
    the rows' allowed items laid out in order (a bitmap of the rows, one
    compress, one gather: O(cells), no binary search per query).
    """
    local = np.cumsum(head) - 1
    n_rows = excluded.shape[0]
    if n_rows * n_items <= _BITMAP_CELLS_PER_QUERY * len(j):
        laid = _allowed_laid(excluded, n_items)
        start = np.zeros(n_rows, dtype=np.int64)
        np.cumsum(n_items - np.diff(excluded.indptr)[:-1], out=start[1:])
        at = np.take(start, local)
        at += j
        return np.take(laid, at)
    excl_rows = row_ids(np.diff(excluded.indptr))
    return nth_allowed(excl_rows, excluded.indices.astype(np.int64), n_rows, local, j, n_items + 1)


def _allowed_laid(excluded: sp.csr_array, n_items: int) -> np.ndarray:
    """Each row's items outside its ``excluded`` ones, ascending, rows laid one after another (a bitmap, one compress)."""
    allowed = np.ones((excluded.shape[0], n_items), dtype=bool)
    allowed.ravel()[row_ids(np.diff(excluded.indptr)) * n_items + excluded.indices] = False
    return np.broadcast_to(np.arange(n_items, dtype=np.int64), allowed.shape)[allowed]


def _permuted_into(
    out: np.ndarray,
    sizes: np.ndarray,
    candidates: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    offset: np.ndarray | None = None,
) -> None:
    """Write every row's ``sizes[r]`` candidates in a uniformly random order to ``out[r, offset[r]:]`` (offset 0).

    ``candidates(rows)`` gives the candidates of the ascending ``rows``, each
    row's ascending, one row after another. The draws and lists of
    :func:`_random_relevant` / :func:`_random_outside` when every row's whole
    sample is drawn (``t = r``, ``k = allowed``: a full ranking), done by
    blocks of rows in two dimensions (:func:`~simrec._sampling.permutation_chunks`:
    one row-wise sort of the draws; the permutation picks the candidates, one
    gather), with no flat arrays of (row, rank, item).
    """
    n = out.shape[1]
    for rows, perm in permutation_chunks(sizes, rng):
        width = perm.shape[1]
        real = np.arange(width) < sizes[rows][:, None]
        laid = np.full(perm.shape, -1, dtype=np.int64)
        laid[real] = candidates(rows)
        perm += (np.arange(len(rows), dtype=np.int64) * width)[:, None]
        items = np.take(laid, perm)  # positions past a row's size: -1
        if offset is None:
            out[rows, :width] = items
        else:
            at = (rows * n + offset[rows])[:, None] + np.arange(width)
            out.reshape(-1)[at[real]] = items[real]
