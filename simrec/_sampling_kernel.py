"""Compiled kernel: one round of :func:`simrec._sampling.sample_distinct`, after its draws.

A round draws, for every pending row, ``m`` values with replacement from
``[0, a)`` (numpy's seeded Generator, row after row) and keeps each row's
first ``k`` distinct values in draw order, or none if it drew fewer than
``k`` distinct ones (it falls short and draws again in a later round).
numpy finds the first occurrences with a table of the rows' cells or a sort
of (row, value) keys, then ranks, masks and gathers the kept draws: a dozen
passes over the draws. Here one pass, row by row: a value is new to its row
when its stamp (in a reused table of ``max(a)`` entries) is not the row's,
and the row stops at its k-th new value. The same rows, values, ranks and
shortfalls (integers only).

numba, deterministic and single-threaded (the draws come from the caller's
seeded numpy Generator). Compiled on first use and cached in the user's cache
folder (:func:`simrec._cache.cached_njit`); importing this module imports
numba, so callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["distinct_round", "repeat_bounds"]


@cached_njit(nogil=True)
def repeat_bounds(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``np.repeat(a, m)`` as int64 (each row's range bound, once per draw)."""
    n = 0
    for i in range(m.shape[0]):
        n += m[i]
    out = np.empty(n, dtype=np.int64)
    j = 0
    for i in range(m.shape[0]):
        v = a[i]
        for _ in range(m[i]):
            out[j] = v
            j += 1
    return out


@cached_njit(nogil=True)
def distinct_round(
    pending: np.ndarray, m: np.ndarray, k: np.ndarray, a: np.ndarray, draws: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each pending row's first ``k`` distinct draws: ``(rows, vals, ranks, short)``.

    Parameters
    ----------
    pending : ndarray of int64, shape (n,)
        The rows of the round, ascending.
    m, k, a : ndarray of int64, shape (n,)
        Per pending row: its draws, the values it needs, its range ``[0, a)``.
    draws : ndarray of int64, shape (m.sum(),)
        The draws, row after row.

    Returns
    -------
    rows, vals, ranks : ndarray of int64
        The rows that got their ``k`` values (each ``k`` times, in order), the
        values in draw order and their 0-based ranks in the row.
    short : ndarray of bool, shape (n,)
        The pending rows that drew fewer than ``k`` distinct values.
    """
    n = pending.shape[0]
    total = 0
    width = 1
    for i in range(n):
        total += k[i]
        width = max(width, a[i])
    rows = np.empty(total, dtype=np.int64)
    vals = np.empty(total, dtype=np.int64)
    ranks = np.empty(total, dtype=np.int64)
    short = np.zeros(n, dtype=np.bool_)
    stamp = np.full(width, -1, dtype=np.int64)
    o = 0
    j = 0
    for i in range(n):
        need = k[i]
        got = 0
        for d in range(j, j + m[i]):
            if got == need:
                break
            v = draws[d]
            if stamp[v] != i:
                stamp[v] = i
                rows[o + got] = pending[i]
                vals[o + got] = v
                ranks[o + got] = got
                got += 1
        if got == need:
            o += need
        else:
            short[i] = True
        j += m[i]
    return rows[:o], vals[:o], ranks[:o], short
