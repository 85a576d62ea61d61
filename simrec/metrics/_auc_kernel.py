"""Compiled kernel of :func:`simrec.metrics.auc`: mid-rank sums of positives in sorted score rows.

numba, deterministic and single-threaded (no ``parallel``, no fastmath): the
values are exact integer counts combined in one final division, so they are
bit-identical to the numpy implementation it replaced (tests/test_metrics_auc.py
keeps that implementation as its reference). Compiled on first use and cached
in the user's cache folder (:func:`simrec._cache.cached_njit`; never in the
package folder); importing this module imports numba, so
:mod:`simrec.metrics.rankings` imports it only when an AUC is computed.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["auc_rows"]


@cached_njit(nogil=True)
def _count_upto(row: np.ndarray, x: float) -> int:
    """How many entries of the sorted 1-d ``row`` (length >= 1) are <= x (branchless binary search)."""
    base = 0
    n = row.shape[0]
    while n > 1:
        half = n >> 1
        base = base + half if row[base + half] <= x else base
        n -= half
    return base + (1 if row[base] <= x else 0)


@cached_njit(nogil=True)
def auc_rows(
    srt: np.ndarray,
    scores: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    start: int,
    values: np.ndarray,
    undefined: np.ndarray,
) -> None:
    r"""AUC of each row of a block from its sorted copy; writes ``values`` and ``undefined``.

    Parameters
    ----------
    srt : ndarray of float64, shape (rows, n_items), n_items >= 1
        ``scores`` with each row sorted ascending (``-inf`` first).
    scores : ndarray of float64, shape (rows, n_items)
        The block's scores, ``-inf`` at non-candidates, no NaN.
    indptr, indices : ndarray of int64
        CSR structure of the relevance sets of all users; row r of the block
        is user ``start + r``.
    start : int
        First user of the block.
    values : ndarray of float64, shape (rows,)
        Output: AUC, 0 where undefined.
    undefined : ndarray of bool, shape (rows,)
        Output: no positive or no negative candidate.

    Notes
    -----
    For a positive p with score x, :math:`\ell_p` (entries < x) and
    :math:`h_p` (entries <= x) are found by binary searches in the sorted row;
    all positives of a row are searched in lockstep (one halving step for all
    of them, then the next), so the independent searches overlap in the CPU.
    :math:`h_p = \ell_p + 1` unless the next sorted entry equals x (then a
    second search). With :math:`n^-` the non-candidates and k positives, the
    mid-rank among candidates is :math:`(\ell_p + h_p + 1)/2 - n^-`, so

    .. math::
        2U = \sum_p (\ell_p + h_p) + k - 2 k n^- - k(k + 1),
        \qquad \mathrm{AUC} = \frac{2U}{2 k |N|}

    in int64 (exact) and one float division, the same rounding as
    :math:`U / (k |N|)`.
    """
    rows, n_items = scores.shape
    kmax = 0
    for r in range(rows):
        kmax = max(kmax, indptr[start + r + 1] - indptr[start + r])
    xs = np.empty(kmax)
    base = np.empty(kmax, dtype=np.int64)
    for r in range(rows):
        row = srt[r]
        src = scores[r]
        n_non = _count_upto(row, -np.inf)
        k = 0
        for t in range(indptr[start + r], indptr[start + r + 1]):
            x = src[indices[t]]
            if x > -np.inf:  # relevant non-candidates are ignored
                xs[k] = x
                base[k] = 0
                k += 1
        # lockstep branchless lower bound: after the loop the answer is base or base + 1
        n = n_items
        while n > 1:
            half = n >> 1
            for t in range(k):
                b = base[t]
                base[t] = b + half if row[b + half] < xs[t] else b
            n -= half
        acc = 0
        for t in range(k):
            x = xs[t]
            below = base[t] + (1 if row[base[t]] < x else 0)
            upto = below + 1
            if upto < n_items and row[upto] == x:
                upto = _count_upto(row, x)
            acc += below + upto
        nneg = n_items - n_non - k
        if k == 0 or nneg <= 0:
            values[r] = 0.0
            undefined[r] = True
        else:
            values[r] = (acc + k - 2 * k * n_non - k * (k + 1)) / (2.0 * k * nneg)
            undefined[r] = False
