"""Uniform random subsets and fast de-duplication, vectorized over rows.

* :func:`uniform_subsets`: uniform random subsets of given sizes of many
  ranges at once (no per-row Python loop), used by the uniform generator and
  the uniform observation sampler.
* :func:`bernoulli_subsets`: independent Bernoulli(p_r) inclusion of every
  member of many ranges (the IBP's later likers of each item), sorted by
  construction: no sort, no de-duplication.
* :func:`sorted_unique`: de-duplicate integer cell keys fast.
* :func:`interactions_from_rows`: build an :class:`~simrec.interactions.Interactions`
  from per-row counts and column indices.

Both kernels pick between a *bitmap* (one byte per cell of the ranges
involved: ``O(cells)`` time and memory, no sort) and a *sort* (``O(k log k)``
for ``k`` keys) by density: the bitmap is used when the cells are at most
``_BITMAP_RATIO`` times the number of keys, and it is processed in blocks of
about ``_BLOCK_CELLS`` cells so memory stays bounded whatever the data size.
(``numpy.unique`` is avoided on hot paths: it is an order of magnitude slower
than ``sort`` + neighbour comparison for int64 keys; docs/design.md §9.)

This module is neutral ground: generators and samplers both use it, neither
depends on the other.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import use_kernel
from simrec._sampling import pair_blocks
from simrec.interactions import Interactions

__all__ = ["uniform_subsets", "bernoulli_subsets", "sorted_unique", "interactions_from_rows"]

#: Use a bitmap when ``cells <= _BITMAP_RATIO * keys`` (a bitmap costs ~0.5 ns
#: per cell, a sort ~70 ns per key on the reference machine).
_BITMAP_RATIO = 64
#: Cells (bytes) of one bitmap block.
_BLOCK_CELLS = 1 << 24


def _dedup_sorted(k: np.ndarray) -> np.ndarray:
    """Unique values of an already sorted 1-d array."""
    if len(k) < 2:
        return k
    keep = np.empty(len(k), dtype=bool)
    keep[0] = True
    np.not_equal(k[1:], k[:-1], out=keep[1:])
    return k[keep]


def sorted_unique(keys: np.ndarray, n_cells: int) -> np.ndarray:
    """Sorted unique values of non-negative integer ``keys`` < ``n_cells``.

    Parameters
    ----------
    keys : ndarray of int, shape (k,)
        Cell keys, e.g. ``user * n_items + item``; all in ``[0, n_cells)``.
    n_cells : int
        Size of the key space.

    Returns
    -------
    ndarray of int64, shape (n_unique,)
        Sorted, unique keys. A bitmap of ``n_cells`` bytes is used when
        ``n_cells <= 64 * k`` (linear time), else a sort.
    """
    keys = np.asarray(keys, dtype=np.int64)
    if n_cells <= _BITMAP_RATIO * max(len(keys), 1):
        mask = np.zeros(n_cells, dtype=bool)
        mask[keys] = True
        return np.flatnonzero(mask)
    return _dedup_sorted(np.sort(keys))


def uniform_subsets(
    sizes: np.ndarray,
    pops: np.ndarray,
    rng: np.random.Generator,
    *,
    method: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For every row r, a uniformly random ``sizes[r]``-subset of ``range(pops[r])``.

    Rows are independent; each subset is uniform over all
    ``C(pops[r], sizes[r])`` subsets. Vectorized over rows (the only Python
    loops are over rejection rounds and memory blocks).

    Parameters
    ----------
    sizes, pops : ndarray of int, shape (n_rows,)
        Subset sizes and population sizes, ``0 <= sizes <= pops`` (the caller
        guarantees it; not re-checked).
    rng : numpy.random.Generator
    method : {"bitmap", "sort"} or None
        Force a kernel (for tests); ``None`` picks by density (see module doc).

    Returns
    -------
    indptr : ndarray of int64, shape (n_rows + 1,)
        ``indptr[r]:indptr[r+1]`` delimits row r in ``positions``.
    positions : ndarray of int64, shape (sizes.sum(),)
        The chosen members of each row, sorted ascending within the row.

    Notes
    -----
    Rejection with exact top-up: every round draws, for each row, as many
    uniform positions as it still lacks and keeps the new distinct ones. The
    kept set is the set of distinct values of an i.i.d. uniform sequence
    stopped when it first holds ``sizes[r]`` distinct values (a round never
    overshoots), which is uniform over subsets by exchangeability. Rows with
    ``sizes[r] > pops[r] // 2`` draw the *excluded* ``pops[r] - sizes[r]``
    positions instead, so every draw is accepted with probability >= 1/2 and
    the number of rounds is O(log max size).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    pops = np.asarray(pops, dtype=np.int64)
    n_rows = len(sizes)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    if indptr[-1] == 0:
        return indptr, np.zeros(0, dtype=np.int64)
    flip = sizes > pops // 2
    targets = np.where(flip, pops - sizes, sizes)
    cum = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(pops, out=cum[1:])
    if method is None:
        method = "bitmap" if cum[-1] <= _BITMAP_RATIO * indptr[-1] else "sort"
    if method == "bitmap":
        positions = _subsets_bitmap(sizes, pops, cum, flip, targets, rng)
    elif method == "sort":
        positions = _subsets_sort(sizes, pops, cum, flip, targets, rng)
    else:
        raise ValueError(f"`method` must be one of 'bitmap', 'sort' or None; got {method!r}")
    return indptr, positions


def _row_of(cum: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Row of each cell key given row start offsets ``cum`` (length n_rows + 1)."""
    return np.searchsorted(cum, keys, side="right") - 1


