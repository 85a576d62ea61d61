"""The thesis's headline findings (Tian 2019, §4.3) as statistical tests on small simulations.

Each world is replicated 16 times (data generation included); tolerances are in
standard errors of the mean over replicates, computed here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from simrec._random import as_generator, spawn_seeds
from simrec.experiment import Evaluation, World, run_replicate, true_gains, true_relevance
from simrec.interactions import Interactions
from simrec.metrics import AUC, NDCG, NDCGLensKit07, PapAtK, Precision, Recall, UndefinedMetricWarning, auc, precision
from simrec.observation import PopularitySampler, TruncatedPareto, UniformSampler, observe
from simrec.preference import IBP, LDA, Uniform
from simrec.recommenders import Oracle, Popular, RandomRecommender
from simrec.report import errors, pairwise_wins, summarize, wilson_interval
from simrec.split import holdout

PROFILE = TruncatedPareto(m_low=5, alpha=1.0, m_high=150)
EVAL = Evaluation(recommenders=(Oracle(), Popular(), RandomRecommender()), metrics=(Precision(), Recall()), n=20)
WORLDS = [
    World("unif-unif", Uniform(n_users=500, n_items=600, lam=80.0), PROFILE, UniformSampler()),
    World("ibp-unif", IBP(n_users=500, alpha=40.0, c=1.0, sigma=0.3), PROFILE, UniformSampler()),
    World("ibp-pop", IBP(n_users=500, alpha=40.0, c=1.0, sigma=0.3), PROFILE, PopularitySampler()),
    World("unif-pop", Uniform(n_users=500, n_items=600, lam=80.0), PROFILE, PopularitySampler()),
]
REPLICATES = 16


@pytest.fixture(scope="module")
def error_table() -> pd.DataFrame:
    frames = [
        run_replicate(w, EVAL, np.random.SeedSequence([7, r, i]), r).results
        for r in range(REPLICATES)
        for i, w in enumerate(WORLDS)
    ]
    e = errors(pd.concat(frames, ignore_index=True))
    g = e.groupby(["world", "recommender", "metric"])["error"].agg(["mean", "std", "count"])
    g["se"] = g["std"] / np.sqrt(g["count"])
    return g


@pytest.mark.slow
@pytest.mark.parametrize("world", ["unif-unif", "ibp-unif"])
@pytest.mark.parametrize("rec", ["Oracle", "Popular", "Random"])
def test_recall_is_unbiased_under_uniform_observation(error_table, world, rec):
    """Steck (2013): with missing-at-random observation the test set is, given
    the training set, a uniform subset of the true relevance set, so observed
    recall is unbiased for true recall user by user. Mean error within 4 SE."""
    row = error_table.loc[(world, rec, "recall")]
    assert abs(row["mean"]) < 4 * row["se"] + 1e-12, row


@pytest.mark.parametrize("world", ["unif-unif", "ibp-unif", "ibp-pop", "unif-pop"])
@pytest.mark.parametrize("rec", ["Oracle", "Popular", "Random"])
def test_precision_is_underestimated(error_table, world, rec):
    """The test set is a subset of the true relevance set, so observed
    precision never exceeds true precision; the mean error is negative by
    more than 4 SE."""
    row = error_table.loc[(world, rec, "precision")]
    assert row["mean"] < -4 * row["se"], row


def test_popularity_observation_of_ibp_truth_inflates_populars_recall(error_table):
    """IBP truth has a heavy popularity tail; the popularity sampler shows
    popular items more often, so Popular's observed recall overestimates its
    true recall (thesis Figures 21-24)."""
    row = error_table.loc[("ibp-pop", "Popular", "recall")]
    assert row["mean"] > 0.1 and row["mean"] > 10 * row["se"], row


def test_popularity_observation_of_uniform_truth_is_nearly_unbiased(error_table):
    """With uniform truth every item has about the same number of true likers
    (Binomial(U, λ/I)), so popularity-weighted observation is nearly uniform:
    Popular's recall error stays tiny. It is not exactly 0 — Popular follows
    the binomial noise in true popularity that the sampler also follows — so
    the test bounds its size rather than testing for zero: under 0.02 and
    under 1/20 of the IBP-Pop error."""
    small = error_table.loc[("unif-pop", "Popular", "recall")]["mean"]
    big = error_table.loc[("ibp-pop", "Popular", "recall")]["mean"]
    assert abs(small) < 0.02 and abs(small) < big / 20


def test_true_relevance_is_truth_minus_train():
    truth = Interactions.from_pairs(np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 1, 3, 0]), (3, 4))
    train = Interactions.from_pairs(np.array([0, 1]), np.array([1, 3]), (2, 4))
    rel = true_relevance(truth, np.array([0, 1]), train)
    assert (rel.toarray() == np.array([[1, 0, 1, 0], [0, 1, 0, 0]])).all()
    assert isinstance(rel, sp.csr_array) and rel.has_canonical_format


def test_true_gains_are_the_truths_gains_of_the_true_pairs():
    # truth rows: 0 -> {0: 4, 1: 2, 2: 7}, 1 -> {1: 1, 3: 3}, 2 -> {0: 5}; observed users = truth rows [2, 0]
    truth = Interactions.from_csr([0, 3, 5, 6], [0, 1, 2, 1, 3, 0], (3, 4), gains=np.array([4, 2, 7, 1, 3, 5]))
    train = Interactions.from_pairs(np.array([1]), np.array([1]), (2, 4))  # user 1 (truth row 0) trained on item 1
    rel = true_relevance(truth, np.array([2, 0]), train)
    assert rel.toarray().tolist() == [[1, 0, 0, 0], [1, 0, 1, 0]]
    assert true_gains(truth, np.array([2, 0]), rel).tolist() == [5.0, 4.0, 7.0]
    with pytest.raises(ValueError, match="`truth` must carry gains"):
        true_gains(Interactions(truth.matrix), np.array([2, 0]), rel)
    with pytest.raises(ValueError, match="`relevant` must hold only pairs of the truth; 1 of 4 are not"):
        true_gains(truth, np.array([2, 0]), sp.csr_array(np.array([[1, 1, 0, 0], [1, 0, 1, 0]], dtype=np.int8)))


class _AsBinary:
    """A preference model's truth with its gains dropped (or set to ``ones``)."""

    def __init__(self, model, ones: bool = False) -> None:
        self.model, self.ones, self.n_users = model, ones, model.n_users

    def generate(self, rng, *, max_pairs=None):
        t = self.model.generate(rng, max_pairs=max_pairs)
        return Interactions(t.matrix, gains=np.ones(t.n_pairs) if self.ones else None)


