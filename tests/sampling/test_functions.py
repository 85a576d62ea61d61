"""Rank metric functions F(R) (K&R 2020 eqs. 7-13; docs/design.md §5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simrec.sampling import (
    auc,
    average_precision,
    hit_ratio,
    metric_table,
    ndcg,
    precision,
    recall,
    reciprocal_rank,
)


def test_closed_forms_at_known_ranks():
    r = np.array([1, 2, 10, 11, 100])
    np.testing.assert_array_equal(recall(10)(r, 100), [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(hit_ratio(10)(r, 100), [1, 1, 1, 0, 0])
    np.testing.assert_allclose(precision(10)(r, 100), [0.1, 0.1, 0.1, 0, 0])
    np.testing.assert_allclose(ndcg(10)(r, 100), [1, 1 / np.log2(3), 1 / np.log2(11), 0, 0])
    np.testing.assert_allclose(ndcg()(r, 100), 1 / np.log2(r + 1))
    np.testing.assert_allclose(average_precision(10)(r, 100), [1, 0.5, 0.1, 0, 0])
    np.testing.assert_allclose(average_precision()(r, 100), 1 / r)
    np.testing.assert_allclose(reciprocal_rank(10)(r, 100), average_precision(10)(r, 100))
    # AUC = (N - R)/(N - 1): 1 at the top, 0 at the bottom
    np.testing.assert_allclose(auc()(r, 100), (100 - r) / 99)


def test_labels_and_equality():
    assert ndcg(10).label == "NDCG@10"
    assert average_precision().label == "AP"
    assert auc().label == "AUC" and auc().k is None
    assert recall(5) == recall(5) and recall(5) != recall(6)


def test_metric_table_columns():
    ms = [recall(3), ndcg(3), auc()]
    t = metric_table(ms, 7)
    assert t.shape == (7, 3)
    for j, m in enumerate(ms):
        np.testing.assert_array_equal(t[:, j], m.table(7))


@given(st.integers(1, 50), st.integers(2, 200))
def test_truncated_metrics_are_non_increasing_and_vanish_beyond_k(k, size):
    for m in (recall(k), ndcg(k), average_precision(k), precision(k)):
        v = m.table(size)
        assert np.all(np.diff(v) <= 0)
        assert np.all(v[k:] == 0)
        assert np.all((v >= 0) & (v <= 1))


def test_rank_outside_domain_raises():
    with pytest.raises(ValueError, match="ranks"):
        recall(3)([0, 1], 10)
    with pytest.raises(ValueError, match="ranks"):
        auc()([11], 10)
