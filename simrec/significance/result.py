"""The typed result of a paired test between two recommenders."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._validation import check_in_range

__all__ = ["PairedTestResult"]


@dataclass(frozen=True, eq=False)
class PairedTestResult:
    """A paired test of systems A and B, one value per replicate.

    Every array has the batch shape of the input: ``()`` for per-user values
    of shape ``(n_users,)``, ``(n_replicates,)`` for ``(n_replicates,
    n_users)``. The arrays are read-only.

    Attributes
    ----------
    test : str
        ``"paired_t"``, ``"wilcoxon"``, ``"sign"``, ``"bootstrap_percentile"``,
        ``"bootstrap_bca"`` or ``"permutation"``.
    statistic : ndarray of float
        The test's statistic (t; scipy's Wilcoxon W = min(R+, R-); the number
        of users where A > B; the mean difference for the bootstrap and
        permutation tests). NaN where undefined.
    p_value : ndarray of float
        Two-sided, in [0, 1]. Every test gives p = 1 when all the users'
        differences are exactly 0 (identical lists); NaN where undefined
        (e.g. no user left after paired deletion).
    mean_difference : ndarray of float
        Mean of A - B over the users kept by paired deletion.
    sign : ndarray of float
        Direction of the test's own evidence, -1, 0 or +1 (NaN where
        undefined): the sign of the mean difference for the t, bootstrap
        and permutation tests, of R+ - R- for Wilcoxon (the rank-biserial
        correlation) and of n(A > B) - n(A < B) for the sign test. A
        significant Wilcoxon or sign test can point against the mean
        difference (skewed differences); :func:`~simrec.significance.truth_rates`
        counts that as a wrong direction when the truth is a mean.
    effect_size : ndarray of float
        The test's effect size, named by ``effect_size_name``.
    effect_size_name : str
        ``"cohens_dz"`` (:func:`~simrec.significance.cohens_dz`),
        ``"rank_biserial"`` (:func:`~simrec.significance.rank_biserial`) or
        ``"dominance"`` ((n(A > B) - n(A < B)) / n(A != B), the sign test's).
    ci_low, ci_high : ndarray of float
        Confidence interval at ``confidence`` for the quantity ``ci_of``; NaN
        for a test without one.
    ci_of : str
        What the interval estimates (``"mean difference"``,
        ``"P(A > B | A != B)"``), or ``""`` when the test has no interval.
    confidence : float
        Level of the interval.
    n_used : ndarray of int
        Users the statistic was computed from (after paired deletion; the
        sign test and Wilcoxon's ``zero_method="wilcox"`` also drop the zero
        differences).
    """

    test: str
    statistic: np.ndarray
    p_value: np.ndarray
    mean_difference: np.ndarray
    sign: np.ndarray
    effect_size: np.ndarray
    effect_size_name: str
    ci_low: np.ndarray
    ci_high: np.ndarray
    ci_of: str
    confidence: float
    n_used: np.ndarray

    def significant(self, alpha: float = 0.05) -> np.ndarray:
        """``p_value <= alpha`` per replicate (False where the p-value is NaN).

        Parameters
        ----------
        alpha : float in (0, 1), default 0.05
        """
        alpha = check_in_range("alpha", alpha, 0, 1, low_open=True, high_open=True)
        with np.errstate(invalid="ignore"):
            return np.asarray(self.p_value <= alpha)
