"""The authors'-code variant of the key statistics (simrec.stats.authors_code).

Reference values: the hand computation below, and an independent pandas
re-derivation of the published ``compute_similarity`` (BoiseState/
chiir2020-est-error, ``simulation_utils/calibration.py``: drop zero counts,
outer-join the two count series on their values, add min(count)/10 to both,
``scipy.stats.entropy``), written here from its description, not copied.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import entropy

from simrec.interactions import Interactions
from simrec.preference import IBP
from simrec.stats.authors_code import (
    PAIR_FRACTION,
    ValueCounts,
    authors_code_statistics,
    kl_by_statistic_authors_code,
    kl_divergence_joined,
    value_counts,
)


def _pandas_reference(pv, pc, qv, qc) -> float:
    x = pd.Series(pc, index=pv, dtype=float)
    y = pd.Series(qc, index=qv, dtype=float)
    x, y = x[x != 0], y[y != 0]
    eps = min(x.min(), y.min()) / 10
    both = pd.concat([x, y], axis=1).add(eps, fill_value=0)
    return float(entropy(both.iloc[:, 0], both.iloc[:, 1]))


def test_hand_computed_case():
    # reference: 3 items of popularity 1, one of 2, one of 3; simulation: 2 unobserved items, 2 of 1, 1 of 2
    ref = ValueCounts(np.array([1, 2, 3]), np.array([3.0, 1.0, 1.0]))
    sim = ValueCounts(np.array([0, 1, 2]), np.array([2.0, 2.0, 1.0]))
    p = np.array([0.1, 3.1, 1.1, 1.1]) / 5.4  # eps = min(1, 1)/10 on values 0, 1, 2, 3
    q = np.array([2.1, 2.1, 1.1, 0.1]) / 5.4
    expected = float(np.sum(p * np.log(p / q)))
    assert kl_divergence_joined(ref, sim) == pytest.approx(expected, rel=1e-12)
    # by hand: 0.1/5.4 ln(0.1/2.1) + 3.1/5.4 ln(3.1/2.1) + 0 + 1.1/5.4 ln(11) = -0.05638 + 0.22358 + 0.48846
    assert expected == pytest.approx(0.65566, abs=1e-5)
    assert kl_divergence_joined(ref, ref) == pytest.approx(0.0, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 50)), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 50)), min_size=1, max_size=12),
)
def test_equals_the_published_recipe(ref_pairs, sim_pairs):
    def vc(pairs):
        d = dict(pairs)  # one count per value
        values = np.array(sorted(d))
        return ValueCounts(values, np.array([float(d[v]) for v in values]))

    ref, sim = vc(ref_pairs), vc(sim_pairs)
    if not (ref.counts > 0).any() or not (sim.counts > 0).any():
        with pytest.warns(RuntimeWarning):
            assert math.isnan(kl_divergence_joined(ref, sim))
        return
    expected = _pandas_reference(ref.values, ref.counts, sim.values, sim.counts)
    assert kl_divergence_joined(ref, sim) == pytest.approx(expected, rel=1e-10, abs=1e-12)


def _inter(rows: list[list[int]], n_items: int) -> Interactions:
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.array([i for r in rows for i in sorted(r)], dtype=np.int64)
    m = sp.csr_array((np.ones(len(indices), dtype=np.int8), indices, indptr), shape=(len(rows), n_items))
    return Interactions(m)


def test_unobserved_items_count_with_popularity_zero_in_simulations_only():
    ref = IBP(n_users=300, alpha=40.0, c=1.0, sigma=0.3).generate(rng=1)
    ref_stats = authors_code_statistics(ref, rng=2)
    assert ref_stats.item_popularity.values.min() >= 1
    sim = _inter([[0, 1], [0, 2], [1, 2]] * 20, n_items=6)  # items 3, 4, 5 never observed
    sim_stats = authors_code_statistics(sim, rng=3, reference=ref_stats)
    assert sim_stats.item_popularity.values[0] == 0 and sim_stats.item_popularity.counts[0] == 3
    np.testing.assert_array_equal(sim_stats.item_edges, ref_stats.item_edges)


def test_similarity_bins_are_numpys_auto_edges_of_the_reference():
    ref = IBP(n_users=400, alpha=50.0, c=1.0, sigma=0.3).generate(rng=5)
    stats = authors_code_statistics(ref, rng=6)
    from simrec.stats import item_cosines

    # the same child stream as authors_code_statistics uses for items
    rng_items, _ = np.random.default_rng(6).spawn(2)
    eligible = int((ref.item_counts() >= 5).sum())
    n_pairs = min(1_000_000, int(eligible * (eligible - 1) / 2 * PAIR_FRACTION))
    cos = item_cosines(ref, rng_items, min_observations=5, max_pairs=n_pairs).cosines
    assert len(cos) == n_pairs
    np.testing.assert_array_equal(stats.item_edges, np.histogram_bin_edges(cos, bins="auto", range=(-1, 1)))
    assert stats.item_similarity.counts.sum() == n_pairs
    assert stats.item_edges[0] == -1 and stats.item_edges[-1] == 1


def test_kl_by_statistic_of_a_dataset_against_itself_is_small_and_against_another_model_larger():
    ref = IBP(n_users=500, alpha=60.0, c=1.0, sigma=0.4).generate(rng=7)
    ref_stats = authors_code_statistics(ref, rng=8)
    same = kl_by_statistic_authors_code(ref_stats, authors_code_statistics(ref, rng=9, reference=ref_stats))
    other_data = IBP(n_users=500, alpha=20.0, c=1.0, sigma=0.0).generate(rng=10)
    other = kl_by_statistic_authors_code(ref_stats, authors_code_statistics(other_data, rng=11, reference=ref_stats))
    assert same["item_popularity"] == pytest.approx(0.0, abs=1e-12)  # same data: same counts
    assert same["user_activity"] == pytest.approx(0.0, abs=1e-12)
    for name in same:
        assert other[name] > same[name], name


def test_value_counts():
    vc = value_counts(np.array([3, 1, 3, 0, 3]))
    np.testing.assert_array_equal(vc.values, [0, 1, 3])
    np.testing.assert_array_equal(vc.counts, [1.0, 1.0, 3.0])
