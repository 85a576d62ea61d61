"""t and z tests from summary statistics against scipy, and their conventions at a zero standard error."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.significance import paired_t_test, t_test_from_summary, z_test_from_summary


def test_the_paired_t_from_moments_is_scipys_ttest_rel():
    rng = np.random.default_rng(0)
    a, b = rng.random((6, 70)), rng.random((6, 70)) + 0.05
    d = a - b
    res = t_test_from_summary(d.mean(axis=1), d.std(axis=1, ddof=1) / np.sqrt(70), 69)
    ref = stats.ttest_rel(a, b, axis=-1)
    np.testing.assert_allclose(res.statistic, ref.statistic, rtol=1e-12)
    np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=1e-10)
    np.testing.assert_allclose(res.p_value, paired_t_test(a, b).p_value, rtol=1e-10)
    for alt in ("less", "greater"):
        one = t_test_from_summary(d.mean(axis=1), d.std(axis=1, ddof=1) / np.sqrt(70), 69, alternative=alt)
        np.testing.assert_allclose(one.p_value, stats.ttest_rel(a, b, axis=-1, alternative=alt).pvalue, rtol=1e-10)


def test_z_from_summary_is_the_normal_tail():
    z = z_test_from_summary([0.3, -0.3], [0.1, 0.1])
    np.testing.assert_allclose(z.statistic, [3.0, -3.0])
    np.testing.assert_allclose(z.p_value, 2 * stats.norm.sf(3.0), rtol=1e-14)
    assert float(z_test_from_summary(0.3, 0.1, alternative="greater").p_value) == pytest.approx(stats.norm.sf(3.0))
    assert float(z_test_from_summary(0.3, 0.1, alternative="less").p_value) == pytest.approx(stats.norm.cdf(3.0))


def test_zero_and_nan_standard_errors():
    res = t_test_from_summary([0.0, 0.2, -0.2, 0.1, np.nan], [0.0, 0.0, 0.0, np.nan, 0.1], [5, 5, 5, 5, 5])
    np.testing.assert_array_equal(res.p_value[:3], [1.0, 0.0, 0.0])
    assert np.isnan(res.statistic[:3]).all() and np.isnan(res.p_value[3:]).all()
    one = z_test_from_summary([0.2, -0.2, 0.0], [0.0, 0.0, 0.0], alternative="greater")
    np.testing.assert_array_equal(one.p_value, [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="`standard_error`"):
        z_test_from_summary(0.1, -1.0)
    with pytest.raises(ValueError, match="`alternative`"):
        z_test_from_summary(0.1, 1.0, alternative="two")
