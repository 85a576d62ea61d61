"""Candidate sets of the stress sources: ranking among unseen items vs all items (Li & Jin's blocks).

Li & Jin (KDD 2020, Appendix A, Tables 5-6) report three blocks: "binom" and
"hyper" rank the held-out item among all items (the user's training items
included) and draw negatives from all items, with and without replacement;
"actual" ranks it among "only the irrelevant items" (training data at the
bottom) and draws negatives without replacement from them. simrec's
``candidates = "unseen"`` is the latter, ``"all"`` the former.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from simrec.interactions import Interactions
from simrec.recommenders import LensKitRecommender, Oracle, Popular, RandomRecommender
from simrec.stress import CANDIDATE_SETS, LooData, score_ranks

# Training: user 0 has items {0, 1} (held out: item 3); users 1-4: {0, 1, 3}, {0, 1}, {0, 2}, {3}.
# Training popularity: item 0: 4, item 1: 3, item 3: 2, item 2: 1, item 4: 0.
HAND_TRAIN = Interactions.from_pairs(
    np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 4]), np.array([0, 1, 0, 1, 3, 0, 1, 0, 2, 3]), (5, 5))


def loo(train: Interactions, users, targets) -> LooData:
    users = np.asarray(users, dtype=np.int64)
    return LooData(train, users, np.asarray(targets, dtype=np.int64), None, train.item_counts().astype(float), {})


def test_hand_case_rank_among_unseen_and_all_items():
    data = loo(HAND_TRAIN, [0], [3])
    unseen = score_ranks(Popular(), data, rng=0, candidates="unseen")
    every = score_ranks(Popular(), data, rng=0, candidates="all")
    # unseen candidates {2, 3, 4}: item 3 (popularity 2) is first among them; all items: behind items 0 and 1
    assert (unseen.ranks[0], unseen.n_candidates[0]) == (1, 3)
    assert (every.ranks[0], every.n_candidates[0]) == (3, 5)
    # popularity share above the held-out item: none among {2, 4}; items 0, 1 of {0, 1, 2, 4} (7 of 8)
    assert unseen.popularity_shares[0] == 0.0
    assert every.popularity_shares[0] == pytest.approx(7 / 8)
    assert CANDIDATE_SETS == ("unseen", "all")
    with pytest.raises(ValueError, match="`candidates` must be one of 'unseen', 'all'; got 'both'"):
        score_ranks(Popular(), data, rng=0, candidates="both")


def test_all_items_adds_the_training_items_scored_above():
    """R_all = R_unseen + (training items scored above the held-out item), N_all = n_items, for a scorer
    without ties (Krichene & Rendle's item CF through LensKit: training items get scores too)."""
    pytest.importorskip("lenskit")
    from simrec.recommenders import ItemCFScorer

    rng = np.random.default_rng(3)
    seen = rng.random((80, 30)) < np.clip(0.5 / np.arange(1, 31) ** 0.5, 0.05, 0.5)
    seen[:, 0] = True  # every user has item 0 ...
    train = Interactions.from_pairs(*np.nonzero(seen), seen.shape)
    users = np.arange(0, 80, 4)
    targets = np.array([np.flatnonzero(~seen[u])[0] for u in users])  # ... and an unseen held-out item
    data = loo(train, users, targets)
    rec = LensKitRecommender(ItemCFScorer, q=2.0)
    unseen = score_ranks(rec, data, rng=1, candidates="unseen")
    every = score_ranks(rec, data, rng=1, candidates="all")
    s = rec.score(train, None, users=users, exclude_train=False)
    assert np.isfinite(s).all()
    np.testing.assert_array_equal(s[~seen[users]], rec.score(train, None, users=users)[~seen[users]])
    target = s[np.arange(users.size), targets]
    above_train = ((s > target[:, None]) & seen[users]).sum(axis=1)
    assert (above_train > 0).all()
    np.testing.assert_array_equal(every.ranks, unseen.ranks + above_train)
    np.testing.assert_array_equal(every.n_candidates, np.full(users.size, 30))
    np.testing.assert_array_equal(unseen.n_candidates, 30 - seen[users].sum(axis=1))


def test_recommenders_that_cannot_score_training_items_are_refused():
    data = loo(HAND_TRAIN, [0], [3])
    relevant = HAND_TRAIN.matrix * 0
    with pytest.raises(ValueError, match="`candidates` 'all' needs a recommender that scores training items"):
        score_ranks(Oracle(), LooData(HAND_TRAIN, data.users, data.targets, relevant, data.weights, {}),
                    rng=0, candidates="all")
    r = score_ranks(RandomRecommender(), data, rng=0, candidates="all")
    assert r.n_candidates[0] == 5 and 1 <= r.ranks[0] <= 5


@pytest.mark.parametrize("candidates", ["all", "unseen"])
def test_item_level_sampling_follows_the_closed_form(candidates):
    """Draw n - 1 negatives uniformly without replacement from the candidates other than the held-out item
    (Li & Jin's "hyper" with all items, "actual" with the unseen ones) and rank the held-out item among
    them: r - 1 ~ Hypergeom(N - 1, R - 1, n - 1) with the source's R and N. Chi-square test of 20,000
    draws against the exact P(r | R) (cells with expected count < 5 pooled), at level 0.001."""
    rng = np.random.default_rng(11)
    n_items, n = 60, 12
    seen = rng.random((200, n_items)) < np.linspace(0.6, 0.05, n_items)  # item popularity falls with its index
    user = 0
    target = int(np.flatnonzero(~seen[user])[2])  # a popular unseen item: far apart in the two readings
    train = Interactions.from_pairs(*np.nonzero(seen), seen.shape)
    data = loo(train, [user], [target])
    ranks = score_ranks(Popular(), data, rng=5, candidates=candidates)
    R, N = int(ranks.ranks[0]), int(ranks.n_candidates[0])
    # the same scores (same seed) at item level
    scores = Popular().score(train, None, rng=np.random.default_rng(5), users=np.array([user]),
                             exclude_train=False)[0]
    pool = np.setdiff1d(np.arange(n_items) if candidates == "all" else np.flatnonzero(~seen[user]), [target])
    assert pool.size == N - 1 and 1 + (scores[pool] > scores[target]).sum() == R
    assert N == (n_items if candidates == "all" else n_items - seen[user].sum())
    T = 20_000
    draws = np.argsort(rng.random((T, pool.size)), axis=1)[:, : n - 1]  # n - 1 distinct negatives per trial
    r = 1 + (scores[pool][draws] > scores[target]).sum(axis=1)
    observed = np.bincount(r - 1, minlength=n)

    def p_value(R, N):
        expected = T * stats.hypergeom(N - 1, R - 1, n - 1).pmf(np.arange(n))
        big = expected >= 5
        obs_c = np.append(observed[big], observed[~big].sum())
        exp_c = np.append(expected[big], expected[~big].sum())
        if exp_c[-1] == 0:  # no pooled cell
            obs_c, exp_c = obs_c[:-1], exp_c[:-1]
        return stats.chi2(obs_c.size - 1).sf(((obs_c - exp_c) ** 2 / exp_c).sum())

    assert p_value(R, N) > 1e-3
    # the test can fail: the other reading's (R, N) is rejected
    other = score_ranks(Popular(), data, rng=5, candidates="unseen" if candidates == "all" else "all")
    assert p_value(int(other.ranks[0]), int(other.n_candidates[0])) < 1e-9


def test_scenario_key(tmp_path):
    from simrec.config.base import ScenarioError
    from simrec.config.stress import load_stress_scenario

    data = tmp_path / "ml-100k"
    data.mkdir()
    (data / "u.data").write_text("1\t1\t5\t1\n1\t2\t5\t2\n2\t1\t5\t3\n2\t3\t5\t4\n")
    text = ('kind = "stress"\nname = "c"\nseed = 1\nrepeats = 2\n[source]\ntype = "dataset"\nname = "ml-100k"\n'
            f'path = "{data.as_posix()}"\ncandidates = "CAND"\nrecommenders = [{{ kind = "popular" }}]\n'
            '[sampling]\nschemes = ["hypergeometric"]\nsizes = [2]\n')
    (tmp_path / "ok.toml").write_text(text.replace("CAND", "all"))
    sc, _ = load_stress_scenario(tmp_path / "ok.toml")
    assert sc.source.candidates == "all"
    (tmp_path / "bad.toml").write_text(text.replace("CAND", "every"))
    with pytest.raises(ScenarioError, match=r"source.candidates: Input should be 'unseen' or 'all'; got 'every'"):
        load_stress_scenario(tmp_path / "bad.toml")
