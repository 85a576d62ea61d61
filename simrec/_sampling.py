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

from collections.abc import Iterator
from typing import Any

import numpy as np

from simrec._cache import use_kernel

__all__ = [
    "Uniforms",
    "first_occurrences",
    "nth_allowed",
    "permutation_chunks",
    "sample_distinct",
    "sample_distinct_chunks",
    "sample_distinct_values",
    "row_starts",
    "rank_within_rows",
    "group_ranks",
    "row_ids",
    "pair_blocks",
]


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
    out: np.ndarray = np.zeros(n, dtype=dtype)
    if n:
        np.add.at(out, ends[:-1][ends[:-1] < n], 1)
        np.cumsum(out, dtype=dtype, out=out)  # (empty rows put several marks at one place)
    return out


def pair_blocks(indptr: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive row blocks ``(r0, r1)`` of about ``budget`` entries each, covering every row.

    ``indptr`` (n_rows + 1,) gives the rows' entry offsets (a CSR row
    pointer). A block ends at the first row start at or past each multiple of
    ``budget``, so a row longer than ``budget`` makes a block of its own and
    the blocks hold ``budget`` entries plus at most one row. Processing rows
    block by block keeps every per-entry temporary under a fixed size (in
    cache, and below glibc's mmap threshold, so reused rather than fetched
    fresh from the kernel) at every data size.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    n_rows = len(indptr) - 1
    if n_rows <= 0:
        return []
    cuts = np.searchsorted(indptr, np.arange(budget, indptr[-1], budget, dtype=np.int64), side="left")
    bounds = np.unique(np.concatenate(([0], np.minimum(cuts, n_rows), [n_rows])))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


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
    When the queries are grouped by row (``q_rows`` non-decreasing, as every
    caller's are), rows are answered in blocks of about ``_BLOCK`` excluded
    pairs and queries (:func:`pair_blocks`), so the keys searched stay in
    cache at every data size; the answers are the same.
    """
    q_rows = np.asarray(q_rows, dtype=np.int64)
    if len(q_rows) < 2 * _BLOCK or bool((q_rows[1:] < q_rows[:-1]).any()):
        return _nth_allowed(excl_rows, excl_vals, n_rows, q_rows, q_j, width)
    starts = row_starts(excl_rows, n_rows)
    q_starts = row_starts(q_rows, n_rows)
    out = np.empty(len(q_rows), dtype=np.int64)
    for r0, r1 in pair_blocks(starts + q_starts, 2 * _BLOCK):
        e, q = slice(starts[r0], starts[r1]), slice(q_starts[r0], q_starts[r1])
        out[q] = _nth_allowed(excl_rows[e] - r0, excl_vals[e], r1 - r0, q_rows[q] - r0, q_j[q], width)
    return out


def _nth_allowed(
    excl_rows: np.ndarray, excl_vals: np.ndarray, n_rows: int, q_rows: np.ndarray, q_j: np.ndarray, width: int
) -> np.ndarray:
    """:func:`nth_allowed` in one pass over all rows."""
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


#: Entries (draws, excluded pairs, queries) per block of :func:`sample_distinct` and :func:`nth_allowed`:
#: their temporaries (a few int64 arrays of that length, 4 MiB each) stay in cache at every data size.
_BLOCK = 1 << 19


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


#: Bit generators whose ``Generator.random()`` is ``(next 64 bits >> 11) * 2**-53`` and whose
#: ``random_raw`` returns those 64 bits (checked in tests/test_recommenders.py).
_RAW_DOUBLES = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


class Uniforms:
    """The uniform doubles ``rng.random(shape)`` draws, readable as doubles or as their top bits.

    Sorting by a uniform draw is done on integer keys that hold the draw's
    top bits (:func:`_shuffled_positions`, Popular's level shuffle). For the
    bit generators whose doubles are ``(raw >> 11) * 2**-53`` (PCG64, the
    default, PCG64DXSM, Philox, SFC64) the raw 64-bit outputs are kept
    (``bit_generator.random_raw``, which advances the generator exactly as
    ``random`` does, one output per double): their top bits are the
    double's, with no pass through floats. Other generators (MT19937) draw
    the doubles. Either way the generator ends in the state ``rng.random``
    leaves, and :meth:`doubles` gives its values.
    """

    __slots__ = ("values", "raw")

    def __init__(self, values: np.ndarray, raw: bool) -> None:
        self.values, self.raw = values, raw

    @classmethod
    def draw(cls, rng: np.random.Generator, shape: int | tuple[int, ...]) -> Uniforms:
        """``rng.random(shape)``, kept raw where the generator allows it."""
        if isinstance(rng.bit_generator, _RAW_DOUBLES):
            size = int(np.prod(shape))
            return cls(rng.bit_generator.random_raw(size).reshape(shape), True)
        return cls(rng.random(shape), False)

    def top(self, bits: int) -> np.ndarray:
        """uint64 :math:`\\lfloor u\\,2^{bits} \\rfloor` of every draw u (``bits`` <= 53): the top bits of its 53."""
        if self.raw:
            return np.right_shift(self.values, np.uint64(64 - bits))
        return np.ldexp(self.values, bits).astype(np.uint64)

    def doubles(self, index: Any = ...) -> np.ndarray:
        """The draws ``values[index]`` as the doubles ``rng.random`` gives."""
        v = self.values[index]
        return (v >> np.uint64(11)) * (1.0 / 9007199254740992.0) if self.raw else v


def _permutation_rows(sizes: np.ndarray, u: Uniforms) -> np.ndarray:
    r"""Per row r, a uniformly random permutation of ``range(sizes[r])``, drawn as :func:`sample_distinct` draws it.

    One uniform draw per entry, ``u = Uniforms.draw(rng, sizes.sum())`` row after row;
    each row's positions ordered by their draw, ties by position: row r of
    ``pos[np.lexsort((u, rows))]`` for the flat entries. Done as one 2-D
    integer sort: each key packs the top bits of :math:`u\,2^{53}` and the
    position, and a plain (SIMD) ``np.sort`` of each row leaves the answer in
    the low bits; rows where two keys share their top bits (a tie of u, or of
    its dropped low bits) are re-sorted exactly (a stable argsort of the
    row's draws). The same permutation as the lexsort of every entry's
    (row, u), which it replaces (the lexsort was a third of the Oracle's lists
    at ML-20M size; a row-wise sort is cheaper than one sort of the block).

    Parameters
    ----------
    sizes : ndarray of int64, shape (n_rows,)
    u : Uniforms
        The draws, shape (sizes.sum(),).

    Returns
    -------
    ndarray of int64, shape (n_rows, max(sizes))
        Row r's permutation in its first ``sizes[r]`` columns, then
        ``sizes[r], sizes[r] + 1, ...`` (columns no entry reaches, in order).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n_rows = len(sizes)
    width = int(sizes.max()) if n_rows else 0
    if width == 0:
        return np.zeros((n_rows, 0), dtype=np.int64)
    pb = (width - 1).bit_length()
    ub = min(62 - pb, 53)  # one bit more above: the unreached columns' keys follow every draw's
    col = np.arange(width, dtype=np.int64)
    keys = np.empty((n_rows, width), dtype=np.int64)
    keys[:] = ((col + (1 << ub)) << pb) | col
    top = u.top(ub).view(np.int64)
    top <<= pb
    keys[col < sizes[:, None]] = top
    del top
    keys |= col
    keys.sort(axis=1)
    high = keys >> pb
    tied = np.flatnonzero((high[:, 1:] == high[:, :-1]).any(axis=1))
    del high
    np.bitwise_and(keys, (1 << pb) - 1, out=keys)
    if len(tied):
        first = np.cumsum(sizes) - sizes
        for r in tied:  # rare: a few rows, each redone exactly
            keys[r, : sizes[r]] = np.argsort(u.doubles(slice(first[r], first[r] + sizes[r])), kind="stable")
    return keys


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
    shortfall rare, and the few rows that fall short are redrawn. The first
    round runs by blocks of rows of about ``_BLOCK`` draws
    (:func:`pair_blocks`): each block draws its rows' values in row order,
    so the draws, and the result, are those of one pass over every row, with
    temporaries (draws, keys, the sort of :func:`first_occurrences`) that
    stay in cache at every data size.
    """
    k = np.asarray(k, dtype=np.int64)
    return np.repeat(np.arange(len(k), dtype=np.int64), k), sample_distinct_values(k, a, rng)


def sample_distinct_values(k: np.ndarray, a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The values of :func:`sample_distinct` alone (row after row), without the array of their rows."""
    k = np.asarray(k, dtype=np.int64)
    starts = np.zeros(len(k) + 1, dtype=np.int64)
    np.cumsum(k, out=starts[1:])
    vals = np.empty(starts[-1], dtype=np.int64)
    for rows, v, rank in sample_distinct_chunks(k, a, rng):
        vals[np.take(starts, rows) + rank] = v
    return vals


def sample_distinct_chunks(
    k: np.ndarray, a: np.ndarray, rng: np.random.Generator
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`sample_distinct`, delivered in chunks of complete rows as the draws are made.

    Yields ``(rows, vals, ranks)``: each chunk holds some rows' whole samples, rows
    ascending within the chunk and every row in exactly one chunk (rows with
    ``k = 0`` in none); within a row the values are in draw order, and
    ``ranks`` gives each value's 0-based place in its row's draw
    (:func:`group_ranks` of ``rows``). The
    chunks come in the order of the draws: the rows with ``2 k > a`` (by
    blocks), then every block of the first round, then the rows completed by
    later rounds (one chunk). The same draws and values as
    :func:`sample_distinct`, which assembles them; a caller that maps and
    places each chunk at once (the baseline recommenders) never holds
    arrays of the whole sample.
    """
    k = np.asarray(k, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    dense = np.flatnonzero((k > 0) & (2 * k > a))
    for rows in _dense_blocks(dense, a):  # random permutations, by blocks of rows (the same draws as one pass)
        yield _permutation_prefixes(rows, k, a, rng)
    pending = np.flatnonzero((k > 0) & (2 * k <= a))
    compiled = False
    if len(pending):  # the first round, by blocks of rows (the same draws, in the same order, as one pass)
        m = _draws(k[pending], a[pending])
        ends = np.zeros(len(pending) + 1, dtype=np.int64)
        np.cumsum(m, out=ends[1:])
        compiled = use_kernel(ends[-1], _KERNEL_MIN_DRAWS)
        short = []
        for i0, i1 in pair_blocks(ends, _BLOCK):
            rows, vals, rank, fell_short = _round(pending[i0:i1], m[i0:i1], k, a, rng, compiled)
            short.append(pending[i0:i1][fell_short])
            yield rows, vals, rank
        pending = np.concatenate(short)
    late: list[tuple[np.ndarray, np.ndarray]] = []
    while len(pending):  # rows that fell short: again, all at once (few)
        rows, vals, _, fell_short = _round(pending, _draws(k[pending], a[pending]), k, a, rng, compiled)
        late.append((rows, vals))
        pending = pending[fell_short]
    if late:
        rows = np.concatenate([r for r, _ in late])
        order = np.argsort(rows, kind="stable")  # each row is complete within one round
        rows = rows[order]
        yield rows, np.concatenate([v for _, v in late])[order], group_ranks(rows)


def group_ranks(rows: np.ndarray) -> np.ndarray:
    """0-based position of each entry within its run of equal ``rows`` (grouped rows), int64.

    :func:`rank_within_rows` for a chunk of grouped rows, in O(len(rows))
    whatever the number of rows of the whole.
    """
    n = len(rows)
    head = np.ones(n, dtype=bool)
    np.not_equal(rows[1:], rows[:-1], out=head[1:])
    at = np.arange(n, dtype=np.int64)
    return at - np.maximum.accumulate(np.where(head, at, 0))


def _permutation_prefixes(
    rows: np.ndarray, k: np.ndarray, a: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows with ``2 k > a``: the first k entries of a random permutation of [0, a) each.

    Returns ``(rows, vals, ranks)`` of :func:`sample_distinct_chunks`.
    """
    perm = _permutation_rows(a[rows], Uniforms.draw(rng, int(a[rows].sum())))
    kk = k[rows]
    take = np.arange(perm.shape[1]) < kk[:, None]
    return np.repeat(rows, kk), perm[take], np.broadcast_to(np.arange(perm.shape[1]), perm.shape)[take]


def _dense_blocks(rows: np.ndarray, a: np.ndarray) -> list[np.ndarray]:
    """``rows`` (ascending) in consecutive blocks for :func:`_permutation_rows`, in order.

    Blocks of about ``_PERMUTATION_BLOCK`` entries of ``a`` (:func:`pair_blocks`),
    halved (by entries) while a block's rows x its widest row exceed four
    times its entries (plus a little): the 2-D arrays of rows of very
    different sizes (e.g. profile sizes from 20 to 7,000) stay within a
    small multiple of the entries. The draws do not depend on the blocks.
    """
    ends = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(a[rows], out=ends[1:])
    out: list[np.ndarray] = []

    def add(block: np.ndarray) -> None:
        sizes = a[block]
        total = int(sizes.sum())
        if len(block) < 2 or len(block) * int(sizes.max()) <= 4 * total + 1024:
            out.append(block)
            return
        cut = int(np.searchsorted(np.cumsum(sizes), total / 2))
        cut = min(max(cut, 1), len(block) - 1)
        add(block[:cut])
        add(block[cut:])

    for i0, i1 in pair_blocks(ends, _PERMUTATION_BLOCK):
        add(rows[i0:i1])
    return out


#: Entries per block of :func:`_permutation_rows` (its 2-D temporaries, 1 MiB each, stay in a core's cache).
_PERMUTATION_BLOCK = 1 << 17


def permutation_chunks(a: np.ndarray, rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per row r, a uniformly random permutation of ``range(a[r])``, by blocks of rows, as 2-D arrays.

    The draws of :func:`sample_distinct_chunks` with ``k = a`` (every
    row's whole range: e.g. a full ranking of each user's candidates), in
    the same chunks: it yields ``(rows, perm)``, ``perm`` of
    :func:`_permutation_rows` (row j's permutation in its first ``a[rows[j]]``
    columns, larger positions after), for the rows with ``a > 0``, ascending.
    """
    a = np.asarray(a, dtype=np.int64)
    for rows in _dense_blocks(np.flatnonzero(a > 0), a):
        yield rows, _permutation_rows(a[rows], Uniforms.draw(rng, int(a[rows].sum())))


def _draws(k: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Draws per row of a round of :func:`sample_distinct`: 1.25 a ln(a / (a - k)) + 8."""
    return np.ceil(-1.25 * a * np.log1p(-k / a)).astype(np.int64) + 8


#: :func:`_first_draws` uses a table of the rows' cells when they are at most this many times the draws.
_TABLE_RATIO = 8


def _first_draws(drow: np.ndarray, dval: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Mask of the first occurrence of each (row, value) among draws ``dval[i]`` in ``[0, a[drow[i]])``.

    When the rows' cells (``a.sum()``) are at most ``_TABLE_RATIO`` times
    the draws (e.g. the split: a fifth of each row's own items), a table of
    the cells keeps each cell's first draw (``np.minimum.at``, int32):
    O(cells + draws), 15 times faster than the sort of
    :func:`first_occurrences` at 500K draws; otherwise (e.g. random items of
    a large catalogue) that sort. The same mask either way.
    """
    cells = int(a.sum())
    if cells > _TABLE_RATIO * len(dval) or max(cells, len(dval)) >= 2**31:  # (the table's entries are int32)
        key = drow * int(a.max())
        key += dval
        return first_occurrences(key)
    base = np.zeros(len(a), dtype=np.int64)
    np.cumsum(a[:-1], out=base[1:])
    cell = np.take(base, drow)
    cell += dval
    cell = cell.astype(np.int32)
    draw = np.arange(len(dval), dtype=np.int32)
    first = np.full(cells, len(dval), dtype=np.int32)
    np.minimum.at(first, cell, draw)
    return np.take(first, cell) == draw


#: Draws of :func:`sample_distinct`'s first round from which its rounds keep the first distinct draws
#: with the compiled kernel (:func:`simrec._sampling_kernel.distinct_round`; the same values): below
#: it, importing numba and loading the kernel (about 0.4 s) costs more than it saves, unless numba is
#: loaded already.
_KERNEL_MIN_DRAWS = 1 << 23


def _round(
    pending: np.ndarray,
    m: np.ndarray,
    k: np.ndarray,
    a: np.ndarray,
    rng: np.random.Generator,
    compiled: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One round of :func:`sample_distinct` over rows ``pending`` (``m`` draws each).

    Returns the rows that got their ``k`` distinct values (each repeated k
    times, ascending), those values in draw order, their ranks in the row,
    and the mask of the ``pending`` rows that fell short. ``compiled``: the
    same draws kept by :func:`simrec._sampling_kernel.distinct_round` (one
    pass) instead of numpy's table or sort.
    """
    kk, aa = k[pending], a[pending]
    if compiled:
        from simrec._sampling_kernel import distinct_round, repeat_bounds

        return distinct_round(pending, m, kk, aa, rng.integers(0, repeat_bounds(aa, m)))
    drow = row_ids(m)
    dval = rng.integers(0, np.take(aa, drow))
    keep = np.flatnonzero(_first_draws(drow, dval, aa))  # kept draws, grouped by row, in draw order
    krow = np.take(drow, keep)
    del drow
    kval = np.take(dval, keep)
    del dval, keep
    kstart = row_starts(krow, len(pending))
    ok = np.diff(kstart) >= kk
    rank = np.arange(len(krow), dtype=np.int64) - np.take(kstart, krow)
    sel = rank < np.take(np.where(ok, kk, 0), krow)  # the first k of every row that has k
    return pending[krow[sel]], kval[sel], rank[sel], ~ok
