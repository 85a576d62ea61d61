"""Popular's top-n lists: exact and sparse, ties broken at random per user.

:func:`popular_lists` is :meth:`simrec.recommenders.Popular.recommend` after
its validation: the first n non-training positions of the global popularity
order (a bitmap of the top positions per block of users,
:func:`_popular_first_pass`, or the compiled pass of
:mod:`simrec.recommenders._popular_kernel`; :func:`~simrec._sampling.nth_allowed`
for users whose list reaches beyond), then, per user, a shuffle inside each
fully included popularity level and a uniform sample from the level cut by
the list end (:class:`_LevelShuffle`). O(nnz log nnz + n_users n) time, never
a dense n_users x n_items array.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import use_kernel
from simrec._sampling import Uniforms, nth_allowed, rank_within_rows, row_ids, row_starts, sample_distinct
from simrec.interactions import Interactions

__all__ = ["popular_lists"]

#: Popular's first pass looks for each user's first allowed positions among the
#: top ``_POPULAR_WINDOW * n`` of the popularity order (a dense bitmap per user
#: block); users whose list reaches beyond take the exact sparse path.
_POPULAR_WINDOW = 4
#: Cells (bytes) of one block of that bitmap.
_WINDOW_CELLS = 1 << 22
#: Training pairs from which Popular's window pass runs the compiled kernel
#: (:mod:`simrec.recommenders._popular_kernel`) instead of the numpy bitmaps (same outputs): below it,
#: importing numba and loading the kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_PAIRS = 1 << 23


def _cut_levels(
    q: np.ndarray, ends: np.ndarray, k: np.ndarray, lvl_first: np.ndarray, lvl_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The popularity level ``[first, end)`` of each list's last position; (0, 0) for an empty list.

    ``ends[u]`` is one past list u's last entry in ``q`` and ``k[u]`` its length.
    """
    cs = np.zeros(len(k), dtype=np.int64)
    ce = np.zeros(len(k), dtype=np.int64)
    has = np.flatnonzero(k > 0)
    last = q[ends[has] - 1]
    cs[has], ce[has] = lvl_first[last], lvl_end[last]
    return cs, ce


