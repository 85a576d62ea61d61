"""nDCG as LensKit 0.7 computed it for Tian's thesis (simrec.metrics.ndcg_lenskit07, a named variant).

Reference values: the issue's worked case (a 50-item list of relevant items
with |Rel| = 200 scores 0.3845 under LensKit 0.7's discount 1/max(1, log2 i)
and its ideal over all relevant items; 1.0 under the standard nDCG@N), and a
plain per-user loop written from that definition.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from simrec.metrics import NDCGLensKit07, UndefinedMetricWarning, measure_lists, ndcg, ndcg_lenskit07


def _relevance(sets: list[set[int]], n_items: int) -> sp.csr_array:
    rows = [u for u, s in enumerate(sets) for _ in s]
    cols = [i for s in sets for i in sorted(s)]
    return sp.csr_array((np.ones(len(cols)), (rows, cols)), shape=(len(sets), n_items))


def _loop(lists: np.ndarray, sets: list[set[int]]) -> np.ndarray:
    out = []
    for row, rel in zip(lists, sets):
        if not rel:
            out.append(math.nan)
            continue
        dcg = sum(1 / max(1.0, math.log2(i)) for i, item in enumerate(row, 1) if item >= 0 and item in rel)
        idcg = sum(1 / max(1.0, math.log2(i)) for i in range(1, len(rel) + 1))
        out.append(dcg / idcg)
    return np.array(out)


def test_the_issues_worked_case():
    lists = np.arange(50)[None, :]
    rel = _relevance([set(range(200))], 300)
    assert ndcg_lenskit07(lists, rel)[0] == pytest.approx(0.3845, abs=5e-5)
    assert ndcg(lists, rel)[0] == pytest.approx(1.0)


def test_equals_the_definition_on_random_lists():
    rng = np.random.default_rng(3)
    n_users, n_items, n = 60, 40, 10
    sets = [set(rng.choice(n_items, size=rng.integers(0, 25), replace=False).tolist()) for _ in range(n_users)]
    lists = np.stack([rng.permutation(n_items)[:n] for _ in range(n_users)])
    lists[::7, -3:] = -1  # padded lists
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = ndcg_lenskit07(lists, _relevance(sets, n_items))
    np.testing.assert_allclose(got, _loop(lists, sets), rtol=1e-12, equal_nan=True)
    assert any(not s for s in sets)  # the NaN branch is exercised


def test_empty_relevance_is_nan_with_a_warning():
    with pytest.warns(UndefinedMetricWarning):
        out = ndcg_lenskit07(np.array([[0, 1]]), _relevance([set()], 3))
    assert math.isnan(out[0])


def test_metric_object_and_scenario_name():
    from simrec.metrics import METRICS

    assert METRICS["ndcg_lenskit07"] is NDCGLensKit07 and NDCGLensKit07().name == "ndcg_lenskit07"
    lists = np.array([[1, 0, 2]])
    got = measure_lists(lists, _relevance([{0, 2}], 3), [NDCGLensKit07()])
    assert got["ndcg_lenskit07"][0] == pytest.approx((1 / 1 + 1 / math.log2(3)) / (1 + 1))
