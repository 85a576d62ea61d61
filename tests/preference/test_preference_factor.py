"""Dense low-rank truth with a popularity offset (issue 24): independent likes with pi = min(1, c_u w_ui)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import brentq
from scipy.special import ndtr

import simrec.preference.factor as factor_mod
from simrec.interactions import Interactions
from simrec.preference import LatentFactor, PreferenceModel
from simrec.preference.factor import _CHUNK, _block_likes


def _reference_pi(w: np.ndarray, n: float) -> np.ndarray:
    """min(1, c w) with sum = n, c by bracketing (the test's own solver: no water-filling)."""
    w = np.asarray(w, dtype=np.float64)
    if n >= (w > 0).sum():
        return (w > 0).astype(float)
    c = brentq(
        lambda c: np.minimum(1.0, c * w).sum() - n,
        0.0,
        1e3 * n / w[w > 0].min() + 1.0,
        xtol=1e-14,
        rtol=1e-14,
        maxiter=1000,
    )
    return np.minimum(1.0, c * w)


def _padded(w: np.ndarray) -> np.ndarray:
    """float32 weights padded with zero columns to a multiple of the chunk width."""
    width = -(-w.shape[1] // _CHUNK) * _CHUNK
    out = np.zeros((w.shape[0], width), dtype=np.float32)
    out[:, : w.shape[1]] = w
    return out


def _chi2_pvalue(obs: np.ndarray, exp: np.ndarray) -> float:
    """Chi-square GOF; impossible cells (expected 0) must be empty, the ones with fewer than 5 expected pooled."""
    assert obs[exp == 0].sum() == 0
    obs, exp = obs[exp > 0], exp[exp > 0]
    keep = exp >= 5
    o, e = obs[keep], exp[keep]
    if (~keep).any():
        o, e = np.append(o, obs[~keep].sum()), np.append(e, exp[~keep].sum())
    return stats.chisquare(o, e * o.sum() / e.sum()).pvalue


KINDS = [  # (weights of 5 items, target n): no cap, caps and pi > 1/2 cells, every item, tiny, one dominant item
    ([1.0, 2.0, 0.5, 3.0, 1.5], 1.2),
    ([0.2, 5.0, 1.0, 9.0, 0.4], 3.7),
    ([1.0, 1.0, 2.0, 0.1, 4.0], 5.0),
    ([1.0, 0.3, 0.7, 2.0, 1.0], 0.3),
    ([100.0, 1.0, 1.0, 1.0, 1.0], 2.0),
]


def test_exact_joint_law_on_five_items():
    # every kind's rows: the subset of liked items over all 2**5 subsets against the product of Bernoulli(pi_i),
    # pi from the test's own solver on the same float32 weights (chi-square)
    reps = 8000
    w = np.repeat(np.array([k[0] for k in KINDS]), reps, axis=0)
    targets = np.repeat([k[1] for k in KINDS], reps)
    rows, cols = _block_likes(np.random.default_rng(1), _padded(w), targets)
    code = np.zeros(len(w), dtype=np.int64)
    np.add.at(code, rows, 2 ** (4 - cols))
    subsets = list(itertools.product([0, 1], repeat=5))
    for k, (wk, n) in enumerate(KINDS):
        pi = _reference_pi(np.float32(wk), n)
        law = np.array([np.prod(np.where(s, pi, 1 - pi)) for s in subsets])
        obs = np.bincount(code[k * reps : (k + 1) * reps], minlength=32)
        if n >= 5:
            assert obs[31] == reps
            continue
        assert _chi2_pvalue(obs, law * reps) > 1e-4, k


@pytest.mark.parametrize("n_items, target", [(100, 7.0), (300, 180.0), (70, 69.5)])
def test_margins_on_many_items_against_the_water_filling(n_items, target):
    # items over several chunks, heavy-tailed weights: each item's like frequency within its binomial SE of pi,
    # sum of z^2 against chi2(items) (independent items); the mean profile equals the target
    rng = np.random.default_rng(2)
    wk = np.exp(2.0 * rng.standard_normal(n_items))
    pi = _reference_pi(np.float32(wk), target)
    reps = 3000
    rows, cols = _block_likes(np.random.default_rng(3), _padded(np.tile(wk, (reps, 1))), np.full(reps, target))
    freq = np.bincount(cols, minlength=n_items) / reps
    inner = (pi > 0) & (pi < 1)
    z2 = (freq - pi)[inner] ** 2 / (pi * (1 - pi) / reps)[inner]
    assert stats.chi2.sf(z2.sum(), inner.sum()) > 1e-4
    assert np.all(freq[pi == 1] == 1)
    sizes = np.bincount(rows, minlength=reps)
    assert abs(sizes.mean() - target) < 4 * np.sqrt((pi * (1 - pi)).sum() / reps) + 1e-9


def _kernel_caps(w: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, ...]:
    """The compiled water-filling of padded weight rows ``w`` at tau = 1/2: (scale, rest, ptr, cols, count)."""
    from simrec.preference._factor_kernel import chunk_stats, row_caps

    n, n_chunks = len(w), w.shape[1] // _CHUNK
    sums, tops = np.empty((n, n_chunks)), np.empty((n, n_chunks), dtype=np.float32)
    chunk_stats(w, _CHUNK, sums, tops)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.floor(targets / 0.5).astype(np.int64) + 1, out=ptr[1:])
    scale, rest = np.empty(n), np.empty(n)
    cols, pis, count = np.empty(ptr[-1], dtype=np.int64), np.empty(ptr[-1]), np.empty(n, dtype=np.int64)
    row_caps(w, sums, tops, _CHUNK, targets, 0.5, scale, rest, ptr, cols, pis, count)
    return scale, rest, ptr, cols, count


def test_kernel_scales_match_the_reference_on_random_rows():
    # the compiled water-filling (collection rounds included) against the test's solver, row by row
    rng = np.random.default_rng(4)
    n, m = 60, 200
    w = _padded(np.exp(rng.normal(0, rng.uniform(0.1, 4.0, (n, 1)), (n, m))))
    targets = np.concatenate((rng.uniform(0.1, 20, 30), rng.uniform(150, 200, 25), [200.0] * 5))
    scale, rest, ptr, cols, count = _kernel_caps(w, targets)
    for r in range(n):
        ref = _reference_pi(w[r, :m], targets[r])
        got = np.minimum(1.0, scale[r] * w[r, :m].astype(np.float64)) if np.isfinite(scale[r]) else np.ones(m)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
        big = np.flatnonzero(ref > 0.5)
        assert cols[ptr[r] : ptr[r] + count[r]].tolist() == big.tolist()
        np.testing.assert_allclose(
            rest[r], w[r].astype(np.float64).sum() - w[r, big].astype(np.float64).sum(), rtol=1e-9, atol=1e-9
        )


def test_kernel_water_filling_stays_in_its_room_when_a_few_cells_carry_a_row():
    """Rows whose few largest cells carry all but ~1e-20 of the weight (strong signal or popularity: log-weights
    spread by 10-40): the weight outside the capped set is a sum of its cells, not the total minus the capped
    mass (rounding noise there made c overshoot, more than floor(n / tau) + 1 cells pass tau and the kernel
    write past the row's room: a segfault at s = 20, gamma = 6). Every row matches the float64 reference."""
    rng = np.random.default_rng(11)
    n, m = 80, 300
    lw = rng.normal(0, rng.uniform(10, 40, (n, 1)), (n, m))
    w = _padded(np.exp(lw - lw.max(axis=1, keepdims=True) + 80.0).astype(np.float32))  # as generate's shift
    targets = rng.uniform(0.5, 60, n)
    scale, rest, ptr, cols, count = _kernel_caps(w, targets)
    assert np.all(count <= np.diff(ptr))
    for r in range(n):
        positive = int((w[r] > 0).sum())
        wr = w[r, :m].astype(np.float64)
        ref = _reference_pi(wr / wr.max(), min(targets[r], positive))  # scaled: pi is scale-free
        got = np.minimum(1.0, scale[r] * w[r, :m].astype(np.float64)) if np.isfinite(scale[r]) else (w[r, :m] > 0)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
        assert cols[ptr[r] : ptr[r] + count[r]].tolist() == np.flatnonzero(ref > 0.5).tolist()


def test_a_strongly_peaked_world_draws_without_fault():
    """The case the calibration found (issue 24): 400 users, K = 2, s = 20, gamma = 6 used to write past the
    kernel's buffers; it draws, and each user's likes stay within what the water-filling allows."""
    m = LatentFactor(400, 3706, 2, 20.0, 6.0, 82.8, 0.6744667844096758)
    x = m.generate(np.random.default_rng(0))
    assert 0 < x.n_pairs < 1.2 * m.expected_pairs()


def test_like_probability_is_the_water_filling():
    m = LatentFactor(6, 40, 3, 1.5, 1.0, 10.0)
    rng = np.random.default_rng(5)
    v, zeta = m._item_factors(rng)
    u, _ = m._user_factors(rng, 6)
    targets = np.array([0.5, 3.0, 10.0, 25.0, 39.9, 40.0])
    pi = m.like_probability(u, v, zeta, targets)
    np.testing.assert_allclose(pi.sum(axis=1), targets, rtol=1e-9)
    lw = m.log_weights(u, v, zeta)
    for r in range(6):
        np.testing.assert_allclose(pi[r], _reference_pi(np.exp(lw[r] - lw[r].max()), targets[r]), rtol=1e-8, atol=1e-12)


def test_like_probability_when_a_few_cells_carry_the_row():
    """Three cells with log-weight 36 above the other seven, target 3.5: the three are capped and the seven share
    0.5. The weight outside the capped cells is their own sum (as the total less the capped ones it was rounding
    noise: the seven got 0.0653 each, a row sum of 3.457; found by issue 24's clustered world)."""
    m = LatentFactor(1, 10, 1, 40.0, 0.0, 2.0)
    v = np.array([[1.0]] * 3 + [[0.1]] * 7)
    pi = m.like_probability(np.array([[1.0]]), v, np.zeros(10), np.array([3.5]))
    np.testing.assert_allclose(pi[0], [1.0] * 3 + [0.5 / 7] * 7, rtol=1e-12)


def test_generate_canonical_graded_reproducible_and_preference_is_phi_of_the_affinity():
    m = LatentFactor(300, 90, 4, 1.75, 1.75, 12.0, 0.8)
    x, y, z = m.generate(7), m.generate(7), m.generate(8)
    ref = Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape)
    assert x.matrix.shape == (300, 90) and (ref.matrix != x.matrix).nnz == 0
    assert (x.matrix != y.matrix).nnz == 0 and (x.matrix != z.matrix).nnz > 0
    assert x.preference is x.gains and x.preference.dtype == np.float32
    assert isinstance(m, PreferenceModel) and m.expected_items() == 90
    # one block: the draws are v, zeta, then u, eps of every user
    gen = np.random.default_rng(7)
    v, zeta = m._item_factors(gen)
    u, targets = m._user_factors(gen, 300)
    rows, cols = x.row_of_pairs(), x.matrix.indices
    np.testing.assert_allclose(x.preference, ndtr((u[rows] * v[cols]).sum(axis=1) / 2.0), rtol=1e-6)
    np.testing.assert_allclose(x.pair_preference(), x.preference, rtol=1e-7)
    # the liked pairs carry the larger weights: their affinity is above the average pair's
    assert (u[rows] * v[cols]).sum(axis=1).mean() > 0.5


