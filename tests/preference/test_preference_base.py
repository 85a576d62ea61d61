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


# -- bernoulli_subsets: the IBP's later likers ------------------------------------------------


def _bernoulli_chi2_pvalue(indptr, members, rows, pop, p, first):
    """Chi-square GOF of the member sets of ``rows`` against independent Bernoulli(p) inclusion of every position
    (position 0 always included when ``first``): the whole joint law over the 2**pop subsets, not only margins."""
    free = range(1, pop) if first else range(pop)
    law = {}
    for k in range(len(free) + 1):
        for c in itertools.combinations(free, k):
            law[((0,) if first else ()) + c] = p**k * (1 - p) ** (len(free) - k)
    index = {s: i for i, s in enumerate(law)}
    counts = np.zeros(len(law))
    for r in rows:
        counts[index[tuple(members[indptr[r] : indptr[r + 1]].tolist())]] += 1
    return stats.chisquare(counts, np.array(list(law.values())) * len(rows)).pvalue


@pytest.mark.parametrize("first", [False, True])
def test_bernoulli_subsets_exact_joint_law(first):
    # rows of two kinds in one call: 5 positions with p = 0.3, 4 positions with p = 0.65
    n = 8000
    pops, probs = np.tile([5, 4], n), np.tile([0.3, 0.65], n)
    indptr, members = base.bernoulli_subsets(pops, probs, np.random.default_rng(4), include_first=first)
    assert _bernoulli_chi2_pvalue(indptr, members, range(0, 2 * n, 2), 5, 0.3, first) > 1e-3
    assert _bernoulli_chi2_pvalue(indptr, members, range(1, 2 * n, 2), 4, 0.65, first) > 1e-3


def test_bernoulli_subsets_extra_rounds_and_blocks_keep_the_law(monkeypatch):
    # one gap per row per round (no margin) forces many rounds; 64 draws per block forces many blocks
    monkeypatch.setattr(base, "_SD", 0.0)
    monkeypatch.setattr(base, "_EXTRA", 1.0)
    monkeypatch.setattr(base, "_BERNOULLI_BLOCK", 64)
    n = 8000
    pops, probs = np.tile([5, 4], n), np.tile([0.5, 0.9], n)
    indptr, members = base.bernoulli_subsets(pops, probs, np.random.default_rng(5), include_first=True)
    assert _bernoulli_chi2_pvalue(indptr, members, range(0, 2 * n, 2), 5, 0.5, True) > 1e-3
    assert _bernoulli_chi2_pvalue(indptr, members, range(1, 2 * n, 2), 4, 0.9, True) > 1e-3


def test_bernoulli_subsets_counts_are_binomial_on_long_rows():
    # 2000 rows of 3000 positions, p = 0.01: count ~ Binomial(3000, 0.01); mean within 4 standard errors and the
    # per-position inclusion rate uniform along the row (first and second half within 4 SE of each other)
    n, pop, p = 2000, 3000, 0.01
    indptr, members = base.bernoulli_subsets(np.full(n, pop), np.full(n, p), np.random.default_rng(6))
    counts = np.diff(indptr)
    assert abs(counts.mean() - pop * p) < 4 * np.sqrt(pop * p * (1 - p) / n)
    assert abs(counts.var() / (pop * p * (1 - p)) - 1) < 4 * np.sqrt(2 / n)
    low = (members < pop // 2).sum()
    assert abs(low - (len(members) - low)) < 4 * np.sqrt(len(members))


#: Rows of bernoulli_subsets for hypothesis: (population, probability, offset), edge probabilities included.
_BERNOULLI_ROWS = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from([0.0, 1.0, 0.5, 0.05, 1e-300, 0.999]), st.integers(0, 1000)),
    min_size=0,
    max_size=25,
)


@settings(max_examples=80, deadline=None)
@given(
    data=_BERNOULLI_ROWS,
    first=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@pytest.mark.filterwarnings("error")  # no RuntimeWarning either (an empty row once took the sqrt of -p)
def test_bernoulli_subsets_invariants(data, first, seed):
    pops = np.array([d[0] for d in data], dtype=np.int64)
    probs = np.array([d[1] for d in data])
    offsets = np.array([d[2] for d in data], dtype=np.int64)
    indptr, members = base.bernoulli_subsets(
        pops, probs, np.random.default_rng(seed), offsets=offsets, include_first=first
    )
    assert indptr.shape == (len(pops) + 1,) and indptr[0] == 0 and members.dtype == np.int32
    for r in range(len(pops)):
        row = members[indptr[r] : indptr[r + 1]] - offsets[r]
        assert np.all(np.diff(row) > 0)  # sorted, distinct
        assert row.min(initial=0) >= 0 and row.max(initial=-1) < pops[r]
        if first and pops[r]:
            assert row[0] == 0
        if probs[r] == 1.0:
            assert row.tolist() == list(range(pops[r]))
        if probs[r] in (0.0, 1e-300):  # p = 0, and p so small that every gap passes the row: no member but the first
            assert row.tolist() == ([0] if first and pops[r] else [])


def test_bernoulli_subsets_refuses_int32_overflow():
    with pytest.raises(ValueError, match=r"`offsets \+ pops` must be below 2\*\*31"):
        base.bernoulli_subsets(np.array([10]), np.array([0.5]), np.random.default_rng(0), offsets=np.array([2**31 - 5]))


@settings(max_examples=60, deadline=None)
@given(
    data=_BERNOULLI_ROWS,
    first=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    rounds=st.booleans(),
)
def test_bernoulli_subsets_compiled_gaps_equal_numpy(data, first, seed, rounds):
    """The compiled gap rounds (:mod:`simrec._bernoulli_kernel`) give numpy's members, draw for draw, also over
    many rounds and blocks."""
    import sys

    pops = np.array([d[0] for d in data], dtype=np.int64)
    probs = np.array([d[1] for d in data])
    offsets = np.array([d[2] for d in data], dtype=np.int64)
    out = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            if rounds:  # one gap per row per round, 16 draws per block
                mp.setattr(base, "_SD", 0.0)
                mp.setattr(base, "_EXTRA", 1.0)
                mp.setattr(base, "_BERNOULLI_BLOCK", 16)
            if not compiled:  # numba looks unloaded
                mp.delitem(sys.modules, "numba", raising=False)
            mp.setattr(base, "_KERNEL_MIN_DRAWS", 0 if compiled else 1 << 62)
            gen = np.random.default_rng(seed)
            out.append(base.bernoulli_subsets(pops, probs, gen, offsets=offsets, include_first=first))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
