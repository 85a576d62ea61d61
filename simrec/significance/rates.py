"""How often is "significantly better" right? Error rates of a test against a known true difference.

simrec knows each replicate's true difference between two recommenders (the
metric against the true preferences, or over all users), so a test's
outcomes over replicates split into (Urbano, Lima & Hanjalic, "Statistical
significance testing in information retrieval: an empirical analysis of
type I, type II and type III errors", SIGIR 2019):

* no true difference (|Δ| <= tolerance): significant is a **type I** error
  (false significance), not significant is right;
* a true difference Δ: significant with Δ's sign is **correct**, significant
  with the other sign is a **type III** error (wrong direction), not
  significant is a **type II** error.

:func:`truth_rates` gives each rate with its Wilson interval
(:func:`simrec.report.wilson_interval`; the replicates are independent
Bernoulli trials), and the share of significant results that are right (the
sign matches a non-null truth), the number a researcher reading "A is
significantly better than B" wants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._validation import check_in_range
from simrec.report import wilson_interval

__all__ = ["Rate", "TruthRates", "truth_rates"]


@dataclass(frozen=True)
class Rate:
    """A proportion over replicates with its Wilson interval.

    Attributes
    ----------
    count : int
        Replicates with the event.
    n : int
        Replicates it is a share of (its denominator); 0 makes the rate and
        interval NaN.
    rate : float
        count / n.
    ci_low, ci_high : float
        Wilson score interval at the result's ``confidence``.
    """

    count: int
    n: int
    rate: float
    ci_low: float
    ci_high: float


def _rate(count: int, n: int, confidence: float) -> Rate:
    if n == 0:
        return Rate(int(count), 0, float("nan"), float("nan"), float("nan"))
    low, high = wilson_interval(np.array([count]), np.array([n]), confidence)
    return Rate(int(count), int(n), count / n, float(low[0]), float(high[0]))


@dataclass(frozen=True)
class TruthRates:
    """A test's outcomes over replicates against the true difference.

    Attributes
    ----------
    correct : Rate
        Significant with the true difference's sign, among the non-null
        replicates (|Δ| > tolerance): the test's power to get it right.
    type_i : Rate
        Significant among the null replicates (|Δ| <= tolerance): false
        significance; compare with ``alpha``.
    type_ii : Rate
        Not significant among the non-null replicates.
    type_iii : Rate
        Significant with the wrong sign (or no sign) among the non-null
        replicates. correct + type II + type III = 1 over the non-null ones.
    right_given_significant : Rate
        Among the significant replicates (null or not), the share that are
        correct: P(right | significant).
    alpha : float
    tolerance : float
        |Δ| at or below which the truth counts as no difference.
    confidence : float
        Level of the Wilson intervals.
    n_replicates : int
        Replicates given.
    n_null, n_nonnull : int
        Replicates with |Δ| <= tolerance and > tolerance (with a defined p-value).
    n_undefined : int
        Replicates left out: p-value, sign or true difference NaN.
    """

    correct: Rate
    type_i: Rate
    type_ii: Rate
    type_iii: Rate
    right_given_significant: Rate
    alpha: float
    tolerance: float
    confidence: float
    n_replicates: int
    n_null: int
    n_nonnull: int
    n_undefined: int


def _vector(name: str, values: object) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be an array of numbers; got {values!r:.60}") from None
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (one value per replicate); got shape {arr.shape}")
    return arr


def truth_rates(
    p_values: object,
    observed_sign: object,
    true_difference: object,
    *,
    alpha: float = 0.05,
    tolerance: float = 0.0,
    confidence: float = 0.95,
) -> TruthRates:
    """Rates of correct, false (type I), missed (type II) and wrong-direction (type III) significance.

    .. math:: \\text{correct} = \\frac{\\#\\{p \\le \\alpha,\\ \\operatorname{sign} = \\operatorname{sign}\\Delta,\\
              |\\Delta| > \\tau\\}}{\\#\\{|\\Delta| > \\tau\\}}, \\quad
              \\text{type I} = \\frac{\\#\\{p \\le \\alpha,\\ |\\Delta| \\le \\tau\\}}{\\#\\{|\\Delta| \\le \\tau\\}},

    type II = #{p > α, |Δ| > τ} / #{|Δ| > τ}, type III = #{p <= α, sign ≠
    sign Δ, |Δ| > τ} / #{|Δ| > τ}, each with a Wilson interval (module
    docstring; Urbano et al., SIGIR 2019).

    Parameters
    ----------
    p_values : array-like of float, shape (n_replicates,)
        Two-sided p-values, e.g. ``PairedTestResult.p_value``.
    observed_sign : array-like of float, shape (n_replicates,)
        Direction each test claims, e.g. ``PairedTestResult.sign`` (the
        test's own direction) or ``np.sign(result.mean_difference)``.
        Only its sign is read.
    true_difference : array-like of float, shape (n_replicates,)
        True difference A - B per replicate (or just its sign, with
        ``tolerance`` 0).
    alpha : float in (0, 1), default 0.05
    tolerance : float >= 0, default 0.0
        |true difference| at or below which there is no true difference
        (e.g. the resolution of the metric; 0 for exactly equal systems).
    confidence : float in (0, 1), default 0.95
        Level of the Wilson intervals.

    Returns
    -------
    TruthRates

    Notes
    -----
    Replicates with a NaN p-value, sign or truth (an undefined test) are left
    out of every rate and counted in ``n_undefined``: an undefined test makes
    no claim. A replicate whose p-value passes but whose sign is 0 makes no
    directional claim and counts as type III when the truth has a sign.
    """
    p = _vector("p_values", p_values)
    sign = _vector("observed_sign", observed_sign)
    truth = _vector("true_difference", true_difference)
    if not (p.shape == sign.shape == truth.shape):
        raise ValueError(
            "`p_values`, `observed_sign` and `true_difference` must have one value per replicate each; got "
            f"{p.size}, {sign.size} and {truth.size}"
        )
    bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        raise ValueError(f"`p_values` must be in [0, 1] (or NaN); got {float(p[bad][0]):g}")
    alpha = check_in_range("alpha", alpha, 0, 1, low_open=True, high_open=True)
    tolerance = check_in_range("tolerance", tolerance, 0, None)
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    defined = ~(np.isnan(p) | np.isnan(sign) | np.isnan(truth))
    significant = defined & (p <= alpha)
    null = defined & (np.abs(truth) <= tolerance)
    nonnull = defined & ~null
    right = significant & nonnull & (np.sign(sign) == np.sign(truth))
    n_null, n_nonnull = int(null.sum()), int(nonnull.sum())
    n_significant = int(significant.sum())
    return TruthRates(
        correct=_rate(int(right.sum()), n_nonnull, confidence),
        type_i=_rate(int((significant & null).sum()), n_null, confidence),
        type_ii=_rate(int((nonnull & ~significant).sum()), n_nonnull, confidence),
        type_iii=_rate(int((significant & nonnull & ~right).sum()), n_nonnull, confidence),
        right_given_significant=_rate(int(right.sum()), n_significant, confidence),
        alpha=alpha,
        tolerance=tolerance,
        confidence=confidence,
        n_replicates=int(p.size),
        n_null=n_null,
        n_nonnull=n_nonnull,
        n_undefined=int((~defined).sum()),
    )
