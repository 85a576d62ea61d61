"""Compiled kernel: one block of :meth:`simrec.observation.PopularitySampler.sample`, after its draws.

For every row that keeps part of its likes, the sampler weighs each pair by
its item's popularity, divides the pair's exponential draw by it and keeps
the row's ``k`` smallest keys (:func:`simrec.observation.samplers._smallest_per_row`:
a pre-filter threshold per row, the float64 keys ``r + 0.5 x / (1 + x)``,
one sort of the candidates, ties at the cut by position). numpy does it in
about twenty passes over the block's pairs; here one row at a time, with the
same floating-point operations in the same order (the same weights' sums,
thresholds, keys and cuts), so the same pairs are kept.

numba, deterministic and single-threaded (the draws come from the caller's
seeded numpy Generator). Compiled on first use and cached in the user's cache
folder (:func:`simrec._cache.cached_njit`); importing this module imports
numba, so callers import it where they use it.
"""

from __future__ import annotations

import math

import numpy as np

from simrec._cache import cached_njit

__all__ = ["candidate_keys", "write_kept"]


@cached_njit(nogil=True)
def candidate_keys(
    indptr: np.ndarray,
    indices: np.ndarray,
    r0: int,
    r1: int,
    part: np.ndarray,
    eff: np.ndarray,
    weight: np.ndarray,
    x: np.ndarray,
    first_row: int,
    ckey: np.ndarray,
    cpos: np.ndarray,
    cstart: np.ndarray,
) -> int:
    """The candidates of the part rows of ``r0:r1``: their keys, pair positions and per-row starts; their number.

    Parameters
    ----------
    indptr, indices : ndarray of int
        The truth's CSR structure.
    r0, r1 : int
        The block's rows.
    part : ndarray of bool, shape (n_rows,)
        Rows that keep part of their likes (``eff < lens``).
    eff : ndarray of int64, shape (n_rows,)
        Pairs each row keeps.
    weight : ndarray of float64, shape (n_items,)
        Each item's weight.
    x : ndarray of float64, shape (pairs of the block's part rows,)
        The block's standard exponential draws, part row after part row
        (divided by the pairs' weights in place).
    first_row : int
        The number of part rows before ``r0`` (the first part row's index in the keys).
    ckey, cpos : ndarray, shape (at least x.shape[0],)
        Written: each candidate's key ``row + 0.5 (x / (1 + x))`` and pair position (into ``indices``).
    cstart : ndarray of int64, shape (part rows of the block + 1,)
        Written: each part row's first candidate.
    """
    j = 0  # the block's draws
    m = 0  # the block's candidates
    i = 0  # the block's part rows
    for r in range(r0, r1):
        if not part[r]:
            continue
        p0, p1 = indptr[r], indptr[r + 1]
        n = p1 - p0
        k = eff[r]
        total = 0.0
        for t in range(n):  # the keys E / w, and the row's total weight (in order, as np.bincount)
            w = weight[indices[p0 + t]]
            x[j + t] = x[j + t] / w
            total += w
        target = k + 4.0 * math.sqrt(k) + 8.0
        tau = target / total if target < n else np.inf
        c = m
        for t in range(n):  # no branch per pair: the position is written, and kept if below tau
            cpos[c] = p0 + t
            c += x[j + t] < tau
        if c - m < k:  # fewer candidates than keys to keep: every key is one
            c = m
            for t in range(n):
                cpos[c] = p0 + t
                c += 1
        base = np.float64(first_row + i)
        for q in range(m, c):
            xc = x[j + cpos[q] - p0]
            ckey[q] = (xc / (xc + 1.0)) * 0.5 + base
        cstart[i] = m
        m = c
        j += n
        i += 1
    cstart[i] = m
    return m


@cached_njit(nogil=True)
def write_kept(
    indptr: np.ndarray,
    indices: np.ndarray,
    r0: int,
    r1: int,
    part: np.ndarray,
    eff: np.ndarray,
    ckey: np.ndarray,
    cpos: np.ndarray,
    cstart: np.ndarray,
    srt: np.ndarray,
    out: np.ndarray,
    at: int,
) -> int:
    """Write the kept columns of rows ``r0:r1`` to ``out[at:]``, row after row, in order; the new end.

    Rows that keep every pair are copied. In a part row, ``srt`` is the
    block's candidate keys sorted (the row's k-th smallest key, its cut, is
    ``srt[cstart[i] + k - 1]``: the keys hold the row); every key below the
    cut is kept, and of the keys equal to it the first by position, up to ``k``.
    """
    width = 1
    for r in range(r0, r1):
        width = max(width, indptr[r + 1] - indptr[r])
    flag = np.zeros(width, dtype=np.uint8)
    i = 0
    for r in range(r0, r1):
        p0, p1 = indptr[r], indptr[r + 1]
        if not part[r]:
            for t in range(p0, p1):
                out[at] = indices[t]
                at += 1
            continue
        k = eff[r]
        c0, c1 = cstart[i], cstart[i + 1]
        i += 1
        if k == 0:
            continue
        cut = srt[c0 + k - 1]
        below = 0
        for q in range(c0, c1):
            below += ckey[q] < cut
        ties = k - below  # the tied keys kept: the first by position
        for q in range(c0, c1):
            c = ckey[q]
            if c < cut:
                flag[cpos[q] - p0] = 1
            elif c == cut and ties > 0:
                flag[cpos[q] - p0] = 1
                ties -= 1
        for t in range(p1 - p0):  # no branch: every column written, the kept ones advance
            out[at] = indices[p0 + t]
            at += flag[t]
            flag[t] = 0
    return at
