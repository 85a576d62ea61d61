"""User sampling (dissertation §2.7, Tables 6-7): exact checks, tests' size and power, tables; item-sampling
estimators on the user samples (simrec's extension): the harness replayed, the library by hand, coverage."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simrec.sampling import (
    MLE,
    BiasVariance,
    MESPrior,
    MLEPrior,
    MSEOptimal,
    Naive,
    bonferroni,
    mean_t_test,
    proportion_z_test,
)
from simrec.stress import RecommenderRanks, StressConfig, run_stress
from simrec.stress.harness import metric_values
from simrec.stress.user_sampling import (
    ESTIMATOR_TEST_COLUMNS,
    UserSamplingConfig,
    UserSamplingResult,
    bonferroni_z,
    common_users,
    pair_tests,
    run_user_sampling,
    size_label,
    user_sampling_errors,
    user_sampling_estimator_errors,
    user_sampling_estimator_table,
    user_sampling_estimator_tests,
    user_sampling_table,
    user_sampling_tests,
    user_sampling_wide,
)


def _recs(ranks: dict[str, np.ndarray], n_items: int = 1000) -> list[RecommenderRanks]:
    return [RecommenderRanks(name, r, np.full(r.size, n_items), np.arange(r.size)) for name, r in ranks.items()]


def _geometric_ranks(rng: np.random.Generator, size: int, scale: float, n_items: int = 1000) -> np.ndarray:
    return np.minimum(1 + np.floor(rng.exponential(scale, size)), n_items).astype(np.int64)


def _col(res: UserSamplingResult, family: str, k: int) -> int:
    return int(np.flatnonzero((np.asarray(res.families) == family) & (res.ks == k))[0])


def test_sample_of_every_user_reproduces_the_population_exactly():
    rng = np.random.default_rng(0)
    recs = _recs({"A": _geometric_ranks(rng, 300, 20), "B": _geometric_ranks(rng, 300, 40)})
    cfg = UserSamplingConfig(sizes=(300,), repeats=3, k_max=20)
    res = run_user_sampling(recs, 300, cfg, rng=1)
    f = cfg.f_table()[:-1]
    direct = np.stack([metric_values(r.ranks, f).mean(axis=0) for r in recs])
    np.testing.assert_allclose(res.exact, direct, rtol=0, atol=1e-14)
    assert (res.mean == res.exact).all()  # same histogram, same sums: bit-equal
    assert res.fpc == 0 and (res.standard_error() == 0).all()
    table = user_sampling_table([res])
    assert (table["coverage"] == 1).all() and (table["mean_abs_rel_error"].fillna(0) == 0).all()
    t = pair_tests(res, "paired")
    differs = res.exact[0] != res.exact[1]
    assert (t.p_value[:, 0, differs] == 0).all() and (t.p_value[:, 0, ~differs] == 1).all()
    errors = user_sampling_errors([res])
    assert (errors["rel_error_pct"] == 0).all()


def test_sufficient_statistics_match_the_sampled_users_directly():
    rng = np.random.default_rng(1)
    ranks = {
        "A": _geometric_ranks(rng, 500, 15),
        "B": _geometric_ranks(rng, 500, 25),
        "C": _geometric_ranks(rng, 500, 8),
    }
    recs = _recs(ranks)
    cfg = UserSamplingConfig(sizes=(80,), repeats=4, k_max=30)
    res = run_user_sampling(recs, 80, cfg, rng=7)
    gen = np.random.default_rng(7)
    f = cfg.f_table()[:-1]
    for rep in range(4):
        idx = gen.choice(500, 80, replace=False)  # the draws run_user_sampling makes
        vals = [metric_values(r.ranks[idx], f) for r in recs]
        for j, v in enumerate(vals):
            np.testing.assert_allclose(res.mean[rep, j], v.mean(axis=0), atol=1e-14)
            np.testing.assert_allclose(res.mean_sq[rep, j], (v * v).mean(axis=0), atol=1e-14)
        for p, (a, b) in enumerate(res.pairs):
            np.testing.assert_allclose(res.mean_cross[rep, p], (vals[a] * vals[b]).mean(axis=0), atol=1e-14)


def test_tests_agree_with_the_library_tests_after_the_finite_population_correction():
    """Our statistics are simrec.sampling.users' (eqs. 53, Welch, paired) divided by sqrt(1 - m/M)."""
    rng = np.random.default_rng(2)
    recs = _recs({"A": _geometric_ranks(rng, 1000, 15), "B": _geometric_ranks(rng, 1000, 25)})
    cfg = UserSamplingConfig(sizes=(200,), repeats=1, k_max=20)
    res = run_user_sampling(recs, 200, cfg, rng=3)
    idx = np.random.default_rng(3).choice(1000, 200, replace=False)
    f = cfg.f_table()[:-1]
    va, vb = (metric_values(r.ranks[idx], f) for r in recs)
    scale = math.sqrt(res.fpc)
    two, paired = pair_tests(res, "two_sample"), pair_tests(res, "paired")
    for fam, k in (("recall", 10), ("ndcg", 10), ("average_precision", 20)):
        j = _col(res, fam, k)
        if fam == "recall":
            lib = proportion_z_test(int(va[:, j].sum()), 200, int(vb[:, j].sum()), 200)
        else:
            lib = mean_t_test(va[:, j], vb[:, j])
        assert two.statistic[0, 0, j] * scale == pytest.approx(lib.statistic, rel=1e-10)
        lib_p = mean_t_test(va[:, j], vb[:, j], paired=True)
        assert paired.statistic[0, 0, j] * scale == pytest.approx(lib_p.statistic, rel=1e-10)
        # the p-value is the library's at the corrected statistic
        assert paired.p_value[0, 0, j] == pytest.approx(2 * stats.t.sf(abs(lib_p.statistic) / scale, 199), rel=1e-9)


