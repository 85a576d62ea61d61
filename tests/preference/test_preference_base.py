"""Kernels shared by the generators: uniform subsets of many ranges, key de-duplication."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import simrec._subsets as base
from simrec._subsets import sorted_unique, uniform_subsets
from simrec.preference import IBP, LDA, PreferenceModel, Uniform


def _subset_chi2_pvalue(indptr, pos, rows, pop, size):
    """Chi-square GOF of the subsets drawn in ``rows`` against the uniform law on C(pop, size)."""
    subsets = {c: i for i, c in enumerate(itertools.combinations(range(pop), size))}
    counts = np.zeros(len(subsets))
    for r in rows:
        counts[subsets[tuple(pos[indptr[r] : indptr[r + 1]])]] += 1
    return stats.chisquare(counts).pvalue


@pytest.mark.parametrize("method", ["bitmap", "sort"])
def test_subsets_exactly_uniform_over_subsets(method):
    # rows of three kinds in one call (different offsets): 2 of 5 (drawn), 3 of 5
    # (complement drawn), 2 of 4; each law must be uniform over all C(pop, size) subsets
    n = 3000
    sizes = np.tile([2, 3, 2], n)
    pops = np.tile([5, 5, 4], n)
    indptr, pos = uniform_subsets(sizes, pops, np.random.default_rng(1), method=method)
    for k, (pop, size) in enumerate([(5, 2), (5, 3), (4, 2)]):
        assert _subset_chi2_pvalue(indptr, pos, range(k, 3 * n, 3), pop, size) > 1e-3


def test_subsets_bitmap_in_many_blocks(monkeypatch):
    monkeypatch.setattr(base, "_BLOCK_CELLS", 37)  # forces ~ 15000*5/37 blocks
    n = 3000
    sizes = np.tile([2, 3], n)
    pops = np.tile([5, 5], n)
    indptr, pos = uniform_subsets(sizes, pops, np.random.default_rng(2), method="bitmap")
    assert _subset_chi2_pvalue(indptr, pos, range(0, 2 * n, 2), 5, 2) > 1e-3
    assert _subset_chi2_pvalue(indptr, pos, range(1, 2 * n, 2), 5, 3) > 1e-3


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 40), st.floats(0, 1)), min_size=0, max_size=30),
    method=st.sampled_from(["bitmap", "sort", None]),
    seed=st.integers(0, 2**32 - 1),
)
def test_subsets_invariants(data, method, seed):
    pops = np.array([p for p, _ in data], dtype=np.int64)
    sizes = np.array([int(round(f * p)) for p, f in data], dtype=np.int64)
    indptr, pos = uniform_subsets(sizes, pops, np.random.default_rng(seed), method=method)
    assert np.array_equal(np.diff(indptr), sizes)
    for r in range(len(sizes)):
        row = pos[indptr[r] : indptr[r + 1]]
        assert np.all(np.diff(row) > 0)  # sorted, unique
        assert row.min(initial=0) >= 0 and row.max(initial=-1) < pops[r]


def test_subsets_rejects_unknown_method():
    with pytest.raises(ValueError, match="`method`"):
        uniform_subsets(np.array([1]), np.array([3]), np.random.default_rng(0), method="hash")


@pytest.mark.parametrize("n_cells", [50, 10**9])  # bitmap branch, sort branch
def test_sorted_unique_matches_numpy(n_cells):
    keys = np.random.default_rng(3).integers(0, 50, 200)
    assert np.array_equal(sorted_unique(keys, n_cells), np.unique(keys))


def test_models_follow_the_protocol():
    for m in (Uniform(3, 4, 1.0), IBP(3, 1.0, 1.0, 0.0), LDA(3, 4, 2, 1.0, 0.5, 0.5)):
        assert isinstance(m, PreferenceModel)
