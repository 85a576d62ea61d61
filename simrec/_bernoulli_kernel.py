"""Compiled kernel: one round of :func:`simrec._subsets.bernoulli_subsets`'s gaps, from its exponential draws.

A round turns each live row's exponential draws ``E`` into gaps
:math:`1 + \\lfloor \\min(E s_r, \\mathrm{cap}) \\rfloor` (the first gap 1 in a
row that includes position 0), adds them up from the row's last member and
keeps the members below the row's population. numpy does it in a dozen passes
over the block's draws (products, a cumulative sum, a search, a repeated mask,
a gather); here one pass, with the same float64 products and the same integer
positions (every sum is an exact integer below 2**53 in both).

numba, deterministic and single-threaded (the draws come from the caller's
seeded numpy Generator). Compiled on first use and cached in the user's cache
folder (:func:`simrec._cache.cached_njit`); importing this module imports
numba, so callers import it where they use it.
"""

from __future__ import annotations

import math

import numpy as np

from simrec._cache import cached_njit

__all__ = ["gap_round"]


@cached_njit(nogil=True)
def gap_round(
    g: np.ndarray,
    live: np.ndarray,
    sizes: np.ndarray,
    scale: np.ndarray,
    pops: np.ndarray,
    last: np.ndarray,
    offsets: np.ndarray,
    cap: float,
    first_round: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Members of one round: ``(n_in, members)``; ``last`` of the rows whose every gap stayed inside is updated.

    Parameters
    ----------
    g : ndarray of float64, shape (sizes.sum(),)
        Standard exponential draws, row after row.
    live, sizes : ndarray of int64, shape (n_live,)
        The rows of the round and their draws.
    scale, pops, last, offsets : ndarray, shape (n_rows,)
        Per row of the block: :math:`-1/\\log(1 - p)`, population, last member so far (-1: none), offset.
    cap : float
        The largest gap minus one (``pops.max() + 1``).
    first_round : bool
        The first gap of every row is 1 (position 0 a member).

    Returns
    -------
    n_in : ndarray of int64, shape (n_live,)
        Members per live row (the gaps below its population).
    members : ndarray of int32, shape (n_in.sum(),)
        Their positions plus the row's offset, row after row, ascending.
    """
    n_live = live.shape[0]
    n_in = np.zeros(n_live, dtype=np.int64)
    members = np.empty(g.shape[0], dtype=np.int32)
    j = 0
    m = 0
    for i in range(n_live):
        r = live[i]
        s = scale[r]
        pop = pops[r]
        pos = last[r]
        off = offsets[r]
        n = sizes[i]
        c = 0
        for d in range(n):
            gap: int | np.int64  # a bare local annotation: no bytecode, numba infers int64
            if first_round and d == 0:
                gap = 1
            else:
                x = g[j + d] * s
                if not (x < cap):  # also NaN (0 * inf) and inf
                    x = cap
                gap = np.int64(math.floor(x)) + 1
            pos += gap
            if pos >= pop:
                break
            members[m] = pos + off
            m += 1
            c += 1
        n_in[i] = c
        if c == n:
            last[r] = pos
        j += n
    return n_in, members[:m]
