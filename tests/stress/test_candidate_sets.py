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
    np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 4]), np.array([0, 1, 0, 1, 3, 0, 1, 0, 2, 3]), (5, 5)
)


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
        score_ranks(
            Oracle(), LooData(HAND_TRAIN, data.users, data.targets, relevant, data.weights, {}), rng=0, candidates="all"
        )
    r = score_ranks(RandomRecommender(), data, rng=0, candidates="all")
    assert r.n_candidates[0] == 5 and 1 <= r.ranks[0] <= 5


def chi_square_p(observed: np.ndarray, expected: np.ndarray) -> float:
    """Chi-square goodness of fit of counts against expected counts, cells with expected count < 5 pooled."""
    big = expected >= 5
    obs_c = np.append(observed[big], observed[~big].sum())
    exp_c = np.append(expected[big], expected[~big].sum())
    if exp_c[-1] == 0:  # no pooled cell
        obs_c, exp_c = obs_c[:-1], exp_c[:-1]
    return stats.chi2(obs_c.size - 1).sf(((obs_c - exp_c) ** 2 / exp_c).sum())


def check_item_level_draws(scores, pool, target, R, N, other, *, n, scheme, rng, trials=20_000):
    """Draw n - 1 negatives uniformly from ``pool`` (the candidates other than ``target``; without replacement
    for ``hypergeometric``, with for ``binomial``), rank ``target`` among them by ``scores`` and test the sampled
    ranks against the exact P(r | R) of the source's (R, N): r - 1 ~ Hypergeom(N - 1, R - 1, n - 1), resp.
    Bin(n - 1, (R - 1)/(N - 1)) (chi-square, level 0.001). The test can fail: the ``other`` reading's (R, N)
    must be rejected (p < 1e-9)."""
    assert pool.size == N - 1 and 1 + (scores[pool] > scores[target]).sum() == R
    if scheme == "hypergeometric":
        draws = np.argsort(rng.random((trials, pool.size)), axis=1)[:, : n - 1]  # n - 1 distinct negatives
    else:
        draws = rng.integers(0, pool.size, size=(trials, n - 1))
    r = 1 + (scores[pool][draws] > scores[target]).sum(axis=1)
    observed = np.bincount(r - 1, minlength=n)

    def p_value(R, N):
        if scheme == "hypergeometric":
            pmf = stats.hypergeom(N - 1, R - 1, n - 1).pmf(np.arange(n))
        else:
            pmf = stats.binom(n - 1, (R - 1) / (N - 1)).pmf(np.arange(n))
        return chi_square_p(observed, trials * pmf)

    assert p_value(R, N) > 1e-3
    assert p_value(*other) < 1e-9


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
    scores = Popular().score(train, None, rng=np.random.default_rng(5), users=np.array([user]), exclude_train=False)[0]
    pool = np.setdiff1d(np.arange(n_items) if candidates == "all" else np.flatnonzero(~seen[user]), [target])
    assert N == (n_items if candidates == "all" else n_items - seen[user].sum())
    other = score_ranks(Popular(), data, rng=5, candidates="unseen" if candidates == "all" else "all")
    check_item_level_draws(
        scores,
        pool,
        target,
        R,
        N,
        (int(other.ranks[0]), int(other.n_candidates[0])),
        n=n,
        scheme="hypergeometric",
        rng=rng,
    )


def test_scenario_key(tmp_path):
    from simrec.config.base import ScenarioError
    from simrec.config.stress import load_stress_scenario

    data = tmp_path / "ml-100k"
    data.mkdir()
    (data / "u.data").write_text("1\t1\t5\t1\n1\t2\t5\t2\n2\t1\t5\t3\n2\t3\t5\t4\n")
    text = (
        'kind = "stress"\nname = "c"\nseed = 1\nrepeats = 2\n[source]\ntype = "dataset"\nname = "ml-100k"\n'
        f'path = "{data.as_posix()}"\ncandidates = "CAND"\nrecommenders = [{{ kind = "popular" }}]\n'
        '[sampling]\nschemes = ["hypergeometric"]\nsizes = [2]\n'
    )
    (tmp_path / "ok.toml").write_text(text.replace("CAND", "all"))
    sc, _ = load_stress_scenario(tmp_path / "ok.toml")
    assert sc.source.candidates == "all"
    (tmp_path / "bad.toml").write_text(text.replace("CAND", "every"))
    with pytest.raises(ScenarioError, match=r"source.candidates: Input should be 'unseen' or 'all'; got 'every'"):
        load_stress_scenario(tmp_path / "bad.toml")


