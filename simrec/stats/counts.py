"""Item-popularity and user-activity distributions (Tian's thesis, §3.4.1)."""

from __future__ import annotations

import warnings

import numpy as np

from ..interactions import Interactions
from .bins import StatisticBins, _check_edges

__all__ = ["count_histogram", "item_popularity", "user_activity"]


def count_histogram(counts: np.ndarray, edges: np.ndarray, *, what: str = "counts") -> np.ndarray:
    """Normalised histogram of positive integer counts on integer bins with overflow.

    Bin ``b < len(edges) - 1`` holds counts in ``[edges[b], edges[b+1])``; the
    last bin (index ``len(edges) - 1``) holds counts ``>= edges[-1]``. Zero
    counts are left out (see :class:`StatisticBins`).

    .. math:: h_b = \\frac{|\\{x : x \\in \\text{bin } b\\}|}{|\\{x : x \\ge 1\\}|}

    Parameters
    ----------
    counts : ndarray of int, shape (n,)
    edges : ndarray of int64, shape (n_edges,)
        Strictly increasing, starting at 1.
    what : str
        Name used in the warning.

    Returns
    -------
    ndarray of float64, shape (n_edges,)
        Masses summing to 1; all NaN (with a warning) when no count is positive.
    """
    edges = _check_edges("edges", edges)
    c = np.asarray(counts)
    c = c[c >= 1]
    if len(c) == 0:
        warnings.warn(
            f"{what}: no positive count, the distribution is undefined; returning NaN", RuntimeWarning, stacklevel=3
        )
        return np.full(len(edges), np.nan)
    idx = np.searchsorted(edges, c, side="right") - 1
    return np.bincount(idx, minlength=len(edges)).astype(np.float64) / len(c)


def item_popularity(inter: Interactions, bins: StatisticBins) -> np.ndarray:
    """Distribution of item popularity |U_i| over observed items (thesis §3.4.1).

    "How many items have popularity x", binned on ``bins.popularity_edges`` with
    an overflow bin and normalised to sum 1 (:func:`count_histogram`).

    Parameters
    ----------
    inter : Interactions
    bins : StatisticBins

    Returns
    -------
    ndarray of float64, shape (len(bins.popularity_edges),)
    """
    _check(inter, bins)
    return count_histogram(inter.item_counts(), bins.popularity_edges, what="item popularity")


def user_activity(inter: Interactions, bins: StatisticBins) -> np.ndarray:
    """Distribution of user activity (profile size |I_u|) over observed users (§3.4.1).

    Returns
    -------
    ndarray of float64, shape (len(bins.activity_edges),)
        Binned on ``bins.activity_edges`` with an overflow bin, summing to 1.
    """
    _check(inter, bins)
    return count_histogram(inter.user_counts(), bins.activity_edges, what="user activity")


def _check(inter: object, bins: object) -> None:
    if not isinstance(inter, Interactions):
        raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
    if not isinstance(bins, StatisticBins):
        raise TypeError(f"`bins` must be a StatisticBins; got {type(bins).__name__}")
