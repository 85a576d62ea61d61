"""Compiled kernel: does some row of a top-N list array hold an item twice?

:func:`simrec.metrics._common._repeats_in_rows` sorts short lists row by row
(block by block) and compares neighbours; here each row's items are marked in
a reused bitmap of the item range and cleared again, O(entries), no sort.
The same answer. At ML-20M size a replicate checks six arrays of 138K lists
of 50.

numba, deterministic and single-threaded. Compiled on first use and cached
in the user's cache folder (:func:`simrec._cache.cached_njit`); importing
this module imports numba, so callers import it where they use it.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["repeats_in_rows"]


@cached_njit(nogil=True)
def repeats_in_rows(lists: np.ndarray, width: int) -> bool:
    """True when some row of ``lists`` (int64 (n_rows, N), entries in [-1, width), -1 = padding) repeats an item."""
    n_rows, n = lists.shape
    seen = np.zeros(max(width, 1), dtype=np.uint8)
    for r in range(n_rows):
        found = False
        for j in range(n):
            x = lists[r, j]
            if x >= 0:
                if seen[x]:
                    found = True
                    break
                seen[x] = 1
        for j in range(n):  # clear the row's marks (up to the repeat: nothing beyond was set)
            x = lists[r, j]
            if x >= 0:
                seen[x] = 0
        if found:
            return True
    return False