_LDA = LDA(n_users=250, n_items=160, n_topics=4, lam=60.0, a=0.3, b=0.05)
_GRADED_EVAL = Evaluation(
    recommenders=(Oracle(), Popular()), metrics=(Precision(), NDCG(), NDCGLensKit07(), AUC()), n=15
)


def _lda_world(pref) -> World:
    return World("lda-pop", pref, TruncatedPareto(m_low=5, alpha=1.0, m_high=60), PopularitySampler())


def test_graded_truth_changes_only_the_true_ndcg_lenskit07():
    graded = run_replicate(_lda_world(_LDA), _GRADED_EVAL, 31).results
    binary = run_replicate(_lda_world(_AsBinary(_LDA)), _GRADED_EVAL, 31).results
    ones = run_replicate(_lda_world(_AsBinary(_LDA, ones=True)), _GRADED_EVAL, 31).results
    pd.testing.assert_frame_equal(ones, binary)  # gain 1 everywhere is the binary reading
    moved = (graded["value"] - binary["value"]).abs() > 1e-12
    assert moved.any()
    assert set(graded.loc[moved, "metric"]) == {"ndcg_lenskit07"} and set(graded.loc[moved, "truth"]) == {"true"}
    cols = ["n_evaluated", "n_undefined"]
    pd.testing.assert_frame_equal(graded[cols], binary[cols])


