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

from simrec.interactions import Interactions

__all__ = ["UndefinedMetricWarning"]

#: Elements of a dense (users x items) block processed at once by the
#: full-ranking metrics (2**21 float64 = 16 MiB per temporary).
BLOCK_ELEMENTS = 2**21
#: Cells (bytes) of the reusable (users x items) bitmap of :func:`membership`.
MEMBERSHIP_CELLS = 2**22


class UndefinedMetricWarning(RuntimeWarning):
    """A metric was undefined (NaN) for some evaluated users."""


def as_relevance(relevant: object, n_users: int | None, name: str = "relevant") -> sp.csr_array:
    """Return ``relevant`` as a canonical binary csr_array (copying only if needed)."""
    if isinstance(relevant, Interactions):
        rel = relevant.matrix
    elif sp.issparse(relevant) and relevant.format == "csr":
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
    dtype = np.int32 if width <= np.iinfo(np.int32).max else np.int64
    for blk in user_blocks(n_rows, N):
        srt = np.sort(lists[blk].astype(dtype), axis=1)
        if ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)).any():
            return True
    return False


#: Lists at least 1/_DENSE_LISTS of the item range long take the bitmap path of :func:`_repeats_in_rows`.
_DENSE_LISTS = 4


def _row_starts(n_rows: int, width: int) -> np.ndarray:
    """Flat index of item 0 in each row of a (n_rows x (width + 1)) bitmap whose column 0 is padding's.

    ``starts[:, None] + lists`` sends item i of row r to cell
    ``r * (width + 1) + 1 + i`` and the padding -1 to the row's column 0,
    which is never set: no mask of the padding is needed.
    """
    return np.arange(n_rows, dtype=np.intp) * (width + 1) + 1  # (also for width 0: padding only)


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


def user_blocks(n_users: int, n_cols: int, budget: int | None = None):
    """Slices of consecutive users whose dense (rows x n_cols) block fits ``budget``."""
    step = max(1, (BLOCK_ELEMENTS if budget is None else budget) // max(n_cols, 1))
    for start in range(0, n_users, step):
        yield slice(start, min(start + step, n_users))
