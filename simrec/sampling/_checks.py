"""Input checks shared by the sampling estimators (one message format).

Messages follow :mod:`simrec._validation`: they name the parameter, the rule
and the offending value, e.g. "`sampled_ranks` must be integers in [1, 100];
got 101 at position 3".
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "check_rank_array",
    "check_probability_vector",
    "check_weights",
]


def check_rank_array(name: str, ranks: object, high: int | np.ndarray, *, ndim: tuple[int, ...] = (1,)) -> np.ndarray:
    """Return ``ranks`` as an int64 array after checking it holds integers in ``[1, high]``.

    Integer-valued floats are accepted (and converted); NaN, fractions,
    booleans, empty arrays and values outside the range raise. ``high`` is an
    int or an int array broadcasting against ``ranks`` (one bound per user,
    e.g. each user's candidate count N_u along the last axis).
    """
    arr = np.asarray(ranks)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"`{name}` must be an array of integer ranks; got dtype {arr.dtype}")
    if arr.ndim not in ndim:
        raise ValueError(f"`{name}` must have {' or '.join(map(str, ndim))} dimension(s); got shape {arr.shape}")
    if arr.size == 0 or arr.shape[-1] == 0:
        raise ValueError(f"`{name}` must not be empty; got shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            pos = int(np.flatnonzero(bad.ravel())[0])
            raise ValueError(f"`{name}` must hold integers; got {arr.ravel()[pos]} at position {pos}")
        arr = arr.astype(np.int64)
    else:
        arr = arr.astype(np.int64, copy=False)
    bad = (arr < 1) | (arr > high)
    if bad.any():
        pos = int(np.flatnonzero(bad.ravel())[0])
        bound = high if np.ndim(high) == 0 else np.broadcast_to(high, arr.shape).ravel()[pos]
        raise ValueError(f"`{name}` must be integers in [1, {bound}]; got {arr.ravel()[pos]} at position {pos}")
    return arr


def check_probability_vector(name: str, values: object, size: int) -> np.ndarray:
    """Return a float64 copy of ``values`` normalised to sum 1.

    ``values`` must have shape ``(size,)``, be finite and non-negative with a
    positive sum (it is rescaled to sum exactly 1).
    """
    arr = np.array(values, dtype=np.float64, copy=True)
    if arr.shape != (size,):
        raise ValueError(f"`{name}` must have shape ({size},); got {arr.shape}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`{name}` must be finite and non-negative; got {arr[pos]:g} at position {pos}")
    total = arr.sum()
    if total <= 0:
        raise ValueError(f"`{name}` must have a positive sum; got {total:g}")
    arr /= total
    return arr


def check_weights(name: str, values: object, size: int) -> np.ndarray:
    """Return ``values`` as a float64 array of shape ``(size,)``, finite and >= 0."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (size,):
        raise ValueError(f"`{name}` must have shape ({size},); got {arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(f"`{name}` must be finite and non-negative")
    return arr
