"""User sampling: how many users, how sure, and which model wins (Li's dissertation §2.7).

Evaluating on m sampled users estimates each model's metric; Recall@K (hit
ratio) is a proportion, other top-K metrics are bounded means in [0, 1].

* :func:`proportion_sample_size`: m = z² p(1 - p)/e² for a margin of error e
  at a confidence level (eq. 50; p = 0.5 is the worst case: 1,067 users for
  e = 3% and 9,604 for e = 1% at 95%, eq. 51).
* :func:`two_proportion_sample_size`: m = 2 p(1 - p) (z/e)² per model for the
  difference of two proportions (eq. 56).
* :func:`hoeffding_bound`, :func:`hoeffding_sample_size`,
  :func:`hoeffding_margin`: P(|mean - E| >= t) <= 2 exp(-2 m t²) for metrics
  in [0, 1] (eq. 52).
* :func:`proportion_z_test`: two-sample z-test of two recall proportions
  (eqs. 53-54); :func:`proportion_difference_interval` (eq. 55).
* :func:`mean_t_test`: t-test (Welch by default, or paired) for bounded
  metrics such as NDCG or AP.
* :func:`bonferroni`: family-wise correction for several models/comparisons;
  the sample-size functions take ``n_comparisons`` for the same purpose.

z is the two-sided standard-normal critical value ``Φ⁻¹(1 - α/2)``,
α = 1 - confidence (1.95996 at 95%; the dissertation rounds to 1.96).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from simrec._validation import check_choice, check_in_range, check_int

# simrec.significance and scipy.stats are imported inside the tests that use them: they import scipy.stats
# (about 0.7 s CPU, docs/design.md §9), which every process importing simrec.sampling would pay otherwise.

__all__ = [
    "SampleSize",
    "HypothesisTest",
    "bonferroni_z",
    "proportion_sample_size",
    "two_proportion_sample_size",
    "hoeffding_bound",
    "hoeffding_sample_size",
    "hoeffding_margin",
    "proportion_z_test",
    "proportion_difference_interval",
    "mean_t_test",
    "bonferroni",
]

_ALTERNATIVES = ("two-sided", "less", "greater")


@dataclass(frozen=True)
class SampleSize:
    """A required number of users.

    Attributes
    ----------
    n_users : int
        The formula's value rounded to the nearest integer (at least 1), as
        the dissertation reports it (eq. 51: 1,067 users for a 3% margin at
        95%, 9,604 for 1%).
    exact : float
        The formula's real value (e.g. 1067.07 for a 3% margin at 95%).
    n_users_ceil : int
        ``ceil(exact)``: the smallest size that guarantees the margin (1,068
        for 3% at 95%), the conservative variant.
    margin : float
        Target margin of error (absolute).
    confidence : float
        Per-family confidence level requested.
    z : float
        Critical value used (after the Bonferroni adjustment, if any).
    """

    n_users: int
    exact: float
    n_users_ceil: int
    margin: float
    confidence: float
    z: float


@dataclass(frozen=True)
class HypothesisTest:
    """Result of a two-model test.

    Attributes
    ----------
    test : str
        ``"two-proportion z"``, ``"Welch t"``, ``"Student t"`` or ``"paired t"``.
    statistic : float
        z or t (NaN with a warning when undefined, e.g. zero variance).
    p_value : float
    alternative : str
        ``"two-sided"``, ``"less"`` (model A below B) or ``"greater"``.
    difference : float
        Estimate of A - B.
    """

    test: str
    statistic: float
    p_value: float
    alternative: str
    difference: float


def _size(exact: float, margin: float, confidence: float, z: float) -> SampleSize:
    """Sizes from the formula's value: nearest integer (as published) and ceiling (conservative)."""
    return SampleSize(max(1, round(exact)), exact, max(1, math.ceil(exact - 1e-9)), margin, confidence, z)


def bonferroni_z(confidence: float, n_comparisons: int) -> float:
    """Two-sided normal critical value with Bonferroni's correction: Φ⁻¹(1 − α/(2k)), α = 1 − confidence.

    E.g. 1.95996 for k = 1 and 2.39398 for k = 3 at 95%.
    """
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    n_comparisons = check_int("n_comparisons", n_comparisons, low=1)
    alpha = (1 - confidence) / n_comparisons
    return float(ndtri(1 - alpha / 2))  # scipy.stats.norm.ppf's own kernel, without importing scipy.stats


