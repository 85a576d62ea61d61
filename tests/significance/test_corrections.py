"""Bonferroni and Holm against hand-worked examples, vectorised families, NaN, and their invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec.significance import bonferroni, holm


def test_holm_worked_example():
    """Wikipedia's "Holm-Bonferroni method" example, worked by hand: α = 0.05, p = (0.01, 0.04, 0.03, 0.005).

    Sorted: 0.005 <= 0.05/4 = 0.0125 reject; 0.01 <= 0.05/3 = 0.0167 reject; 0.03 > 0.05/2 = 0.025 stop.
    H1 and H4 are rejected; H2 is not, although 0.04 < 0.05. Adjusted: 4·0.005 = 0.02, 3·0.01 = 0.03,
    max(0.03, 2·0.03) = 0.06, max(0.06, 1·0.04) = 0.06.
    """
    res = holm([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    assert res.reject.tolist() == [True, False, False, True]
    np.testing.assert_allclose(res.adjusted, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    assert res.method == "holm" and int(res.n_tests) == 4
    # Bonferroni on the same family rejects only p <= 0.0125
    bon = bonferroni([0.01, 0.04, 0.03, 0.005], alpha=0.05)
    assert bon.reject.tolist() == [True, False, False, True]
    np.testing.assert_allclose(bon.adjusted, [0.04, 0.16, 0.12, 0.02], rtol=1e-12)


def test_holm_rejects_more_than_bonferroni_where_the_step_down_helps():
    """p = (0.011, 0.02, 0.03), α = 0.05: Bonferroni's threshold 0.0167 rejects one; Holm's 0.0167, 0.025, 0.05
    reject all three (adjusted 0.033, 0.04, 0.04)."""
    p = [0.02, 0.011, 0.03]
    assert bonferroni(p).reject.tolist() == [False, True, False]
    res = holm(p)
    assert res.reject.tolist() == [True, True, True]
    np.testing.assert_allclose(res.adjusted, [0.04, 0.033, 0.04], rtol=1e-12)


def test_holm_adjusted_p_values_of_a_six_test_family():
    """p = (0.01, 0.04, 0.20, 0.03, 0.005, 0.07): sorted products 6·0.005, 5·0.01, 4·0.03, 3·0.04, 2·0.07, 1·0.2
    = 0.03, 0.05, 0.12, 0.12, 0.14, 0.2, running maxima the same (R's ``p.adjust(p, "holm")``)."""
    res = holm([0.01, 0.04, 0.20, 0.03, 0.005, 0.07])
    np.testing.assert_allclose(res.adjusted, [0.05, 0.12, 0.20, 0.12, 0.03, 0.14], rtol=1e-12)


def test_families_along_an_axis_equal_one_family_at_a_time():
    rng = np.random.default_rng(0)
    p = rng.random((50, 6)) ** 3
    for method in (bonferroni, holm):
        whole = method(p.T, axis=0)  # families along axis 0
        for r in range(50):
            one = method(p[r])
            np.testing.assert_array_equal(whole.reject[:, r], one.reject)
            np.testing.assert_allclose(whole.adjusted[:, r], one.adjusted, rtol=1e-15)


def test_nan_p_values_are_not_hypotheses_unless_counted():
    res = holm([0.01, np.nan, 0.02])
    assert res.reject.tolist() == [True, False, True] and int(res.n_tests) == 2
    assert np.isnan(res.adjusted[1])
    counted = holm([0.01, np.nan, 0.02], n_tests=3)
    np.testing.assert_allclose(counted.adjusted[[0, 2]], [0.03, 0.04])
    assert bonferroni([0.02, np.nan], n_tests=3).adjusted[0] == pytest.approx(0.06)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: holm(0.5), "scalar"),
        (lambda: holm([0.5, 1.5]), r"\[0, 1\]"),
        (lambda: bonferroni([0.5], alpha=0), "`alpha`"),
        (lambda: bonferroni([0.5, 0.2], n_tests=1), "`n_tests`"),
        (lambda: holm([[0.5]], axis=2), "`axis`"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.floats(0.001, 0.5))
def test_holm_invariants(p, alpha):
    p = np.array(p)
    h, b = holm(p, alpha=alpha), bonferroni(p, alpha=alpha)
    assert (b.reject <= h.reject).all()  # Holm rejects whatever Bonferroni rejects
    assert (h.adjusted >= p - 1e-15).all() and (h.adjusted <= b.adjusted + 1e-15).all() and (h.adjusted <= 1).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(h.adjusted[order]) >= 0).all()  # monotone in p
    away = np.abs(h.adjusted - alpha) > 1e-12 * max(alpha, 1)
    np.testing.assert_array_equal(h.reject[away], (h.adjusted <= alpha)[away])