def test_bonferroni_arithmetic():
    assert bonferroni_z(0.95, 1) == pytest.approx(1.959964, abs=1e-6)
    assert bonferroni_z(0.95, 3) == pytest.approx(stats.norm.ppf(1 - 0.05 / 6), abs=1e-12)
    assert bonferroni_z(0.95, 3) == pytest.approx(2.393980, abs=1e-6)
    # the tests table's Bonferroni rejection (p <= alpha / n_pairs) is simrec.sampling.bonferroni's
    p = np.array([0.01, 0.02, 0.2])
    _, reject = bonferroni(p, alpha=0.05)
    assert list(reject) == list(p <= 0.05 / 3) == [True, False, False]
    with pytest.raises(ValueError, match="n_comparisons"):
        bonferroni_z(0.95, 0)


@pytest.fixture(scope="module")
def null_and_shift():
    """A population of 4,000 users; B and C are permutations of A (equal metrics), D is worse; 400 samples."""
    rng = np.random.default_rng(2026)
    a = _geometric_ranks(rng, 4000, 30)
    recs = _recs({"A": a, "B": rng.permutation(a), "C": rng.permutation(a), "D": _geometric_ranks(rng, 4000, 90)})
    cfg = UserSamplingConfig(sizes=(400,), repeats=400, k_max=10)
    return run_user_sampling(recs, 400, cfg, rng=11)


def _binomial_tolerance(p: float, n: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / n)


def test_a_null_difference_is_rejected_at_about_the_nominal_rate(null_and_shift):
    res = null_and_shift
    n = res.mean.shape[0]
    j = _col(res, "ndcg", 10)
    null_pairs = [p for p, (a, b) in enumerate(res.pairs) if {a, b} <= {0, 1, 2}]  # A-B, A-C, B-C
    for test in ("two_sample", "paired"):
        t = pair_tests(res, test)
        for p in null_pairs:
            rate = (t.p_value[:, p, j] <= 0.05).mean()
            assert abs(rate - 0.05) <= _binomial_tolerance(0.05, n), (test, p, rate)
        # Bonferroni over the 6 pairs: a null pair is rejected at most at about alpha / 6, so the three null
        # pairs together (the family-wise error over them) stay below alpha / 2 in expectation
        any_null = (t.p_value[:, null_pairs, j] <= 0.05 / len(res.pairs)).any(axis=1).mean()
        assert any_null <= 0.025 + _binomial_tolerance(0.025, n), (test, any_null)
    # intervals: coverage of the population value at the nominal 95%
    table = user_sampling_table([res])
    cell = table[(table["metric"] == "ndcg") & (table["k"] == 10)]
    assert (abs(cell["coverage"] - 0.95) <= _binomial_tolerance(0.95, n)).all(), cell["coverage"].tolist()
    assert (cell["coverage_bonferroni"] >= cell["coverage"]).all()
    # Hoeffding's interval (eq. 52): half-width sqrt(ln(2/alpha)/(2m)), conservative
    assert cell["hoeffding_half_width"].iloc[0] == pytest.approx(math.sqrt(math.log(2 / 0.05) / 800))
    assert (cell["coverage_hoeffding"] >= 0.95).all()


