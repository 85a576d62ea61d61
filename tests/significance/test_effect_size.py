"""Cohen's d_z and the matched-pairs rank-biserial correlation: hand-worked values, scipy cross-checks, NaN."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.significance import UndefinedStatisticWarning, cohens_dz, paired_t_test, rank_biserial
from simrec.significance._common import paired
from simrec.significance.effect_size import signed_rank_sums


def test_cohens_dz_by_hand():
    """d = (1, 2, 3, 6): mean 3, sd sqrt(((-2)² + (-1)² + 0 + 3²)/3) = sqrt(14/3); d_z = 3/sqrt(14/3)."""
    b = np.array([0.5, 0.1, 0.0, 0.2])
    assert float(cohens_dz(b + [1, 2, 3, 6], b)) == pytest.approx(3 / np.sqrt(14 / 3), rel=1e-12)
    assert float(cohens_dz(b, b + [1, 2, 3, 6])) == pytest.approx(-3 / np.sqrt(14 / 3), rel=1e-12)


def test_cohens_dz_is_the_paired_t_over_sqrt_n():
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 40)), rng.random((5, 40))
    np.testing.assert_allclose(cohens_dz(a, b) * np.sqrt(40), stats.ttest_rel(a, b, axis=-1).statistic, rtol=1e-12)
    np.testing.assert_allclose(paired_t_test(a, b).effect_size, cohens_dz(a, b), rtol=1e-15)


def test_rank_biserial_by_hand():
    """d = (1, -2, 3, 0, 4). wilcox: ranks of 1, 2, 3, 4 -> R+ = 1 + 3 + 4 = 8, R- = 2, r = 6/10.
    pratt: ranks of 1, 2, 3, 0, 4 are 2, 3, 4, 1, 5 -> R+ = 11, R- = 3, r = 8/14. zsplit: R+ = 11.5,
    R- = 3.5, r = 8/15. Kerby (2014): r = favourable share - unfavourable share of the rank sum."""
    d = np.array([1.0, -2, 3, 0, 4])
    z = np.zeros(5)
    assert float(rank_biserial(d, z)) == pytest.approx(0.6)
    assert float(rank_biserial(d, z, zero_method="pratt")) == pytest.approx(8 / 14)
    assert float(rank_biserial(d, z, zero_method="zsplit")) == pytest.approx(8 / 15)
    assert float(rank_biserial(z, d)) == pytest.approx(-0.6)


def test_rank_biserial_from_scipys_signed_rank_sum():
    """With ties and zeros: r = (2 R+ - T)/T, T = n(n + 1)/2 over the nonzero differences, R+ scipy's
    one-sided statistic."""
    rng = np.random.default_rng(1)
    a, b = np.round(rng.random((4, 60)), 1), np.round(rng.random((4, 60)), 1)
    r = rank_biserial(a, b)
    for i in range(4):
        n = int((a[i] != b[i]).sum())
        plus = stats.wilcoxon(a[i], b[i], alternative="greater").statistic
        total = n * (n + 1) / 2
        assert r[i] == pytest.approx((2 * plus - total) / total, rel=1e-12)


def test_undefined_effect_sizes_are_nan_with_a_warning():
    a = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.9]])
    b = a.copy()
    b[1] -= [0.1, 0.3, 0.2]
    with pytest.warns(UndefinedStatisticWarning, match="1 of 2"):
        dz = cohens_dz(a, b)
    assert np.isnan(dz[0]) and np.isfinite(dz[1])
    with pytest.warns(UndefinedStatisticWarning, match="1 of 2"):
        r = rank_biserial(a, b)
    assert np.isnan(r[0]) and r[1] == 1.0
    with pytest.warns(UndefinedStatisticWarning):  # a shift whose differences vary only by rounding
        assert np.isnan(cohens_dz(a[1] + 0.1, a[1]))
    with pytest.warns(UndefinedStatisticWarning):
        assert np.isnan(cohens_dz([0.5], [0.2]))


def test_signed_rank_sums_equal_scipys_average_ranks_with_ties_and_left_out_users():
    """The sort-based ranks of signed_rank_sums equal ``scipy.stats.rankdata`` (average ranks) exactly, on rows
    with many ties, zeros and NaN, for every zero method."""
    rng = np.random.default_rng(31)
    a = rng.integers(0, 6, (50, 40)) / 4.0
    b = rng.integers(0, 6, (50, 40)) / 4.0
    a[rng.random(a.shape) < 0.1] = np.nan
    p = paired(a, b)
    for zero_method in ("wilcox", "pratt", "zsplit"):
        plus, minus = signed_rank_sums(p, zero_method)
        for r in range(50):
            d = p.diff[r][p.valid[r]]
            kept = d[d != 0] if zero_method == "wilcox" else d
            ranks = stats.rankdata(np.abs(kept))
            want_plus, want_minus = ranks[kept > 0].sum(), ranks[kept < 0].sum()
            if zero_method == "zsplit":
                want_plus += ranks[kept == 0].sum() / 2
                want_minus += ranks[kept == 0].sum() / 2
            assert (plus[r], minus[r]) == (want_plus, want_minus), (zero_method, r)