def _subsets_bitmap(
    sizes: np.ndarray,
    pops: np.ndarray,
    cum: np.ndarray,
    flip: np.ndarray,
    targets: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    n_rows = len(sizes)
    total = int(cum[-1])
    if total <= _BLOCK_CELLS:
        bounds = np.array([0, n_rows])
    else:
        marks = np.arange(_BLOCK_CELLS, total, _BLOCK_CELLS, dtype=np.int64)
        cuts = np.searchsorted(cum, marks, side="right") - 1
        bounds = np.unique(np.concatenate(([0], cuts, [n_rows])))
    out = []
    for b0, b1 in zip(bounds[:-1], bounds[1:]):
        off = cum[b0 : b1 + 1] - cum[b0]
        p, fl, tg = pops[b0:b1], flip[b0:b1], targets[b0:b1]
        nb = b1 - b0
        # cells start at the row's flip value; a drawn cell is toggled once
        mask = np.repeat(fl, p)
        got = np.zeros(nb, dtype=np.int64)
        while True:
            need = tg - got
            rows_need = np.flatnonzero(need)
            if len(rows_need) == 0:
                break
            rr = np.repeat(rows_need, need[rows_need])
            key = off[rr] + rng.integers(0, p[rr])
            fresh = mask[key] == fl[rr]
            key, rr = key[fresh], rr[fresh]
            mask[key] = ~fl[rr]
            if 64 * len(key) >= len(mask):
                # many draws: recount toggled cells per row from the bitmap, O(cells)
                ct = np.diff(np.searchsorted(np.flatnonzero(mask), off))
                got = np.where(fl, p - ct, ct)
            else:
                got += np.bincount(_row_of(off, _dedup_sorted(np.sort(key))), minlength=nb)
        # selected = True cells: toggled ones of plain rows, untoggled ones of flipped rows
        out.append(np.flatnonzero(mask) - np.repeat(off[:-1], sizes[b0:b1]))
    return np.concatenate(out) if len(out) > 1 else out[0]


def _counts_per_row(cum: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Keys per row given row start offsets ``cum``: one binary search per row, not per key."""
    return np.diff(np.searchsorted(sorted_keys, cum))


def _subsets_sort(
    sizes: np.ndarray,
    pops: np.ndarray,
    cum: np.ndarray,
    flip: np.ndarray,
    targets: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    n_rows = len(sizes)
    # The keys accepted so far, as one sorted run per round: a round's new keys
    # are checked against every run (binary searches, O(new log total)) and
    # the runs are merged once at the end, so a late round with a few pending
    # rows costs O(its draws), not a re-sort of every accepted key. Rows are
    # located by searching the row offsets in the sorted keys (O(rows log
    # keys)), never each key in the offsets.
    runs: list[np.ndarray] = []
    got = np.zeros(n_rows, dtype=np.int64)
    while True:
        need = targets - got
        rows_need = np.flatnonzero(need)
        if len(rows_need) == 0:
            break
        rr = np.repeat(rows_need, need[rows_need])
        key = rng.integers(0, np.take(pops, rr))  # np.take: the same values as pops[rr], faster
        key += np.take(cum, rr)
        del rr  # in-place steps: the first round holds about all keys at once
        key.sort()
        key = _dedup_sorted(key)
        for run in runs:
            at = np.minimum(np.searchsorted(run, key), len(run) - 1)
            key = key[run[at] != key]
        got += _counts_per_row(cum, key)
        if len(key):
            runs.append(key)
    if len(runs) > 2:  # the later rounds are small: sort them, then merge with the first (timsort: two runs)
        runs = [runs[0], np.sort(np.concatenate(runs[1:]))]
    if len(runs) > 1:
        acc = np.concatenate(runs)
        del runs
        acc.sort(kind="stable")
    else:
        acc = runs[0] if runs else np.zeros(0, np.int64)
    fr = np.flatnonzero(flip & (pops > 0))
    if not len(fr):
        acc -= np.repeat(cum[:-1], sizes)
        return acc
    per_row = _counts_per_row(cum, acc)
    in_flip = np.repeat(flip, per_row)
    # flipped rows keep the complement of their drawn (excluded) cells: mark
    # those in a bitmap over the flipped rows' cells, laid out back to back
    lens = pops[fr]
    starts = np.zeros(len(fr), dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    drawn = np.zeros(int(lens.sum()), dtype=bool)
    drawn[acc[in_flip] + np.repeat(starts - cum[fr], per_row[fr])] = True
    full = np.flatnonzero(~drawn)
    full += np.repeat(cum[fr] - starts, lens - per_row[fr])
    del drawn
    # rows are contiguous and in order in the output: plain rows take their
    # accepted keys, flipped rows the complement of theirs
    slot_flipped = np.repeat(flip, sizes)
    keys = np.empty(len(slot_flipped), dtype=np.int64)
    keys[~slot_flipped] = acc[~in_flip]
    keys[slot_flipped] = full
    del acc, full
    keys -= np.repeat(cum[:-1], sizes)
    return keys


#: Draws per block of :func:`bernoulli_subsets`: its temporaries (a few arrays of
#: 8 bytes a draw, 2 MiB each) stay in cache at every data size.
_BERNOULLI_BLOCK = 1 << 18
#: Draws from which :func:`bernoulli_subsets` adds up its gaps with the compiled kernel
#: (:mod:`simrec._bernoulli_kernel`; the same members): below it, importing numba and loading the kernel
#: (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_DRAWS = 1 << 23
#: Draws a row gets in a round: its expected members + ``_SD`` standard deviations + ``_EXTRA``.
_SD, _EXTRA = 4.0, 6.0


def _round_draws(rem: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Gaps drawn for rows with ``rem`` positions left: mean + 4 sd + 6 of the members, at most rem + 1."""
    mu = np.maximum(rem, 0) * probs  # (rem = -1: an empty row with include_first)
    want = np.ceil(mu + _SD * np.sqrt(mu) + _EXTRA)
    return np.where(rem > 0, np.minimum(want, rem + 1.0), 0.0).astype(np.int64)


def bernoulli_subsets(
    pops: np.ndarray,
    probs: np.ndarray,
    rng: np.random.Generator,
    *,
    offsets: np.ndarray | None = None,
    include_first: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """For every row r, each member of ``range(pops[r])`` kept independently with probability ``probs[r]``.

    Parameters
    ----------
    pops : ndarray of int, shape (n_rows,)
        Population sizes, >= 0.
    probs : ndarray of float, shape (n_rows,)
        Inclusion probabilities in [0, 1] (the caller guarantees both; not
        re-checked).
    rng : numpy.random.Generator
    offsets : ndarray of int, shape (n_rows,), optional
        Added to every member of row r (default 0): the members are returned
        as ``offsets[r] + position``.
    include_first : bool, default False
        Position 0 of every non-empty row is a member with probability 1 (and
        positions 1, 2, ... with ``probs[r]``): the IBP's first liker of an
        item followed by its later likers, one CSC column per row.

    Returns
    -------
    indptr : ndarray of int64, shape (n_rows + 1,)
    members : ndarray of int32, shape (indptr[-1],)
        Row r's members, ascending, at ``indptr[r]:indptr[r+1]``.

    Raises
    ------
    ValueError
        If ``offsets[r] + pops[r]`` reaches 2**31 (members are int32; the
        float64 partial sums below then stay exact, under 2**50).

    Notes
    -----
    The members of a Bernoulli(p) process are the partial sums of its gaps,
    which are i.i.d. Geometric(p) on {1, 2, ...}; with :math:`E \\sim
    \\mathrm{Exp}(1)`,

    .. math:: G = 1 + \\left\\lfloor \\frac{E}{-\\log(1 - p)} \\right\\rfloor,
              \\qquad P(G > g) = (1 - p)^g,

    so each row costs one exponential draw (numpy's ziggurat) per member plus
    a few, no sort and no de-duplication: O(members + rows). (Rejection of
    duplicates in :func:`uniform_subsets`, which the IBP used before, sorts
    every key: O(k log k), most of its time at ML-20M size; docs/design.md
    §8.) A row's number
    of members is Binomial(pops[r], probs[r]) and, given it, the members are
    a uniform subset: the same law as a Binomial count followed by
    :func:`uniform_subsets`, drawn differently. p = 0 (also a Beta draw that
    underflows) gives no member, p = 1 every position.

    Rows are processed in blocks of consecutive rows of about
    ``_BERNOULLI_BLOCK`` draws. A row gets its expected number of members
    plus 4 standard deviations plus 6 gaps in one round; a row whose gaps
    have not yet passed its population (rare) draws again from its last
    member, in further rounds of the same block. The draws are consumed
    block by block in row order, so the result depends on the seed alone.
    """
    pops = np.asarray(pops, dtype=np.int64)
    probs = np.asarray(probs, dtype=np.float64)
    n_rows = len(pops)
    offsets = np.zeros(n_rows, dtype=np.int64) if offsets is None else np.asarray(offsets, dtype=np.int64)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    if n_rows == 0:
        return indptr, np.zeros(0, dtype=np.int32)
    top = int((offsets + pops).max())
    if top >= 2**31:
        raise ValueError(f"`offsets + pops` must be below 2**31 (int32 members); got {top}")
    with np.errstate(divide="ignore"):
        scale = -1.0 / np.log1p(-probs)  # gap - 1 = floor(E * scale): +inf at p = 0, 0 at p = 1
    rem = pops - 1 if include_first else pops
    draws = _round_draws(rem, probs) + (include_first & (pops > 0))
    draw_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(draws, out=draw_ptr[1:])
    counts = np.zeros(n_rows, dtype=np.int64)
    compiled = use_kernel(draw_ptr[-1], _KERNEL_MIN_DRAWS)
    out = np.empty(int(draw_ptr[-1]), dtype=np.int32)  # one round per row: at most its draws are members
    filled = 0
    for r0, r1 in pair_blocks(draw_ptr, _BERNOULLI_BLOCK):
        block = slice(r0, r1)
        c, members = _bernoulli_block(
            pops[block], probs[block], scale[block], draws[block], offsets[block], include_first, rng, compiled
        )
        counts[block] = c
        if filled + len(members) > len(out):  # only after extra rounds
            out = np.concatenate((out[:filled], np.empty(len(members) + len(out) // 8, dtype=np.int32)))
        out[filled : filled + len(members)] = members
        filled += len(members)
    np.cumsum(counts, out=indptr[1:])
    return indptr, out[:filled]


def _bernoulli_block(
    pops: np.ndarray,
    probs: np.ndarray,
    scale: np.ndarray,
    draws: np.ndarray,
    offsets: np.ndarray,
    include_first: bool,
    rng: np.random.Generator,
    compiled: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bernoulli_subsets` of one block of rows: (members per row, members row by row).

    ``compiled``: each round's gaps by :func:`simrec._bernoulli_kernel.gap_round`
    (one pass, the same draws and members) instead of numpy's passes.
    """
    n_rows = len(pops)
    last = np.full(n_rows, -1, dtype=np.int64)  # each row's last position so far
    live = np.flatnonzero(draws > 0)
    sizes = draws[live]
    cap = float(pops.max()) + 1.0  # any gap this large ends its row; keeps the sums exact
    rounds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    first_round = include_first
    while len(live):
        g = rng.standard_exponential(int(sizes.sum()))
        if compiled:
            from simrec._bernoulli_kernel import gap_round

            n_in, members = gap_round(g, live, sizes, scale, pops, last, offsets, cap, first_round)
            first_round = False
            rounds.append((live, n_in, members))
            live = live[n_in == sizes]
            if not len(live):
                break
            sizes = _round_draws(pops[live] - 1 - last[live], probs[live])
            keep_going = sizes > 0
            live, sizes = live[keep_going], sizes[keep_going]
            continue
        g *= np.repeat(scale[live], sizes)
        np.fmin(g, cap, out=g)  # also NaN (0 * inf) -> cap
        np.floor(g, out=g)
        g += 1.0
        ends = np.cumsum(sizes)
        starts = ends - sizes
        if first_round:  # position 0 is a member for sure
            g[starts] = 1.0
            first_round = False
        np.cumsum(g, out=g)  # increasing over the whole block: exact integers (< 2**53)
        before = np.zeros(len(live))
        before[1:] = g[ends[:-1] - 1]
        shift = before - last[live]  # row position = g - shift, kept while < pops
        n_in = np.minimum(np.searchsorted(g, shift + pops[live], side="left"), ends) - starts
        runs = np.empty(2 * len(live), dtype=np.int64)  # per row: n_in kept, then the rest
        runs[0::2] = n_in
        runs[1::2] = sizes - n_in
        keep = np.repeat(np.tile(np.array([True, False]), len(live)), runs)
        members = g[keep]
        members -= np.repeat(shift - offsets[live], n_in)
        rounds.append((live, n_in, members.astype(np.int32)))
        more = np.flatnonzero(n_in == sizes)  # every gap inside the population: the row may go on
        if not len(more):
            break
        last[live[more]] = (g[ends[more] - 1] - shift[more]).astype(np.int64)
        live = live[more]
        sizes = _round_draws(pops[live] - 1 - last[live], probs[live])
        keep_going = sizes > 0
        live, sizes = live[keep_going], sizes[keep_going]
    counts = np.zeros(n_rows, dtype=np.int64)
    if not rounds:  # every row of the block is empty
        return counts, np.zeros(0, dtype=np.int32)
    if len(rounds) == 1:
        counts[rounds[0][0]] = rounds[0][1]
        return counts, rounds[0][2]
    rows = np.concatenate([np.repeat(r, n) for r, n, _ in rounds])
    members = np.concatenate([m for _, _, m in rounds])
    np.add.at(counts, rows, 1)
    return counts, members[np.lexsort((members, rows))]


def interactions_from_rows(counts: np.ndarray, indices: np.ndarray, shape: tuple[int, int]) -> Interactions:
    """Build an :class:`Interactions` from per-row counts and row-sorted unique column indices."""
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Interactions.from_csr(indptr, indices, shape, sort=False)
