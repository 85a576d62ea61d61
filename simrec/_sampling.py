"""Vectorized per-row sampling primitives (used by the split and the baseline recommenders).

Two building blocks, both without a loop per user:

* :func:`nth_allowed` maps, per user, a 0-based index j among the *allowed*
  integers of a range (those not in the user's excluded set, e.g. its training
  items) to the integer itself;
* :func:`sample_distinct` draws, per user, k distinct integers uniformly from
  [0, a) in a uniformly random order.

Together they draw random candidates: draw k distinct indices among the
a = n_items - |excluded| allowed items, then map them to items.
"""

from __future__ import annotations

import numpy as np

__all__ = ["first_occurrences", "nth_allowed", "sample_distinct", "row_starts", "rank_within_rows", "row_ids"]


def row_ids(lens: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Row index of every entry of rows laid out consecutively, shape (sum(lens),).

    Equal to ``np.repeat(np.arange(len(lens), dtype=dtype), lens)``, built as
    a running sum of row-start marks: ``np.repeat`` copies one element per
    call of its inner loop, several times slower than a cumulative sum at
    tens of millions of entries.
    """
    lens = np.asarray(lens, dtype=np.int64)
    ends = np.cumsum(lens)
    n = int(ends[-1]) if len(ends) else 0
    out = np.zeros(n, dtype=dtype)
    if n:
        np.add.at(out, ends[:-1][ends[:-1] < n], 1)
        np.cumsum(out, dtype=dtype, out=out)  # (empty rows put several marks at one place)
    return out


def row_starts(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """Offsets of each row in a row-grouped flat array, shape (n_rows + 1,)."""
    starts = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=starts[1:])
    return starts


def rank_within_rows(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """0-based position of each entry inside its row, for row-grouped ``rows``."""
    starts = row_starts(rows, n_rows)
    return np.arange(len(rows), dtype=np.int64) - starts[rows]


def nth_allowed(
    excl_rows: np.ndarray,
    excl_vals: np.ndarray,
    n_rows: int,
    q_rows: np.ndarray,
    q_j: np.ndarray,
    width: int,
) -> np.ndarray:
    """The ``q_j``-th (0-based) non-negative integer not excluded in row ``q_rows``.

    Parameters
    ----------
    excl_rows, excl_vals : ndarray of int64, shape (n_excl,)
        Excluded (row, value) pairs, sorted by (row, value), unique.
    n_rows : int
        Number of rows.
    q_rows, q_j : ndarray of int64, shape (n_queries,)
        Queries: row and index among that row's allowed values.
    width : int
        Any integer larger than every excluded value and every answer.

    Returns
    -------
    ndarray of int64, shape (n_queries,)

    Notes
    -----
    With :math:`e_0 < e_1 < \\dots` the excluded values of a row,
    :math:`d_t = e_t - t` counts the allowed values below :math:`e_t` and is
    non-decreasing, so the answer is
    :math:`j + |\\{t : d_t \\le j\\}|`; one ``np.searchsorted`` over
    (row, d) keys answers all queries: O((n_excl + n_queries) log n_excl).
    """
    starts = row_starts(excl_rows, n_rows)
    # key_e = row * width + (value - rank), rank = position - starts[row]: one
    # per-row constant row * width + starts[row], then in-place steps (each
    # full-size temporary is fresh memory, page-faulted, at ML-20M size)
    key_e = np.take(np.arange(n_rows, dtype=np.int64) * width + starts[:-1], excl_rows)
    key_e += excl_vals
    key_e -= np.arange(len(excl_vals), dtype=np.int64)
    key_q = q_rows * width
    key_q += q_j
    found = np.searchsorted(key_e, key_q, side="right")
    del key_e, key_q
    found += q_j
    found -= np.take(starts, q_rows)
    return found


def first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Boolean mask of the first occurrence of each value of non-negative int ``keys``.

    Same as marking ``np.unique(keys, return_index=True)[1]``, whose stable
    argsort dominated the oracles' list drawing at scale. When
    ``max(keys)`` and the position fit in 63 bits together, each key is paired
    with its position in one int64 (``key << b | position``, b the bits of a
    position), so a plain ``np.sort`` (SIMD, several times faster than a stable
    argsort) puts every value's first position first, and shifts and masks (no
    integer division) read them back; otherwise the stable argsort is used.
    """
    n = len(keys)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    pb = max(int(n - 1).bit_length(), 1)
    if int(keys.max()).bit_length() + pb <= 63:
        packed = keys.astype(np.int64)  # a copy: shifted and sorted in place
        packed <<= pb
        packed |= np.arange(n, dtype=np.int64)
        packed.sort()
        value = packed >> pb
        head = np.ones(n, dtype=bool)
        np.not_equal(value[1:], value[:-1], out=head[1:])
        del value
        first = packed[head]
        first &= (1 << pb) - 1
        keep[first] = True
    else:  # keys too large to pack
        order = np.argsort(keys, kind="stable")
        srt = keys[order]
        head = np.ones(n, dtype=bool)
        np.not_equal(srt[1:], srt[:-1], out=head[1:])
        keep[order[head]] = True
    return keep


def _order_in_rows(rows: np.ndarray, pos: np.ndarray, u: np.ndarray, starts: np.ndarray) -> np.ndarray:
    r"""``np.lexsort((u, rows))`` for row-grouped entries, through one ``np.sort`` of packed int64 keys.

    ``rows`` ascending (row r's entries at ``starts[r]:starts[r+1]``), ``pos``
    the position of each entry in its row, ``u`` floats in [0, 1). Each key
    packs the row, the top bits of :math:`u\,2^{53}` and the position, so a
    plain (SIMD) sort orders every row by u, then by position; rows where two
    keys share row and top bits (a tie of u, or of its dropped low bits) are
    re-sorted exactly by ``np.lexsort``. The same permutation as the lexsort,
    which it replaces (the lexsort was a third of the Oracle's lists at
    ML-20M size).
    """
    n = len(rows)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    pb = int(pos.max()).bit_length()
    rb = int(rows[-1]).bit_length()
    ub = 63 - rb - pb
    if ub < 24:  # too few bits left for u: ties would be common
        return np.lexsort((u, rows))
    packed = (np.ldexp(u, 53).astype(np.int64) >> (53 - ub)) << pb
    packed |= rows << (ub + pb)
    packed |= pos
    packed.sort()
    order = packed & ((1 << pb) - 1)
    order += starts[rows]  # the sort keeps every row's segment in place
    packed >>= pb
    tied = np.flatnonzero(packed[1:] == packed[:-1])
    if len(tied):
        redo = np.flatnonzero(np.isin(rows, np.unique(rows[tied])))
        order[redo] = redo[np.lexsort((u[redo], rows[redo]))]
    return order


def sample_distinct(k: np.ndarray, a: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per row r, ``k[r]`` distinct integers drawn uniformly from ``[0, a[r])``.

    Parameters
    ----------
    k, a : ndarray of int64, shape (n_rows,)
        Sample sizes and range sizes, ``0 <= k <= a``.
    rng : Generator

    Returns
    -------
    rows, vals : ndarray of int64, shape (k.sum(),)
        Grouped by row (rows ascending); inside a row the values are a uniform
        random k-subset in uniformly random order.

    Notes
    -----
    Rows with ``k > a / 2`` take the first k entries of a random permutation of
    [0, a) (random keys, one lexsort; at most 2k values per row). Other rows
    draw with replacement and keep the first k distinct values in draw order
    (a uniformly random ordered k-subset by exchangeability); about
    :math:`1.25\\,a \\ln(a/(a-k)) + 8 \\le 1.74 k + 8` draws per row make a
    shortfall rare, and the few rows that fall short are redrawn.
    """
    k = np.asarray(k, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    n_rows = len(k)
    starts = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(k, out=starts[1:])
    vals = np.empty(starts[-1], dtype=np.int64)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), k)

    dense = np.flatnonzero((k > 0) & (2 * k > a))
    if len(dense):
        sizes = a[dense]
        frow = np.repeat(np.arange(len(dense), dtype=np.int64), sizes)
        fval = np.arange(sizes.sum(), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        order = _order_in_rows(frow, fval, rng.random(len(fval)), np.cumsum(sizes) - sizes)
        rank = np.arange(len(fval), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        take = rank < k[dense][frow]
        r = dense[frow[take]]
        vals[starts[r] + rank[take]] = fval[order][take]

    pending = np.flatnonzero((k > 0) & (2 * k <= a))
    while len(pending):
        kk, aa = k[pending], a[pending]
        m = np.ceil(-1.25 * aa * np.log1p(-kk / aa)).astype(np.int64) + 8
        drow = row_ids(m)
        dval = rng.integers(0, np.take(aa, drow))
        key = drow * int(aa.max())
        key += dval
        keep = np.flatnonzero(first_occurrences(key))  # kept draws, grouped by row, in draw order
        del key
        krow = np.take(drow, keep)
        del drow
        kval = np.take(dval, keep)
        del dval, keep
        kstart = row_starts(krow, len(pending))
        ok = np.diff(kstart) >= kk
        rank = np.arange(len(krow), dtype=np.int64) - np.take(kstart, krow)
        sel = rank < np.take(np.where(ok, kk, 0), krow)  # the first k of every row that has k
        r = pending[krow[sel]]
        vals[starts[r] + rank[sel]] = kval[sel]
        pending = pending[~ok]
    return rows, vals
