"""Compiled kernel: bootstrap means of ragged replicates from shared uniform draws.

Replicate r holds ``n_valid[r]`` values, compacted to the left of its row.
Resample b of replicate r draws the indices
:math:`k_{bj} = \\lfloor \\mathrm{fl}(u_{bj} n_r) \\rfloor`, j < n_r, from the
first n_r uniforms of row b of the shared draws ``u`` (every replicate reads the
same ``u``; each maps it onto its own number of users), and its mean is the sum
of the gathered values, added in the order j = 0, 1, ..., divided by n_r.

No index reaches n_r: numpy's uniforms are multiples of 2⁻⁵³ below 1, so
the exact product is at most n_r - n_r 2⁻⁵³. For 2^e < n_r < 2^(e+1) <= 2⁵³
that is more than half a spacing (2^(e-52) near n_r) below n_r, so it rounds
below n_r; for n_r = 2^e it is n_r - 2^(e-53), itself a double.
``tests/significance/test_bootstrap_ragged.py`` checks it on the largest
uniform.

numpy would need a pass per step (products, a cast, a gather, a sum) over
Σ_r n_r values per resample; here one pass, with no index array held.

numba, deterministic and single-threaded (the draws come from the caller's
seeded numpy Generator). Compiled on first use and cached in the user's cache
folder (:func:`simrec._cache.cached_njit`); importing this module imports
numba, so callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["ragged_means"]


@cached_njit(nogil=True)
def ragged_means(  # pragma: no cover - compiled (its callers are tested)
    values: np.ndarray, n_valid: np.ndarray, u: np.ndarray, out: np.ndarray, start: int
) -> None:
    """Write the means of the resamples drawn by ``u`` into ``out[:, start : start + u.shape[0]]``.

    Parameters
    ----------
    values : ndarray of float64, shape (rows, width)
        Each row's valid values in its first ``n_valid[r]`` columns.
    n_valid : ndarray of int64, shape (rows,)
        Values per row, 1 <= n_valid[r] <= u.shape[1].
    u : ndarray of float64, shape (block, width')
        Uniform draws in [0, 1), one row per resample, shared by every row of ``values``.
    out : ndarray of float64, shape (rows, n_resamples)
    start : int
        The first resample of this block.
    """
    rows = values.shape[0]
    block = u.shape[0]
    for r in range(rows):
        n = n_valid[r]
        fn = float(n)
        v = values[r]
        for b in range(block):
            row = u[b]
            s = 0.0
            for j in range(n):
                s += v[int(row[j] * fn)]
            out[r, start + b] = s / fn
