"""t and z tests from summary statistics: a difference and its standard error (no per-user values).

For callers that hold moments instead of per-user values: the user-sampling
study (:mod:`simrec.stress.user_sampling`, dissertation §2.7) keeps per
sample the means of F, F² and F_A·F_B and adds a finite-population
correction, which no per-user scipy test has; the pooled two-proportion
z-test of :func:`simrec.sampling.proportion_z_test` (eq. 53). The paired
t-test from moments here equals :func:`~simrec.significance.paired_t_test`
(scipy's ``ttest_rel``) on the same users (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from simrec._validation import check_choice

__all__ = ["SummaryTestResult", "t_test_from_summary", "z_test_from_summary", "ALTERNATIVES"]

#: Alternatives of the summary tests (scipy's names).
ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")


@dataclass(frozen=True, eq=False)
class SummaryTestResult:
    """A t or z test from a difference and its standard error, element-wise.

    Attributes
    ----------
    statistic : ndarray of float
        difference / standard_error; NaN where the standard error is 0.
    p_value : ndarray of float
        For the alternative asked; where the standard error is 0: 0 if the
        difference is nonzero, 1 if it is 0 (two-sided; one-sided: 0 when the
        difference points the alternative's way, else 1). NaN where the
        difference or the standard error is NaN.
    """

    statistic: np.ndarray
    p_value: np.ndarray


def _summary_test(
    difference: object, standard_error: object, alternative: str, dist: Any, *shape_args: np.ndarray
) -> SummaryTestResult:
    check_choice("alternative", alternative, ALTERNATIVES)
    diff = np.asarray(difference, dtype=np.float64)
    se = np.asarray(standard_error, dtype=np.float64)
    if (se < 0).any():
        raise ValueError(f"`standard_error` must be >= 0 (or NaN); got {float(se[se < 0].flat[0]):g}")
    positive = se > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(positive, diff / np.where(positive, se, 1.0), np.nan)
        if alternative == "two-sided":
            p = 2 * dist.sf(np.abs(stat), *shape_args)
            degenerate = np.where(diff != 0, 0.0, 1.0)
        elif alternative == "greater":
            p = dist.sf(stat, *shape_args)
            degenerate = np.where(diff > 0, 0.0, 1.0)
        else:
            p = dist.cdf(stat, *shape_args)
            degenerate = np.where(diff < 0, 0.0, 1.0)
    p = np.where(positive, p, degenerate)
    p = np.where(np.isnan(se) | np.isnan(diff), np.nan, p)
    return SummaryTestResult(stat, p)


def t_test_from_summary(
    difference: object, standard_error: object, df: object, *, alternative: str = "two-sided"
) -> SummaryTestResult:
    """t-test of H0: the difference is 0, from the difference, its standard error and degrees of freedom.

    .. math:: t = \\frac{\\hat\\Delta}{\\widehat{se}}, \\qquad
              p = 2\\, P(T_\\nu > |t|) \\ \\text{(two-sided)}

    (scipy's ``stats.t``). With Δ̂ = d̄, se = s_d/sqrt(n) and ν = n - 1 it is
    the paired t-test; with Welch's se and Welch-Satterthwaite ν, Welch's
    test. Element-wise over broadcastable arrays.

    Parameters
    ----------
    difference, standard_error, df : array-like of float
        Broadcastable; ``standard_error`` >= 0 (0: see
        :class:`SummaryTestResult`), ``df`` > 0 where the standard error is
        positive (the p-value is NaN elsewhere).
    alternative : {"two-sided", "less", "greater"}, default "two-sided"

    Returns
    -------
    SummaryTestResult
    """
    nu = np.asarray(df, dtype=np.float64)
    se = np.asarray(standard_error, dtype=np.float64)
    nu = np.where(se > 0, nu, 1.0)  # the degenerate cells take 0 or 1 below; keep scipy quiet there
    return _summary_test(difference, se, alternative, stats.t, nu)


def z_test_from_summary(
    difference: object, standard_error: object, *, alternative: str = "two-sided"
) -> SummaryTestResult:
    """z-test of H0: the difference is 0, from the difference and its standard error (standard normal).

    .. math:: z = \\frac{\\hat\\Delta}{\\widehat{se}}, \\qquad p = 2\\,(1 - \\Phi(|z|)) \\ \\text{(two-sided)}

    Element-wise; e.g. the pooled two-proportion z-test (dissertation eq. 53)
    with se = sqrt(p̄(1 - p̄)(1/m_A + 1/m_B)), or a bootstrap standard error.
    Parameters and result as :func:`t_test_from_summary`.
    """
    return _summary_test(difference, standard_error, alternative, stats.norm)
