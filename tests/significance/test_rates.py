"""truth_rates: counts by hand, Wilson intervals, undefined replicates, validation."""

from __future__ import annotations

import numpy as np
import pytest

from simrec.report import wilson_interval
from simrec.significance import truth_rates


def test_rates_by_hand():
    # replicates:        1     2     3     4     5     6     7      8     9     10
    p = np.array([0.01, 0.20, 0.03, 0.04, 0.50, 0.001, 0.30, np.nan, 0.02, 0.049])
    sign = np.array([1, 1, -1, 1, -1, 1, 1, 1, 0, -1])
    truth = np.array([0.1, 0.1, 0.1, 0.0, 0.0, -0.2, -0.2, 0.1, 0.3, 1e-4])
    r = truth_rates(p, sign, truth, alpha=0.05, tolerance=1e-3)
    # null (|Δ| <= 1e-3): 4, 5, 10 -> significant: 4, 10 => type I 2/3
    assert (r.type_i.count, r.type_i.n) == (2, 3)
    # non-null: 1, 2, 3, 6, 7, 9 (8 undefined). correct: 1 => 1/6; type III: 3 (wrong sign), 6 (wrong sign),
    # 9 (no sign) => 3/6; type II: 2, 7 => 2/6
    assert (r.correct.count, r.type_iii.count, r.type_ii.count, r.n_nonnull) == (1, 3, 2, 6)
    assert r.correct.count + r.type_ii.count + r.type_iii.count == r.n_nonnull
    # significant: 1, 3, 4, 6, 9, 10 -> right: 1 => 1/6
    assert (r.right_given_significant.count, r.right_given_significant.n) == (1, 6)
    assert (r.n_replicates, r.n_null, r.n_undefined) == (10, 3, 1)
    low, high = wilson_interval(np.array([2]), np.array([3]), 0.95)
    assert (r.type_i.ci_low, r.type_i.ci_high) == pytest.approx((low[0], high[0]))
    assert r.type_i.rate == pytest.approx(2 / 3)


def test_a_sign_only_truth_with_zero_tolerance():
    r = truth_rates([0.01, 0.01, 0.9], [1, -1, 1], [1, 1, 0])
    assert (r.correct.count, r.type_iii.count, r.type_i.count, r.type_i.n) == (1, 1, 0, 1)


def test_empty_groups_give_nan_rates():
    r = truth_rates([0.01, 0.5], [1, 1], [0.0, 0.0])
    assert r.n_nonnull == 0 and np.isnan(r.correct.rate) and np.isnan(r.correct.ci_low)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"p_values": [0.1, 0.2], "observed_sign": [1], "true_difference": [1, 1]}, "one value per replicate"),
        ({"p_values": [[0.1]], "observed_sign": [1], "true_difference": [1]}, "1-D"),
        ({"p_values": [1.1], "observed_sign": [1], "true_difference": [1]}, r"\[0, 1\]"),
        ({"p_values": [0.1], "observed_sign": [1], "true_difference": [1], "tolerance": -1}, "`tolerance`"),
        ({"p_values": [0.1], "observed_sign": [1], "true_difference": [1], "alpha": 1}, "`alpha`"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        truth_rates(**kwargs)