def test_expected_pairs_exact():
    m = LatentFactor(400, 120, 3, 1.0, 1.0, 30.0, 1.2)  # the lognormal targets cross the cap at 120
    pairs = np.array([m.generate(20 + s).n_pairs for s in range(30)], dtype=float)
    assert abs(pairs.mean() - m.expected_pairs()) < 4 * pairs.std(ddof=1) / np.sqrt(len(pairs))
    rng = np.random.default_rng(9)
    x = np.minimum(120.0, 30.0 * np.exp(1.2 * rng.standard_normal(10**6) - 0.72))
    assert m.expected_pairs() == pytest.approx(400 * x.mean(), rel=3e-3)
    assert LatentFactor(10, 50, 2, 1.0, 1.0, 80.0, 0.0).expected_pairs() == 500.0  # min(I, lam) per user


def test_full_targets_like_everything_and_zero_signal_is_popularity_only():
    x = LatentFactor(20, 15, 2, 1.0, 1.0, 1e6, 0.0).generate(0)  # n_u = I for every user
    assert x.n_pairs == 20 * 15
    # s = 0: likes depend on the item alone; popular items (large zeta) liked by more users
    m = LatentFactor(3000, 30, 2, 0.0, 1.5, 5.0, 0.0)
    x = m.generate(1)
    gen = np.random.default_rng(1)
    v, zeta = m._item_factors(gen)
    u, _ = m._user_factors(gen, 3000)
    assert stats.spearmanr(zeta, x.item_counts()).statistic > 0.9
    # the affinity still grades the likes but no longer selects them: the liked pairs' preference has the law of
    # Phi(z) over all pairs
    every = ndtr((u @ v.T).ravel() / math.sqrt(2))
    assert stats.ks_2samp(x.preference, every).pvalue > 1e-3


