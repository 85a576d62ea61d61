"""Yang et al. (RecSys 2018)'s popularity exponent: how often recommenders present items of each popularity.

Yang et al. model the propensity of an item as the product of the chance it
is presented and the chance a presented item is consumed,
:math:`P_{*,i} \\propto (n^*_i)^{\\gamma} \\cdot n_i`, with :math:`n^*_i` the
item's observed count and :math:`n_i` its true popularity; substituting
:math:`n_i = n^*_i / P_{*,i}` gives

.. math:: P_{*,i} \\propto (n^*_i)^{(\\gamma + 1)/2}

(:class:`~simrec.debias.PopularityPowerLaw`). :math:`\\gamma` is the slope of
the presentation bias: with :math:`f(n^*)` the mean number of times an item
of observed count :math:`n^*` appears in the recommenders' top-N lists
(their Figure 3, ``get_presentation_bias`` in the authors' ``plots.ipynb``:
list appearances of the items of each count, divided by the number of items
of that count), :math:`f(n^*) \\propto (n^*)^{\\gamma}`, fitted here by
ordinary least squares of :math:`\\log f` on :math:`\\log n^*` over the
counts :math:`n^* \\ge 1` whose items appear at least once (the points of
their log-log figure; the paper does not state its fitting method, so this
choice is simrec's). Yang et al. report :math:`\\gamma` per algorithm and
evaluate with the minimum, mean and maximum over algorithms (citeulike 1.55 /
1.69 / 1.89, Tradesy 2.25 / 2.69 / 3.07, Amazon 1.70 / 1.87 / 2.11).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PowerLawFit", "presentation_frequency", "fit_popularity_exponent"]


@dataclass(frozen=True)
class PowerLawFit:
    """A fitted exponent :math:`\\gamma` of :math:`f(n^*) \\propto (n^*)^{\\gamma}`.

    Attributes
    ----------
    exponent : float
        :math:`\\hat\\gamma`, the least-squares slope.
    se : float
        Its standard error, :math:`\\hat\\sigma / \\sqrt{\\sum_j (x_j - \\bar x)^2}`
        with :math:`\\hat\\sigma^2` the residual variance on ``n_points - 2``
        degrees of freedom.
    intercept : float
        The fitted :math:`\\log f` at :math:`n^* = 1`.
    n_points : int
        Distinct counts in the fit.
    """

    exponent: float
    se: float
    intercept: float
    n_points: int


def presentation_frequency(
    lists: np.ndarray | Sequence[np.ndarray], counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:math:`f(n^*)`: mean list appearances of the items of each observed count.

    Parameters
    ----------
    lists : ndarray of int, shape (n_users, N), or a sequence of them
        Top-N lists (-1 padding), e.g. every recommender's lists pooled.
    counts : ndarray of int, shape (n_items,)
        :math:`n^*_i`, each item's observed (training) count.

    Returns
    -------
    levels, frequency : ndarray of float64
        The distinct counts :math:`n^* \\ge 1` held by some item, and the
        appearances of their items divided by their number of items.
    """
    c = np.asarray(counts)
    if c.ndim != 1 or not np.issubdtype(c.dtype, np.integer) or (len(c) and c.min() < 0):
        raise ValueError("`counts` must be a 1-d array of non-negative integers (one per item)")
    arrays = [np.asarray(lists)] if isinstance(lists, np.ndarray) else [np.asarray(a) for a in lists]
    if not arrays:
        raise ValueError("`lists` must hold at least one list array")
    appear = np.zeros(len(c), dtype=np.int64)
    for a in arrays:
        if a.ndim != 2 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"`lists` must be 2-d integer arrays; got shape {a.shape}, dtype {a.dtype}")
        real = a[a >= 0]
        if len(real) and real.max() >= len(c):
            raise ValueError(f"`lists` entries must be item indices below {len(c)}; got {int(real.max())}")
        appear += np.bincount(real, minlength=len(c))
    levels, inverse = np.unique(c, return_inverse=True)
    items_at = np.bincount(inverse, minlength=len(levels))
    shown_at = np.bincount(inverse, weights=appear, minlength=len(levels))
    keep = levels >= 1
    return levels[keep].astype(np.float64), shown_at[keep] / items_at[keep]


def fit_popularity_exponent(lists: np.ndarray | Sequence[np.ndarray], counts: np.ndarray) -> PowerLawFit:
    """Fit Yang et al.'s presentation exponent :math:`\\gamma` (module docstring).

    .. math:: \\log f(n^*) = \\alpha + \\gamma \\log n^* + \\varepsilon

    by ordinary least squares over the counts whose items appear in the
    lists (:func:`presentation_frequency`).

    Raises
    ------
    ValueError
        With fewer than 3 such counts (no standard error).
    """
    levels, freq = presentation_frequency(lists, counts)
    shown = freq > 0
    x, y = np.log(levels[shown]), np.log(freq[shown])
    m = len(x)
    if m < 3:
        raise ValueError(
            f"fitting the popularity exponent needs items of at least 3 distinct counts in the lists; got {m}"
        )
    xc = x - x.mean()
    sxx = float(xc @ xc)
    if sxx <= 0:
        raise ValueError("fitting the popularity exponent needs items of at least 2 distinct counts")
    slope = float(xc @ (y - y.mean())) / sxx
    intercept = float(y.mean() - slope * x.mean())
    resid = y - intercept - slope * x
    se = float(np.sqrt(resid @ resid / (m - 2) / sxx))
    return PowerLawFit(slope, se, intercept, m)