def test_a_true_difference_is_detected(null_and_shift):
    res = null_and_shift
    n = res.mean.shape[0]
    tests = user_sampling_tests([res], ks=[10])
    ad = tests[(tests["recommender_a"] == "A") & (tests["recommender_b"] == "D") & (tests["test"] == "paired")]
    assert (ad["exact_difference"] > 0.03).all()  # A's metrics are clearly higher
    # the paired test's power from the population: Phi(|T_A - T_D| / se - z_{alpha / (2 * 6)}),
    # se^2 = S_d^2 / m (1 - m/M) with S_d^2 the population variance of F_A - F_D
    p_ad = [p for p, (a, b) in enumerate(res.pairs) if (a, b) == (0, 3)][0]
    z = bonferroni_z(0.95, len(res.pairs))
    for _, row in ad.iterrows():
        j = _col(res, row["metric"], 10)
        s2 = res.n_population / (res.n_population - 1) * _population_var_of_difference(res, p_ad, j)
        se = math.sqrt(s2 / res.size * res.fpc)
        power = stats.norm.cdf(row["exact_difference"] / se - z)
        assert power > 0.9  # the case is a clear difference
        assert row["correct_rate_bonferroni"] >= power - _binomial_tolerance(power, n), (row["metric"], power)
    assert (ad["wrong_sign_rate_bonferroni"] == 0).all()
    null = tests[(tests["recommender_a"] == "A") & (tests["recommender_b"] == "B")]
    assert (null["exact_difference"] == 0).all() and (null["correct_rate_bonferroni"] == 0).all()


def _population_var_of_difference(res: UserSamplingResult, pair: int, j: int) -> float:
    """Population variance (ddof = 0) of F_A - F_B: every sample's moments average to the population's."""
    a, b = res.pairs[pair]
    # E[(F_A - F_B)^2] - (T_A - T_B)^2, with the population second moments estimated without error by
    # averaging the samples' (unbiased under simple random sampling)
    second = (res.mean_sq[:, a, j] + res.mean_sq[:, b, j] - 2 * res.mean_cross[:, pair, j]).mean()
    return float(second - (res.exact[a, j] - res.exact[b, j]) ** 2)


def test_common_users_aligns_by_label():
    a = RecommenderRanks("A", np.array([1, 2, 3, 4]), np.full(4, 10), np.array(["u1", "u2", "u3", "u4"]))
    b = RecommenderRanks("B", np.array([9, 7, 5]), np.full(3, 10), np.array(["u4", "u2", "u9"]))
    np.testing.assert_array_equal(common_users([a, b]), [[2, 7], [4, 9]])
    c = RecommenderRanks("C", np.array([1]), np.full(1, 10), np.array(["zz"]))
    with pytest.raises(ValueError, match="share no evaluated user"):
        common_users([a, c])
    with pytest.raises(ValueError, match=r"must be <= the number of users evaluated by every recommender \(2\); got 3"):
        run_user_sampling([a, b], 3, UserSamplingConfig(sizes=(3,), k_max=5), rng=0)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"sizes": ()}, "at least one"),
        ({"sizes": (1,)}, "sizes"),
        ({"sizes": (5, 5)}, "distinct"),
        ({"sizes": (5,), "repeats": 0}, "repeats"),
        ({"sizes": (5,), "confidence": 1.0}, "confidence"),
        ({"sizes": (5,), "metrics": ("auc_typo",)}, "metrics"),
    ],
)
def test_config_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        UserSamplingConfig(**kwargs)


