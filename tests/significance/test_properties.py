"""Invariants of the paired tests (hypothesis): swapping A and B flips the direction and keeps the p-value;
p in [0, 1]; the result does not depend on where NaN users sit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from simrec.significance import (
    PAIRED_TESTS,
    BootstrapBCa,
    BootstrapPercentile,
    Permutation,
    UndefinedStatisticWarning,
)

# the random tests with fewer resamples: the invariants hold for any number
TESTS = (*PAIRED_TESTS[:3], BootstrapPercentile(200), BootstrapBCa(200), Permutation(500))

# per-user metric values on a grid (ties and zero differences, as top-N metrics have), a few NaN
values = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, np.nan])
pairs = st.integers(2, 25).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.float64, (2, n), elements=values), hnp.arrays(np.float64, (2, n), elements=values)
    )
)


@pytest.mark.parametrize("test", TESTS, ids=lambda t: t.name)
@settings(max_examples=20, deadline=None)
@given(pairs)
def test_swapping_a_and_b_flips_the_sign_and_keeps_the_p_value(test, ab):
    a, b = ab
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        ab_res = test(a, b, rng=3, confidence=0.9)
        ba_res = test(b, a, rng=3, confidence=0.9)
    np.testing.assert_allclose(ab_res.p_value, ba_res.p_value, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(ab_res.sign, -ba_res.sign)
    np.testing.assert_allclose(ab_res.effect_size, -ba_res.effect_size, rtol=1e-12)
    np.testing.assert_allclose(ab_res.mean_difference, -ba_res.mean_difference, rtol=1e-12)
    if test.name != "sign":  # the sign test's statistic is n(A > B), which becomes n(B > A)
        np.testing.assert_allclose(np.abs(ab_res.statistic), np.abs(ba_res.statistic), rtol=1e-9)
    if ab_res.ci_of == "mean difference":
        np.testing.assert_allclose(ab_res.ci_low, -ba_res.ci_high, rtol=1e-9, atol=1e-15)
    defined = ~np.isnan(ab_res.p_value)
    assert ((ab_res.p_value[defined] >= 0) & (ab_res.p_value[defined] <= 1)).all()
    np.testing.assert_array_equal(ab_res.n_used, ba_res.n_used)


@pytest.mark.slow
@pytest.mark.parametrize("test", [t for t in PAIRED_TESTS if not t.random], ids=lambda t: t.name)
@settings(max_examples=15, deadline=None)
@given(pairs, st.randoms(use_true_random=False))
def test_the_order_of_users_does_not_matter(test, ab, rnd):
    a, b = ab
    order = np.array(rnd.sample(range(a.shape[1]), a.shape[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        x, y = test(a, b), test(a[:, order], b[:, order])
    # p-values below 1e-100 are all 'zero' (a constant shift is detected up to rounding, which the order moves)
    np.testing.assert_allclose(x.p_value, y.p_value, rtol=1e-9, atol=1e-100)
    np.testing.assert_allclose(x.effect_size, y.effect_size, rtol=1e-9)