def _popular_first_pass(
    lens: np.ndarray,
    items: np.ndarray,
    gpos: np.ndarray,
    k: np.ndarray,
    lvl_first: np.ndarray,
    lvl_end: np.ndarray,
    window: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Popular's lists before the draws: first allowed positions and the excluded ones at the cut.

    Parameters
    ----------
    lens : ndarray of int64, shape (n_users,)
        Training items per user.
    items : ndarray of int, shape (lens.sum(),)
        The training items, users laid out consecutively (a CSR's indices).
    gpos : ndarray of int64, shape (n_positions,)
        Each item's position in the global popularity order: the training
        items are mapped block by block (no array of every training pair's
        position; at ML-20M size it was 128 MB of fresh memory).
    k : ndarray of int64, shape (n_users,)
        List lengths, at most each user's non-training positions.
    lvl_first, lvl_end : ndarray of int64, shape (n_positions,)
        The popularity level of each position: ``[lvl_first, lvl_end)``.
    window : int
        First pass: a bitmap of the first ``min(window, n_positions)``
        positions of every user (user blocks of ``_WINDOW_CELLS`` cells),
        O(cells), no sort. Users whose k-th allowed position or cut level lies
        beyond the window take the exact sparse path: one sort of their
        (user, position) keys and :func:`~simrec._sampling.nth_allowed`, over
        those users alone (the sort of every user's keys was half of
        Popular's lists at ML-20M size).

    Returns
    -------
    q : ndarray of int64, shape (k.sum(),)
        Per user, its ``k[u]`` smallest non-training positions, ascending,
        users in order.
    e_rows, e_pos : ndarray of int64, shape (n_excl,)
        The training positions inside each user's cut level (the level of its
        k-th position; none when k = 0), sorted by (user, position).
    """
    n_users, n_pos = len(lens), len(lvl_first)
    qstart = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(k, out=qstart[1:])
    q = np.empty(qstart[-1], dtype=np.int64)
    bounds = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(lens, out=bounds[1:])
    width = min(window, n_pos)
    if use_kernel(len(items), _KERNEL_MIN_PAIRS):
        from simrec.recommenders._popular_kernel import popular_window_pass

        slow, e_rows, e_pos = popular_window_pass(bounds, items, gpos, k, lvl_first, lvl_end, width, qstart, q)
    else:
        slow, e_rows, e_pos = _window_pass_blocks(bounds, items, gpos, k, lvl_first, lvl_end, width, qstart, q)
    if len(slow):
        sl = lens[slow]
        srows = row_ids(sl)
        excl = np.take(gpos, items[np.repeat(bounds[slow], sl) + rank_within_rows(srows, len(slow))])
        keys = np.sort(srows * (n_pos + 1) + excl)
        s_rows, s_pos = np.divmod(keys, n_pos + 1)
        qr = row_ids(k[slow])
        qj = rank_within_rows(qr, len(slow))
        q[qstart[slow][qr] + qj] = nth_allowed(s_rows, s_pos, len(slow), qr, qj, n_pos + 1)
        cs, ce = _cut_levels(q, qstart[slow + 1], k[slow], lvl_first, lvl_end)
        at = (s_pos >= cs[s_rows]) & (s_pos < ce[s_rows])
        keys = np.sort(np.concatenate((e_rows * (n_pos + 1) + e_pos, slow[s_rows[at]] * (n_pos + 1) + s_pos[at])))
        e_rows, e_pos = np.divmod(keys, n_pos + 1)
    return q, e_rows, e_pos


def _window_pass_blocks(
    bounds: np.ndarray,
    items: np.ndarray,
    gpos: np.ndarray,
    k: np.ndarray,
    lvl_first: np.ndarray,
    lvl_end: np.ndarray,
    width: int,
    qstart: np.ndarray,
    q: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The window pass of :func:`_popular_first_pass` in numpy, by blocks of users (a dense bitmap each).

    The same outputs as :func:`simrec.recommenders._popular_kernel.popular_window_pass`
    (its parameters and returns), which replaces it from ``_KERNEL_MIN_PAIRS``
    training pairs on (or once numba is loaded).
    """
    n_users = len(k)
    lens = np.diff(bounds)
    step = max(1, _WINDOW_CELLS // max(width, 1))
    col = np.arange(width)
    slow_parts: list[np.ndarray] = []
    e_rows_parts: list[np.ndarray] = []
    e_pos_parts: list[np.ndarray] = []
    for u0 in range(0, n_users, step):
        u1 = min(u0 + step, n_users)
        seg = np.take(gpos, items[bounds[u0] : bounds[u1]])
        inw = seg < width
        cells = row_ids(lens[u0:u1])[inw] * width + seg[inw]
        allowed = np.ones((u1 - u0, width), dtype=bool)
        allowed.ravel()[cells] = False
        rank = np.cumsum(allowed, axis=1, dtype=np.int32)  # 1-based rank of each allowed cell
        kb = k[u0:u1]
        ok = (rank[:, -1] >= kb) if width else (kb == 0)
        r, c = np.nonzero(allowed & (rank <= np.where(ok, kb, 0)[:, None]))
        q[qstart[u0 + r] + rank[r, c] - 1] = c
        # cut level of every user whose list ends inside the window
        cs, ce = _cut_levels(q, qstart[u0 + 1 : u1 + 1], np.where(ok, kb, 0), lvl_first, lvl_end)
        fast = ok & (ce <= width)
        r, c = np.nonzero(~allowed & (col >= cs[:, None]) & (col < ce[:, None]) & fast[:, None])
        e_rows_parts.append(u0 + r)
        e_pos_parts.append(c)
        slow_parts.append(u0 + np.flatnonzero(~fast))
    slow = np.concatenate(slow_parts) if slow_parts else np.zeros(0, dtype=np.int64)
    e_rows = np.concatenate(e_rows_parts) if e_rows_parts else np.zeros(0, dtype=np.int64)
    e_pos = np.concatenate(e_pos_parts) if e_pos_parts else np.zeros(0, dtype=np.int64)
    return slow, e_rows, e_pos


def _popular_cuts(
    lens: np.ndarray,
    items: np.ndarray,
    gpos: np.ndarray,
    k: np.ndarray,
    lvl_first: np.ndarray,
    lvl_end: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Popular's cut levels for long lists, from the training positions alone (no list entry).

    For lists that reach deep into the popularity order (``_POPULAR_WINDOW * n
    >= n_items``, e.g. full rankings), :func:`_popular_first_pass` would
    build every list's positions; here one sort of the training (user,
    position) keys gives each list's last position
    (:func:`~simrec._sampling.nth_allowed`), hence its cut level, the number
    of its entries before that level and the training positions inside it.
    Parameters as :func:`_popular_first_pass`.

    Returns
    -------
    cut_s, cut_e : ndarray of int64, shape (n_users,)
        Each list's cut level ``[cut_s, cut_e)``; (0, 0) for an empty list.
    n_first : ndarray of int64, shape (n_users,)
        Entries before the cut level: the allowed positions below ``cut_s``.
    t_rows, t_pos : ndarray of int64
        The training positions inside each user's cut level, sorted by (user, position).
    """
    n_users, n_pos = len(lens), len(lvl_first)
    keys = np.take(gpos, items)
    keys += row_ids(lens) * (n_pos + 1)
    keys.sort()
    s_rows, s_pos = np.divmod(keys, n_pos + 1)
    del keys
    has = np.flatnonzero(k > 0)
    cut_s = np.zeros(n_users, dtype=np.int64)
    cut_e = np.zeros(n_users, dtype=np.int64)
    last = nth_allowed(s_rows, s_pos, n_users, has, k[has] - 1, n_pos + 1)
    cut_s[has], cut_e[has] = lvl_first[last], lvl_end[last]
    cs = cut_s[s_rows]
    n_first = cut_s - np.bincount(s_rows[s_pos < cs], minlength=n_users)
    at = (s_pos >= cs) & (s_pos < cut_e[s_rows])
    return cut_s, cut_e, n_first, s_rows[at], s_pos[at]


#: List entries per block of Popular's list assembly (a few int64 temporaries of this size stay in cache).
_ASSEMBLY_ENTRIES = 1 << 17


class _LevelShuffle:
    """Lists ordered by popularity level, ties in a uniformly random order per user, as one integer sort.

    Popular orders each list's entries by level, and inside a level by one
    uniform draw per list slot (``gen.random((rows, n))``, row by row): the
    entry in slot j takes the j-th draw of its row. Before this class, each
    block of users was ordered by an ``argsort`` of the draws and a stable
    ``argsort`` of the levels. Here every slot gets one int64 key::

        level code | top bits of the draw's 53-bit integer | item + 1

    (``item + 1 = 0``: padding, in a last level of its own), and one plain
    ``np.sort`` of each row (numpy's SIMD sort) leaves the items in the same
    order. Two slots of a level whose draws share their top bits (41 bits at
    ML-1M size: :math:`2^{-41}` per pair) would be ordered by item instead
    of by draw: such rows are found after the sort (equal keys above the item
    bits) and redone with the two argsorts, as are all rows when fewer than
    :attr:`MIN_DRAW_BITS` bits are left for the draws. Identical lists for a
    seed to the argsorts, which are kept as :meth:`_argsorts`.

    Parameters
    ----------
    level : ndarray of int64, shape (n_positions,)
        Level code of each position of the global popularity order, 0 =
        most popular level, non-decreasing.
    item : ndarray of int64, shape (n_positions,)
        The item at each position.
    draw_bits : int, default 53
        At most this many top bits of each draw in the keys (all 53 of a
        double where they fit; fewer only to test the ties).
    """

    #: Fewer draw bits than this: every row takes the argsorts.
    MIN_DRAW_BITS = 24

    def __init__(self, level: np.ndarray, item: np.ndarray, draw_bits: int = 53) -> None:
        n_levels = int(level[-1]) + 1 if len(level) else 0
        self.item_bits = max(len(item), 1).bit_length()  # item + 1 <= n_items; 0 = padding
        self.draw_bits = min(63 - self.item_bits - max(n_levels, 1).bit_length(), draw_bits, 53)
        self.level_shift = self.draw_bits + self.item_bits
        self.base = (level << self.level_shift) | (item + 1)  # each position's key without its draw
        self.pad = n_levels << self.level_shift

    def order(self, keys: np.ndarray, gen: np.random.Generator, out: np.ndarray) -> None:
        """Write the items of ``keys`` (rows x n, from :attr:`base` or :attr:`pad`) in list order to ``out``.

        Draws ``gen.random(keys.shape)`` (its doubles, or the same raw bits).
        """
        u = Uniforms.draw(gen, keys.shape)
        if self.draw_bits < self.MIN_DRAW_BITS:  # too few bits for the draws: ties would be common
            out[:] = self._argsorts(keys, u.doubles())
            return
        top = u.top(self.draw_bits)
        top <<= np.uint64(self.item_bits)
        srt = np.add(keys, top.view(np.int64), out=top.view(np.int64))  # keys stay as they were, for the ties
        srt.sort(axis=1)
        high = np.right_shift(srt, self.item_bits)
        tied = np.flatnonzero((high[:, 1:] == high[:, :-1]).any(axis=1))
        del high
        np.bitwise_and(srt, (1 << self.item_bits) - 1, out=out)
        out -= 1
        if len(tied):
            out[tied] = self._argsorts(keys[tied], u.doubles(tied))

    def _argsorts(self, keys: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """The items of ``keys`` (without draws) ordered by an argsort of ``draws``, then a stable one of the levels."""
        o = np.argsort(draws, axis=1)
        o = np.take_along_axis(
            o, np.argsort(np.take_along_axis(keys >> self.level_shift, o, axis=1), axis=1, kind="stable"), axis=1
        )
        return (np.take_along_axis(keys, o, axis=1) & ((1 << self.item_bits) - 1)) - 1


def popular_lists(train: Interactions, n: int, gen: np.random.Generator) -> np.ndarray:
    """Popular's top-``n`` lists of every user of ``train`` (validated), shape (n_users, n), -1 padding.

    The draws are those of :meth:`simrec.recommenders.Popular.recommend` with ``gen``: a uniform sample from
    each list's cut level, then one uniform per list slot for the ties (:class:`_LevelShuffle`).
    """
    n_users, n_items = train.n_users, train.n_items
    width = n_items + 1

    pop = train.item_counts()
    order = np.argsort(-pop, kind="stable")  # global order, position -> item
    gpos = np.empty(n_items, dtype=np.int64)
    gpos[order] = np.arange(n_items)
    spop = pop[order]
    new = np.ones(n_items, dtype=bool)
    new[1:] = spop[1:] != spop[:-1]
    lvl_first = np.maximum.accumulate(np.where(new, np.arange(n_items), 0))
    level_id = np.cumsum(new) - 1
    lvl_size = np.bincount(level_id)
    lvl_end = lvl_first + lvl_size[level_id]

    # each list's cut level (the level of its last entry): its items are resampled uniformly
    lens = train.user_counts()
    k = np.minimum(n, n_items - lens)
    items = train.matrix.indices
    long = _POPULAR_WINDOW * n >= n_items
    compiled = not long and use_kernel(len(items), _KERNEL_MIN_PAIRS)
    if compiled:  # the assembly's counts and keys compiled (the same arrays)
        from simrec.recommenders import _popular_kernel as popular_kernel
    if long:  # the whole order fits the window: no list positions before the assembly
        cut_s, cut_e, n_first, t_rows, t_pos = _popular_cuts(lens, items, gpos, k, lvl_first, lvl_end)
    else:  # the first k non-training positions of the global order
        q, t_rows, t_pos = _popular_first_pass(lens, items, gpos, k, lvl_first, lvl_end, _POPULAR_WINDOW * n)
        cut_s, cut_e = _cut_levels(q, np.cumsum(k), k, lvl_first, lvl_end)
        q_start = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(k, out=q_start[1:])
        if compiled:
            n_first = popular_kernel.count_below(q, q_start, cut_s)
        else:
            q_rows = row_ids(k)
            n_first = k - np.bincount(q_rows[q >= cut_s[q_rows]], minlength=n_users)
    # (t_rows, t_pos): the training positions inside each user's cut level
    a = (cut_e - cut_s) - np.bincount(t_rows, minlength=n_users)
    b_rows, b_j = sample_distinct(k - n_first, a, gen)
    b_pos = cut_s[b_rows] + nth_allowed(t_rows, t_pos - cut_s[t_rows], n_users, b_rows, b_j, width)

    # per user: the entries before the cut level (ascending positions), then the cut level's
    # sample, then padding; ordered by level, ties by the row's uniform draws (_LevelShuffle).
    # By blocks of users: the (users x n) arrays stay in cache; the draws are those of one
    # (n_users, n) draw, row by row.
    shuffle = _LevelShuffle(level_id, order)
    out = np.empty((n_users, n), dtype=np.int64)
    b_start = row_starts(b_rows, n_users)
    bounds = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(lens, out=bounds[1:])
    step = max(1, _ASSEMBLY_ENTRIES // max(n, n_items if long else 1))
    slot = np.arange(n)
    col = np.arange(n_items)
    for u0 in range(0, n_users, step):
        u1 = min(u0 + step, n_users)
        if compiled:
            keys = np.empty((u1 - u0, n), dtype=np.int64)
            popular_kernel.assemble_keys(q, q_start, n_first, b_pos, b_start, shuffle.base, shuffle.pad, u0, keys)
            shuffle.order(keys, gen, out[u0:u1])
            continue
        keys = np.full((u1 - u0, n), shuffle.pad, dtype=np.int64)
        if long:  # the allowed positions below the cut level, from a bitmap of the block
            below = col < cut_s[u0:u1, None]
            below.ravel()[row_ids(lens[u0:u1]) * n_items + np.take(gpos, items[bounds[u0] : bounds[u1]])] = False
            keys[slot < n_first[u0:u1, None]] = np.broadcast_to(shuffle.base, below.shape)[below]
        else:
            rows = row_ids(n_first[u0:u1])
            rank = rank_within_rows(rows, u1 - u0)
            keys[rows, rank] = shuffle.base[q[q_start[u0:u1][rows] + rank]]
        rows = b_rows[b_start[u0] : b_start[u1]] - u0
        keys[rows, n_first[u0:u1][rows] + rank_within_rows(rows, u1 - u0)] = shuffle.base[
            b_pos[b_start[u0] : b_start[u1]]
        ]
        shuffle.order(keys, gen, out[u0:u1])
    return out