def test_errors_table_has_the_dissertations_columns():
    rng = np.random.default_rng(4)
    recs = _recs({"A": _geometric_ranks(rng, 1200, 20), "B": _geometric_ranks(rng, 1200, 40)}, n_items=1000)
    cfg = UserSamplingConfig(sizes=(100, 1000), repeats=5, metrics=("recall", "ndcg"), k_max=10)
    users = [run_user_sampling(recs, m, cfg, rng=m) for m in cfg.sizes]
    item = [
        run_stress(r, "binomial", 100, StressConfig(repeats=3, metrics=("recall", "ndcg"), k_max=10), rng=5)
        for r in recs
    ]
    errors = user_sampling_errors(users, item, item_estimator="MN_MES")
    assert list(dict.fromkeys(errors["label"])) == ["item100", "user100", "user1K"]
    # the user-sampling value by hand: mean over repeats and K of |T^ - T|/T, sd over K
    res = users[0]
    cols = np.asarray(res.families) == "ndcg"
    e = np.abs(res.mean[:, 0, cols] - res.exact[0, cols]) / res.exact[0, cols] * 100
    row = errors[(errors["recommender"] == "A") & (errors["metric"] == "ndcg") & (errors["label"] == "user100")]
    assert row["rel_error_pct"].item() == pytest.approx(e.mean(axis=0).mean())
    assert row["rel_error_pct_sd"].item() == pytest.approx(e.mean(axis=0).std(ddof=1))
    assert row["rel_error_pct_sd_repeats"].item() == pytest.approx(e.mean(axis=1).std(ddof=1))
    # the item column: the same per-repeat definition on the harness's MN_MES estimates
    r0 = item[0]
    est = r0.estimates[:, r0.estimators.index("MN_MES"), :][:, np.asarray(r0.families) == "ndcg"]
    ex = r0.exact[np.asarray(r0.families) == "ndcg"]
    row = errors[(errors["recommender"] == "A") & (errors["metric"] == "ndcg") & (errors["label"] == "item100")]
    assert row["rel_error_pct"].item() == pytest.approx((np.abs(est - ex) / ex * 100).mean())
    wide = user_sampling_wide(errors, "toy")
    assert list(wide.columns) == ["dataset", "model", "metric", "item100", "user100", "user1K"]
    assert len(wide) == 4 and wide["user1K"].str.fullmatch(r"\d+\.\d\d±\d+\.\d\d").all()
    assert size_label("user", 10000) == "user10K" and size_label("user", 943) == "user943"
    assert size_label("item", 500) == "item500"


def test_figure_is_written(tmp_path):
    from simrec.stress.figures import plot_user_sampling

    rng = np.random.default_rng(5)
    recs = _recs({"A": _geometric_ranks(rng, 200, 20)})
    cfg = UserSamplingConfig(sizes=(50, 200), repeats=3, k_max=5)
    table = user_sampling_table([run_user_sampling(recs, m, cfg, rng=m) for m in cfg.sizes])
    path = plot_user_sampling(tmp_path, table)
    assert path == tmp_path / "user_sampling.png" and path.stat().st_size > 0
    assert plot_user_sampling(tmp_path, table.iloc[:0]) is None


@pytest.mark.parametrize("n_recommenders", [1, 3])
def test_shard_round_trip(tmp_path, n_recommenders):
    rng = np.random.default_rng(6)
    recs = _recs({name: _geometric_ranks(rng, 100, 10) for name in "ABC"[:n_recommenders]})
    res = run_user_sampling(recs, 30, UserSamplingConfig(sizes=(30,), repeats=2, k_max=5), rng=0)
    np.savez(tmp_path / "s.npz", **res.to_arrays())
    with np.load(tmp_path / "s.npz") as z:
        back = UserSamplingResult.from_arrays({k: z[k] for k in z.files})
    for name in ("mean", "mean_sq", "mean_cross", "exact", "pairs", "ks"):
        np.testing.assert_array_equal(getattr(back, name), getattr(res, name))
    assert (back.size, back.n_population, back.recommenders, back.families) == (
        res.size,
        res.n_population,
        res.recommenders,
        res.families,
    )
    tests = user_sampling_tests([back])
    assert len(tests) == (0 if n_recommenders == 1 else 2 * 3 * 15)


