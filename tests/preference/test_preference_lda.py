"""LDA true-preference model (thesis §3.1.3)."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

import simrec.preference.lda as lda_mod
from simrec.preference import LDA
from simrec.preference.lda import _TopicStreams


def test_canonical_shape_reproducible():
    m = LDA(500, 80, 6, 40.0, 0.3, 0.2)
    x, y, z = m.generate(0), m.generate(0), m.generate(1)
    assert x.matrix.shape == (500, 80)
    ref = type(x).from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape)
    assert (ref.matrix != x.matrix).nnz == 0  # no duplicate pairs, sorted rows
    assert (x.matrix != y.matrix).nnz == 0 and (x.matrix != z.matrix).nnz > 0
    assert x.user_counts().max() <= 80


def test_profile_size_is_lambda_minus_exact_dedup_amount():
    # given theta and phi, item i's draw count is Poisson(lam (theta phi)_i) independently
    # over items, so |I_u| is a sum of independent Bernoulli(1 - exp(-lam (theta_u phi)_i))
    m = LDA(3000, 200, 5, 30.0, 0.3, 0.5)
    rng = np.random.default_rng(4)
    phi = m._sample_phi(rng)
    theta = rng.dirichlet(np.full(m.n_topics, m.a), size=m.n_users)
    streams = _TopicStreams(phi, rng, m.lam * m.n_users / m.n_topics)
    counts, items, likes = m._block_pairs(streams, rng.poisson(m.lam * theta))
    p = -np.expm1(-m.lam * theta @ phi)  # (users, items) inclusion probabilities
    e, v = p.sum(), (p * (1 - p)).sum()
    assert abs(counts.sum() - e) < 4 * np.sqrt(v)
    assert e / m.n_users < m.lam - 1  # the de-duplication loss is real here
    # per item: independent across users and items -> sum of z^2 ~ chi2(n_items)
    obs = np.bincount(items, minlength=m.n_items)
    z2 = (obs - p.sum(0)) ** 2 / (p * (1 - p)).sum(0)
    assert stats.chi2.sf(z2.sum(), m.n_items) > 1e-3


@pytest.mark.parametrize("chunk_items", [4.0, 0.1])  # multinomial+shuffle refills, search refills
def test_topic_streams_are_iid_from_phi(chunk_items):
    rng = np.random.default_rng(5)
    phi = rng.dirichlet(np.full(50, 0.7), size=3)
    s = _TopicStreams(phi, rng, chunk_items * 50)
    takes = [s.take(1, n) for n in (3, 0, 17, 250, 1, 90, 400, 33)]
    draws = np.concatenate(takes)
    assert all(len(t) == n for t, n in zip(takes, (3, 0, 17, 250, 1, 90, 400, 33)))
    obs = np.bincount(draws, minlength=50)
    exp = phi[1] * len(draws)
    keep = exp >= 5
    o = np.append(obs[keep], obs[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    assert stats.chisquare(o, e).pvalue > 1e-3
    # consecutive draws independent: lag-1 pairs (same, different) vs sum(phi^2)
    same = np.mean(draws[1:] == draws[:-1])
    q = (phi[1] ** 2).sum()
    assert abs(same - q) < 4 * np.sqrt(q * (1 - q) / (len(draws) - 1)) + 1e-9


def test_many_blocks_same_law_as_one_block(monkeypatch):
    m = LDA(400, 60, 4, 25.0, 0.5, 0.5)
    one = [m.generate(50 + i).n_pairs / m.n_users for i in range(30)]
    monkeypatch.setattr(lda_mod, "_BLOCK_CELLS", 60 * 7)  # 7 users per block
    many = [m.generate(90 + i).n_pairs / m.n_users for i in range(30)]
    # phi is drawn per dataset, so compare dataset-level means (Welch t)
    assert stats.ttest_ind(one, many, equal_var=False).pvalue > 1e-3
    x = m.generate(3)
    ref = type(x).from_pairs(x.row_of_pairs(), x.matrix.indices, x.matrix.shape)
    assert (ref.matrix != x.matrix).nnz == 0


def _poisson_dirmult_pmf(c, lam, a):
    """P(C_u = c) for n ~ Poisson(lam) and C | n ~ Dirichlet-multinomial(n, a 1_K): the law of C_k ~ Poisson(lam
    theta_k), theta ~ Dirichlet(a 1_K)."""
    c = np.asarray(c, dtype=float)
    K, n = len(c), c.sum()
    lp = -lam + n * np.log(lam) - gammaln(n + 1)  # Poisson(lam) total
    lp += (
        gammaln(n + 1)
        - gammaln(c + 1).sum()
        + gammaln(K * a)
        - gammaln(n + K * a)
        + (gammaln(c + a) - gammaln(a)).sum()
    )
    return np.exp(lp)


@pytest.mark.slow
@pytest.mark.parametrize("K, a, lam", [(3, 0.5, 3.0), (2, 0.05, 6.0), (4, 2.0, 2.0)])
def test_topic_counts_follow_the_poisson_dirichlet_multinomial_law(K, a, lam):
    # the whole joint law of a user's counts (every cell with >= 5 expected users, the rest pooled): chi-square
    m = LDA(1, 5, K, lam, a, 1.0)
    C = m._topic_counts(np.random.default_rng(6), 60_000)
    seen = Counter(map(tuple, C.tolist()))
    cells = [
        c
        for c in itertools.product(range(40), repeat=K)
        if sum(c) <= 40 and _poisson_dirmult_pmf(c, lam, a) * len(C) >= 5
    ]
    exp = np.array([_poisson_dirmult_pmf(c, lam, a) * len(C) for c in cells])
    obs = np.array([seen.get(c, 0) for c in cells])
    assert stats.chisquare(np.append(obs, len(C) - obs.sum()), np.append(exp, len(C) - exp.sum())).pvalue > 1e-3


def test_topic_counts_moments_with_many_topics_and_long_profiles():
    # E[C_k] = lam / K and Var[C_k] = lam / K + lam^2 (K - 1) / (K^2 (K a + 1)) (Poisson mixed over a Beta
    # margin of theta); a = 0.1, K = 100, lam = 150 as at Steam size in bench_generators.py
    K, a, lam, n = 100, 0.1, 150.0, 20_000
    C = LDA(1, 5, K, lam, a, 1.0)._topic_counts(np.random.default_rng(7), n).astype(float)
    mean, var = lam / K, lam / K + lam**2 * (K - 1) / (K**2 * (K * a + 1))
    assert abs(C.mean() - mean) < 4 * np.sqrt(lam / n) / K  # C.mean() = mean total / K, totals Poisson(lam)
    per_topic = C.var(axis=0, ddof=1)  # K exchangeable, nearly independent estimates of var
    assert abs(per_topic.mean() - var) < 4 * per_topic.std(ddof=1) / np.sqrt(K)
    assert abs(C.sum(axis=1).var(ddof=1) / lam - 1) < 4 * np.sqrt(2 / n)  # totals Poisson(lam): variance lam


def test_urn_kernel_equals_a_literal_urn():
    # the compiled urn against the urn written out draw by draw, on the same uniforms
    from simrec.preference._urn_kernel import urn_topic_counts

    rng = np.random.default_rng(8)
    K, a = 5, 0.3
    per_user = rng.integers(0, 12, 40)
    x = rng.random(int(per_user.sum()))
    got = np.zeros((40, K), dtype=np.int64)
    urn_topic_counts(x, per_user, a, got)
    want = np.zeros((40, K), dtype=np.int64)
    t = 0
    for u, n_u in enumerate(per_user):  # test reference: the urn's definition, one draw at a time
        topics = []
        for i in range(n_u):
            if x[t] < K * a / (K * a + i):
                k = min(int(x[t] * (K * a + i) / a), K - 1)
            else:
                k = topics[min(int(x[t] * (K * a + i) - K * a), i - 1)]
            topics.append(k)
            want[u, k] += 1
            t += 1
    np.testing.assert_array_equal(got, want)


def test_small_a_concentrates_users_on_few_topics():
    # with peaked topics (small b), a user on one topic re-draws the same items:
    # fewer distinct likes per user than a user mixing all topics
    sizes = {}
    for a in (0.02, 5.0):
        per_dataset = [LDA(300, 400, 20, 60.0, a, 0.05).generate(70 + i).user_counts().mean() for i in range(8)]
        sizes[a] = np.array(per_dataset)
    diff = sizes[5.0].mean() - sizes[0.02].mean()
    se = np.hypot(sizes[5.0].std(ddof=1), sizes[0.02].std(ddof=1)) / np.sqrt(8)
    assert diff > 4 * se


def test_expected_pairs_bound_and_items():
    m = LDA(100, 50, 3, 80.0, 0.5, 0.5)
    assert m.expected_pairs() == 100 * 50  # min(lam, n_items) per user
    assert LDA(100, 500, 3, 80.0, 0.5, 0.5).expected_pairs() == 100 * 80
    assert m.expected_items() == 50
    x = m.generate(0)
    assert x.n_pairs <= m.expected_pairs()


def test_users_without_draws_kept():
    x = LDA(300, 20, 2, 0.5, 0.5, 0.5).generate(8)  # P(no draw) = e^-0.5
    empty = (x.user_counts() == 0).mean()
    assert x.n_users == 300
    assert abs(empty - np.exp(-0.5)) < 4 * np.sqrt(np.exp(-0.5) * (1 - np.exp(-0.5)) / 300)


# -- like counts (graded truth, issue 11) ---------------------------------------


def test_like_counts_sum_to_each_users_draws():
    # a user's like counts must add up
    # to its number of draws exactly (de-duplication only merges, it never drops a draw)
    m = LDA(700, 90, 4, 35.0, 0.2, 0.1)
    rng = np.random.default_rng(21)
    phi = m._sample_phi(rng)
    streams = _TopicStreams(phi, rng, m.lam * m.n_users / m.n_topics)
    draws = m._topic_counts(rng, m.n_users)
    counts, items, likes = m._block_pairs(streams, draws)
    users = np.repeat(np.arange(m.n_users), counts)
    assert likes.dtype == np.int32 and likes.min() >= 1 and len(likes) == len(items)
    np.testing.assert_array_equal(np.bincount(users, weights=likes, minlength=m.n_users), draws.sum(axis=1))
    assert (likes > 1).mean() > 0.2  # peaked topics (b = 0.1): counts really are graded here


def test_like_counts_follow_poisson_given_theta_and_phi():
    # given theta and phi, c_ui ~ Poisson(mu_ui), mu = lam theta phi, independently, so
    # (1) item totals sum_u c_ui ~ Poisson(sum_u mu_ui), independent over items: chi-square;
    # (2) the number of pairs liked at least twice has mean sum P(c >= 2) = 1 - e^-mu (1 + mu)
    m = LDA(2500, 150, 5, 25.0, 0.3, 0.3)
    rng = np.random.default_rng(22)
    phi, theta = m._sample_phi(rng), rng.dirichlet(np.full(m.n_topics, m.a), size=m.n_users)
    streams = _TopicStreams(phi, rng, m.lam * m.n_users / m.n_topics)
    counts, items, likes = m._block_pairs(streams, rng.poisson(m.lam * theta))
    mu = m.lam * theta @ phi
    obs = np.bincount(items, weights=likes, minlength=m.n_items)
    exp = mu.sum(axis=0)
    keep = exp >= 5
    o, e = np.append(obs[keep], obs[~keep].sum()), np.append(exp[keep], exp[~keep].sum())
    z2 = ((o - e) ** 2 / e).sum()  # Poisson: variance = mean
    assert stats.chi2.sf(z2, len(o)) > 1e-3
    p2 = -np.expm1(-mu) - mu * np.exp(-mu)
    assert abs((likes >= 2).sum() - p2.sum()) < 4 * np.sqrt((p2 * (1 - p2)).sum())


def test_generated_truth_is_graded_with_poisson_lambda_draws_per_user():
    # marginally a user's number of draws (the sum of its like counts) is Poisson(lam):
    # mean lam and dispersion sum (x - lam)^2 / lam ~ chi2(n_users) (large-n normal approx.)
    m = LDA(3000, 120, 6, 30.0, 0.4, 0.2)
    x = m.generate(23)
    assert x.graded and x.gains.dtype == np.int32 and len(x.gains) == x.n_pairs and x.gains.min() >= 1
    per_user = np.bincount(x.row_of_pairs(), weights=x.gains, minlength=m.n_users)
    n = m.n_users
    assert abs(per_user.mean() - m.lam) < 4 * np.sqrt(m.lam / n)
    disp = ((per_user - m.lam) ** 2 / m.lam).sum()
    assert abs(disp - n) < 4 * np.sqrt(2 * n)
    assert (x.user_counts() <= per_user).all()  # distinct likes never exceed draws
    # reproducible: the same seed gives the same counts
    y = m.generate(23)
    np.testing.assert_array_equal(x.gains, y.gains)


def test_like_counts_do_not_depend_on_the_blocks(monkeypatch):
    # the counting path (bincount over the cells, or sort + run lengths) must not matter
    m = LDA(300, 50, 3, 40.0, 0.3, 0.1)
    a = m.generate(24)
    monkeypatch.setattr(lda_mod, "_COUNT_CELLS", 1)  # force the sort path
    b = m.generate(24)
    assert (a.matrix != b.matrix).nnz == 0
    np.testing.assert_array_equal(a.gains, b.gains)
    keys = np.array([5, 3, 5, 9, 3, 5, 0])
    for cells in (1, 1 << 22):
        monkeypatch.setattr(lda_mod, "_COUNT_CELLS", cells)
        u, c = lda_mod._unique_counts(keys, 10)
        assert u.tolist() == [0, 3, 5, 9] and c.tolist() == [1, 2, 3, 1] and c.dtype == np.int32
        u, c = lda_mod._unique_counts(keys[:0], 10)
        assert len(u) == len(c) == 0
