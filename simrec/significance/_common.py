"""Shared machinery of the paired tests: input checks, paired deletion, the undefined-value warning.

Conventions of every paired test in :mod:`simrec.significance`:

* ``a``, ``b``: per-user metric values of systems A and B, float arrays of the
  same shape ``(n_users,)`` or ``(n_replicates, n_users)`` (any leading batch
  axes work; users are the last axis). Results have the batch shape: ``()``
  for one replicate, ``(n_replicates,)`` for several.
* NaN marks a user whose metric is undefined (e.g. no relevant item).
  **Paired deletion**: a user enters a replicate's test only where both A and
  B are defined, so replicates may use different numbers of users (a ragged
  batch is NaN-padded). ``±inf`` is refused.
* Differences are ``d = a - b``: a positive statistic or effect says A is
  better.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from simrec._validation import check_in_range

__all__ = ["UndefinedStatisticWarning"]


class UndefinedStatisticWarning(RuntimeWarning):
    """A test statistic, p-value or effect size was undefined (NaN) for some replicates."""


@dataclass(frozen=True, eq=False)
class Paired:
    """Two systems' per-user values after validation, flattened to ``(R, n_users)``.

    Attributes
    ----------
    a, b : ndarray, shape (R, n_users)
    diff : ndarray, shape (R, n_users)
        ``a - b``, NaN where either is NaN.
    valid : ndarray of bool, shape (R, n_users)
        Users kept by paired deletion.
    n_valid : ndarray of int, shape (R,)
    batch_shape : tuple of int
        Shape of the results (``()`` for 1-D input).
    """

    a: np.ndarray
    b: np.ndarray
    diff: np.ndarray
    valid: np.ndarray
    n_valid: np.ndarray
    batch_shape: tuple[int, ...]

    @property
    def all_zero(self) -> np.ndarray:
        """Rows with at least one valid pair and every valid difference exactly 0 (identical lists), (R,)."""
        return (self.n_valid > 0) & ~np.any(self.valid & (self.diff != 0), axis=-1)

    @property
    def constant(self) -> np.ndarray:
        """Rows with at least one valid pair and every valid difference equal, up to rounding, (R,).

        Equal up to 1e-12 of the values' scale max(|a|, |b|): a shift b = a + c
        leaves differences that vary in their last bits (fl(a + c) - a), which
        would otherwise make a zero-variance sample look like one with an
        enormous effect.
        """
        low = np.where(self.valid, self.diff, np.inf).min(axis=-1)
        high = np.where(self.valid, self.diff, -np.inf).max(axis=-1)
        scale = np.where(self.valid, np.maximum(np.abs(self.a), np.abs(self.b)), 0.0).max(axis=-1)
        return (self.n_valid > 0) & (high - low <= 1e-12 * scale)

    def mean_difference(self) -> np.ndarray:
        """Mean of the valid differences per row, NaN for a row without one, (R,)."""
        total = np.where(self.valid, self.diff, 0.0).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n_valid > 0, total / np.maximum(self.n_valid, 1), np.nan)

    def shaped(self, values: np.ndarray) -> np.ndarray:
        """``values`` of shape (R,) as a read-only array of the batch shape."""
        out = np.asarray(values).reshape(self.batch_shape).copy()
        out.flags.writeable = False
        return out


def _as_values(name: str, values: object) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be an array of numbers (per-user metric values); got {values!r:.60}") from None
    if arr.ndim == 0:
        raise ValueError(f"`{name}` must have shape (n_users,) or (n_replicates, n_users); got a scalar")
    if np.isinf(arr).any():
        raise ValueError(f"`{name}` must be finite or NaN (NaN marks a user whose metric is undefined); got inf")
    return arr


def paired(a: object, b: object) -> Paired:
    """Validate two systems' per-user values and pair them (paired deletion of NaN).

    Raises
    ------
    TypeError
        Non-numeric values.
    ValueError
        Different shapes, a scalar, no user, or ``±inf``.
    """
    x = _as_values("a", a)
    y = _as_values("b", b)
    if x.shape != y.shape:
        raise ValueError(
            f"`a` and `b` must have the same shape (n_replicates, n_users) or (n_users,); got {x.shape} and {y.shape}"
        )
    if x.shape[-1] == 0:
        raise ValueError(f"`a` and `b` must hold at least one user (last axis); got shape {x.shape}")
    batch = x.shape[:-1]
    x = x.reshape(-1, x.shape[-1])
    y = y.reshape(-1, y.shape[-1])
    diff = x - y
    valid = ~np.isnan(diff)
    return Paired(x, y, diff, valid, valid.sum(axis=-1), batch)


def check_confidence(confidence: float) -> float:
    """``confidence`` in (0, 1)."""
    return check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)


def check_resamples(n_resamples: int, low: int) -> int:
    """``n_resamples`` a Python or numpy integer >= ``low``."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise TypeError(f"`n_resamples` must be an integer; got {n_resamples!r}")
    if n_resamples < low:
        raise ValueError(f"`n_resamples` must be >= {low}; got {n_resamples}")
    return int(n_resamples)


def warn_undefined(what: str, undefined: np.ndarray, why: str, stacklevel: int = 3) -> None:
    """One :class:`UndefinedStatisticWarning` per call when some rows of ``undefined`` are set."""
    count = int(np.count_nonzero(undefined))
    if count:
        warnings.warn(
            f"{what} undefined (NaN) for {count} of {undefined.size} replicate(s): {why}",
            UndefinedStatisticWarning,
            stacklevel=stacklevel,
        )
