"""User sampling (Li's dissertation §2.7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from simrec.sampling import (
    bonferroni,
    hoeffding_bound,
    hoeffding_margin,
    hoeffding_sample_size,
    mean_t_test,
    proportion_difference_interval,
    proportion_sample_size,
    proportion_z_test,
    two_proportion_sample_size,
)


def test_dissertation_worked_sample_sizes():
    # eq. 51: 1.96² 0.5²/0.03² ≈ 1067 and 1.96² 0.5²/0.01² ≈ 9604 at 95% confidence
    s3 = proportion_sample_size(0.03)
    s1 = proportion_sample_size(0.01)
    assert s3.n_users == 1067 and s3.n_users_ceil == 1068  # exact 1067.07 (z = 1.95996): as published; rounded up
    assert s1.n_users == 9604 and s1.n_users_ceil == 9604
    assert s3.z == pytest.approx(1.959964, abs=1e-6)
    # eq. 56: twice the single-model size for a difference of two proportions
    assert two_proportion_sample_size(0.03).exact == pytest.approx(2 * s3.exact)
    # Bonferroni over 3 comparisons: each at 1 - 0.05/3
    z3 = stats.norm.ppf(1 - 0.05 / 6)
    assert proportion_sample_size(0.03, n_comparisons=3).exact == pytest.approx(z3**2 * 0.25 / 0.03**2)


def test_hoeffding_worked_numbers():
    # §2.7.1: t = 0.02, m = 10,000 -> confidence above 99.9%
    assert 1 - hoeffding_bound(10_000, 0.02) > 0.999
    assert hoeffding_bound(10_000, 0.02) == pytest.approx(2 * math.exp(-8))
    # Li & Jin §2: M = 30,000, t = 0.01 -> P(|T - E T| > 0.01) <= 0.005
    assert hoeffding_bound(30_000, 0.01) < 0.005
    # margin and sample size invert each other
    m = hoeffding_sample_size(0.02, confidence=0.99)
    assert (
        hoeffding_margin(m.n_users_ceil, confidence=0.99)
        <= 0.02
        < hoeffding_margin(m.n_users_ceil - 1, confidence=0.99)
    )


def test_proportion_sample_size_coverage():
    # with the computed size, the normal-approximation interval holds the truth about 95% of the time
    rng = np.random.default_rng(0)
    m = proportion_sample_size(0.03, p=0.3).n_users
    hits = rng.binomial(m, 0.3, size=4000) / m
    coverage = np.mean(np.abs(hits - 0.3) <= 0.03)
    assert abs(coverage - 0.95) < 4 * math.sqrt(0.95 * 0.05 / 4000) + 0.005


def test_z_test_against_closed_form_and_size():
    t = proportion_z_test(300, 1000, 250, 1000)
    pbar = 0.275
    z = 0.05 / math.sqrt(2 * pbar * (1 - pbar) / 1000)  # eq. 53 with m_A = m_B
    assert t.statistic == pytest.approx(z)
    assert t.p_value == pytest.approx(2 * stats.norm.sf(z))
    assert proportion_z_test(300, 1000, 250, 1000, alternative="greater").p_value == pytest.approx(stats.norm.sf(z))
    assert proportion_z_test(300, 1000, 250, 1000, alternative="less").p_value == pytest.approx(stats.norm.cdf(z))
    # under H0 the test rejects at 5% about 5% of the time
    rng = np.random.default_rng(1)
    xa, xb = rng.binomial(2000, 0.4, 3000), rng.binomial(2000, 0.4, 3000)
    rej = np.mean([proportion_z_test(int(a), 2000, int(b), 2000).p_value < 0.05 for a, b in zip(xa, xb)])
    assert abs(rej - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 3000)
    lo, hi = proportion_difference_interval(300, 1000, 250, 1000)
    half = 1.959964 * math.sqrt(0.3 * 0.7 / 1000 + 0.25 * 0.75 / 1000)
    assert (lo, hi) == pytest.approx((0.05 - half, 0.05 + half), abs=1e-6)
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert math.isnan(proportion_z_test(0, 10, 0, 10).statistic)


def test_t_tests_match_scipy():
    rng = np.random.default_rng(2)
    a, b = rng.random(300), rng.random(300) * 0.9
    t = mean_t_test(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert (t.test, t.statistic, t.p_value) == ("Welch t", pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    tp = mean_t_test(a, b, paired=True, alternative="greater")
    ref = stats.ttest_rel(a, b, alternative="greater")
    assert (tp.statistic, tp.p_value) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    assert t.difference == pytest.approx(a.mean() - b.mean())


def test_bonferroni():
    adj, rej = bonferroni([0.01, 0.02, 0.3], alpha=0.05)
    np.testing.assert_allclose(adj, [0.03, 0.06, 0.9])
    np.testing.assert_array_equal(rej, [True, False, False])
