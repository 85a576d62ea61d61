"""User sampling, the tests: does a sample of m users tell two recommenders apart?

:func:`pair_tests` — the dissertation's tests (§2.7.2) between every pair of
recommenders on each sample of users, from the samples' sufficient
statistics; :func:`estimator_pair_tests` — the same question for the
item-sampling estimators on the samples, with bootstrap standard errors.
Formulas and decisions: :mod:`simrec.stress.user_sampling`. The tests
themselves are :mod:`simrec.significance`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# simrec.significance is imported inside the functions that test: it imports scipy.stats (about 0.7 s CPU,
# docs/design.md §9), which every `simrec stress` process would pay otherwise (issue 29).
from simrec.stress.user_sampling.run import UserSamplingResult

__all__ = ["TESTS", "PairTests", "estimator_pair_tests", "pair_tests"]

#: The tests of both parts: the dissertation's two-sample tests and the paired variant.
TESTS = ("two_sample", "paired")


@dataclass(frozen=True)
class PairTests:
    """Per-repeat tests between the pairs of one :class:`UserSamplingResult`.

    Attributes
    ----------
    test : str
        ``"two_sample"`` or ``"paired"``.
    statistic, p_value, difference : ndarray, shape (repeats, P, J)
        z or t, its two-sided p-value, and T̂_A − T̂_B.
    """

    test: str
    statistic: np.ndarray
    p_value: np.ndarray
    difference: np.ndarray
    #: Where the test is defined (:func:`estimator_pair_tests`: a bootstrap standard error exists); None: everywhere.
    defined: np.ndarray | None = None
    #: The axis of the pairs (:func:`estimator_pair_tests`: 2, after the repeats and the item sizes).
    pair_axis: int = 1

    def rejected_bonferroni(self, alpha: float) -> np.ndarray:
        """Where H0 is rejected with Bonferroni's correction over the pairs (p <= α/P), shape of ``p_value``."""
        n_pairs = self.p_value.shape[self.pair_axis]
        from simrec.significance import bonferroni  # imported late: see the imports

        return bonferroni(self.p_value, alpha=alpha, axis=self.pair_axis, n_tests=n_pairs).reject


def pair_tests(result: UserSamplingResult, test: str = "two_sample") -> PairTests:
    """The tests of every pair of recommenders on every sample (see module decisions).

    .. math:: z = \\frac{\\hat p_A - \\hat p_B}{\\sqrt{2 \\bar p (1 - \\bar p)/m \\cdot (1 - m/M)}}
              \\ \\text{(Recall, eq. 53)}, \\qquad
              t = \\frac{\\hat T_A - \\hat T_B}{\\sqrt{(s_A^2 + s_B^2)/m \\cdot (1 - m/M)}}
              \\ \\text{(Welch)}, \\qquad
              t = \\frac{\\bar d}{\\sqrt{s_d^2/m \\cdot (1 - m/M)}} \\ \\text{(paired)}

    Parameters
    ----------
    result : UserSamplingResult
    test : {"two_sample", "paired"}, default "two_sample"
        The dissertation's tests (z for Recall, Welch t otherwise), or the
        paired t-test.
    """
    from simrec.significance import t_test_from_summary, z_test_from_summary  # imported late: see the imports

    if test not in TESTS:
        raise ValueError(f"`test` must be 'two_sample' or 'paired'; got {test!r}")
    m, fpc = result.size, result.fpc
    a, b = result.pairs[:, 0], result.pairs[:, 1]
    ma, mb = result.mean[:, a], result.mean[:, b]
    diff = ma - mb
    if test == "paired":
        msq_d = result.mean_sq[:, a] + result.mean_sq[:, b] - 2 * result.mean_cross
        var_d = np.maximum(msq_d - diff**2, 0.0) * (m / (m - 1))
        se = np.sqrt(var_d / m * fpc)
        df = np.full(diff.shape, m - 1.0)
        normal = np.zeros(diff.shape, bool)
    else:
        var = result.variance()
        va, vb = var[:, a] / m, var[:, b] / m
        se_t = np.sqrt((va + vb) * fpc)
        with np.errstate(invalid="ignore", divide="ignore"):
            df = (va + vb) ** 2 / ((va**2 + vb**2) / (m - 1))
        normal = np.broadcast_to(np.asarray(result.families) == "recall", diff.shape)
        pbar = (ma + mb) / 2
        se = np.where(normal, np.sqrt(2 * pbar * (1 - pbar) / m * fpc), se_t)
    t = t_test_from_summary(diff, se, df)
    z = z_test_from_summary(diff, se)
    return PairTests(test, t.statistic, np.where(normal, z.p_value, t.p_value), diff)


def estimator_pair_tests(result: UserSamplingResult, test: str = "two_sample") -> PairTests | None:
    """The tests of every pair of recommenders by each item-sampling estimator on each sample (module section
    "Item-sampling estimators on the user samples" of :mod:`simrec.stress.user_sampling`).

    .. math:: z_{two\\_sample} = \\frac{\\hat T_A - \\hat T_B}{\\sqrt{se_A^2 + se_B^2}}, \\qquad
              z_{paired} = \\frac{\\hat T_A - \\hat T_B}{se(\\hat T^*_A - \\hat T^*_B)}

    with bootstrap standard errors over the sample's users; two-sided normal
    p-values. Arrays of shape (repeats, I, P, E, J); ``defined`` where both
    the difference and its standard error exist. None for a result without
    the estimator part; NaN statistics and p-values without bootstrap
    (``n_boot`` = 0).
    """
    from simrec.significance import z_test_from_summary  # imported late: see the imports

    if test not in TESTS:
        raise ValueError(f"`test` must be 'two_sample' or 'paired'; got {test!r}")
    est = result.item_estimates  # (reps, I, R, E, J)
    if est is None:
        return None
    a, b = result.pairs[:, 0], result.pairs[:, 1]
    diff = est[:, :, a] - est[:, :, b]  # (reps, I, P, E, J)
    if result.item_se is None:
        nan = np.full(diff.shape, np.nan)
        return PairTests(test, nan, nan, diff, np.zeros(diff.shape, bool), pair_axis=2)
    if test == "two_sample":
        se = np.sqrt(result.item_se[:, :, a] ** 2 + result.item_se[:, :, b] ** 2)
    else:
        se = result.item_pair_se
    z = z_test_from_summary(diff, se)
    return PairTests(test, z.statistic, z.p_value, diff, ~np.isnan(diff) & ~np.isnan(se), pair_axis=2)
