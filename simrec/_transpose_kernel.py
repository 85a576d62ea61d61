"""Compiled kernel: the CSR structure of a 0/1 matrix given column by column (a counting sort by row).

:class:`simrec.preference.IBP` draws its truth item by item (one column per
item, each column's rows ascending); the interactions are stored by user
(CSR). scipy's ``csc_array.tocsr()`` does this transposition with a data
array beside the indices, a second scattered write per entry; the matrix here
is a pattern (every stored value is 1), so the kernel moves indices only, and
it scatters in cache-sized pieces: after the row counts (``indptr``), a first
pass moves each entry (its column, and its row within a bucket of 2**9 rows)
to its bucket's slice of the output, in column order; a second pass, bucket
by bucket, writes each column at its row's next free slot within that slice
(the scattered writes of one bucket stay in cache). Both passes are stable,
so each row's columns come out ascending (canonical CSR, equal to scipy's).
At ML-20M size (43M pairs) this took 0.7-0.9 s CPU against 1.9-2.0 s for
scipy's ``tocsr`` and 1.0-1.3 s for a one-pass scatter (fresh processes, load
16; docs/design.md §9). The first pass packs each entry's row within its
bucket above its column in the index itself when both fit (24 of 31 bits at
ML-20M size), so the extra memory is one bucket; otherwise two bytes per
entry more (the rows within their buckets, as before: 80 MB of fresh memory
at ML-20M size).

numba, deterministic and single-threaded (integers only, exact). Compiled on
first use and cached in the user's cache folder
(:func:`simrec._cache.cached_njit`); importing this module imports numba, so
callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["pattern_to_csr"]


#: Rows per bucket of the first pass (2**9: a bucket's slice of the output, about 600 KB at ML-20M size, stays
#: in a core's cache while the second pass scatters into it; 2**9 took 0.29 s CPU at ML-20M size, 2**11 0.34 s,
#: 2**12 0.38 s, in one process at load 4).
_SHIFT = 9
#: Rows :func:`pattern_to_csr` accepts: a guard far above any dataset (2**27, 134M users; a row within its
#: bucket of 2**_SHIFT rows is stored in ``_SHIFT`` bits of a packed index or as a uint16).
_MAX_ROWS = 1 << 27


@cached_njit(nogil=True)
def _fill(
    col_ptr: np.ndarray, rows: np.ndarray, shift: int, col_bits: int, indptr: np.ndarray, indices: np.ndarray
) -> None:
    n_rows = indptr.shape[0] - 1
    nxt = np.zeros(n_rows + 1, dtype=np.int64)
    for k in range(rows.shape[0]):
        nxt[rows[k] + 1] += 1
    for r in range(n_rows):
        nxt[r + 1] += nxt[r]
    for r in range(n_rows + 1):
        indptr[r] = nxt[r]
    if n_rows == 0:
        return
    # pass 1: entries to buckets of 2**shift consecutive rows, in column order; a bucket's entries fill the
    # slice its rows own. Each entry keeps its column and its row within the bucket: packed in one index
    # (row << col_bits | column) when both fit (col_bits >= 0), else the row in ``low``
    n_buckets = ((n_rows - 1) >> shift) + 1
    start = np.empty(n_buckets + 1, dtype=np.int64)
    for b in range(n_buckets + 1):
        start[b] = nxt[min(b << shift, n_rows)]
    fill = start[:-1].copy()
    packed = col_bits >= 0
    low = np.empty(0 if packed else rows.shape[0], dtype=np.uint16)
    for c in range(col_ptr.shape[0] - 1):
        for k in range(col_ptr[c], col_ptr[c + 1]):
            r = rows[k]
            b = r >> shift
            j = fill[b]
            if packed:
                indices[j] = ((r - (b << shift)) << col_bits) | c
            else:
                indices[j] = c
                low[j] = r - (b << shift)
            fill[b] = j + 1
    # pass 2: within each bucket's slice, each column to its row's next free slot (stable: columns ascending)
    width = 0
    for b in range(n_buckets):
        width = max(width, start[b + 1] - start[b])
    scratch = np.empty(width, dtype=indices.dtype)
    mask = (1 << max(col_bits, 0)) - 1
    for b in range(n_buckets):
        lo, hi = start[b], start[b + 1]
        scratch[: hi - lo] = indices[lo:hi]
        base = b << shift
        for k in range(lo, hi):
            v = scratch[k - lo]
            if packed:
                r = base + (v >> col_bits)
                v = v & mask
            else:
                r = base + low[k]
            j = nxt[r]
            indices[j] = v
            nxt[r] = j + 1


def pattern_to_csr(col_ptr: np.ndarray, rows: np.ndarray, n_rows: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of the 0/1 matrix whose column c holds rows ``rows[col_ptr[c]:col_ptr[c+1]]``.

    Parameters
    ----------
    col_ptr : ndarray of int, shape (n_cols + 1,)
        Column pointers (CSC), non-decreasing from 0 to ``len(rows)``.
    rows : ndarray of int, shape (nnz,)
        Row of each entry, in [0, n_rows), distinct within a column (not
        re-checked: the caller's construction guarantees it).
    n_rows : int
    dtype : numpy integer type
        Of both outputs (e.g. int32 when n_rows, n_cols and nnz fit).

    Returns
    -------
    indptr : ndarray of ``dtype``, shape (n_rows + 1,)
    indices : ndarray of ``dtype``, shape (nnz,)
        Each row's columns, ascending.
    """
    indptr: np.ndarray = np.empty(n_rows + 1, dtype=dtype)
    indices: np.ndarray = np.empty(len(rows), dtype=dtype)
    if n_rows >= _MAX_ROWS:
        raise ValueError(f"`n_rows` must be below {_MAX_ROWS}; got {n_rows}")
    n_cols = len(col_ptr) - 1
    col_bits = max(n_cols - 1, 0).bit_length()
    if col_bits + _SHIFT > 8 * np.dtype(dtype).itemsize - 1:  # a row within its bucket and a column in one index
        col_bits = -1
    _fill(np.asarray(col_ptr), np.asarray(rows), _SHIFT, col_bits, indptr, indices)
    return indptr, indices
