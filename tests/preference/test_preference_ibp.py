"""Three-parameter IBP (thesis §3.1.2): item-wise sampler vs theory and vs the user-wise process."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, gammaln

from simrec.preference import IBP


def g(n, c, s):
    """Γ(1+c)Γ(n+c+σ)/(Γ(n+1+c)Γ(c+σ)), the new-item rate factor of user n+1 (docs/design.md §1)."""
    return np.exp(gammaln(1 + c) + gammaln(n + c + s) - gammaln(n + 1 + c) - gammaln(c + s))


def userwise(U, alpha, c, s, rng):
    """Literal sequential IBP (docs/design.md §1): returns (per-user like counts, item popularities)."""
    m = np.zeros(0)
    likes = np.zeros(U, dtype=int)
    for n in range(U):
        old = rng.random(len(m)) < (m - s) / (n + c)
        new = rng.poisson(alpha * g(n, c, s))
        m[old] += 1
        m = np.concatenate((m, np.ones(new)))
        likes[n] = old.sum() + new
    return likes, m.astype(int)


def exact_popularity_means(U, alpha, c, s):
    """E[K_m], m = 1..U: items first liked by user f have 1 + BetaBinom(U-1-f, 1-σ, f+c+σ) likers."""
    f = np.arange(U)[:, None]
    m = np.arange(1, U + 1)[None, :]
    pmf = stats.betabinom.pmf(m - 1, U - 1 - f, 1 - s, f + c + s)
    return (alpha * g(np.arange(U), c, s)) @ pmf


def test_expected_items_closed_forms():
    U, alpha = 1000, 7.0
    H = np.sum(1.0 / np.arange(1, U + 1))
    assert IBP(U, alpha, 1.0, 0.0).expected_items() == pytest.approx(alpha * H, rel=1e-12)
    c = 2.5  # sigma = 0: sum of c/(n+c) = c (psi(U+c) - psi(c))
    assert IBP(U, alpha, c, 0.0).expected_items() == pytest.approx(alpha * c * (digamma(U + c) - digamma(c)), rel=1e-10)
    for c, s in [(1.0, 0.5), (0.3, 0.8), (-0.2, 0.4)]:  # sigma > 0: alpha((U+c) g(U) - c)/sigma
        want = alpha * ((U + c) * g(U, c, s) - c) / s
        assert IBP(U, alpha, c, s).expected_items() == pytest.approx(want, rel=1e-10)
    assert IBP(U, alpha, 1.0, 0.5).expected_pairs() == alpha * U


@pytest.mark.parametrize("c,s", [(1.0, 0.0), (3.0, 0.0), (0.5, 0.5), (-0.3, 0.8)])
def test_number_of_items_and_pairs_match_theory(c, s):
    U, alpha, S = 300, 6.0, 40
    m = IBP(U, alpha, c, s)
    ks, pairs = [], []
    for seed in range(S):
        x = m.generate(seed)
        ks.append(x.n_items)
        pairs.append(x.n_pairs)
        if seed == 0:
            assert np.all(x.item_counts() >= 1)  # only liked items are columns
    # number of items is Poisson(expected_items): var = mean
    e = m.expected_items()
    assert abs(np.mean(ks) - e) < 4 * np.sqrt(e / S)
    assert abs(np.mean(pairs) - alpha * U) < 4 * np.std(pairs, ddof=1) / np.sqrt(S)


@pytest.mark.parametrize("c,s", [(1.0, 0.0), (0.5, 0.4), (2.0, 0.8)])
def test_popularity_histogram_matches_exact_expectation(c, s):
    # K_m (items liked by exactly m users) are independent Poisson(E[K_m]) by
    # Poisson thinning, so pooled counts give a chi-square GOF with one df per bin
    U, alpha, S = 200, 8.0, 30
    expected = S * exact_popularity_means(U, alpha, c, s)
    observed = np.zeros(U)
    for seed in range(S):
        pop = IBP(U, alpha, c, s).generate(100 + seed).item_counts()
        observed += np.bincount(pop, minlength=U + 1)[1:]
    keep = expected >= 5
    o = np.append(observed[keep], observed[~keep].sum())
    e = np.append(expected[keep], expected[~keep].sum())
    chi2 = ((o - e) ** 2 / e).sum()
    assert stats.chi2.sf(chi2, len(e)) > 1e-3


def test_larger_sigma_heavier_popularity_tail():
    # share of items liked by one user: -> sigma as U grows (power law), small for sigma = 0
    U, S = 500, 10
    shares, ses = [], []
    for s in (0.0, 0.4, 0.8):
        m = IBP(U, 10.0, 1.0, s)
        pops = np.concatenate([m.generate(200 + i).item_counts() for i in range(S)])
        e = exact_popularity_means(U, 10.0, 1.0, s)
        share = np.mean(pops == 1)
        se = np.sqrt(share * (1 - share) / len(pops))
        assert abs(share - e[0] / e.sum()) < 4 * se + 0.01  # exact expected share (ratio of means)
        shares.append(share)
        ses.append(se)
    assert shares[1] - shares[0] > 4 * np.hypot(ses[0], ses[1])
    assert shares[2] - shares[1] > 4 * np.hypot(ses[1], ses[2])


@pytest.mark.parametrize("c,s", [(1.0, 0.0), (0.5, 0.6)])
def test_itemwise_agrees_with_userwise_process(c, s):
    U, alpha, S = 30, 3.0, 500
    rng = np.random.default_rng(11)
    ref_k, ref_pairs, ref_pop, ref_last = [], [], [], []
    for _ in range(S):
        likes, pop = userwise(U, alpha, c, s, rng)
        ref_k.append(len(pop))
        ref_pairs.append(likes.sum())
        ref_pop.append(pop)
        ref_last.append(likes[-1])
    got_k, got_pairs, got_pop, got_last = [], [], [], []
    m = IBP(U, alpha, c, s)
    for seed in range(S):
        x = m.generate(1000 + seed)
        got_k.append(x.n_items)
        got_pairs.append(x.n_pairs)
        got_pop.append(x.item_counts())
        got_last.append(x.user_counts()[-1])
    assert stats.ks_2samp(ref_k, got_k).pvalue > 1e-3
    assert stats.ks_2samp(ref_pairs, got_pairs).pvalue > 1e-3
    for ref, got in ((ref_k, got_k), (ref_pairs, got_pairs)):  # Welch t: more power on the means
        assert stats.ttest_ind(ref, got, equal_var=False).pvalue > 1e-3
    assert stats.ks_2samp(ref_last, got_last).pvalue > 1e-3
    # pooled popularity: chi-square homogeneity on bins 1, 2, 3-4, 5-8, 9+
    edges = [1, 2, 3, 5, 9, U + 1]
    table = [np.histogram(np.concatenate(p), bins=edges)[0] for p in (ref_pop, got_pop)]
    assert stats.chi2_contingency(table).pvalue > 1e-3
    # exchangeability: the last user likes Poisson(alpha) items on average, in both
    for last in (ref_last, got_last):
        assert abs(np.mean(last) - alpha) < 4 * np.sqrt(alpha / S)


def test_columns_in_order_of_first_appearance_and_canonical():
    x = IBP(400, 5.0, 1.0, 0.5).generate(3)
    mat = x.matrix.tocsc()
    first = np.array([mat.indices[mat.indptr[j] : mat.indptr[j + 1]].min() for j in range(x.n_items)])
    assert np.all(np.diff(first) >= 0)
    assert first[0] == 0 or x.user_counts()[: first[0]].sum() == 0
    ref = type(x).from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape)
    assert (ref.matrix != x.matrix).nnz == 0  # sorted, unique column indices per row


def test_single_user_and_empty_rows_kept():
    x = IBP(1, 4.0, 1.0, 0.5).generate(0)
    assert x.n_users == 1 and x.n_pairs == x.n_items
    y = IBP(500, 0.05, 1.0, 0.0).generate(0)  # tiny alpha: most users like nothing
    assert y.n_users == 500 and (y.user_counts() == 0).sum() > 400


def test_same_seed_same_matrix():
    m = IBP(300, 10.0, 1.0, 0.3)
    a, b, c = m.generate(9), m.generate(9), m.generate(10)
    assert a.matrix.shape == b.matrix.shape and (a.matrix != b.matrix).nnz == 0
    assert a.matrix.shape != c.matrix.shape or (a.matrix != c.matrix).nnz > 0


def test_compiled_transposition_equals_scipys(monkeypatch):
    """Issue 29: large truths are stored by a counting sort of the pattern; the arrays equal scipy's CSC -> CSR."""
    from simrec.preference import ibp

    model = IBP(300, 8.0, 2.0, 0.3)
    monkeypatch.setattr(ibp, "_KERNEL_MIN_PAIRS", 0)
    kernel = model.generate(11).matrix
    monkeypatch.setattr(ibp, "_KERNEL_MIN_PAIRS", 2**62)
    monkeypatch.delitem(sys.modules, "numba", raising=False)  # as in a process that has not loaded numba
    plain = model.generate(11).matrix
    for a, b in ((kernel.indptr, plain.indptr), (kernel.indices, plain.indices), (kernel.data, plain.data)):
        np.testing.assert_array_equal(a, b, strict=True)
    assert kernel.shape == plain.shape and kernel.has_canonical_format