# ---------------------------------------------------------------------------
# simulation sources: the held-out item and every truly relevant candidate, in both readings
# ---------------------------------------------------------------------------
def small_world_data(seed: int = 4) -> LooData:
    """A simulated leave-one-out split with its truth: 150 users x 50 items (Uniform truth, popularity-biased
    observation, so the users' training items are popular ones)."""
    from simrec.experiment import World
    from simrec.observation import PopularitySampler, TruncatedPareto
    from simrec.preference import Uniform
    from simrec.stress import simulate_loo_data

    world = World(
        "unif-pop",
        Uniform(n_users=150, n_items=50, lam=20.0),
        TruncatedPareto(m_low=4, alpha=1.0, m_high=15),
        PopularitySampler(),
    )
    return simulate_loo_data(world, seed)


def test_simulation_hand_case_ranks_held_out_and_true_items_in_both_readings():
    """HAND_TRAIN with a truth: user 0's true relevant candidates are items 3 (held out) and 4. Popularity:
    item 0: 4, 1: 3, 3: 2, 2: 1, 4: 0; user 0 trained on items 0 and 1."""
    relevant = Interactions.from_pairs(np.array([0, 0]), np.array([3, 4]), (5, 5)).matrix
    data = LooData(HAND_TRAIN, np.array([0]), np.array([3]), relevant, HAND_TRAIN.item_counts().astype(float), {})
    unseen = score_ranks(Popular(), data, rng=0, candidates="unseen")
    every = score_ranks(Popular(), data, rng=0, candidates="all")
    # unseen {2, 3, 4}: item 3 first, item 4 last; all items: items 0 and 1 above both
    assert (unseen.ranks[0], unseen.n_candidates[0]) == (1, 3)
    assert (every.ranks[0], every.n_candidates[0]) == (3, 5)
    assert unseen.true_ranks.tolist() == [1, 3] and every.true_ranks.tolist() == [3, 5]
    assert unseen.true_users.tolist() == every.true_users.tolist() == [0, 0]


def test_simulation_all_items_adds_the_training_items_scored_above():
    """R_all = R_unseen + (training items scored above) for the held-out item and for every truly relevant
    candidate (a scorer without ties: K&R's item CF through LensKit); N_all = n_items."""
    pytest.importorskip("lenskit")
    from simrec.recommenders import ItemCFScorer

    data = small_world_data()
    rec = LensKitRecommender(ItemCFScorer, q=2.0)
    unseen = score_ranks(rec, data, rng=1, candidates="unseen")
    every = score_ranks(rec, data, rng=1, candidates="all")
    seen = data.train.matrix[data.users].toarray().astype(bool)
    s = rec.score(data.train, None, users=data.users, exclude_train=False)
    assert np.isfinite(s).all()
    rows = np.arange(data.users.size)

    def train_above(u, items):
        return ((s[u] > s[u, items][:, None]) & seen[u]).sum(axis=1)

    above = train_above(rows, data.targets)
    assert (above > 0).mean() > 0.5  # the reading matters for most users
    np.testing.assert_array_equal(every.ranks, unseen.ranks + above)
    np.testing.assert_array_equal(every.n_candidates, np.full(rows.size, data.train.n_items))
    np.testing.assert_array_equal(unseen.n_candidates, data.train.n_items - seen.sum(axis=1))
    # the true items: same (user, item) order in both readings
    rel = data.relevant[data.users].tocoo()
    order = np.lexsort((rel.col, rel.row))
    pu, pi = rel.row[order].astype(np.int64), rel.col[order].astype(np.int64)
    np.testing.assert_array_equal(every.true_users, pu)
    np.testing.assert_array_equal(unseen.true_users, pu)
    np.testing.assert_array_equal(every.true_ranks, unseen.true_ranks + train_above(pu, pi))
    assert pu.size > 2 * rows.size  # several true items per user, not only the held-out one