def test_graded_true_ndcg_lenskit07_by_hand():
    """The replicate's mean against the same pipeline recomputed step by step (the seed
    contract of run_replicate) and a per-user loop over the truth's like counts."""
    seed = 32
    evaluation = Evaluation(recommenders=(Popular(),), metrics=(NDCGLensKit07(),), n=15)
    world = _lda_world(_LDA)
    got = run_replicate(world, evaluation, seed).results.set_index("truth")["value"]
    children = spawn_seeds(seed, 4)
    truth = _LDA.generate(as_generator(children[0]))
    obs = observe(truth, world.profile, world.sampler, as_generator(children[1]))
    split = holdout(obs.observed, 0.2, as_generator(children[2]))
    true_rel = true_relevance(truth, obs.truth_rows, split.train)
    lists = Popular().recommend(split.train, true_rel, 15, as_generator(children[3]))
    dense_gain = truth.gain_matrix().toarray()
    values = []
    for u in np.flatnonzero(split.test.user_counts() > 0):
        rel_items = true_rel[[u]].indices
        if len(rel_items) == 0:
            continue
        g = {int(i): dense_gain[obs.truth_rows[u], i] for i in rel_items}
        dcg = sum(g.get(int(i), 0.0) / max(1.0, np.log2(r)) for r, i in enumerate(lists[u], 1) if i >= 0)
        ideal = sorted(g.values(), reverse=True)
        values.append(dcg / sum(v / max(1.0, np.log2(j)) for j, v in enumerate(ideal, 1)))
    assert got["true"] == pytest.approx(np.mean(values), rel=1e-12)
    assert max(dense_gain.max(), 0) > 1  # the truth is really graded


def test_replicate_is_reproducible_and_adding_a_recommender_keeps_the_others():
    w = WORLDS[2]
    a = run_replicate(w, EVAL, 11).results
    b = run_replicate(w, EVAL, 11).results
    pd.testing.assert_frame_equal(a, b)
    seed = np.random.SeedSequence(11)
    pd.testing.assert_frame_equal(run_replicate(w, EVAL, seed).results, run_replicate(w, EVAL, seed).results)
    pd.testing.assert_frame_equal(a, run_replicate(w, EVAL, seed).results)
    more = Evaluation(recommenders=(*EVAL.recommenders, Popular(name="Popular2")), metrics=EVAL.metrics, n=20)
    c = run_replicate(w, more, 11).results
    pd.testing.assert_frame_equal(a, c[c["recommender"] != "Popular2"].reset_index(drop=True))


def test_per_user_values_are_what_the_results_average():
    """Replicate.per_user (issue 26): each evaluated user's value; the results' value is its NaN-mean and
    n_evaluated / n_undefined count its defined / NaN entries, for every recommender x metric x truth."""
    ev = Evaluation(recommenders=EVAL.recommenders, metrics=(Precision(), Recall(), NDCG(), AUC()), n=20)
    rep = run_replicate(WORLDS[2], ev, 5)
    assert len(rep.per_user) == len(rep.results)
    for row in rep.results.itertuples():
        v = rep.per_user[row.recommender, row.metric, row.truth]
        assert v.shape == rep.users.shape
        assert row.n_evaluated == int((~np.isnan(v)).sum()) and row.n_undefined == int(np.isnan(v).sum())
        np.testing.assert_allclose(row.value, np.nanmean(v), rtol=1e-12)


def test_evaluation_validates():
    with pytest.raises(TypeError, match="`metrics` must be simrec.metrics metric objects"):
        Evaluation(recommenders=(Popular(),), metrics=("precision",))
    with pytest.raises(ValueError, match="`metrics` must not repeat"):
        Evaluation(recommenders=(Popular(),), metrics=(Recall(), Recall()))
    with pytest.raises(ValueError, match="`test_fraction`"):
        Evaluation(recommenders=(Popular(),), test_fraction=1.0)
    with pytest.raises(ValueError, match="`recommenders`"):
        Evaluation(recommenders=())
    with pytest.raises(ValueError, match="`split` must be one of 'holdout', 'last'; got 'first'"):
        Evaluation(recommenders=(Popular(),), split="first")


