"""MNAR corrections on sampled ranks in the harness (``[debias.sampled]``; simrec.debias.combined).

References: closed forms of the weighted means (hand-written numpy on the same ranks), the SNIPS estimator of
simrec.debias where sampling leaves the ranks unchanged (n = every user's candidate count, without replacement),
and the run's own rows (the sampled rows draw from a stream of their own, so the other rows are unchanged).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from simrec.debias import SNIPS, Recall, rank_test
from simrec.debias.combined import SampledDesign, pair_global_ranks, sampled_rows
from tests.cli_helpers import invoke
from tests.debias.test_harness import SCENARIO

SAMPLED = SCENARIO + '[debias.sampled]\nn = 20\nestimators = ["naive", "bv", "bv_mle", "mle"]\n'


def _tiny(seed: int = 0):
    gen = np.random.default_rng(seed)
    n_users, n_items = 30, 25
    train = sp.csr_array((gen.random((n_users, n_items)) < 0.2).astype(np.int8))
    free = train.toarray() == 0
    rel = free & (gen.random((n_users, n_items)) < 0.5)
    rel[np.arange(n_users), np.argmax(free, axis=1)] = True  # every user has a relevant candidate
    test = rel & (gen.random((n_users, n_items)) < 0.6)
    test[np.arange(n_users), np.argmax(rel, axis=1)] = True
    scores = gen.random((n_users, n_items))
    scores[~free] = -np.inf
    return train, sp.csr_array(rel.astype(np.int8)), sp.csr_array(test.astype(np.int8)), scores


def test_global_ranks_are_the_positions_in_the_full_ranking_of_the_candidates():
    train, rel, test, scores = _tiny()
    ranks = pair_global_ranks(lambda rows: scores[rows], train, test, np.random.default_rng(1), block=100)
    order = np.argsort(-scores, axis=1)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(1, scores.shape[1] + 1)[None, :].repeat(len(order), 0), axis=1)
    rows = np.repeat(np.arange(test.shape[0]), np.diff(test.indptr))
    assert np.array_equal(ranks, position[rows, test.indices])  # training items score -inf, ranked last


def test_without_sampling_snips_naive_is_the_snips_estimator_and_the_naive_weighting_is_todays_number():
    train, rel, test, scores = _tiny()
    # every user the same number of candidates, so n = N_u leaves every rank as it is (hypergeometric, all drawn)
    train = sp.csr_array(np.zeros(train.shape, dtype=np.int8))
    scores = np.random.default_rng(3).random(scores.shape)
    gen = np.random.default_rng(4)
    t_ranks = pair_global_ranks(lambda rows: scores[rows], train, test, gen)
    r_ranks = pair_global_ranks(lambda rows: scores[rows], train, rel, gen)
    p = np.random.default_rng(5).uniform(0.1, 1.0, test.nnz)
    n_items, k = test.shape[1], 5
    design = SampledDesign(n_items, ("recall",), ("naive", "mle"), k=k, replace=False)
    rows = sampled_rows(design, k, test, rel, train, t_ranks, r_ranks, {"world": p}, gen, 1.96)
    got = {(r[1], r[2]): r for r in rows}
    lists = np.argsort(-scores, axis=1)  # the full rankings
    ranked = rank_test(lists, test, train=train, n_relevant=np.diff(rel.indptr).astype(float))
    assert got[("SNIPS+naive", "world")][3] == pytest.approx(SNIPS().estimate(ranked, Recall(k), p).value, abs=1e-12)
    hits = (t_ranks <= k).astype(float)
    rows_of = np.repeat(np.arange(test.shape[0]), np.diff(test.indptr))
    naive = np.bincount(rows_of, weights=hits) / np.bincount(rows_of)
    assert got[("naive+naive", "none")][3] == pytest.approx(naive.mean(), abs=1e-12)
    # the truth: per user the share of its relevant items in the top k of the full ranking, averaged
    truth = np.mean([np.isin(rel.indices[rel.indptr[u] : rel.indptr[u + 1]], lists[u, :k]).mean() for u in range(30)])
    assert all(r[6] == pytest.approx(truth, abs=1e-12) for r in rows)
    # MLE: no interval (not a mean over users); the per-rank corrections have one around their value
    assert (
        np.isnan(got[("SNIPS+MLE", "world")][4]) and got[("SNIPS+naive", "world")][4] < got[("SNIPS+naive", "world")][3]
    )


def test_sampled_rows_are_the_snips_weighted_means_of_the_corrections_by_hand():
    train, rel, test, scores = _tiny(7)
    gen = np.random.default_rng(8)
    t_ranks = pair_global_ranks(lambda rows: scores[rows], train, test, gen)
    r_ranks = pair_global_ranks(lambda rows: scores[rows], train, rel, gen)
    p = np.random.default_rng(9).uniform(0.05, 1.0, test.nnz)
    p[::7] = np.nan  # left out
    design = SampledDesign(6, ("recall",), ("naive",), k=2)
    draw = np.random.default_rng(10)
    rows = sampled_rows(design, 2, test, rel, train, t_ranks, r_ranks, {"world": p}, draw, 1.96)
    from simrec.sampling import sample_ranks_binomial

    n_cand = test.shape[1] - np.diff(train.indptr)
    u = np.repeat(np.arange(test.shape[0]), np.diff(test.indptr))
    r = sample_ranks_binomial(t_ranks, n_cand[u], 6, rng=np.random.default_rng(10))  # the same draw
    f = (r <= 2).astype(float)  # naive correction of recall@2 at the sampled rank
    w = np.where(np.isnan(p), 0.0, 1.0 / np.nan_to_num(p, nan=1.0))
    num, den = np.bincount(u, weights=w * f), np.bincount(u, weights=w)
    want = np.mean((num / den)[den > 0])
    got = {(row[1], row[2]): row for row in rows}
    assert got[("SNIPS+naive", "world")][3] == pytest.approx(want, abs=1e-12)
    assert got[("SNIPS+naive", "world")][7] == int((den > 0).sum())


def test_invalid_designs_are_refused_with_the_rule():
    with pytest.raises(ValueError, match="`n` must be an integer >= 2"):
        SampledDesign(1)
    with pytest.raises(ValueError, match="`estimators` must be among"):
        SampledDesign(10, estimators=("magic",))
    with pytest.raises(ValueError, match="`gamma` must be in"):
        SampledDesign(10, gamma=2.0)


@pytest.mark.slow
def test_simrec_run_writes_the_combined_rows_beside_the_others_which_stay_unchanged(tmp_path):
    plain, both = tmp_path / "plain.toml", tmp_path / "both.toml"
    plain.write_text(SCENARIO)
    both.write_text(SAMPLED)
    for path in (plain, both):
        code, _, err = invoke(["run", str(path), "--out", str(tmp_path / path.stem), "-q"])
        assert code == 0, err
    a = pd.read_parquet(tmp_path / "plain" / "debias.parquet")
    b = pd.read_parquet(tmp_path / "both" / "debias.parquet")
    sampled = b["metric"].str.startswith("sampled20:")
    pd.testing.assert_frame_equal(b[~sampled].reset_index(drop=True), a)  # a stream of its own
    s = b[sampled]
    assert set(s["metric"]) == {"sampled20:Recall@10"}
    # 2 replicates x 2 worlds x 3 recommenders x 4 estimators x (naive weights + SNIPS with world and uniform)
    assert len(s) == 2 * 2 * 3 * 4 * 3
    assert set(s["estimator"]) == {f"{w}+{e}" for w in ("naive", "SNIPS") for e in ("naive", "BV", "BV_MLE", "MLE")}
    assert set(s.loc[s["estimator"].str.startswith("naive+"), "propensity"]) == {"none"}
    # one truth per replicate x world x recommender, the per-user recall@10 of the full ranking; the Oracle's
    # full ranking puts the relevant items first whatever its tie-breaks, so it equals the lists' recall truth
    assert (s.groupby(["replicate", "world", "recommender"])["truth"].nunique() == 1).all()
    key = ["replicate", "world"]
    lists_truth = b[(b["metric"] == "recall") & (b["recommender"] == "Oracle")].groupby(key)["truth"].first()
    mine = s[s["recommender"] == "Oracle"].groupby(key)["truth"].first()
    pd.testing.assert_series_equal(mine, lists_truth, rtol=0, atol=1e-12)
    assert s.loc[s["estimator"].str.endswith("MLE") & ~s["estimator"].str.endswith("BV_MLE"), "lower"].isna().all()
    assert s.loc[s["estimator"].str.endswith("+naive"), "lower"].notna().all()
    summary = pd.read_csv(tmp_path / "both" / "debias_summary.csv")
    assert (summary["metric"] == "sampled20:Recall@10").sum() == 2 * 3 * 4 * 3


def test_a_sample_size_above_the_items_is_refused_before_work(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SAMPLED.replace("n = 20\n", "n = 500\n"))
    code, _, err = invoke(["run", str(path), "--out", str(tmp_path / "out"), "-q"])
    assert code == 2 and "debias.sampled.n" in err and "500" in err
    assert not (tmp_path / "out").exists()