@pytest.mark.parametrize("scheme", ["hypergeometric", "binomial"])
@pytest.mark.parametrize("candidates", ["all", "unseen"])
def test_simulation_item_level_sampling_follows_the_closed_form(candidates, scheme):
    """As the dataset test above, on a simulated user, for the held-out item and for a truly relevant
    candidate that is not held out (the true metric's ranks): n - 1 negatives drawn from the candidates other
    than the item, without (Li & Jin's "hyper" / "actual") or with replacement ("binom" / binomial among the
    unseen items); 20,000 draws against the exact P(r | R) at level 0.001, the other reading rejected."""
    full = small_world_data()
    rel = full.relevant[full.users].toarray().astype(bool)
    k = int(np.argmax(rel.sum(axis=1)))  # the user with the most true relevant candidates
    one = LooData(full.train, full.users[[k]], full.targets[[k]], full.relevant, full.weights, {})
    ranks = score_ranks(Popular(), one, rng=7, candidates=candidates)
    other = score_ranks(Popular(), one, rng=7, candidates="unseen" if candidates == "all" else "all")
    scores = Popular().score(full.train, None, rng=np.random.default_rng(7), users=one.users, exclude_train=False)[0]
    seen = full.train.matrix[one.users].toarray().astype(bool)[0]
    true_items = np.flatnonzero(rel[k])  # the order of true_ranks
    assert true_items.size >= 3 and one.targets[0] in true_items
    second = int(true_items[true_items != one.targets[0]][1])
    n = 12
    rng = np.random.default_rng(13)
    for item, R, R_other in (
        (int(one.targets[0]), ranks.ranks[0], other.ranks[0]),
        (second, *(r.true_ranks[true_items == second][0] for r in (ranks, other))),
    ):
        N, N_other = int(ranks.n_candidates[0]), int(other.n_candidates[0])
        pool = np.setdiff1d(np.arange(full.train.n_items) if candidates == "all" else np.flatnonzero(~seen), [item])
        check_item_level_draws(scores, pool, item, int(R), N, (int(R_other), N_other), n=n, scheme=scheme, rng=rng)


SIM_SCENARIO = """kind = "stress"
name = "c"
seed = 1
repeats = 2
[source]
type = "simulation"
population = { n_users = 60, n_items = 40 }
world = { name = "u", preference = { model = "uniform", lam = 10.0 }, observation = { sampler = "uniform", profile = { model = "pareto", m_low = 3, alpha = 1.0, m_high = 8 } } }
CAND
recommenders = [{ kind = "popular" }, RECS]
[sampling]
schemes = ["binomial"]
sizes = [10]
[metrics]
k_max = 5
curve_k = 5
curve_sizes = [10]
"""


def test_simulation_scenario_key_and_digest(tmp_path):
    """``source.candidates`` of a simulation: parsed, the oracles refused with "all" (they cannot score training
    items), and the default leaves the scenario's digest (its run folder's identity) unchanged."""
    from simrec.config.base import ScenarioError
    from simrec.config.stress import load_stress_scenario

    def load(cand: str, recs: str = '{ kind = "random" }'):
        path = tmp_path / "s.toml"
        path.write_text(SIM_SCENARIO.replace("CAND", cand).replace("RECS", recs))
        return load_stress_scenario(path)[0]

    implicit, explicit, every = load(""), load('candidates = "unseen"'), load('candidates = "all"')
    assert implicit.source.candidates == explicit.source.candidates == "unseen"
    assert every.source.candidates == "all"
    assert implicit.digest() == explicit.digest() != every.digest()
    # the digest of a scenario without the key, as computed before the key existed (sha256 of its non-default
    # content; pinned from simrec at commit 5043fd8, whose SimulationSource had no `candidates`)
    assert implicit.digest() == "bf5e216ff5c4d086"
    assert load("", '{ kind = "oracle" }').source.candidates == "unseen"
    with pytest.raises(ScenarioError) as err:
        load('candidates = "all"', '{ kind = "oracle" }, { kind = "probabilistic_oracle", p = 0.5 }')
    msg = str(err.value)
    assert (
        'source.recommenders[1]: with source.candidates = "all" every recommender must score the user\'s '
        "training items, which oracle cannot" in msg
    )
    assert "source.recommenders[2]:" in msg and "got kind 'probabilistic_oracle'" in msg
    assert "source.recommenders[0]" not in msg
    with pytest.raises(ScenarioError, match=r"source.candidates: Input should be 'unseen' or 'all'; got 'every'"):
        load('candidates = "every"')


def test_simulation_scenario_key_reaches_the_ranks_task(tmp_path):
    """The scenario's ``source.candidates`` is what the stress study's ranks task ranks among: N_u = the
    simulated world's item count with "all", fewer (its training items left out) with "unseen"."""
    from simrec.config.stress import load_stress_scenario
    from simrec.studies import stress as stress_runner

    got = {}
    for cand in ("unseen", "all"):
        path = tmp_path / f"{cand}.toml"
        path.write_text(SIM_SCENARIO.replace("CAND", f'candidates = "{cand}"').replace("RECS", '{ kind = "random" }'))
        sc, _ = load_stress_scenario(path)
        data = stress_runner.build_source_data(sc, None)
        _, got[cand], _, _ = stress_runner._ranks_task((sc, None, 1, None))
    n_items, seen = data.train.n_items, data.train.user_counts()[data.users]
    np.testing.assert_array_equal(got["all"].n_candidates, np.full(data.users.size, n_items))
    np.testing.assert_array_equal(got["unseen"].n_candidates, n_items - seen)
    assert got["all"].has_truth and got["unseen"].has_truth