# ---------------------------------------------------------------------------
# item-sampling estimators on the user samples (simrec's extension of §2.7)
# ---------------------------------------------------------------------------
def _estimator_config(**kw) -> UserSamplingConfig:
    base = {
        "sizes": (40,),
        "repeats": 4,
        "metrics": ("recall", "ndcg"),
        "k_max": 5,
        "estimators": (Naive(), BiasVariance(0.1), MLE(), MSEOptimal(MESPrior(0.001))),
        "item_sizes": (20,),
    }
    return UserSamplingConfig(**{**base, **kw})


@pytest.mark.parametrize("n_boot", [0, 3])
def test_estimators_on_every_user_replay_the_harness_exactly(n_boot):
    """m = M: each repeat's estimate is run_stress's estimate of that repeat (same draws, same histogram)."""
    rng = np.random.default_rng(8)
    a = RecommenderRanks("A", _geometric_ranks(rng, 120, 10), np.full(120, 200), np.arange(120).astype(str))
    perm = rng.permutation(120)  # B lists the same users in another order: the common users are aligned by label
    b = RecommenderRanks("B", _geometric_ranks(rng, 120, 25, 200), np.full(120, 200), np.arange(120).astype(str)[perm])
    cfg = _estimator_config(sizes=(120,), repeats=2, n_boot=n_boot, item_sizes=(20, 50))
    seeds = [[np.random.SeedSequence([j, i]) for i in range(2)] for j in range(2)]
    res = run_user_sampling([a, b], 120, cfg, rng=3, item_rngs=seeds)
    assert res.item_estimates.shape == (2, 2, 2, 4, 10)
    # more estimators in the harness (sharing fits and linear solves): the subset does not change a value
    every = StressConfig(
        repeats=2,
        metrics=("recall", "ndcg"),
        k_max=5,
        estimators=(BiasVariance(1.0), *cfg.estimators, MSEOptimal(MLEPrior()), BiasVariance(0.01, MESPrior(0.001))),
    )
    for j, rec in enumerate((a, b)):
        for i, n in enumerate((20, 50)):
            st = run_stress(rec, "binomial", n, every, rng=seeds[j][i])
            for e, name in enumerate(res.estimators):
                np.testing.assert_array_equal(
                    res.item_estimates[:, i, j, e], st.estimates[:, st.estimators.index(name)]
                )
    errors = user_sampling_estimator_errors([res], [run_stress(a, "binomial", 20, every, rng=seeds[0][0])])
    pairs = errors[(errors["recommender"] == "A") & (errors["n"] == 20)].groupby(["metric", "estimator"])
    for _, grp in pairs:  # item20 (all users, harness) and item20+user120 (m = M): the same estimates; T summed
        assert list(grp["label"]) == ["item20", "item20+user120"]  # in another order (a histogram here)
        assert grp["rel_error_pct"].iloc[0] == pytest.approx(grp["rel_error_pct"].iloc[1], rel=1e-12)