def test_pattern_to_csr_matches_scipy_on_random_patterns():
    import scipy.sparse as sp

    from simrec._transpose_kernel import pattern_to_csr

    rng = np.random.default_rng(3)
    cases = ((1, 1, 1.0), (7, 0, 0.5), (0, 4, 0.5), (50, 30, 0.2), (200, 90, 0.05), (9000, 40, 0.02), (4096, 3, 0.5))
    for n_rows, n_cols, density in cases:  # the last two: several buckets of 2**9 rows, one ending at n_rows
        dense = rng.random((n_rows, n_cols)) < density
        csc = sp.csc_array(dense.astype(np.int8))
        for dtype in (np.int32, np.int64):
            indptr, indices = pattern_to_csr(csc.indptr, csc.indices, n_rows, dtype)
            want = sp.csr_array(dense.astype(np.int8))
            assert indptr.dtype == dtype and indices.dtype == dtype
            np.testing.assert_array_equal(indptr, want.indptr)
            np.testing.assert_array_equal(indices, want.indices)


def test_pattern_to_csr_with_and_without_packed_entries():
    """The first pass packs (row in bucket, column) into one int32 index up to 2**22 columns; past that the
    rows within their buckets go to a side array (int64 indices still pack): the same CSR either way."""
    import scipy.sparse as sp

    from simrec._transpose_kernel import pattern_to_csr

    rng = np.random.default_rng(8)
    n_rows, n_cols, nnz = 5000, (1 << 22) + 3, 30_000
    cells = np.unique(rng.integers(0, n_rows * n_cols, nnz))
    rows, cols = np.divmod(cells, n_cols)
    csc = sp.csc_array((np.ones(len(cells), np.int8), (rows, cols)), shape=(n_rows, n_cols))
    want = csc.tocsr()
    want.sort_indices()
    for dtype in (np.int32, np.int64):  # int32: the side array; int64: packed
        indptr, indices = pattern_to_csr(csc.indptr, csc.indices, n_rows, dtype)
        np.testing.assert_array_equal(indptr, want.indptr)
        np.testing.assert_array_equal(indices, want.indices)