def test_leave_last_out_in_a_world_holds_out_one_uniform_item_per_user():
    """split = "last" (issue 24): each user's latest item in a uniform simulated consumption order, i.e. exactly
    simrec.loo.leave_one_out on the split's seed (child 2); users with one observed item are not evaluated."""
    from simrec.experiment import replicate_data
    from simrec.loo import leave_one_out

    world = World(
        "ibp-pop", IBP(n_users=300, alpha=30.0, c=1.0, sigma=0.3), TruncatedPareto(1, 1.0, 60), PopularitySampler()
    )
    ev = Evaluation(recommenders=(Oracle(), Popular()), metrics=(Precision(), Recall(), NDCG()), n=10, split="last")
    data = replicate_data(world, ev, 21)
    counts = data.observed.observed.user_counts()
    np.testing.assert_array_equal(data.split.test.user_counts(), (counts >= 2).astype(int))
    assert (counts == 1).any()  # the profile model gives some one-item users: they are not evaluated
    want = leave_one_out(data.observed.observed, as_generator(spawn_seeds(21, 5)[2]))
    assert (data.split.test.matrix != want.test.matrix).nnz == 0
    assert (data.split.train.matrix != want.train.matrix).nnz == 0
    rep = run_replicate(world, ev, 21)
    obs = rep.results[rep.results["truth"] == "observed"].set_index(["recommender", "metric"])["value"]
    for rec in ("Oracle", "Popular"):  # one test item: precision@10 = recall@10 / 10
        np.testing.assert_allclose(obs[rec, "precision"], obs[rec, "recall"] / 10, rtol=1e-12)
        values = rep.per_user[rec, "recall", "observed"]
        assert set(np.unique(values)) <= {0.0, 1.0} and len(values) == int((counts >= 2).sum())
    holdout_ev = Evaluation(recommenders=ev.recommenders, metrics=ev.metrics, n=10)
    assert replicate_data(world, holdout_ev, 21).split.test.n_pairs > data.split.test.n_pairs


def test_summary_and_table3_intervals():
    rows = []
    for r in range(10):
        for rec, v in (("Oracle", 0.5 + 0.01 * r), ("Popular", 0.52)):
            rows += [
                (r, "w", "ibp", "popularity", rec, "recall", "observed", v, 10, 0),
                (r, "w", "ibp", "popularity", rec, "recall", "true", v - 0.1, 10, 0),
            ]
    res = pd.DataFrame(
        rows,
        columns=[
            "replicate",
            "world",
            "preference",
            "observation",
            "recommender",
            "metric",
            "truth",
            "value",
            "n_evaluated",
            "n_undefined",
        ],
    )
    s = summarize(res)
    err = s[(s["kind"] == "error") & (s["recommender"] == "Oracle")].iloc[0]
    assert err["mean"] == pytest.approx(0.1) and err["sd"] == pytest.approx(0.0, abs=1e-12)
    obs = s[(s["kind"] == "observed") & (s["recommender"] == "Oracle")].iloc[0]
    assert obs["mean"] == pytest.approx(0.545)
    # t interval: half-width t_{0.975, 9} * sd / sqrt(10), sd of 0.50..0.59 step 0.01
    sd = np.std(0.5 + 0.01 * np.arange(10), ddof=1)
    assert obs["ci_high"] - obs["mean"] == pytest.approx(2.2621571628 * sd / np.sqrt(10), rel=1e-8)
    t3 = pairwise_wins(res, "Oracle", "Popular")
    # Oracle beats Popular (0.52) in replicates 3..9 -> 7 of 10
    assert (t3["wins"] == 7).all() and (t3["percent"] == 70).all()
    lo, hi = wilson_interval(np.array([7]), np.array([10]))
    # Wilson 95% interval for 7/10: (0.3968, 0.8922) (standard tables)
    assert lo[0] == pytest.approx(0.3968, abs=1e-4) and hi[0] == pytest.approx(0.8922, abs=1e-4)
    # all wins: the upper bound is exactly 1 (100 in the table), not 0.9999999999999999
    assert wilson_interval(np.array([10, 0]), np.array([10, 10]))[1][0] == 1.0
    assert wilson_interval(np.array([10, 0]), np.array([10, 10]))[0][1] == 0.0
    all_wins = res.assign(value=np.where(res["recommender"] == "Oracle", 1.0, 0.0))
    assert (pairwise_wins(all_wins, "Oracle", "Popular")["ci_high"] == 100.0).all()