def test_estimator_part_matches_the_library_on_the_sampled_users():
    """Each repeat: the users of run_user_sampling's draw, the sampled ranks of its item streams, the public
    estimators of simrec.sampling on them; the bootstrap replicates of the naive estimator by hand."""
    from simrec.sampling import SamplingScheme, bias_variance, mle, ndcg, recall, sample_ranks_binomial

    rng = np.random.default_rng(9)
    recs = _recs({"A": _geometric_ranks(rng, 150, 10, 200), "B": _geometric_ranks(rng, 150, 30, 200)}, n_items=200)
    cfg = _estimator_config(sizes=(40,), estimators=(Naive(), BiasVariance(0.1), MLE()))
    res = run_user_sampling(recs, 40, cfg, rng=21)
    cfg = _estimator_config(sizes=(40,), n_boot=30, estimators=(Naive(),))
    boot_res = run_user_sampling(recs, 40, cfg, rng=21)  # the bootstrap draws leave the draws of users and items
    np.testing.assert_array_equal(boot_res.item_estimates[:, :, :, 0], res.item_estimates[:, :, :, 0])
    gen = np.random.default_rng(21)
    kids = np.random.default_rng(21).spawn(3)  # the bootstrap stream, then one item stream per recommender
    item_gens = [kids[1], kids[2]]
    boot = kids[0]
    sch = SamplingScheme(200, 20)
    metrics = [recall(k) for k in range(1, 6)] + [ndcg(k) for k in range(1, 6)]
    table = np.column_stack([m(np.arange(1, 21), 20) for m in metrics])  # F on sampled ranks 1..n
    point = res
    for rep in range(cfg.repeats):
        idx = gen.choice(150, 40, replace=False)
        sampled = [sample_ranks_binomial(r.ranks, r.n_candidates, 20, rng=g)[idx] for r, g in zip(recs, item_gens)]
        for j, r in enumerate(sampled):
            got = point.item_estimates[rep, 0, j]
            np.testing.assert_allclose(got[0], table[r - 1].mean(axis=0), rtol=1e-12, atol=1e-15)
            bv = [bias_variance(m, sch, 0.1).mean(r) for m in metrics]
            np.testing.assert_allclose(got[1], bv, rtol=1e-9, atol=1e-12)
            prior = mle(r, sch)
            np.testing.assert_allclose(got[2], [prior.expectation(m) for m in metrics], rtol=1e-9, atol=1e-12)
        reps = []
        for _ in range(cfg.n_boot):  # the users resampled with replacement, the same for both recommenders
            w = np.bincount(boot.integers(0, 40, size=40), minlength=40)
            reps.append([(w[:, None] * table[r - 1]).sum(axis=0) / 40 for r in sampled])
        reps = np.asarray(reps)  # (B, R, J)
        lo, hi = np.quantile(reps, [0.025, 0.975], axis=0)
        res = boot_res
        np.testing.assert_allclose(res.item_lower[rep, 0, :, 0], lo, atol=1e-12)
        np.testing.assert_allclose(res.item_upper[rep, 0, :, 0], hi, atol=1e-12)
        np.testing.assert_allclose(res.item_se[rep, 0, :, 0], reps.std(axis=0, ddof=1), atol=1e-12)
        np.testing.assert_allclose(
            res.item_pair_se[rep, 0, 0, 0], (reps[:, 0] - reps[:, 1]).std(axis=0, ddof=1), atol=1e-12
        )


def test_estimator_tables_agree_with_a_direct_count():
    rng = np.random.default_rng(10)
    a = _geometric_ranks(rng, 300, 12, 200)
    recs = _recs({"A": a, "B": _geometric_ranks(rng, 300, 30, 200), "C": rng.permutation(a)}, n_items=200)
    cfg = _estimator_config(sizes=(60,), repeats=12, n_boot=20, estimators=(Naive(), BiasVariance(0.1)))
    res = run_user_sampling(recs, 60, cfg, rng=4)
    table = user_sampling_estimator_table([res])
    assert len(table) == 3 * 2 * 10 and set(table["n_boot"]) == {20}
    T = res.exact  # (R, J)
    for _, row in table.sample(12, random_state=0).iterrows():
        r, e = res.recommenders.index(row["recommender"]), res.estimators.index(row["estimator"])
        j = _col(res, row["metric"], row["k"])
        est = res.item_estimates[:, 0, r, e, j]
        lo, hi = res.item_lower[:, 0, r, e, j], res.item_upper[:, 0, r, e, j]
        assert row["exact"] == T[r, j] and row["mean"] == pytest.approx(est.mean())
        assert row["mean_abs_rel_error"] == pytest.approx((np.abs(est - T[r, j]) / T[r, j]).mean())
        assert row["coverage"] == pytest.approx(((lo <= T[r, j]) & (T[r, j] <= hi)).mean())
        assert row["mean_half_width"] == pytest.approx(((hi - lo) / 2).mean())
    tests = user_sampling_estimator_tests([res], ks=[5])
    assert set(tests["k"]) == {5} and len(tests) == 2 * 3 * 2 * 2  # tests x pairs x estimators x metrics
    alpha = 0.05
    for _, row in tests.iterrows():
        p = [
            q
            for q, (x, y) in enumerate(res.pairs)
            if (res.recommenders[x], res.recommenders[y]) == (row["recommender_a"], row["recommender_b"])
        ][0]
        x, y = res.pairs[p]
        e, j = res.estimators.index(row["estimator"]), _col(res, row["metric"], 5)
        d = res.item_estimates[:, 0, x, e, j] - res.item_estimates[:, 0, y, e, j]
        exact_d = T[x, j] - T[y, j]
        if abs(exact_d) <= 1e-12:  # A and C: permuted ranks, a tie
            assert math.isnan(row["order_rate"]) and row["correct_rate_bonferroni"] == 0
        else:
            assert row["order_rate"] == pytest.approx((np.sign(d) == np.sign(exact_d)).mean())
        se = (
            np.hypot(res.item_se[:, 0, x, e, j], res.item_se[:, 0, y, e, j])
            if row["test"] == "two_sample"
            else res.item_pair_se[:, 0, p, e, j]
        )
        pv = 2 * stats.norm.sf(np.abs(d / se))
        assert row["reject_rate"] == pytest.approx((pv <= alpha).mean())
        assert row["reject_rate_bonferroni"] == pytest.approx((pv <= alpha / 3).mean())
        if abs(exact_d) > 1e-12:
            ok = (pv <= alpha / 3) & (np.sign(d) == np.sign(exact_d))
            assert row["correct_rate_bonferroni"] == pytest.approx(ok.mean())


