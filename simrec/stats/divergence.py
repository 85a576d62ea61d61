"""KL divergence between key-statistic distributions, relative and average loss.

Direction. The thesis (§3.4, §3.4.3) compares "the K-L divergence between
synthetic and observed distributions" and minimises "the K-L divergence from
synthetic data to observed data". In the usual reading of "divergence from Q
to P" (Kullback 1959; the relative entropy of P with respect to Q) that is

.. math:: D_{KL}(P_{ref} \\,\\|\\, Q_{sim}) = \\sum_b p_b \\log \\frac{p_b}{q_b},

the reference P as the distribution the expectation is taken under and the
simulation Q as its approximation — also the direction of
``scipy.stats.entropy(p_reference, q_simulated)``. It penalises a
simulation that puts too little mass where the reference has mass (a missed
bin costs ``p_b log(p_b / eps)``), which is what calibration needs; simulated
mass where the reference has none is penalised only through renormalisation.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_in_range

__all__ = ["DEFAULT_EPS", "kl_divergence", "relative_loss", "average_loss"]

#: Additive smoothing of every bin (about the mass of one pair among the 1M
#: sampled pairs): a bin the simulation misses costs ``p log(p / 1e-6)``.
DEFAULT_EPS = 1e-6


def kl_divergence(p_reference: ArrayLike, q_simulated: ArrayLike, *, eps: float = DEFAULT_EPS) -> float:
    """Smoothed KL divergence of the simulated distribution from the reference.

    .. math::
        \\tilde p_b = \\frac{p_b / \\sum p + \\varepsilon}{1 + B\\varepsilon}, \\quad
        \\tilde q_b = \\frac{q_b / \\sum q + \\varepsilon}{1 + B\\varepsilon}, \\quad
        D = \\sum_{b=1}^{B} \\tilde p_b \\log \\frac{\\tilde p_b}{\\tilde q_b}

    (natural log, nats). Both inputs are first normalised to sum 1; then
    ``eps`` is added to every bin of both and they are renormalised, so D is
    finite when the simulation misses a bin. D >= 0, with equality iff the
    normalised inputs are equal. Direction: D_KL(reference ‖ simulated), see
    the module docstring (Tian's thesis §3.4.3).

    Parameters
    ----------
    p_reference : array-like, shape (B,)
        Reference histogram (masses or counts, non-negative, positive sum).
    q_simulated : array-like, shape (B,)
        Simulated histogram on the same bins.
    eps : float
        Additive smoothing per bin, in [0, 1]. Default 1e-6. ``eps = 0`` gives
        the plain divergence (``inf`` when q misses mass of p).

    Returns
    -------
    float
        NaN, with a warning, when either input contains NaN (an undefined
        statistic, e.g. no eligible pair).

    Raises
    ------
    ValueError
        Shapes differ, not 1-d, negative or infinite values, zero sum.
    """
    eps = check_in_range("eps", eps, 0, 1)
    p = np.asarray(p_reference, dtype=np.float64)
    q = np.asarray(q_simulated, dtype=np.float64)
    if p.ndim != 1 or p.shape != q.shape or len(p) == 0:
        raise ValueError(
            f"`p_reference` and `q_simulated` must be non-empty 1-d arrays of equal length; got {p.shape} and {q.shape}"
        )
    if np.isnan(p).any() or np.isnan(q).any():
        warnings.warn("KL divergence of an undefined (NaN) distribution; returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan")
    for name, x in (("p_reference", p), ("q_simulated", q)):
        if (x < 0).any() or not np.isfinite(x).all():
            raise ValueError(f"`{name}` must be finite and non-negative; got min {x.min():g}, max {x.max():g}")
        if x.sum() <= 0:
            raise ValueError(f"`{name}` must have a positive sum; got {x.sum():g}")
    n = len(p)
    p = (p / p.sum() + eps) / (1 + n * eps)
    q = (q / q.sum() + eps) / (1 + n * eps)
    mask = p > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))


def relative_loss(kl: float, best_kl: float) -> float:
    """Relative loss of a model on one statistic (thesis §3.4.3).

    .. math:: L = D / D^{*}

    where D* is the best (smallest) KL divergence any model of the family
    reached on that statistic for that dataset; L = 1 for the best model,
    1.069 for a fit 6.9% worse.

    Parameters
    ----------
    kl : float
        The model's divergence, ``>= 0`` (NaN propagates).
    best_kl : float
        The best divergence, ``>= 0``.

    Returns
    -------
    float
        NaN with a warning when ``best_kl == 0`` (a perfect fit makes every
        ratio undefined) or either input is NaN.
    """
    for name, v in (("kl", kl), ("best_kl", best_kl)):
        if isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool) and math.isnan(v):
            warnings.warn(f"relative loss with `{name}` = NaN; returning NaN", RuntimeWarning, stacklevel=2)
            return float("nan")
    kl = check_in_range("kl", kl, 0, None)
    best_kl = check_in_range("best_kl", best_kl, 0, None)
    if best_kl == 0:
        warnings.warn("relative loss undefined for best_kl = 0; returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan")
    return kl / best_kl


def average_loss(kls: Mapping[str, float], best: Mapping[str, float]) -> float:
    """Average relative loss over statistics: the calibration objective (thesis §3.4.3).

    .. math:: \\bar L = \\frac{1}{|S|} \\sum_{s \\in S} \\frac{D_s}{D^{*}_s}

    with S the statistics in ``kls`` (the four key statistics in the thesis,
    weighted equally).

    Parameters
    ----------
    kls : mapping of str to float
        The model's KL divergence per statistic (non-empty).
    best : mapping of str to float
        Best KL per statistic; must contain every key of ``kls`` (extra keys
        are ignored).

    Returns
    -------
    float
        NaN (with a warning) if any relative loss is NaN.
    """
    if not isinstance(kls, Mapping) or not kls:
        raise ValueError(f"`kls` must be a non-empty mapping of statistic -> KL; got {kls!r}")
    if not isinstance(best, Mapping):
        raise TypeError(f"`best` must be a mapping of statistic -> best KL; got {type(best).__name__}")
    missing = [k for k in kls if k not in best]
    if missing:
        raise ValueError(f"`best` must have every statistic of `kls`; missing {missing}")
    losses = [relative_loss(kls[k], best[k]) for k in kls]
    return float(np.mean(losses))