def test_baseline_auc_is_the_tie_averaged_auc_of_their_levels():
    """The baselines' AUC in a replicate is :func:`auc` of their score levels with ties (the
    expected AUC over their tie-break), recomputed step by step; it does not depend on which
    other metrics are measured (pAp@k still needs dense scores); Random's is exactly 1/2."""
    world, seed = WORLDS[2], 5
    recs = (Oracle(), Popular(), RandomRecommender())
    got = run_replicate(world, Evaluation(recommenders=recs, metrics=(AUC(),), n=20), seed).results
    with_pap = run_replicate(world, Evaluation(recommenders=recs, metrics=(AUC(), PapAtK()), n=20), seed).results
    pd.testing.assert_frame_equal(got, with_pap[with_pap["metric"] == "auc"].reset_index(drop=True))
    children = spawn_seeds(seed, 6)
    truth = world.preference.generate(as_generator(children[0]))
    obs = observe(truth, world.profile, world.sampler, as_generator(children[1]))
    split = holdout(obs.observed, 0.2, as_generator(children[2]))
    true_rel = true_relevance(truth, obs.truth_rows, split.train)
    evaluated = np.flatnonzero(split.test.user_counts() > 0)
    rels = {"observed": split.test.matrix[evaluated], "true": true_rel[evaluated]}
    for rec in recs:
        dense = rec.score_levels(split.train, true_rel, users=evaluated).to_dense()
        for kind, rel in rels.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                want = np.nanmean(auc(dense, sp.csr_array(rel)))
            row = got[(got["recommender"] == rec.name) & (got["truth"] == kind)]
            assert row["value"].item() == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert (got.loc[got["recommender"] == "Random", "value"] == 0.5).all()
    assert got.loc[(got["recommender"] == "Oracle") & (got["truth"] == "true"), "value"].item() == 1.0


def test_true_relevance_by_blocks_is_the_set_difference(monkeypatch):
    import simrec.experiment as experiment

    truth = IBP(300, 12.0, 1.0, 0.3).generate(2)
    rows = np.flatnonzero(truth.user_counts() > 0)[::-1]  # observed users in another order than the truth's
    rng = np.random.default_rng(3)
    T = truth.matrix[rows].toarray().astype(bool)
    train = Interactions(sp.csr_array((T & (rng.random(T.shape) < 0.4)).astype(np.int8)))
    monkeypatch.setattr(experiment, "_BLOCK_PAIRS", 7)
    rel = true_relevance(truth, rows, train)
    assert rel.has_canonical_format and rel.dtype == np.int8
    np.testing.assert_array_equal(rel.toarray(), (T & ~train.matrix.toarray().astype(bool)).astype(np.int8))


# -- observed data outside the truth: consumed dislikes (issue 24) --------------------------------------------


def test_disliked_training_item_is_no_candidate_and_disliked_test_item_is_relevant_only_as_observed():
    # truth: user 0 likes 0, 1, 2; user 1 likes 3. Observed user 0 also consumed items 4 (train) and 5 (test),
    # which it does not like; user 1 consumed 0 (train, disliked) and 3 (test, liked)
    truth = Interactions.from_pairs(np.array([0, 0, 0, 1]), np.array([0, 1, 2, 3]), (2, 6))
    train = Interactions.from_pairs(np.array([0, 0, 1]), np.array([0, 4, 0]), (2, 6))
    test = Interactions.from_pairs(np.array([0, 0, 1]), np.array([1, 5, 3]), (2, 6))
    rel = true_relevance(truth, np.array([0, 1]), train)
    assert rel.toarray().tolist() == [[0, 1, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0]]  # disliked train items: nothing
    lists = np.array([[5, 1, 3], [3, 1, 2]])  # user 0: the disliked test item first
    obs_p = precision(lists, test.matrix)
    true_p = precision(lists, rel)
    np.testing.assert_allclose(obs_p, [2 / 3, 1 / 3])  # item 5 counts as observed-relevant
    np.testing.assert_allclose(true_p, [1 / 3, 1 / 3])  # but not as truly relevant
    # the baselines never recommend a training item, liked or not
    for rec in (Popular(), RandomRecommender(), Oracle()):
        got = rec.recommend(train, rel, 4, np.random.default_rng(0))
        assert not any(i in train.matrix[[u]].indices for u in range(2) for i in got[u] if i >= 0), rec.name


