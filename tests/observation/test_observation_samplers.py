"""Observation samplers and observe() (thesis §3.2.2-3.2.3)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from simrec.interactions import Interactions
from simrec.observation import (
    Observed,
    PopularitySampler,
    TruncatedPareto,
    UniformSampler,
    observe,
)
from simrec.observation.samplers import _smallest_per_row
from simrec.preference import IBP

SAMPLERS = [UniformSampler(), PopularitySampler(), PopularitySampler(exponent=-0.5)]


def _is_subset(small: Interactions, big_rows) -> bool:
    m = small.matrix
    return (m.multiply(big_rows) != m).nnz == 0


@settings(max_examples=50, deadline=None)
@given(
    n_users=st.integers(1, 12),
    n_items=st.integers(1, 15),
    density=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
    which=st.integers(0, len(SAMPLERS) - 1),
)
def test_subset_with_exact_sizes(n_users, n_items, density, seed, which):
    rng = np.random.default_rng(seed)
    dense = rng.random((n_users, n_items)) < density
    u, i = np.nonzero(dense)
    truth = Interactions.from_pairs(u, i, (n_users, n_items))
    sizes = rng.integers(0, n_items + 3, n_users)
    obs = SAMPLERS[which].sample(truth, sizes, rng)
    assert obs.matrix.shape == truth.matrix.shape
    assert np.array_equal(obs.user_counts(), np.minimum(sizes, truth.user_counts()))
    assert _is_subset(obs, truth.matrix)
    assert obs.matrix.has_canonical_format


def _pair_truth(weights_extra, n_rows):
    """n_rows rows holding items 0..4, plus extra single-item rows boosting item j by weights_extra[j]."""
    u = [np.repeat(np.arange(n_rows), 5)]
    i = [np.tile(np.arange(5), n_rows)]
    extra = np.repeat(np.arange(5), weights_extra)
    u.append(n_rows + np.arange(len(extra)))
    i.append(extra)
    u, i = np.concatenate(u), np.concatenate(i)
    return Interactions.from_pairs(u, i, (n_rows + len(extra), 5))


def _successive_pair_probs(w):
    """P(set {i, j}) for 2 draws without replacement, each ∝ w among the remaining."""
    W = w.sum()
    return {
        (i, j): w[i] / W * w[j] / (W - w[i]) + w[j] / W * w[i] / (W - w[j])
        for i, j in itertools.combinations(range(len(w)), 2)
    }


@pytest.mark.parametrize(
    "sampler,expo",
    [
        (PopularitySampler(), 1.0),
        (PopularitySampler(exponent=2.0), 2.0),
        (UniformSampler(), 0.0),
        (PopularitySampler(exponent=0.0), 0.0),
    ],
)
def test_exact_pair_law(sampler, expo):
    # rows {0..4} keep 2 items: the law of the kept pair is successive sampling with w = |U_i|^expo
    n_rows = 6000
    extra = np.array([0, 500, 1500, 3000, 9000])
    truth = _pair_truth(extra, n_rows)
    w = truth.item_counts().astype(float) ** expo
    sizes = np.zeros(truth.n_users, dtype=np.int64)
    sizes[:n_rows] = 2
    obs = sampler.sample(truth, sizes, 12)
    kept = obs.matrix.indices.reshape(-1, 2)[:n_rows]
    probs = _successive_pair_probs(w)
    keys = list(probs)
    counts = np.array([np.sum((kept[:, 0] == i) & (kept[:, 1] == j)) for i, j in keys])
    assert counts.sum() == n_rows
    assert stats.chisquare(counts, np.array([probs[k] for k in keys]) * n_rows).pvalue > 1e-3


def test_first_pick_law_in_long_rows():
    # long rows (40 items) keeping 1 exercise the pre-filter: P(item i) = w_i / W exactly
    n_rows, n_items = 8000, 40
    u = np.repeat(np.arange(n_rows), n_items)
    i = np.tile(np.arange(n_items), n_rows)
    extra = np.repeat(np.arange(n_items), np.arange(n_items) * 300)  # weights n_rows + 300 i
    truth = Interactions.from_pairs(
        np.concatenate((u, n_rows + np.arange(len(extra)))),
        np.concatenate((i, extra)),
        (n_rows + len(extra), n_items),
    )
    sizes = np.zeros(truth.n_users, dtype=np.int64)
    sizes[:n_rows] = 1
    obs = PopularitySampler().sample(truth, sizes, 13)
    picked = obs.matrix.indices[:n_rows]
    w = truth.item_counts().astype(float)
    assert stats.chisquare(np.bincount(picked, minlength=n_items), w / w.sum() * n_rows).pvalue > 1e-3


@settings(max_examples=60, deadline=None)
@given(
    lens=st.lists(st.integers(1, 80), min_size=1, max_size=20),
    frac=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_prefilter_selects_exactly_the_smallest_keys(lens, frac, seed):
    rng = np.random.default_rng(seed)
    lens = np.array(lens)
    k = np.minimum(np.floor(frac * lens).astype(np.int64), lens - 1)
    rate = rng.integers(1, 100, lens.sum()).astype(float)
    x = rng.standard_exponential(lens.sum()) / rate
    fast = np.sort(_smallest_per_row(x, lens, k, rate))
    slow = np.sort(_smallest_per_row(x, lens, k, rate, prefilter=False))
    assert np.array_equal(fast, slow)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    for r in range(len(lens)):  # brute force: the k smallest of each row
        want = starts[r] + np.argsort(x[starts[r] : starts[r] + lens[r]])[: k[r]]
        assert set(want) == set(fast[(fast >= starts[r]) & (fast < starts[r] + lens[r])])


@settings(max_examples=80, deadline=None)
@given(
    lens=st.lists(st.integers(1, 40), min_size=1, max_size=12),
    frac=st.floats(0, 1),
    levels=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_many_ties_select_as_the_stable_argsort_of_the_keys(lens, frac, levels, seed):
    """Keys with few distinct values (ties at most cuts): the selection is the
    first k per row of the stable argsort of ``row + 0.5 x / (1 + x)``, the
    definition the tie repair in ``_smallest_per_row`` reproduces."""
    rng = np.random.default_rng(seed)
    lens = np.array(lens)
    k = np.minimum(np.floor(frac * lens).astype(np.int64), lens - 1)
    rate = rng.integers(1, 100, lens.sum()).astype(float)
    x = rng.integers(0, levels, lens.sum()) / levels
    row = np.repeat(np.arange(len(lens)), lens)
    order = np.argsort(row + 0.5 * (x / (1.0 + x)), kind="stable")
    rank = np.arange(len(x)) - np.repeat(np.cumsum(lens) - lens, lens)
    want = np.sort(order[rank < np.repeat(k, lens)])
    for prefilter in (True, False):
        np.testing.assert_array_equal(_smallest_per_row(x, lens, k, rate, prefilter=prefilter), want)


def test_ties_at_the_cut_keep_exactly_k_by_the_stable_order():
    """Equal keys straddling a row's cut: the value-sort shortcut would keep too
    many, so the stable argsort decides (the earlier key of a tie wins)."""
    x = np.array([0.5, 0.2, 0.2, 0.9, 0.1, 0.3, 0.3, 0.3])
    lens, k = np.array([4, 4]), np.array([2, 1])
    got = np.sort(_smallest_per_row(x, lens, k, np.ones(8), prefilter=False))
    np.testing.assert_array_equal(got, [1, 2, 4])
    got = np.sort(_smallest_per_row(x, lens, np.array([1, 2]), np.ones(8), prefilter=False))
    np.testing.assert_array_equal(got, [1, 4, 5])  # row 0: 0.2 tie -> first; row 1: 0.1, then first 0.3


def test_popularity_sampler_favours_popular_items_uniform_does_not():
    truth = IBP(2000, 60.0, 1.0, 0.5).generate(3)
    sizes = TruncatedPareto(2.0, 1.0, 1000.0).sample(truth.user_counts(), 4)
    lens = truth.user_counts()
    pop = truth.item_counts()
    ok = pop >= 20
    for sampler in (UniformSampler(), PopularitySampler()):
        obs = sampler.sample(truth, sizes, 5)
        ratio = obs.item_counts()[ok] / pop[ok]
        rho, p = stats.spearmanr(pop[ok], ratio)
        if isinstance(sampler, PopularitySampler):
            assert rho > 0 and p < 1e-6
        else:
            # exact: item i is kept in row u with probability s_u / |I_u|
            q = np.minimum(sizes, lens) / np.maximum(lens, 1)
            rows = truth.row_of_pairs()
            e = np.bincount(truth.matrix.indices, weights=q[rows], minlength=truth.n_items)
            v = np.bincount(truth.matrix.indices, weights=(q * (1 - q))[rows], minlength=truth.n_items)
            good = v > 0
            z2 = (obs.item_counts()[good] - e[good]) ** 2 / v[good]
            # rows are exact-size samples (negatively associated indicators): the
            # independent-Bernoulli variance is an upper bound, so this is conservative
            assert stats.chi2.sf(z2.sum(), good.sum()) > 1e-3
            assert abs(rho) < 4 / np.sqrt(ok.sum() - 1)


@pytest.mark.parametrize("sampler", SAMPLERS[:2])
def test_same_seed_same_observation(sampler):
    truth = IBP(300, 20.0, 1.0, 0.3).generate(0)
    sizes = np.full(truth.n_users, 5)
    a, b, c = (sampler.sample(truth, sizes, s) for s in (1, 1, 2))
    assert (a.matrix != b.matrix).nnz == 0 and (a.matrix != c.matrix).nnz > 0


def test_observe_drops_empty_users_and_maps_rows():
    truth = IBP(500, 3.0, 1.0, 0.3).generate(1)  # some users like nothing
    assert (truth.user_counts() == 0).any()
    for sampler in SAMPLERS[:2]:
        o = observe(truth, TruncatedPareto(1.0, 1.0, 50.0), sampler, 2)
        assert isinstance(o, Observed)
        assert np.array_equal(o.truth_rows, np.flatnonzero(truth.user_counts() > 0))
        assert o.observed.n_items == truth.n_items
        assert np.all(o.observed.user_counts() >= 1)
        assert _is_subset(o.observed, truth.matrix[o.truth_rows])
        assert np.array_equal(o.observed.user_ids, o.truth_rows)
        again = observe(truth, TruncatedPareto(1.0, 1.0, 50.0), sampler, 2)
        assert (again.observed.matrix != o.observed.matrix).nnz == 0


def test_observe_keeps_external_ids():
    truth = Interactions.from_pairs(
        np.array([0, 0, 2]),
        np.array([0, 1, 1]),
        (3, 2),
        user_ids=np.array(["a", "b", "c"]),
        item_ids=np.array(["x", "y"]),
    )
    o = observe(truth, TruncatedPareto(1.0, 1.0, 5.0), UniformSampler(), 0)
    assert list(o.truth_rows) == [0, 2]
    assert list(o.observed.user_ids) == ["a", "c"] and list(o.observed.item_ids) == ["x", "y"]


def test_bad_inputs():
    truth = Interactions.from_pairs(np.array([0, 1]), np.array([0, 1]), (2, 2))
    for s in SAMPLERS[:2]:
        with pytest.raises(ValueError, match="`sizes`"):
            s.sample(truth, np.array([1, 1, 1]), 0)
        with pytest.raises(TypeError, match="`sizes`"):
            s.sample(truth, np.array([1.0, 1.0]), 0)
        with pytest.raises(ValueError, match="`sizes`"):
            s.sample(truth, np.array([1, -1]), 0)
        with pytest.raises(TypeError, match="`truth`"):
            s.sample(truth.matrix, np.array([1, 1]), 0)
    with pytest.raises(TypeError, match="`exponent`"):
        PopularitySampler(exponent="1")
    with pytest.raises(ValueError, match="`exponent`"):
        PopularitySampler(exponent=float("inf"))
    with pytest.raises(TypeError, match="`profile`"):
        observe(truth, object(), UniformSampler(), 0)
    with pytest.raises(TypeError, match="`sampler`"):
        observe(truth, TruncatedPareto(1.0, 1.0, 5.0), object(), 0)


@pytest.mark.parametrize("exponent", [1.0, 0.5])
def test_popularity_sampler_by_blocks_gives_the_sample_of_one_pass(exponent, monkeypatch):
    """Rows processed in blocks of a few pairs draw the same keys, keep the global row in the keys (ties at a
    row's cut break the same way) and select the same pairs as one pass."""
    import simrec.observation.samplers as samplers

    truth = IBP(400, 15.0, 1.0, 0.3).generate(3)
    sizes = np.random.default_rng(4).integers(1, 12, truth.n_users)
    sampler = PopularitySampler(exponent)
    want = sampler.sample(truth, sizes, 5)
    monkeypatch.setattr(samplers, "_BLOCK_PAIRS", 9)
    got = sampler.sample(truth, sizes, 5)
    assert (got.matrix != want.matrix).nnz == 0 and got.n_pairs == want.n_pairs


# -- the compiled block pass (issue 29): the same pairs as the numpy selection ------------------------------


@pytest.mark.parametrize("exponent", [1.0, 0.5, -0.5])
@pytest.mark.parametrize("block", [9, 1 << 19])
def test_popularity_sampler_compiled_and_numpy_paths_keep_the_same_pairs(exponent, block, monkeypatch):
    """The compiled passes (candidates and keys, numpy's sort, the cut per row) draw the same keys and
    keep the same pairs as the numpy selection, in one block or many (the global row in the keys)."""
    from kernel_paths import use_kernels

    import simrec.observation.samplers as samplers

    truth = IBP(400, 15.0, 1.0, 0.3).generate(3)
    sizes = np.random.default_rng(4).integers(0, 30, truth.n_users)  # empty, partial and whole rows
    sampler = PopularitySampler(exponent)
    monkeypatch.setattr(samplers, "_BLOCK_PAIRS", block)
    with pytest.MonkeyPatch.context() as mp:
        use_kernels(mp, compiled=False)
        want = sampler.sample(truth, sizes, 5)
    use_kernels(monkeypatch, compiled=True)
    got = sampler.sample(truth, sizes, 5)
    np.testing.assert_array_equal(got.matrix.indptr, want.matrix.indptr)
    np.testing.assert_array_equal(got.matrix.indices, want.matrix.indices)


@settings(max_examples=80, deadline=None)
@given(
    lens=st.lists(st.integers(1, 60), min_size=1, max_size=12),
    frac=st.floats(0, 1),
    levels=st.integers(1, 6),
    unit=st.booleans(),
    first_row=st.sampled_from([0, 7, 100_000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_compiled_block_selects_as_smallest_per_row(lens, frac, levels, unit, first_row, seed):
    """The compiled block keeps, in every part row, the pairs ``_smallest_per_row`` selects from the same
    keys: thresholds from the rows' weights, ties at the cut (few distinct draws, unit weights) broken by
    position, rows whose candidates fall short, a global first row in the keys."""
    from simrec.observation.samplers import _keep_block

    rng = np.random.default_rng(seed)
    lens = np.array(lens, dtype=np.int64)
    n_items = int(lens.max()) + 5
    indices = np.concatenate([np.sort(rng.choice(n_items, n, replace=False)) for n in lens]).astype(np.int32)
    indptr = np.concatenate(([0], np.cumsum(lens)))
    weight = np.ones(n_items) if unit else rng.integers(1, 50, n_items).astype(np.float64)
    eff = np.minimum(np.floor(frac * lens).astype(np.int64), lens - 1)  # every row keeps part of its pairs
    part = eff < lens
    x = rng.integers(0, levels, lens.sum()) / levels if unit else rng.standard_exponential(lens.sum())
    w = weight[indices]
    want = np.zeros(lens.sum(), dtype=bool)
    want[_smallest_per_row(x / w, lens, eff, w, first_row=first_row)] = True
    out = np.full(eff.sum() + 1, -1, dtype=np.int32)
    end = _keep_block(indptr, indices, 0, len(lens), part, eff, weight, x.copy(), first_row, out, 0)
    assert end == eff.sum()
    np.testing.assert_array_equal(out[:end], indices[want])