@pytest.fixture(scope="module")
def full_ranking_samples():
    """Sampling without replacement of every item (n = N): r = R, so the naive estimator is the user-sample mean."""
    rng = np.random.default_rng(2027)
    a = np.minimum(1 + np.floor(rng.exponential(12, 5000)), 60).astype(np.int64)
    recs = _recs({"A": a, "B": rng.permutation(a)}, n_items=60)
    cfg = UserSamplingConfig(
        sizes=(100,),
        repeats=200,
        metrics=("recall",),
        k_max=10,
        estimators=(Naive(),),
        item_scheme="hypergeometric",
        item_sizes=(60,),
        n_boot=100,
    )
    return run_user_sampling(recs, 100, cfg, rng=12)


def test_bootstrap_intervals_cover_at_the_nominal_rate(full_ranking_samples):
    res = full_ranking_samples
    np.testing.assert_allclose(res.item_estimates[:, 0, :, 0], res.mean, rtol=1e-12)  # r = R: the user-sample means
    table = user_sampling_estimator_table([res])
    n = res.item_estimates.shape[0]
    cell = table[table["k"] == 10]
    # the percentile bootstrap of a mean is first-order correct (Efron & Tibshirani 1993 §13): the nominal 95%
    # within Monte-Carlo error (3 binomial sd) and the bootstrap's O(1/m) shortfall (1/m = 0.01)
    assert (abs(cell["coverage"] - 0.95) <= _binomial_tolerance(0.95, n) + 0.01).all(), cell["coverage"].tolist()
    # its standard error estimates the user average's: sqrt(S^2/m) (no finite-population correction, m/M = 0.02)
    pop_sd = np.sqrt(res.mean_sq.mean(axis=0) - res.exact**2)[:, -1]
    assert cell["mean_se"].to_numpy() == pytest.approx(pop_sd / np.sqrt(100), rel=0.05)
    # A and B have equal metrics: the paired test's null rejection rate is about alpha
    tests = user_sampling_estimator_tests([res], ks=[10])
    paired = tests[tests["test"] == "paired"]["reject_rate"].item()
    assert abs(paired - 0.05) <= _binomial_tolerance(0.05, n) + 0.01, paired


def test_naive_estimate_on_user_samples_is_unbiased_for_the_expected_sampled_metric():
    """E over users and items of the naive estimate on m users = (1/M) Σ_u E[F(r_u)], K&R's exact expectation."""
    from simrec.sampling import ndcg, recall
    from simrec.stress import expected_sampled_metrics

    rng = np.random.default_rng(11)
    recs = _recs({"A": _geometric_ranks(rng, 2000, 15, 300)}, n_items=300)
    cfg = UserSamplingConfig(
        sizes=(50,), repeats=400, metrics=("recall", "ndcg"), k_max=5, estimators=(Naive(),), item_sizes=(30,)
    )
    res = run_user_sampling(recs, 50, cfg, rng=13)
    metrics = [recall(k) for k in range(1, 6)] + [ndcg(k) for k in range(1, 6)]
    expected = expected_sampled_metrics(recs[0], metrics, (30,))[0]
    est = res.item_estimates[:, 0, 0, 0]
    se = est.std(axis=0, ddof=1) / np.sqrt(est.shape[0])
    assert (np.abs(est.mean(axis=0) - expected) <= 4 * se).all()


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"item_sizes": ()}, "`item_sizes` must hold at least one"),
        ({"n_boot": 1}, r"`n_boot` must be 0 \(no intervals\) or >= 2; got 1"),
        ({"item_scheme": "adaptive"}, "`item_scheme` must be one of"),
        ({"item_sizes": (20, 20)}, "`item_sizes` must be distinct"),
        ({"item_sizes": (1,)}, "item_sizes"),
        ({"estimators": (Naive(), Naive())}, "distinct names"),
    ],
)
def test_estimator_config_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        _estimator_config(**kwargs)