def test_replicate_with_consumed_dislikes_measures_against_the_truth():
    from simrec.observation import PreferenceSampler
    from simrec.preference import LatentFactor

    world = World(
        "factor-pref", LatentFactor(300, 120, 3, 1.75, 1.75, 20.0, 0.5), PROFILE, PreferenceSampler(1.0, 1.0, 0.5)
    )
    ev = Evaluation(recommenders=(Oracle(), Popular(), RandomRecommender()), metrics=(Precision(), Recall()), n=10)
    res = run_replicate(world, ev, 11).results
    # the replicate's own data, rebuilt from its seeds: observed pairs outside the truth in train and test
    children = spawn_seeds(11, 6)
    truth = world.preference.generate(as_generator(children[0]))
    obs = observe(truth, world.profile, world.sampler, as_generator(children[1]))
    split = holdout(obs.observed, ev.test_fraction, as_generator(children[2]))
    aligned = truth.matrix[obs.truth_rows]
    assert (split.train.matrix - split.train.matrix.multiply(aligned)).nnz > 0
    out_test = sp.csr_array(split.test.matrix - split.test.matrix.multiply(aligned))
    assert out_test.nnz > 0
    rel = true_relevance(truth, obs.truth_rows, split.train)
    assert rel.multiply(split.train.matrix).nnz == 0 and rel.multiply(out_test).nnz == 0
    # the Oracle's lists start with every truly relevant candidate: its true precision is min(|rel|, N)/N
    evaluated = np.flatnonzero(split.test.user_counts() > 0)
    n_rel = rel.sum(axis=1)[evaluated]
    want = np.mean(np.minimum(n_rel, 10)[n_rel > 0] / 10)  # no true relevant item: undefined, left out
    got = res[(res.recommender == "Oracle") & (res.metric == "precision") & (res.truth == "true")]["value"].item()
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("compiled", [False, True])
def test_true_relevance_kernel_and_blocks_give_the_set_difference(compiled, monkeypatch):
    """Truth rows in another order than the observed users', training items outside the truth (consumed
    dislikes): the compiled merge and scipy's blocks both give truth_u - train_u, canonical."""
    from kernel_paths import use_kernels

    import simrec.experiment as experiment

    truth = IBP(300, 12.0, 1.0, 0.3).generate(5)
    rows = np.flatnonzero(truth.user_counts() > 0)[::-1]
    rng = np.random.default_rng(6)
    T = truth.matrix[rows].toarray().astype(bool)
    seen = (T & (rng.random(T.shape) < 0.4)) | (rng.random(T.shape) < 0.02)
    train = Interactions(sp.csr_array(seen.astype(np.int8)))
    use_kernels(monkeypatch, compiled)
    monkeypatch.setattr(experiment, "_BLOCK_PAIRS", 11)
    rel = true_relevance(truth, rows, train)
    assert rel.has_canonical_format and rel.dtype == np.int8 and rel.indices.dtype == np.int32
    np.testing.assert_array_equal(rel.toarray(), (T & ~seen).astype(np.int8))


def test_compiled_and_numpy_paths_give_the_same_replicate(monkeypatch):
    """Issue 29: every step of an IBP-Pop replicate (truth, observation, split, true relevance, the three
    baselines' lists, their metrics) is the same, draw for draw, whether each hot path runs its compiled
    kernel or its numpy code; the whole replicate gives the same results table."""
    from kernel_paths import use_kernels

    world = World("ibp-pop", IBP(n_users=400, alpha=40.0, c=1.0, sigma=0.3), PROFILE, PopularitySampler())
    ev = Evaluation(recommenders=(Oracle(), Popular(), RandomRecommender()), metrics=(Precision(), Recall(), NDCG()))
    tables = []
    for compiled in (False, True):
        with pytest.MonkeyPatch.context() as mp:
            use_kernels(mp, compiled)
            tables.append(run_replicate(world, ev, 17).results)
    pd.testing.assert_frame_equal(tables[0], tables[1])
