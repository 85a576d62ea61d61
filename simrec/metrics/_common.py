"""Shared machinery of the metrics: input checks, relevance look-up, NaN policy.

Conventions (docs/design.md, "The common currency", and §4):

* ``lists``: int array (n_users, N) of item indices, ``-1`` as trailing padding;
* ``relevant``: ``scipy.sparse.csr_array`` (n_users, n_items); every stored
  non-zero entry is a relevant item (an :class:`~simrec.interactions.Interactions`
  is accepted too);
* ``evaluated``: optional boolean mask (n_users,) of the users to evaluate;
  users outside it get NaN silently (e.g. users with no test item, who are not
  evaluated against the truth either);
* a value that is undefined for an evaluated user (e.g. an empty relevance set)
  is NaN, and one :class:`UndefinedMetricWarning` per call says how many users
  that concerned.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from simrec._blocks import user_blocks
from simrec._cache import use_kernel
from simrec.interactions import Interactions

__all__ = ["UndefinedMetricWarning"]

#: Cells (bytes) of the reusable (users x items) bitmap of :func:`membership`.
MEMBERSHIP_CELLS = 2**22


class UndefinedMetricWarning(RuntimeWarning):
    """A metric was undefined (NaN) for some evaluated users."""


def as_relevance(relevant: object, n_users: int | None, name: str = "relevant") -> sp.csr_array:
    """Return ``relevant`` as a canonical binary csr_array (copying only if needed)."""
    if isinstance(relevant, Interactions):
        rel = relevant.matrix
    elif sp.issparse(relevant) and getattr(relevant, "format", None) == "csr":
        rel = relevant if isinstance(relevant, sp.csr_array) else sp.csr_array(relevant)
    else:
        raise TypeError(f"`{name}` must be a scipy.sparse CSR array or an Interactions; got {type(relevant).__name__}")
    if rel.ndim != 2:
        raise ValueError(f"`{name}` must be 2-d; got {rel.ndim} dimensions")
    if n_users is not None and rel.shape[0] != n_users:
        raise ValueError(f"`{name}` must have {n_users} rows (one per user); got {rel.shape[0]}")
    zeros = rel.nnz > 0 and bool((rel.data == 0).any())
    if zeros or not rel.has_canonical_format:
        rel = rel.copy()
        rel.sum_duplicates()
        rel.eliminate_zeros()
    return rel


def check_lists(lists: object, n_items: int | None = None) -> np.ndarray:
    """Check a top-N list array and return it as int64 (n_users, N).

    Rules: 2-d integer array; entries in [-1, n_items); -1 only as trailing
    padding; no item twice in a row.
    """
    arr = np.asarray(lists)
    if arr.ndim != 2:
        raise ValueError(f"`lists` must be 2-d (n_users, N); got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        raise TypeError(f"`lists` must hold integer item indices; got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < -1 or (n_items is not None and hi >= n_items):
            top = "n_items" if n_items is None else str(n_items)
            raise ValueError(
                f"`lists` entries must be item indices in [-1, {top}) (-1 = padding); got range [{lo}, {hi}]"
            )
        real = arr >= 0
        if (real[:, 1:] & ~real[:, :-1]).any():
            raise ValueError("`lists` must use -1 only as trailing padding; found an item after a -1")
        if _repeats_in_rows(arr, hi + 1):
            raise ValueError("`lists` must not repeat an item within a user's list")
    return arr


def _repeats_in_rows(lists: np.ndarray, width: int) -> bool:
    """Does some row of ``lists`` (entries in [-1, width)) hold an item twice?

    Two exact paths, chosen by how much of the item range a row covers:

    * long lists (``N * _DENSE_LISTS >= width``, e.g. full rankings): the
      distinct cells of a block of rows are counted in a reusable bitmap
      (padding in a column of its own, :func:`_row_starts`); a row repeats an item exactly when the block
      has fewer distinct cells than real entries. O(entries + cells), and
      cells <= ``_DENSE_LISTS`` x entries here: a third of the row sort's
      time on full rankings at ML-1M size (bench/bench_fullrank.py);
    * short lists (top-N): rows sorted block by block as int32 when the items
      fit (numpy's SIMD sort is several times faster on 32-bit than on 64-bit
      keys), then neighbours compared; the bitmap would cost O(cells) >> entries.
      From ``_KERNEL_MIN_ENTRIES`` entries on (or once numba is loaded), the
      compiled row-by-row bitmap of :mod:`simrec.metrics._repeats_kernel`
      instead (O(entries), the same answer).
    """
    n_rows, N = lists.shape
    if N * _DENSE_LISTS >= width:
        step = max(1, MEMBERSHIP_CELLS // (width + 1))
        starts = _row_starts(min(step, n_rows), width)
        bitmap = np.empty(len(starts) * (width + 1), dtype=bool)
        for u0 in range(0, n_rows, step):
            block = lists[u0 : u0 + step]
            view = bitmap[: len(block) * (width + 1)]
            view[:] = False
            view[starts[: len(block), None] + block] = True
            view[:: width + 1] = False  # the padding's column
            if np.count_nonzero(view) < np.count_nonzero(block >= 0):
                return True
        return False
    if use_kernel(lists.size, _KERNEL_MIN_ENTRIES):
        from simrec.metrics._repeats_kernel import repeats_in_rows

        return bool(repeats_in_rows(np.ascontiguousarray(lists, dtype=np.int64), int(width)))
    dtype = np.int32 if width <= np.iinfo(np.int32).max else np.int64
    for blk in user_blocks(n_rows, N):
        srt = np.sort(lists[blk].astype(dtype), axis=1)
        if ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any():
            return True
    return False


#: Lists at least 1/_DENSE_LISTS of the item range long take the bitmap path of :func:`_repeats_in_rows`.
_DENSE_LISTS = 4
#: List entries from which :func:`_repeats_in_rows` checks short lists with the compiled kernel: below it,
#: importing numba and loading the kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_ENTRIES = 1 << 23


def _row_starts(n_rows: int, width: int) -> np.ndarray:
    """Flat index of item 0 in each row of a (n_rows x (width + 1)) bitmap whose column 0 is padding's.

    ``starts[:, None] + lists`` sends item i of row r to cell
    ``r * (width + 1) + 1 + i`` and the padding -1 to the row's column 0,
    which is never set: no mask of the padding is needed.
    """
    return np.arange(n_rows, dtype=np.intp) * (width + 1) + 1  # (also for width 0: padding only)


#: List entries (int64) per row block of :func:`long_list_hits`: its temporaries (about 10 bytes an
#: entry, plus the block's position table) stay in a core's cache (2 MiB of L2 here).
LONG_LIST_ENTRIES = 2**17


def is_long(lists: np.ndarray, n_items: int) -> bool:
    """Do ``lists`` take :func:`long_list_hits` (rows at least 1/4 of the item range long, e.g. full rankings)?

    Signed (or narrow unsigned) integer lists with entries and items only;
    other arrays take :func:`check_lists` and :func:`membership`, whose
    errors and values are the same.
    """
    arr = np.asarray(lists)
    return (
        arr.ndim == 2
        and arr.size > 0
        and n_items > 0
        and arr.shape[1] * _DENSE_LISTS >= n_items
        and arr.dtype != np.bool_
        and (
            np.issubdtype(arr.dtype, np.signedinteger)
            or (np.issubdtype(arr.dtype, np.unsignedinteger) and arr.itemsize < 8)
        )
    )


def long_list_hits(lists: np.ndarray, rel: sp.csr_array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Check long lists and find their relevant entries in one pass by blocks of rows.

    For lists that cover a large share of the items (:func:`is_long`, e.g.
    full rankings), :func:`check_lists` followed by :func:`membership` read
    every entry several times and gathered each one from the relevance
    bitmap. Here each block of rows (:data:`LONG_LIST_ENTRIES` entries, so
    its temporaries stay in cache) is read once from memory, and its entries
    are *scattered* into a table of positions, one row of ``n_items + 1``
    cells per list (cell 0 takes the padding, :func:`_row_starts`): cell
    ``(r, 1 + i)`` holds 1 + the position of item i in list r, 0 if absent.
    That one scatter checks the lists and gives every relevant item's
    position:

    * range: the entries plus one, as unsigned integers, are at most ``n_items``;
    * no repeat and trailing padding: with :math:`L` the block's real
      entries, :math:`D` its filled item cells and :math:`M_r` the largest
      value in row r's item cells, each row has :math:`D_r \le L_r \le M_r`,
      so :math:`D = L = \sum_r M_r` holds exactly when no row repeats an
      item (:math:`D_r = L_r`) and every row's real entries fill positions
      :math:`0 .. L_r - 1` (:math:`M_r = L_r`), i.e. the padding is trailing;
    * hits: the cells of the block's relevant pairs hold their positions
      (O(relevant pairs), no gather of every entry).

    A block that fails a check sends the whole array to :func:`check_lists`,
    which raises its usual error (the same messages and order of checks as
    the other path).

    Parameters
    ----------
    lists : ndarray of int, shape (n_users, N)
        :func:`is_long` must hold.
    rel : csr_array, shape (n_users, n_items)
        Canonical relevance sets (:func:`as_relevance`).

    Returns
    -------
    length : ndarray of int64, shape (n_users,)
        Real entries per list.
    hit_rows, hit_cols : ndarray of int64, shape (n_hits,)
        Row and position of every relevant entry, sorted by (row, position):
        ``np.nonzero(membership(lists, rel))``.
    """
    arr = np.asarray(lists)
    n_rows, N = arr.shape
    n_items = rel.shape[1]
    if arr.shape[0] != rel.shape[0]:
        raise ValueError(f"`lists` must have {rel.shape[0]} rows (one per user); got {arr.shape[0]}")
    width = n_items + 1
    shift = N.bit_length()  # bits of 1 + a position
    step = max(1, LONG_LIST_ENTRIES // N)
    pos_type = np.int16 if N < np.iinfo(np.int16).max else np.int32
    table = np.zeros(min(step, n_rows) * width, dtype=pos_type)
    # 1 + each entry's position, one row per list of the block: a full array, not a broadcast
    # row (numpy's scatter of a broadcast value is twice as slow)
    pos1 = np.repeat(np.arange(1, N + 1, dtype=pos_type)[None, :], min(step, n_rows), axis=0)
    starts = _row_starts(min(step, n_rows), n_items) - 1  # cell of the padding (entry + 1 = 0)
    cell = np.empty((min(step, n_rows), N), dtype=np.int64)
    length = np.empty(n_rows, dtype=np.int64)
    indptr, indices = rel.indptr, rel.indices
    hit_rows, hit_cols = [], []
    for u0 in range(0, n_rows, step):
        u1 = min(u0 + step, n_rows)
        b = u1 - u0
        y = cell[:b]
        np.add(arr[u0:u1], 1, out=y, dtype=np.int64)
        if int(y.view(np.uint64).max()) > n_items:
            break
        n_real = np.count_nonzero(y)
        y += starts[:b, None]
        view = table[: b * width]
        view[y] = pos1[:b]
        rows2 = view.reshape(b, width)
        top = rows2[:, 1:].max(axis=1)
        filled = np.count_nonzero(view) - np.count_nonzero(rows2[:, 0])
        if not (filled == n_real == int(top.sum(dtype=np.int64))):
            break
        length[u0:u1] = top
        lo, hi = indptr[u0], indptr[u1]
        if hi > lo:
            rr = np.repeat(np.arange(b, dtype=np.int64), np.diff(indptr[u0 : u1 + 1]))
            at = view[starts[rr] + 1 + indices[lo:hi]]
            found = at > 0
            key = rr[found] << shift  # (row, 1 + position), sorted: shifts, not a division
            key |= at[found]
            key.sort()
            hit_rows.append((key >> shift) + u0)
            key &= (1 << shift) - 1
            key -= 1
            hit_cols.append(key)
        view[:] = 0
    else:
        if hit_rows:
            return length, np.concatenate(hit_rows), np.concatenate(hit_cols)
        return length, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    check_lists(arr, n_items)  # raises the error of the first failed rule
    raise RuntimeError("long_list_hits: a block failed a check that check_lists accepts")  # pragma: no cover


def check_evaluated(evaluated: object, n_users: int) -> np.ndarray:
    """Check the optional user mask; ``None`` means every user."""
    if evaluated is None:
        return np.ones(n_users, dtype=bool)
    mask = np.asarray(evaluated)
    if mask.dtype != np.bool_:
        raise TypeError(f"`evaluated` must be a boolean mask; got dtype {mask.dtype}")
    if mask.shape != (n_users,):
        raise ValueError(f"`evaluated` must have shape ({n_users},); got {mask.shape}")
    return mask


def membership(lists: np.ndarray, rel: sp.csr_array, values: np.ndarray | None = None) -> np.ndarray:
    """Boolean (n_users, N): is ``lists[u, i]`` in the relevance set of user u.

    Vectorized look-up through a reusable bitmap: for a block of users whose
    (users x n_items) cells fit :data:`MEMBERSHIP_CELLS` bytes, the relevant
    cells are set, the list cells read, and the same cells cleared again, so
    each block costs O(its relevant pairs + its list entries), never
    O(cells). Five to seven times faster at ML-20M size than the binary search
    of every list key in the sorted relevant keys that it replaces (the
    bitmap stays in cache; the keys did not). Each bitmap row has a column
    before item 0 that is never set, where the padding -1 lands
    (:func:`_row_starts`): one gather, no mask of the padding.

    With ``values`` (shape (rel.nnz,), aligned with ``rel.indices``), the
    result is instead the value of each list entry's pair, with the dtype of
    ``values`` and 0 where the entry is not relevant or is padding (the
    bitmap then holds values; its blocks keep the same byte budget).
    """
    n_users, n_items = rel.shape
    dtype = np.dtype(bool) if values is None else np.asarray(values).dtype
    out = np.zeros(lists.shape, dtype=dtype)
    if rel.nnz == 0 or lists.size == 0:
        return out
    step = max(1, MEMBERSHIP_CELLS // ((n_items + 1) * dtype.itemsize))
    starts = _row_starts(min(step, n_users), n_items)
    bitmap = np.zeros(len(starts) * (n_items + 1), dtype=dtype)  # column 0 of each row: padding, never set
    ptr = rel.indptr
    for u0 in range(0, n_users, step):
        u1 = min(u0 + step, n_users)
        cells = np.repeat(starts[: u1 - u0], np.diff(ptr[u0 : u1 + 1])) + rel.indices[ptr[u0] : ptr[u1]]
        bitmap[cells] = True if values is None else values[ptr[u0] : ptr[u1]]
        out[u0:u1] = bitmap[starts[: u1 - u0, None] + lists[u0:u1]]
        bitmap[cells] = 0
    return out


def list_positions(lists: np.ndarray, rel: sp.csr_array) -> np.ndarray:
    """1-based position of every pair of ``rel`` in its user's list (0 if absent), int64 (rel.nnz,).

    The transpose of :func:`membership` with values, for checked top-N lists
    (no repeated item in a row): for a block of users the list cells write
    their 1-based column into a reusable bitmap of the smallest unsigned type
    that holds N, the relevant pairs read it, and the list cells clear it.
    O(list entries + relevant pairs) per block, the pairs' positions come out
    aligned with ``rel.indices`` (no search of the hits), and with N <= 255 the
    bitmap is bytes, so the blocks are as large as :func:`membership`'s
    boolean ones. The padding -1 writes the column before item 0, which no
    pair reads.
    """
    n_users, n_items = rel.shape
    position = np.zeros(rel.nnz, dtype=np.int64)
    if rel.nnz == 0 or lists.size == 0:
        return position
    N = lists.shape[1]
    dtype = np.min_scalar_type(N)
    cols = np.arange(1, N + 1, dtype=dtype)
    step = max(1, MEMBERSHIP_CELLS // ((n_items + 1) * dtype.itemsize))
    starts = _row_starts(min(step, n_users), n_items)
    bitmap = np.zeros(len(starts) * (n_items + 1), dtype=dtype)
    ptr = rel.indptr
    for u0 in range(0, n_users, step):
        u1 = min(u0 + step, n_users)
        cells = starts[: u1 - u0, None] + lists[u0:u1]
        bitmap[cells] = cols  # broadcast over the block's rows; a row holds each item once (checked)
        pairs = np.repeat(starts[: u1 - u0], np.diff(ptr[u0 : u1 + 1])) + rel.indices[ptr[u0] : ptr[u1]]
        position[ptr[u0] : ptr[u1]] = bitmap[pairs]
        bitmap[cells] = 0
    return position


def relevance_gains(relevant: object) -> np.ndarray | None:
    """The per-pair gains a relevance set carries, or None (binary).

    Only an :class:`~simrec.interactions.Interactions` with ``gains`` carries
    them (aligned with its canonical matrix, so with :func:`as_relevance`'s
    result); a sparse array's stored values are never read as gains.
    """
    return relevant.gains if isinstance(relevant, Interactions) else None


def finish(
    values: np.ndarray, undefined: np.ndarray, evaluated: np.ndarray, name: str, why: str, stacklevel: int = 3
) -> np.ndarray:
    """Apply the NaN policy and warn once about undefined evaluated users."""
    values = np.asarray(values, dtype=np.float64)
    bad = undefined & evaluated
    values[bad | ~evaluated] = np.nan
    n_bad = int(bad.sum())
    if n_bad:
        warnings.warn(
            f"{name} is undefined for {n_bad} of {int(evaluated.sum())} evaluated users ({why}); their values are NaN",
            UndefinedMetricWarning,
            stacklevel=stacklevel,
        )
    return values
