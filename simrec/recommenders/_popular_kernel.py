"""Compiled kernel: Popular's first pass (each user's first allowed positions of the popularity order).

:func:`simrec.recommenders._popular_lists._popular_first_pass` builds, per block
of users, a dense bitmap of the first ``width`` positions of the global
popularity order, its row-wise cumulative sum and two ``nonzero`` scans: a
dozen passes over (users x width) cells, most of Popular's lists at ML-20M
size. Here one user at a time: its training positions inside the window are
stamped with the user's index in a reused table of ``width`` entries (each
item's slot read from a table of the items, positions past the window all in
one spare slot: no branch, and no pass to clear the marks), and the scan
stops at its k-th allowed position. The same
outputs (``q`` of the users whose list ends inside the window, the cut levels'
training positions of the fast users, the slow users), integers only.

numba, deterministic and single-threaded (no random numbers). Compiled on
first use and cached in the user's cache folder
(:func:`simrec._cache.cached_njit`); importing this module imports numba, so
callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["assemble_keys", "count_below", "popular_window_pass"]


@cached_njit(nogil=True)
def _window_pass(
    bounds: np.ndarray,
    items: np.ndarray,
    win: np.ndarray,
    k: np.ndarray,
    lvl_first: np.ndarray,
    lvl_end: np.ndarray,
    width: int,
    qstart: np.ndarray,
    q: np.ndarray,
    fast: np.ndarray,
    n_excl: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    n_users = k.shape[0]
    blocked = np.full(width + 1, -1, dtype=np.int64)  # the user who trained on the position; slot `width`: outside
    cut_s = np.zeros(n_users, dtype=np.int64)
    cut_e = np.zeros(n_users, dtype=np.int64)
    for u in range(n_users):
        for t in range(bounds[u], bounds[u + 1]):  # no branch: positions outside the window go to the last slot
            blocked[win[items[t]]] = u
        ku = k[u]
        cnt = 0
        at = qstart[u]
        if ku > 0:
            for c in range(width):
                if blocked[c] != u:
                    q[at + cnt] = c
                    cnt += 1
                    if cnt == ku:
                        break
        if cnt == ku:  # the list ends inside the window (k = 0 included)
            if ku > 0:
                last = q[at + ku - 1]
                cs, ce = lvl_first[last], lvl_end[last]
            else:
                cs, ce = 0, 0
            if ce <= width:
                fast[u] = True
                cut_s[u], cut_e[u] = cs, ce
                m = 0
                for c in range(cs, ce):
                    m += blocked[c] == u
                n_excl[u] = m
    return cut_s, cut_e


@cached_njit(nogil=True)
def _cut_training(
    bounds: np.ndarray,
    items: np.ndarray,
    win: np.ndarray,
    width: int,
    cut_s: np.ndarray,
    cut_e: np.ndarray,
    n_excl: np.ndarray,
    e_start: np.ndarray,
    e_rows: np.ndarray,
    e_pos: np.ndarray,
) -> None:
    n_users = n_excl.shape[0]
    blocked = np.full(width + 1, -1, dtype=np.int64)
    for u in range(n_users):
        if n_excl[u] == 0:
            continue
        for t in range(bounds[u], bounds[u + 1]):
            blocked[win[items[t]]] = u
        j = e_start[u]
        for c in range(cut_s[u], cut_e[u]):
            if blocked[c] == u:
                e_rows[j] = u
                e_pos[j] = c
                j += 1


def popular_window_pass(
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
    """The window pass of :func:`~simrec.recommenders._popular_lists._popular_first_pass`, user by user.

    Parameters
    ----------
    bounds : ndarray of int64, shape (n_users + 1,)
        Each user's training items ``items[bounds[u]:bounds[u + 1]]``.
    items : ndarray of int, shape (bounds[-1],)
        The training items.
    gpos : ndarray of int64, shape (n_items,)
        Each item's position in the popularity order.
    k : ndarray of int64, shape (n_users,)
        List lengths.
    lvl_first, lvl_end : ndarray of int64, shape (n_positions,)
        The popularity level ``[first, end)`` of each position.
    width : int
        Positions in the window.
    qstart : ndarray of int64, shape (n_users + 1,)
        Each list's first entry in ``q``.
    q : ndarray of int64, shape (k.sum(),)
        Written: the ``k[u]`` smallest allowed positions of every fast user.

    Returns
    -------
    slow : ndarray of int64
        The users whose k-th allowed position or cut level lies beyond the window, ascending.
    e_rows, e_pos : ndarray of int64
        The fast users' training positions inside their cut level, sorted by (user, position).
    """
    n_users = len(k)
    fast = np.zeros(n_users, dtype=np.bool_)
    n_excl = np.zeros(n_users, dtype=np.int64)
    win = np.minimum(gpos, width).astype(np.int32 if width < 2**31 else np.int64)  # each item's window slot
    cut_s, cut_e = _window_pass(bounds, items, win, k, lvl_first, lvl_end, int(width), qstart, q, fast, n_excl)
    e_start = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(n_excl, out=e_start[1:])
    e_rows = np.empty(e_start[-1], dtype=np.int64)
    e_pos = np.empty(e_start[-1], dtype=np.int64)
    if e_start[-1]:
        _cut_training(bounds, items, win, int(width), cut_s, cut_e, n_excl, e_start, e_rows, e_pos)
    return np.flatnonzero(~fast), e_rows, e_pos


@cached_njit(nogil=True)
def count_below(q: np.ndarray, q_start: np.ndarray, cut_s: np.ndarray) -> np.ndarray:
    """Per user, its list positions ``q[q_start[u]:q_start[u + 1]]`` below ``cut_s[u]``, int64 (n_users,).

    ``k - np.bincount(q_rows[q >= cut_s[q_rows]])`` of Popular's assembly
    without its three arrays of every list entry.
    """
    n_users = cut_s.shape[0]
    out = np.zeros(n_users, dtype=np.int64)
    for u in range(n_users):
        c = 0
        for t in range(q_start[u], q_start[u + 1]):
            c += q[t] < cut_s[u]
        out[u] = c
    return out


@cached_njit(nogil=True)
def assemble_keys(
    q: np.ndarray,
    q_start: np.ndarray,
    n_first: np.ndarray,
    b_pos: np.ndarray,
    b_start: np.ndarray,
    base: np.ndarray,
    pad: int,
    u0: int,
    keys: np.ndarray,
) -> None:
    """Popular's keys of users ``u0 : u0 + len(keys)`` before the shuffle (the rows of ``keys``, written).

    Row i (user u = u0 + i): the keys ``base`` of its first ``n_first[u]``
    list positions, then of its cut level's sample ``b_pos[b_start[u]:b_start[u + 1]]``,
    then ``pad``: the fancy assignments of the numpy assembly, in one pass.
    """
    for i in range(keys.shape[0]):
        u = u0 + i
        j = 0
        for t in range(q_start[u], q_start[u] + n_first[u]):
            keys[i, j] = base[q[t]]
            j += 1
        for t in range(b_start[u], b_start[u + 1]):
            keys[i, j] = base[b_pos[t]]
            j += 1
        for c in range(j, keys.shape[1]):
            keys[i, c] = pad