def test_estimator_runtime_errors():
    from simrec.sampling import AdaptiveMLE

    with pytest.raises(ValueError, match="AdaptiveMLE"):
        _estimator_config(estimators=(AdaptiveMLE(),))
    with pytest.raises(TypeError, match="estimator objects"):
        _estimator_config(estimators=("MLE",))
    recs = _recs({"A": np.arange(1, 41)}, n_items=100)
    with pytest.raises(ValueError, match="`item_rngs` must hold 1 sequences"):
        run_user_sampling(recs, 10, _estimator_config(sizes=(10,)), rng=0, item_rngs=[[1], [2]])
    with pytest.raises(ValueError, match="'popularity' needs popularity shares; 'A' has none"):
        run_user_sampling(recs, 10, _estimator_config(sizes=(10,), item_scheme="popularity"), rng=0)
    with pytest.raises(ValueError, match=r"`n` must be an integer in \[2, 100\]; got 500"):
        run_user_sampling(recs, 10, _estimator_config(sizes=(10,), item_sizes=(500,)), rng=0)


def test_estimator_shard_round_trip(tmp_path):
    rng = np.random.default_rng(12)
    recs = _recs({"A": _geometric_ranks(rng, 80, 10, 100), "B": _geometric_ranks(rng, 80, 20, 100)}, n_items=100)
    for n_boot in (0, 2):
        res = run_user_sampling(
            recs, 30, _estimator_config(sizes=(30,), repeats=2, n_boot=n_boot, estimators=(Naive(),)), rng=0
        )
        np.savez(tmp_path / "s.npz", **res.to_arrays())
        with np.load(tmp_path / "s.npz") as z:
            back = UserSamplingResult.from_arrays({k: z[k] for k in z.files})
        for name in ("item_estimates", "item_lower", "item_upper", "item_se", "item_pair_se", "item_sizes"):
            x, y = getattr(back, name), getattr(res, name)
            assert (x is None and y is None) or np.array_equal(x, y, equal_nan=True), name
        assert (back.estimators, back.item_scheme, back.n_boot) == (res.estimators, res.item_scheme, res.n_boot)
        pd.testing.assert_frame_equal(user_sampling_estimator_table([back]), user_sampling_estimator_table([res]))
    plain = run_user_sampling(recs, 30, UserSamplingConfig(sizes=(30,), repeats=2, k_max=5), rng=0)
    assert "item_estimates" not in plain.to_arrays() and user_sampling_estimator_table([plain]).empty
    assert user_sampling_estimator_tests([plain]).columns.tolist() == ESTIMATOR_TEST_COLUMNS


def test_estimator_figure_is_written(tmp_path):
    from simrec.stress.figures import plot_user_sampling_estimators

    rng = np.random.default_rng(13)
    recs = _recs({"A": _geometric_ranks(rng, 100, 10, 100)}, n_items=100)
    cfg = _estimator_config(sizes=(30, 100), repeats=2, n_boot=2, estimators=(Naive(), BiasVariance(0.1)))
    table = user_sampling_estimator_table([run_user_sampling(recs, m, cfg, rng=m) for m in cfg.sizes])
    path = plot_user_sampling_estimators(tmp_path, table)
    assert path == tmp_path / "user_sampling_estimators.png" and path.stat().st_size > 0
    assert plot_user_sampling_estimators(tmp_path, table.iloc[:0]) is None
