"""Effect sizes of paired differences: Cohen's d_z and the matched-pairs rank-biserial correlation.

Both read the per-user differences d = a - b after paired deletion (module
:mod:`simrec.significance._common`), are positive when A is better, and are
NaN with one :class:`~simrec.significance.UndefinedStatisticWarning` per call
where undefined.

A significance test at thousands of users detects differences too small to
matter (Ihemelandu & Ekstrand, SIGIR 2023, find most pairs of top-N
recommenders "significantly" different at large n); the effect size says how
large the difference is relative to its spread across users.
"""

from __future__ import annotations

import numpy as np

from simrec._validation import check_choice
from simrec.significance._common import Paired, paired, warn_undefined

__all__ = ["cohens_dz", "rank_biserial", "ZERO_METHODS"]

#: Treatments of zero differences in the signed-rank statistics (scipy's ``zero_method``).
ZERO_METHODS: tuple[str, ...] = ("wilcox", "pratt", "zsplit")


def dz_values(p: Paired) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's d_z per row and the rows where it is undefined, both (R,)."""
    mean = p.mean_difference()
    centred = np.where(p.valid, p.diff - mean[:, None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt((centred**2).sum(axis=-1) / (p.n_valid - 1))
        undefined = (p.n_valid < 2) | ~(sd > 0) | p.constant
        value = np.where(undefined, np.nan, mean / np.where(undefined, 1.0, sd))
    return value, undefined


def cohens_dz(a: object, b: object) -> np.ndarray:
    """Cohen's d for paired samples, d_z: the mean difference over the sd of the differences.

    .. math:: d_z = \\frac{\\bar d}{s_d}, \\qquad
              s_d = \\sqrt{\\frac{1}{n - 1} \\sum_u (d_u - \\bar d)^2}

    over the n users where both systems are defined (Cohen 1988, *Statistical
    Power Analysis for the Behavioral Sciences*, ch. 2, d for paired samples; Lakens 2013,
    *Frontiers in Psychology* 4:863, "Cohen's d_z"). It is the d of the
    paired t-test, t = d_z sqrt(n), not the d_av or d_rm that divide by the
    systems' own sds: per-user metrics of two recommenders are strongly
    correlated, and d_z measures the difference against the noise the paired
    test sees.

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values; NaN = undefined (paired deletion).

    Returns
    -------
    ndarray of float, shape () or (n_replicates,)
        NaN with an :class:`~simrec.significance.UndefinedStatisticWarning`
        where s_d = 0 (e.g. identical lists or a constant shift, also when the
        differences vary only by rounding, 1e-12 of the values' scale) or
        fewer than two users are left.
    """
    p = paired(a, b)
    value, undefined = dz_values(p)
    warn_undefined("Cohen's d_z", undefined, "fewer than 2 users or zero variance of the differences")
    return p.shaped(value)


def signed_rank_sums(p: Paired, zero_method: str) -> tuple[np.ndarray, np.ndarray]:
    """R+ and R- per row (R,): rank sums of |d| of the positive and negative differences.

    ``"wilcox"`` ranks the nonzero differences only (Wilcoxon 1945);
    ``"pratt"`` ranks all, zeros included, then drops the zeros' ranks (Pratt
    1959); ``"zsplit"`` ranks all and splits the zeros' ranks equally between
    R+ and R-. Ties get average ranks (scipy's ``rankdata``).
    """
    keep = p.valid & (p.diff != 0) if zero_method == "wilcox" else p.valid
    # users left out rank after every kept one, so the kept users' ranks are their ranks among themselves
    key = np.where(keep, np.abs(p.diff), np.inf)
    order = np.argsort(key, axis=-1)
    ranks = _average_ranks_of_sorted(np.take_along_axis(key, order, axis=-1))
    diff = np.take_along_axis(np.where(keep, p.diff, np.nan), order, axis=-1)  # NaN: left out
    # the ranks are multiples of 1/2, so every sum is exact whatever its order
    plus = np.where(diff > 0, ranks, 0.0).sum(axis=-1)
    minus = np.where(diff < 0, ranks, 0.0).sum(axis=-1)
    if zero_method == "zsplit":
        zeros = np.where(diff == 0, ranks, 0.0).sum(axis=-1)
        plus, minus = plus + zeros / 2, minus + zeros / 2
    return plus, minus


def _average_ranks_of_sorted(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share the mean of their positions) of rows sorted along the last axis.

    ``scipy.stats.rankdata(method="average")`` of sorted rows, without its
    stable sort (here the caller's sort, and a pass to find the runs of ties):
    a value's rank is the mean of its run's first and last position, plus 1.
    """
    n = values.shape[-1]
    pos = np.arange(n)
    starts = np.ones(values.shape, dtype=bool)
    starts[..., 1:] = values[..., 1:] != values[..., :-1]
    ends = np.ones(values.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[..., ::-1], axis=-1)[..., ::-1]
    return (first + last) / 2 + 1


def rank_biserial_values(p: Paired, zero_method: str) -> tuple[np.ndarray, np.ndarray]:
    """Matched-pairs rank-biserial correlation per row and the rows where it is undefined, both (R,)."""
    plus, minus = signed_rank_sums(p, zero_method)
    total = plus + minus
    undefined = ~(total > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(undefined, np.nan, (plus - minus) / np.where(undefined, 1.0, total))
    return value, undefined


def rank_biserial(a: object, b: object, *, zero_method: str = "wilcox") -> np.ndarray:
    """Matched-pairs rank-biserial correlation, Kerby's (2014) simple difference formula.

    .. math:: r = \\frac{R_+ - R_-}{R_+ + R_-}

    the share of the signed-rank sum favouring A minus the share favouring B
    (Kerby 2014, "The simple difference formula: an approach to teaching
    nonparametric correlation", *Comprehensive Psychology* 3, 11.IT.3.1).
    With ``zero_method="wilcox"`` R+ + R- = n(n + 1)/2 over the n nonzero
    differences, Kerby's form; r is in [-1, 1], +1 when A is better for every
    user whose values differ. It is the effect size of the Wilcoxon
    signed-rank test (:func:`~simrec.significance.wilcoxon_test`).

    Parameters
    ----------
    a, b : array-like of float, shape (n_users,) or (n_replicates, n_users)
        Per-user metric values; NaN = undefined (paired deletion).
    zero_method : {"wilcox", "pratt", "zsplit"}, default "wilcox"
        Zero differences as in :func:`scipy.stats.wilcoxon`: dropped before
        ranking (Wilcoxon), ranked then dropped (Pratt), or ranked and split
        half to R+ and half to R-. Use the test's own.

    Returns
    -------
    ndarray of float, shape () or (n_replicates,)
        NaN with an :class:`~simrec.significance.UndefinedStatisticWarning`
        where R+ + R- = 0 (every difference 0, e.g. identical lists).
    """
    check_choice("zero_method", zero_method, ZERO_METHODS)
    p = paired(a, b)
    value, undefined = rank_biserial_values(p, zero_method)
    warn_undefined("rank-biserial correlation", undefined, "no nonzero difference")
    return p.shaped(value)