def proportion_sample_size(
    margin: float, *, confidence: float = 0.95, p: float = 0.5, n_comparisons: int = 1
) -> SampleSize:
    """Users needed to estimate a proportion (e.g. Recall@K) within ±margin (dissertation eq. 50).

    .. math:: m = z^2\\, p (1 - p) / e^2

    Parameters
    ----------
    margin : float in (0, 1)
        Margin of error e (absolute, e.g. 0.03).
    confidence : float in (0, 1), default 0.95
    p : float in [0, 1], default 0.5
        Anticipated proportion; 0.5 is the worst case.
    n_comparisons : int, default 1
        Bonferroni: each of several estimates gets confidence 1 - (1 - c)/k.

    Examples
    --------
    >>> proportion_sample_size(0.03).n_users, proportion_sample_size(0.01).n_users
    (1067, 9604)
    """
    margin = check_in_range("margin", margin, 0, 1, low_open=True, high_open=True)
    p = check_in_range("p", p, 0, 1)
    z = bonferroni_z(confidence, n_comparisons)
    exact = z * z * p * (1 - p) / margin**2
    return _size(exact, margin, confidence, z)


def two_proportion_sample_size(
    margin: float, *, confidence: float = 0.95, p: float = 0.5, n_comparisons: int = 1
) -> SampleSize:
    """Users per model to estimate a difference of two proportions within ±margin (eq. 56).

    .. math:: m = 2 p (1 - p)\\, (z / e)^2

    twice the one-model size (both models use m users, p_1 = p_2 = p).
    Parameters as in :func:`proportion_sample_size`.
    """
    margin = check_in_range("margin", margin, 0, 1, low_open=True, high_open=True)
    p = check_in_range("p", p, 0, 1)
    z = bonferroni_z(confidence, n_comparisons)
    exact = 2 * p * (1 - p) * (z / margin) ** 2
    return _size(exact, margin, confidence, z)


def hoeffding_bound(n_users: int, t: float) -> float:
    """Hoeffding: P(|mean - E| >= t) <= 2 exp(-2 m t²) for per-user values in [0, 1] (eq. 52).

    E.g. m = 10,000 and t = 0.02 give 6.7e-4 (confidence above 99.9%, §2.7.1);
    m = 30,000, t = 0.01 give 0.005 (Li & Jin §2). The value may exceed 1
    (then the bound is void).
    """
    n_users = check_int("n_users", n_users, low=1)
    t = check_in_range("t", t, 0, None, low_open=True)
    return 2.0 * math.exp(-2.0 * n_users * t * t)


def hoeffding_sample_size(t: float, *, confidence: float = 0.95, n_comparisons: int = 1) -> SampleSize:
    """Users so that a [0, 1]-bounded metric's mean is within ±t with the given confidence.

    .. math:: m = \\ln(2/δ) / (2 t^2),\\quad δ = (1 - \\text{confidence}) / \\text{n\\_comparisons}

    Distribution-free (for NDCG, AP, ...); ``SampleSize.z`` is NaN.
    """
    t = check_in_range("t", t, 0, 1, low_open=True)
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    n_comparisons = check_int("n_comparisons", n_comparisons, low=1)
    delta = (1 - confidence) / n_comparisons
    exact = math.log(2 / delta) / (2 * t * t)
    return _size(exact, t, confidence, math.nan)


def hoeffding_margin(n_users: int, *, confidence: float = 0.95, n_comparisons: int = 1) -> float:
    """Half-width t with P(|mean - E| >= t) <= 1 - confidence: t = sqrt(ln(2/δ)/(2m))."""
    n_users = check_int("n_users", n_users, low=1)
    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    n_comparisons = check_int("n_comparisons", n_comparisons, low=1)
    delta = (1 - confidence) / n_comparisons
    return math.sqrt(math.log(2 / delta) / (2 * n_users))


def _check_counts(successes: int, n_users: int, name: str) -> tuple[int, int]:
    n_users = check_int(f"n_{name}", n_users, low=1)
    successes = check_int(f"successes_{name}", successes, low=0, high=n_users)
    return successes, n_users


def proportion_z_test(
    successes_a: int,
    n_a: int,
    successes_b: int,
    n_b: int,
    *,
    alternative: str = "two-sided",
) -> HypothesisTest:
    """Two-sample z-test of H0: p_A = p_B for two recall proportions (dissertation eqs. 53-54).

    .. math:: z = \\frac{\\hat p_A - \\hat p_B}{\\sqrt{\\bar p (1 - \\bar p)(1/m_A + 1/m_B)}},
              \\quad \\bar p = \\frac{x_A + x_B}{m_A + m_B}

    (pooled; with m_A = m_B = m the denominator is sqrt(2 p̄ q̄ / m), eq. 53).
    For the same users evaluated on both models a paired test is more
    powerful: use :func:`mean_t_test` with ``paired=True`` on the 0/1 hits.
    The z and p-value are :func:`simrec.significance.z_test_from_summary`'s.

    Parameters
    ----------
    successes_a, n_a, successes_b, n_b : int
        Hits and users of each model.
    alternative : {"two-sided", "less", "greater"}
        H1: p_A ≠ p_B, p_A < p_B (eq. 54's one-sided form), or p_A > p_B.
    """
    xa, ma = _check_counts(successes_a, n_a, "a")
    xb, mb = _check_counts(successes_b, n_b, "b")
    check_choice("alternative", alternative, _ALTERNATIVES)
    pa, pb = xa / ma, xb / mb
    pbar = (xa + xb) / (ma + mb)
    se = math.sqrt(pbar * (1 - pbar) * (1 / ma + 1 / mb))
    if se == 0:
        warnings.warn(
            "z-test undefined: both proportions are 0 or both are 1; returning NaN", RuntimeWarning, stacklevel=2
        )
        return HypothesisTest("two-proportion z", math.nan, math.nan, alternative, pa - pb)
    from simrec.significance import z_test_from_summary  # imported late: see the module's imports

    res = z_test_from_summary(pa - pb, se, alternative=alternative)
    return HypothesisTest("two-proportion z", float(res.statistic), float(res.p_value), alternative, pa - pb)


