"""User sampling (dissertation §2.7, Tables 6-7): exact checks, tests' size and power, tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from simrec.sampling import bonferroni, mean_t_test, proportion_z_test
from simrec.stress import RecommenderRanks, StressConfig, run_stress
from simrec.stress.harness import metric_values
from simrec.stress.user_sampling import (
    UserSamplingConfig,
    UserSamplingResult,
    bonferroni_z,
    common_users,
    pair_tests,
    run_user_sampling,
    size_label,
    user_sampling_errors,
    user_sampling_table,
    user_sampling_tests,
    user_sampling_wide,
)


def _recs(ranks: dict[str, np.ndarray], n_items: int = 1000) -> list[RecommenderRanks]:
    return [RecommenderRanks(name, r, np.full(r.size, n_items), np.arange(r.size)) for name, r in ranks.items()]


def _geometric_ranks(rng: np.random.Generator, size: int, scale: float) -> np.ndarray:
    return np.minimum(1 + np.floor(rng.exponential(scale, size)), 1000).astype(np.int64)


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
    ranks = {"A": _geometric_ranks(rng, 500, 15), "B": _geometric_ranks(rng, 500, 25), "C": _geometric_ranks(rng, 500, 8)}
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


@pytest.mark.parametrize("kwargs, pattern", [
    ({"sizes": ()}, "at least one"),
    ({"sizes": (1,)}, "sizes"),
    ({"sizes": (5, 5)}, "distinct"),
    ({"sizes": (5,), "repeats": 0}, "repeats"),
    ({"sizes": (5,), "confidence": 1.0}, "confidence"),
    ({"sizes": (5,), "metrics": ("auc_typo",)}, "metrics"),
])
def test_config_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        UserSamplingConfig(**kwargs)


def test_errors_table_has_the_dissertations_columns():
    rng = np.random.default_rng(4)
    recs = _recs({"A": _geometric_ranks(rng, 1200, 20), "B": _geometric_ranks(rng, 1200, 40)}, n_items=1000)
    cfg = UserSamplingConfig(sizes=(100, 1000), repeats=5, metrics=("recall", "ndcg"), k_max=10)
    users = [run_user_sampling(recs, m, cfg, rng=m) for m in cfg.sizes]
    item = [run_stress(r, "binomial", 100, StressConfig(repeats=3, metrics=("recall", "ndcg"), k_max=10), rng=5)
            for r in recs]
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
        res.size, res.n_population, res.recommenders, res.families)
    tests = user_sampling_tests([back])
    assert len(tests) == (0 if n_recommenders == 1 else 2 * 3 * 15)
