"""Tukey's HSD with users as blocks: k = 2 is the paired t-test, a hand-worked ANOVA, degenerate data; the
independent-groups variant is scipy's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.significance import UndefinedStatisticWarning, paired_t_test, tukey_hsd, tukey_hsd_independent


def test_two_systems_is_the_paired_t_test():
    """k = 2: MSE = s_d²/2, so q = d̄/sqrt(s_d²/(2n)) = sqrt(2) t and P(Q_2,ν >= |q|) = P(|T_ν| >= |t|)."""
    rng = np.random.default_rng(0)
    a, b = rng.random((4, 50)), rng.random((4, 50)) + 0.03
    res = tukey_hsd(np.stack([a, b], axis=1))
    t = paired_t_test(a, b)
    np.testing.assert_allclose(res.statistic[:, 0], np.sqrt(2) * t.statistic, rtol=1e-12)
    np.testing.assert_allclose(res.p_value[:, 0], t.p_value, rtol=1e-6)
    np.testing.assert_allclose(res.ci_low[:, 0], t.ci_low, rtol=1e-6)
    np.testing.assert_array_equal(res.df, 49)


def test_a_hand_worked_block_anova():
    """k = 3 systems x n = 4 users. x = [[1, 2, 3, 6], [2, 2, 5, 7], [0, 3, 3, 6]]: system means 3, 4, 3;
    user means 1, 7/3, 11/3, 19/3; grand 10/3. Residuals x - row - col + grand, by hand:
    [[1/3, 0, -1/3, 0], [1/3, -1, 2/3, 0], [-2/3, 1, -1/3, 0]], sum of squares 2/9 + 14/9 + 14/9 = 10/3;
    df = 2·3 = 6, MSE = 5/9, se = sqrt(MSE/4) = sqrt(5)/6."""
    x = np.array([[1, 2, 3, 6], [2, 2, 5, 7], [0, 3, 3, 6]], dtype=float)
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    np.testing.assert_allclose(
        resid, [[1 / 3, 0, -1 / 3, 0], [1 / 3, -1, 2 / 3, 0], [-2 / 3, 1, -1 / 3, 0]], atol=1e-12
    )
    res = tukey_hsd(x)
    se = np.sqrt(5) / 6
    np.testing.assert_allclose(res.mean_difference, [-1.0, 0.0, 1.0])
    np.testing.assert_allclose(res.statistic, [-1 / se, 0.0, 1 / se], atol=1e-12)
    np.testing.assert_allclose(res.p_value, stats.studentized_range.sf([1 / se, 0.0, 1 / se], 3, 6), rtol=1e-9)
    assert res.pairs.tolist() == [[0, 1], [0, 2], [1, 2]] and float(res.df) == 6 and int(res.n_used) == 4
    half = stats.studentized_range.ppf(0.95, 3, 6) * se
    np.testing.assert_allclose(res.ci_high - res.mean_difference, half, rtol=1e-9)


def test_identical_systems_and_constant_shifts():
    rng = np.random.default_rng(1)
    base = rng.random(30)
    res = tukey_hsd(np.stack([base, base, base + 0.1]))
    np.testing.assert_array_equal(res.p_value, [1.0, 0.0, 0.0])
    with pytest.warns(UndefinedStatisticWarning):
        bad = tukey_hsd(np.array([[0.1, np.nan], [0.2, 0.3]]))
    assert np.isnan(bad.p_value).all()


def test_listwise_deletion_equals_the_complete_users():
    rng = np.random.default_rng(2)
    x = rng.random((3, 40))
    x[0, 3] = x[2, 10] = np.nan
    keep = ~np.isnan(x).any(axis=0)
    a, b = tukey_hsd(x), tukey_hsd(x[:, keep])
    np.testing.assert_allclose(a.p_value, b.p_value, rtol=1e-12)
    assert int(a.n_used) == 38


def test_blocks_make_it_more_powerful_than_independent_groups():
    """Users differ a lot and systems little: the blocked test sees the difference, the one-way test does not."""
    rng = np.random.default_rng(3)
    user = rng.beta(0.5, 2, 200)
    x = np.stack([user, user + 0.01, user]) + rng.normal(0, 0.01, (3, 200))
    assert tukey_hsd(x).p_value[0] < 1e-6
    assert tukey_hsd_independent(x).p_value[0] > 0.05


def test_independent_variant_is_scipys_tukey_hsd():
    rng = np.random.default_rng(4)
    x = rng.random((2, 3, 25))
    x[1, 2, :5] = np.nan
    res = tukey_hsd_independent(x, confidence=0.9)
    for r in range(2):
        groups = [row[~np.isnan(row)] for row in x[r]]
        ref = stats.tukey_hsd(*groups)
        ci = ref.confidence_interval(0.9)
        for p, (i, j) in enumerate(res.pairs):
            assert res.p_value[r, p] == pytest.approx(ref.pvalue[i, j], rel=1e-12)
            assert res.ci_low[r, p] == pytest.approx(ci.low[i, j], rel=1e-12)


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="k >= 2"):
        tukey_hsd(np.ones((1, 5)))
    with pytest.raises(ValueError, match="finite or NaN"):
        tukey_hsd(np.array([[1.0, np.inf], [1.0, 2.0]]))