def test_many_blocks_same_law(monkeypatch):
    m = LatentFactor(200, 70, 3, 1.5, 1.0, 9.0, 0.5)
    one = np.array([m.generate(60 + s).user_counts().mean() for s in range(25)])
    monkeypatch.setattr(factor_mod, "_BLOCK_BYTES", 4 * 96 * 3)  # 3 users per block (70 items pad to 96)
    many = np.array([m.generate(90 + s).user_counts().mean() for s in range(25)])
    assert stats.ttest_ind(one, many, equal_var=False).pvalue > 1e-3
    x = m.generate(3)
    assert (Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape).matrix != x.matrix).nnz == 0


def test_extreme_weights_stay_finite():
    # s = 8, gamma = 5: log-weights far beyond float32's exp range; the per-user shift keeps them finite
    x = LatentFactor(50, 40, 2, 8.0, 5.0, 6.0, 0.5).generate(4)
    assert x.n_pairs > 0 and np.isfinite(x.preference).all() and x.preference.min() > 0


@settings(max_examples=40, deadline=None)
@given(
    n_users=st.integers(1, 25),
    n_items=st.integers(1, 80),
    K=st.integers(1, 4),
    signal=st.sampled_from([0.0, 0.5, 1.75, 4.0]),
    gamma=st.sampled_from([0.0, 1.0, 2.5]),
    lam=st.sampled_from([0.2, 3.0, 40.0, 500.0]),
    sd=st.sampled_from([0.0, 1.0, 2.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariants(n_users, n_items, K, signal, gamma, lam, sd, seed):
    m = LatentFactor(n_users, n_items, K, signal, gamma, lam, sd)
    x = m.generate(seed)
    ref = Interactions.from_pairs(x.row_of_pairs(), x.matrix.indices, (n_users, n_items))
    assert x.matrix.shape == (n_users, n_items) and (ref.matrix != x.matrix).nnz == 0
    assert len(x.preference) == x.n_pairs and (x.n_pairs == 0 or (x.preference.min() > 0 and x.preference.max() <= 1))
    assert 0 < m.expected_pairs() <= n_users * n_items * (1 + 1e-12)
    assert math.isfinite(m.expected_pairs())


def test_slices_of_a_block_draw_the_same_numbers(monkeypatch):
    # the block computed slice by slice (28 rows: the fewest that keep OpenBLAS's large-matrix kernel here) or in one
    # product: the same weights, so the same likes and preferences bit for bit
    m = LatentFactor(200, 3000, 10, 2.0, 2.5, 40.0, 0.8)
    monkeypatch.setattr(factor_mod, "_SUB_BYTES", 1)
    assert factor_mod._sub_rows(3008, 12) == 28
    sliced = m.generate(11)
    monkeypatch.setattr(factor_mod, "_SUB_BYTES", 1 << 40)
    whole = m.generate(11)
    assert np.array_equal(sliced.matrix.indptr, whole.matrix.indptr)
    assert np.array_equal(sliced.matrix.indices, whole.matrix.indices)
    assert np.array_equal(sliced.preference.view(np.int32), whole.preference.view(np.int32))


def test_row_slices_cover_the_rows_once():
    for n, sub in [(1, 3), (5, 3), (6, 3), (7, 3), (100, 7), (627, 39)]:
        s = factor_mod._row_slices(n, sub)
        assert s[0][0] == 0 and s[-1][1] == n and all(a[1] == b[0] for a, b in zip(s, s[1:]))
        assert all(sub <= r1 - r0 < 2 * sub for r0, r1 in s) or len(s) == 1


def _thin_reference(w, sums, chunk, scale, cand_ptr, x, accept, m):
    """The thinning as first written (binary search over the chunks, scan, the logarithm for every candidate)."""
    out = np.empty(len(x), dtype=np.int64)
    n_chunks = w.shape[1] // chunk
    for r in range(w.shape[0]):
        cum = np.cumsum(sums[r])  # sequential float64, as the kernel's
        acc = cum[-1]
        for q in range(cand_ptr[r], cand_ptr[r + 1]):
            target = x[q] * acc
            lo, hi = 0, n_chunks - 1
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if cum[mid] > target else (mid + 1, hi)
            resid = target - (cum[lo - 1] if lo > 0 else 0.0)
            run, pick = 0.0, -1
            for j in range(lo * chunk, (lo + 1) * chunk):
                run += float(w[r, j])
                if run > resid:
                    pick = j
                    break
            if pick >= 0:
                pi = scale[r] * float(w[r, pick])
                if not accept[q] * m * pi < -math.log1p(-pi):
                    pick = -1
            out[q] = pick
    return out


def test_thinning_kernel_picks_what_the_plain_search_picks():
    # the guide-table walk and the logarithm-free acceptance against the plain algorithm: the same cell or rejection
    # for every candidate (rows of zeros, empty chunks, pi from 1e-9 up to tau, acceptance uniforms at the boundary)
    from simrec.preference._factor_kernel import chunk_stats, thin_rows

    rng = np.random.default_rng(12)
    n, m_items = 40, 700
    w = _padded(np.exp(rng.normal(0, rng.uniform(0.1, 5.0, (n, 1)), (n, m_items))))
    w[3] = 0.0
    w[5, 64:400] = 0.0
    w[rng.random(w.shape) < 0.2] = 0.0
    sums = np.empty((n, w.shape[1] // _CHUNK))
    chunk_stats(w, _CHUNK, sums, np.empty(sums.shape, dtype=np.float32))
    scale = np.where(sums.sum(axis=1) > 0, 0.5 / np.maximum(w.max(axis=1), 1e-30), 0.0)  # pi <= 1/2
    scale[7] = 1e-9 / w[7].max()
    cand = rng.integers(0, 300, n)
    cand_ptr = np.concatenate(([0], np.cumsum(cand)))
    x, accept = rng.random(cand_ptr[-1]), rng.random(cand_ptr[-1])
    accept[::7] = 1 / factor_mod._M  # lhs = pi: at the series bound
    got = np.empty(cand_ptr[-1], dtype=np.int64)
    thin_rows(w.copy(), sums.copy(), _CHUNK, scale, cand_ptr, x, accept, factor_mod._M, got)
    ref = _thin_reference(w, sums, _CHUNK, scale, cand_ptr, x, accept, factor_mod._M)
    assert np.array_equal(got, ref)
    assert (got >= 0).sum() > 1000 and (got[cand_ptr[3] : cand_ptr[4]] == -1).all()
