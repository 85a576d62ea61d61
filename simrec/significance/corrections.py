"""Family-wise corrections for many pairs of recommenders: Bonferroni and Holm's step-down.

``scipy.stats.false_discovery_control`` adjusts for the false discovery rate
(Benjamini-Hochberg/Yekutieli) only; these control the family-wise error rate
(the probability of any false rejection) at α. A family is the p-values
along ``axis`` (e.g. the pairs of systems compared in one replicate, at one
metric); other axes are independent families (replicates), so a whole study
is corrected in one call. For all pairs of k systems on the same users,
:func:`~simrec.significance.tukey_hsd` is the joint alternative.

NaN p-values (tests that were undefined) are not hypotheses: they stay NaN,
are never rejected, and do not count in the family size m unless
``n_tests`` says otherwise (as R's ``p.adjust`` drops them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._validation import check_in_range, check_int

__all__ = ["MultipleTestResult", "bonferroni", "holm"]


@dataclass(frozen=True, eq=False)
class MultipleTestResult:
    """p-values of a family of tests after a family-wise correction.

    Attributes
    ----------
    method : str
        ``"bonferroni"`` or ``"holm"``.
    p_value : ndarray
        The p-values given.
    adjusted : ndarray
        Adjusted p-values (same shape): H_i is rejected at level α' exactly
        when adjusted_i <= α' (up to rounding at the boundary).
    reject : ndarray of bool
        Rejections at ``alpha`` by the procedure's own rule.
    alpha : float
    n_tests : ndarray of int
        Family size m per family (the shape of ``p_value`` without ``axis``).
    """

    method: str
    p_value: np.ndarray
    adjusted: np.ndarray
    reject: np.ndarray
    alpha: float
    n_tests: np.ndarray


def _prepare(p_values: object, alpha: float, axis: int, n_tests: int | None) -> tuple[np.ndarray, float, np.ndarray]:
    alpha = check_in_range("alpha", alpha, 0, 1, low_open=True, high_open=True)
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim == 0:
        raise ValueError("`p_values` must be an array of p-values (a family along `axis`); got a scalar")
    check_int("axis", axis, low=-p.ndim, high=p.ndim - 1)
    bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        raise ValueError(f"`p_values` must be in [0, 1] (or NaN); got {float(p[bad].flat[0]):g}")
    p = np.moveaxis(p, axis, -1)
    m = np.count_nonzero(~np.isnan(p), axis=-1)
    if n_tests is not None:
        n_tests = check_int("n_tests", n_tests, low=1)
        if (m > n_tests).any():
            raise ValueError(f"`n_tests` must be >= the number of p-values in a family ({int(m.max())}); got {n_tests}")
        m = np.full(m.shape, n_tests)
    return p, alpha, m


def _result(
    method: str, p: np.ndarray, adjusted: np.ndarray, reject: np.ndarray, alpha: float, m: np.ndarray, axis: int
) -> MultipleTestResult:
    """The result with the family axis moved back from last to ``axis``."""
    back = [np.moveaxis(x, -1, axis) for x in (p, adjusted, reject)]
    return MultipleTestResult(method, back[0], back[1], back[2], alpha, m)


def bonferroni(
    p_values: object, *, alpha: float = 0.05, axis: int = -1, n_tests: int | None = None
) -> MultipleTestResult:
    """Bonferroni correction: reject H_i where p_i <= α/m; adjusted p = min(1, m p).

    .. math:: \\tilde p_i = \\min(1, m\\, p_i), \\qquad \\text{reject } H_i \\iff p_i \\le \\alpha / m

    Controls the family-wise error rate at α for any dependence between the
    tests (Bonferroni's inequality; Dunn 1961). Li's dissertation §2.7.2
    uses it over the pairs of models.

    Parameters
    ----------
    p_values : array-like of float in [0, 1] (NaN allowed)
        Families along ``axis``.
    alpha : float in (0, 1), default 0.05
    axis : int, default -1
    n_tests : int, optional
        Family size m (default: the non-NaN p-values of each family).

    Returns
    -------
    MultipleTestResult
    """
    p, alpha, m = _prepare(p_values, alpha, axis, n_tests)
    mm = m[..., None].astype(np.float64)
    with np.errstate(invalid="ignore"):
        adjusted = np.minimum(1.0, mm * p)
        reject = p <= alpha / mm
    return _result("bonferroni", p, adjusted, reject, alpha, m, axis)


def holm(p_values: object, *, alpha: float = 0.05, axis: int = -1, n_tests: int | None = None) -> MultipleTestResult:
    """Holm's sequentially rejective (step-down) Bonferroni procedure (Holm 1979).

    Order the family's p-values p_(1) <= ... <= p_(m); reject H_(1), ...,
    H_(j-1) where j is the first index with p_(j) > α/(m - j + 1) (all m if
    none), and nothing from j on:

    .. math:: \\text{reject } H_{(i)} \\iff p_{(k)} \\le \\frac{\\alpha}{m - k + 1}
              \\ \\forall k \\le i, \\qquad
              \\tilde p_{(i)} = \\max_{k \\le i} \\min\\big(1, (m - k + 1)\\, p_{(k)}\\big)

    Holm, "A simple sequentially rejective multiple test procedure",
    *Scandinavian Journal of Statistics* 6:65-70 (1979). Controls the
    family-wise error rate at α under any dependence, and rejects everything
    Bonferroni rejects and possibly more. Tied p-values share a decision
    (the thresholds increase with k).

    Parameters and result as :func:`bonferroni`.
    """
    p, alpha, m = _prepare(p_values, alpha, axis, n_tests)
    order = np.argsort(p, axis=-1, kind="stable")  # NaN last
    ps = np.take_along_axis(p, order, axis=-1)
    k = np.arange(p.shape[-1], dtype=np.float64)  # 0-based rank: the k-th smallest divides α by m - k
    remaining = m[..., None] - k
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (remaining > 0) & (ps <= alpha / remaining)
        steps = np.minimum(1.0, np.maximum(remaining, 1.0) * ps)
    rejected = np.logical_and.accumulate(ok, axis=-1)
    adjusted_sorted = np.fmax.accumulate(steps, axis=-1)
    adjusted_sorted = np.where(np.isnan(ps), np.nan, adjusted_sorted)
    reject = np.empty_like(rejected)
    adjusted = np.empty_like(adjusted_sorted)
    np.put_along_axis(reject, order, rejected, axis=-1)
    np.put_along_axis(adjusted, order, adjusted_sorted, axis=-1)
    return _result("holm", p, adjusted, reject, alpha, m, axis)
