"""The Wilcoxon signed-rank test of two recommenders' per-user metric values (scipy.stats.wilcoxon)."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from simrec._validation import check_choice
from simrec.significance._common import paired, warn_undefined
from simrec.significance.effect_size import ZERO_METHODS, rank_biserial_values
from simrec.significance.result import PairedTestResult

__all__ = ["wilcoxon_test"]


def wilcoxon_test(a: object, b: object, *, zero_method: str = "wilcox", correction: bool = False) -> PairedTestResult:
    """Wilcoxon signed-rank test of H0: the differences a - b are symmetric about 0, two-sided.

    .. math:: W = \\min(R_+, R_-), \\qquad R_\\pm = \\sum_{u:\\, \\pm d_u > 0} \\operatorname{rank}(|d_u|)

    computed by :func:`scipy.stats.wilcoxon` (``axis=-1``,
    ``nan_policy="omit"``, ``method="auto"``: the exact null distribution for
    up to 50 differences without ties or zeros; with ties or zeros, the exact
    permutation distribution for up to 13 differences, else the normal
    approximation with scipy's tie correction). Wilcoxon 1945.

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values of systems A and B; NaN = undefined (paired
        deletion).
    zero_method : {"wilcox", "pratt", "zsplit"}, default "wilcox"
        Users whose two values are equal (d = 0), scipy's options: dropped
        before ranking (``"wilcox"``, Wilcoxon 1945), ranked with the others
        and then dropped (``"pratt"``, Pratt 1959), or ranked and their ranks
        split between R+ and R- (``"zsplit"``). Default ``"wilcox"``: it is
        the default of scipy and of R's ``wilcox.test``, so the error rates
        simrec measures are those of the test researchers actually run; on
        per-user top-N metrics zero differences are common (both systems
        miss a user), which is where the options differ.
    correction : bool, default False
        Continuity correction of the normal approximation (scipy's).

    Returns
    -------
    PairedTestResult
        ``test="wilcoxon"``, statistic scipy's W, effect size the
        matched-pairs rank-biserial correlation (same ``zero_method``), no
        interval, ``sign`` the sign of R+ - R-, ``n_used`` the users ranked
        (the nonzero differences for ``"wilcox"``).

    Notes
    -----
    **Not a test of the mean.** Its null is symmetry of the differences about
    0, so when the two systems have the same mean metric but skewed,
    zero-heavy per-user differences (typical of top-N metrics: most users
    differ by 0 or a small amount, a few by a lot) the null is false and the
    rejection rate grows with the number of users. Ihemelandu & Ekstrand
    (SIGIR 2023) report exactly this: the Wilcoxon and sign tests have
    inflated type I error rates at large sample sizes on recommendation data,
    while the t, bootstrap and permutation tests stay near nominal. simrec
    reproduces it (``tests/significance``); it is the test's definition, not
    an error of the implementation.

    Every difference 0 (identical lists): statistic 0, p = 1. No user left
    after paired deletion: NaN with an
    :class:`~simrec.significance.UndefinedStatisticWarning`.
    """
    check_choice("zero_method", zero_method, ZERO_METHODS)
    if not isinstance(correction, (bool, np.bool_)):
        raise TypeError(f"`correction` must be True or False; got {correction!r}")
    p = paired(a, b)
    zero = p.all_zero
    undefined = p.n_valid == 0
    stat = np.full(zero.shape, np.nan)
    pval = np.full(zero.shape, np.nan)
    test_rows = ~zero & ~undefined
    if test_rows.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy's ties / normal-approximation notices
            res = stats.wilcoxon(
                p.a[test_rows],
                p.b[test_rows],
                zero_method=zero_method,
                correction=bool(correction),
                axis=-1,
                nan_policy="omit",
            )
        stat[test_rows] = np.asarray(res.statistic, dtype=np.float64).reshape(-1)
        pval[test_rows] = np.asarray(res.pvalue, dtype=np.float64).reshape(-1)
    stat[zero] = 0.0
    pval[zero] = 1.0
    warn_undefined("Wilcoxon test", undefined, "no user with both systems defined")
    r, r_undefined = rank_biserial_values(p, zero_method)
    warn_undefined("rank-biserial correlation", r_undefined & ~undefined, "no nonzero difference")
    n_used = p.n_valid if zero_method != "wilcox" else np.count_nonzero(p.valid & (p.diff != 0), axis=-1)
    nan = np.full(zero.shape, np.nan)
    return PairedTestResult(
        test="wilcoxon",
        statistic=p.shaped(stat),
        p_value=p.shaped(pval),
        mean_difference=p.shaped(p.mean_difference()),
        sign=p.shaped(np.where(r_undefined, np.where(zero, 0.0, np.nan), np.sign(r))),
        effect_size=p.shaped(r),
        effect_size_name="rank_biserial",
        ci_low=p.shaped(nan),
        ci_high=p.shaped(nan),
        ci_of="",
        confidence=float("nan"),
        n_used=p.shaped(n_used),
    )