def proportion_difference_interval(
    successes_a: int, n_a: int, successes_b: int, n_b: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """Wald interval for p_A - p_B (dissertation eq. 55).

    .. math:: (\\hat p_A - \\hat p_B) \\pm z \\sqrt{\\hat p_A(1-\\hat p_A)/m_A + \\hat p_B(1-\\hat p_B)/m_B}
    """
    xa, ma = _check_counts(successes_a, n_a, "a")
    xb, mb = _check_counts(successes_b, n_b, "b")
    z = bonferroni_z(confidence, 1)
    pa, pb = xa / ma, xb / mb
    half = z * math.sqrt(pa * (1 - pa) / ma + pb * (1 - pb) / mb)
    return (pa - pb - half, pa - pb + half)


def mean_t_test(
    values_a: object,
    values_b: object,
    *,
    paired: bool = False,
    equal_var: bool = False,
    alternative: str = "two-sided",
) -> HypothesisTest:
    """t-test of equal mean metric (e.g. NDCG@K per user) between two models (§2.7.2).

    Welch's test by default (``equal_var=False``), Student's with
    ``equal_var=True``, or the paired test when both models were evaluated
    on the same users (``paired=True``, equal lengths; this is
    :func:`simrec.significance.paired_t_test`, which also gives d_z and the
    interval, and more paired tests). NaN values (users not
    evaluated) are not allowed: drop them first.

    Parameters
    ----------
    values_a, values_b : array-like of float, shape (m_a,), (m_b,)
    paired, equal_var : bool
    alternative : {"two-sided", "less", "greater"}
    """
    a = np.asarray(values_a, dtype=np.float64)
    b = np.asarray(values_b, dtype=np.float64)
    check_choice("alternative", alternative, _ALTERNATIVES)
    for name, v in (("values_a", a), ("values_b", b)):
        if v.ndim != 1 or v.size < 2:
            raise ValueError(f"`{name}` must be 1-D with at least 2 values; got shape {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError(f"`{name}` must be finite (drop users that were not evaluated)")
    if paired and a.size != b.size:
        raise ValueError(f"paired test needs equal lengths; got {a.size} and {b.size}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if paired:
            from simrec.significance import paired_t_test  # imported late: see the module's imports

            res = paired_t_test(a, b, alternative=alternative)
            stat, p, name = float(res.statistic), float(res.p_value), "paired t"
        else:
            from scipy import stats  # imported late: see the module's imports

            res = stats.ttest_ind(a, b, equal_var=equal_var, alternative=alternative)
            stat, p, name = float(res.statistic), float(res.pvalue), "Student t" if equal_var else "Welch t"
    if not math.isfinite(stat):
        warnings.warn("t-test undefined (zero variance); returning NaN", RuntimeWarning, stacklevel=2)
        stat, p = math.nan, math.nan
    return HypothesisTest(name, stat, p, alternative, float(a.mean() - b.mean()))


def bonferroni(p_values: object, *, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Bonferroni correction: adjusted p-values min(1, k p) and which hypotheses to reject.

    Rejecting where p <= α/k controls the family-wise error rate at α over k
    comparisons (§2.7.2). This is :func:`simrec.significance.bonferroni` on
    one family (which also offers Holm's step-down, :func:`simrec.significance.holm`).

    Returns
    -------
    adjusted : ndarray of float, shape (k,)
    reject : ndarray of bool, shape (k,)
    """
    alpha = check_in_range("alpha", alpha, 0, 1, low_open=True, high_open=True)
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"`p_values` must be a non-empty 1-D array; got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise ValueError("`p_values` must be in [0, 1]")
    from simrec.significance import bonferroni as significance_bonferroni  # imported late: see the module's imports

    res = significance_bonferroni(p, alpha=alpha)
    return res.adjusted, res.reject
