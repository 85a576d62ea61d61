"""The sign test of two recommenders' per-user metric values (scipy.stats.binomtest, vectorised)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from simrec.significance._common import check_confidence, paired, warn_undefined
from simrec.significance.result import PairedTestResult

__all__ = ["sign_test"]


def sign_test(a: object, b: object, *, confidence: float = 0.95) -> PairedTestResult:
    """Sign test of H0: P(a > b) = P(a < b), two-sided: the exact binomial test of the signs.

    .. math:: k = \\#\\{u: d_u > 0\\}, \\quad n = \\#\\{u: d_u \\neq 0\\}, \\qquad
              p = \\min\\big(1,\\ 2\\, F_{\\mathrm{Bin}(n, 1/2)}(\\min(k, n - k))\\big)

    Users with d = 0 carry no sign and are dropped (Dixon & Mood 1946). This
    is :func:`scipy.stats.binomtest` ``(k, n, 0.5)`` (for p = 1/2 its
    two-sided p-value, the mass of outcomes no more likely than k, is the
    doubled tail above), written with :data:`scipy.stats.binom` so that it is
    vectorised over replicates (``binomtest`` takes one k at a time). The
    interval is binomtest's exact (Clopper-Pearson) interval of
    P(A > B | A != B):

    .. math:: \\big[B^{-1}(\\tfrac{1 - c}{2};\\ k, n - k + 1),\\
              B^{-1}(\\tfrac{1 + c}{2};\\ k + 1, n - k)\\big]

    (0 for k = 0, 1 for k = n; B^{-1} the beta quantile).

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values of systems A and B; NaN = undefined (paired
        deletion).
    confidence : float in (0, 1), default 0.95

    Returns
    -------
    PairedTestResult
        ``test="sign"``, statistic k, effect size ``"dominance"``
        (n(A > B) - n(A < B))/n, ``sign`` its sign, ``n_used`` = n.

    Notes
    -----
    Like Wilcoxon's, its null (median difference 0) is not "equal means": with
    equal mean metrics and skewed differences it rejects more and more often
    as the number of users grows (Ihemelandu & Ekstrand, SIGIR 2023). No
    nonzero difference (identical lists): statistic 0, p = 1, interval NaN,
    dominance NaN with an :class:`~simrec.significance.UndefinedStatisticWarning`.
    No user left after paired deletion: NaN.
    """
    confidence = check_confidence(confidence)
    p = paired(a, b)
    k = np.count_nonzero(p.valid & (p.diff > 0), axis=-1)
    minus = np.count_nonzero(p.valid & (p.diff < 0), axis=-1)
    n = k + minus
    undefined = p.n_valid == 0
    none = n == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        pval = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(k, n - k), n, 0.5))
        tail = (1 - confidence) / 2
        low = np.where(k == 0, 0.0, stats.beta.ppf(tail, np.maximum(k, 1), n - k + 1))
        high = np.where(k == n, 1.0, stats.beta.ppf(1 - tail, k + 1, np.maximum(n - k, 1)))
        dominance = np.where(none, np.nan, (k - minus) / np.maximum(n, 1))
    pval = np.where(undefined, np.nan, np.where(none, 1.0, pval))
    low = np.where(none, np.nan, low)
    high = np.where(none, np.nan, high)
    warn_undefined("sign test", undefined, "no user with both systems defined")
    warn_undefined("dominance effect size", none & ~undefined, "no nonzero difference")
    return PairedTestResult(
        test="sign",
        statistic=p.shaped(np.where(undefined, np.nan, k.astype(np.float64))),
        p_value=p.shaped(pval),
        mean_difference=p.shaped(p.mean_difference()),
        sign=p.shaped(np.where(undefined, np.nan, np.sign(k - minus).astype(np.float64))),
        effect_size=p.shaped(dominance),
        effect_size_name="dominance",
        ci_low=p.shaped(low),
        ci_high=p.shaped(high),
        ci_of="P(A > B | A != B)",
        confidence=confidence,
        n_used=p.shaped(n),
    )
