"""Metrics without a cutoff in the stress harness: AUC and untruncated AP (K&R Tables 3-4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simrec.sampling import MLE, BiasVariance, ConstrainedLeastSquares, MappingEstimator, Naive, RankEstimate
from simrec.stress import (
    METRIC_NAMES,
    UNTRUNCATED_METRICS,
    RecommenderRanks,
    StressConfig,
    coverage_table,
    decomposition_table,
    estimate_table,
    relative_error_table,
    run_stress,
)


@pytest.fixture(scope="module")
def mixed() -> RecommenderRanks:
    """Ranks with two candidate-set sizes (N_u = 400 or 1000), so AUC depends on each user's own N_u."""
    rng = np.random.default_rng(5)
    M = 300
    n_cand = np.where(np.arange(M) % 3 == 0, 400, 1000)
    return RecommenderRanks("A", np.minimum(rng.geometric(1 / 40, M), n_cand), n_cand, np.arange(M))


def test_exact_auc_and_full_ap_equal_the_direct_computation(mixed):
    cfg = StressConfig(repeats=1, k_max=5, metrics=("ndcg", "auc", "average_precision_full"), estimators=(Naive(),))
    res = run_stress(mixed, "binomial", 30, cfg, rng=0)
    R, N_u = mixed.ranks.astype(float), mixed.n_candidates.astype(float)
    assert res.families == ("ndcg",) * 5 + ("auc", "average_precision_full")
    np.testing.assert_array_equal(res.ks, [1, 2, 3, 4, 5, 0, 0])
    assert res.metric_labels[-2:] == ["auc", "average_precision_full"]
    assert res.exact[5] == pytest.approx(((N_u - R) / (N_u - 1)).mean(), abs=1e-13)  # K&R eq. 7, own N_u
    assert res.exact[6] == pytest.approx((1 / R).mean(), abs=1e-13)  # K&R eq. 12


@pytest.mark.parametrize("scheme", ["binomial", "hypergeometric"])
def test_naive_sampled_auc_is_unbiased(mixed, scheme):
    """E[(n − r)/(n − 1)] = 1 − θ_u = (N_u − R_u)/(N_u − 1) (K&R §4.4.1): the mean over repeats is within
    4 standard errors of the exact AUC, the SE from Var[r − 1] = (n − 1) θ(1 − θ) (binomial; an upper bound
    without replacement)."""
    n, repeats = 20, 300
    cfg = StressConfig(repeats=repeats, k_max=1, metrics=("auc",), estimators=(Naive(),))
    res = run_stress(mixed, scheme, n, cfg, rng=17)
    theta = (mixed.ranks - 1) / (mixed.n_candidates - 1.0)
    se = np.sqrt((theta * (1 - theta)).sum() / (n - 1)) / mixed.n_users / np.sqrt(repeats)
    naive = res.estimates[:, 0, 0]
    assert abs(naive.mean() - res.exact[0]) < 4 * se
    # and the sd over repeats is the theoretical one (within 20%: 300 repeats)
    assert naive.std(ddof=1) == pytest.approx(se * np.sqrt(repeats), rel=0.2 if scheme == "binomial" else 1.0)


def test_every_estimator_but_the_mappings_estimates_them(mixed):
    ests = (Naive(), RankEstimate(), ConstrainedLeastSquares(), BiasVariance(0.1), MLE(), MappingEstimator("bound"))
    cfg = StressConfig(repeats=3, k_max=5, metrics=("recall", "auc", "average_precision_full"), estimators=ests)
    res = run_stress(mixed, "binomial", 50, cfg, rng=2)
    untr = res.ks == 0
    assert np.isfinite(res.estimates[:, :-1, :]).all()
    assert np.isnan(res.estimates[:, -1, untr]).all() and np.isfinite(res.estimates[:, -1, ~untr]).all()
    # K&R: sampled AUC is nearly unbiased, the corrections keep it close; MLE recovers AUC from P(R)
    mean = res.estimates.mean(axis=0)
    auc = res.families.index("auc")
    assert np.all(np.abs(mean[:-1, auc] - res.exact[auc]) < 0.02)


def test_cutoff_columns_do_not_change_when_untruncated_metrics_are_added(mixed):
    ests = (Naive(), BiasVariance(0.1), MLE())
    base = run_stress(mixed, "binomial", 50, StressConfig(repeats=3, k_max=5, estimators=ests), rng=4)
    more = run_stress(
        mixed,
        "binomial",
        50,
        StressConfig(repeats=3, k_max=5, estimators=ests, metrics=("recall", "ndcg", "average_precision", "auc")),
        rng=4,
    )
    np.testing.assert_array_equal(more.estimates[..., :-1], base.estimates)
    np.testing.assert_array_equal(more.exact[:-1], base.exact)


def test_adaptive_and_bootstrap_cover_them(mixed):
    cfg = StressConfig(
        repeats=2, k_max=3, metrics=("auc", "average_precision_full"), n_boot=5, estimators=(Naive(), MLE())
    )
    for scheme in ("adaptive", "binomial"):
        res = run_stress(mixed, scheme, 20, cfg, rng=8)
        assert res.estimates.shape[-1] == 2 and np.isfinite(res.estimates).all()
        assert np.all(res.lower <= res.upper)
    cov = coverage_table([res])
    assert cov["k"].isna().all() and set(cov["metric"]) == {"auc", "average_precision_full"}


def test_true_metric_of_a_simulation_uses_each_users_candidates():
    r = RecommenderRanks(
        "T",
        np.array([1, 2]),
        np.array([10, 20]),
        np.array([0, 1]),
        true_ranks=np.array([1, 4, 2]),
        true_users=np.array([0, 0, 1]),
    )
    cfg = StressConfig(repeats=1, k_max=2, metrics=("auc",), estimators=(Naive(),))
    res = run_stress(r, "binomial", 5, cfg, rng=0)
    user0 = ((10 - 1) / 9 + (10 - 4) / 9) / 2
    assert res.true[0] == pytest.approx((user0 + (20 - 2) / 19) / 2, abs=1e-13)
    d = decomposition_table([res])
    assert d["k"].isna().all()


def test_tables_have_rows_with_an_empty_k(mixed):
    cfg = StressConfig(
        repeats=3,
        k_max=2,
        metrics=("recall", "auc", "average_precision_full"),
        estimators=(Naive(), MappingEstimator("bound")),
    )
    est = estimate_table([run_stress(mixed, "binomial", 30, cfg, rng=1)])
    assert isinstance(est["k"].dtype, pd.Int64Dtype)
    empty = est[est["k"].isna()]
    assert sorted(empty["metric"]) == ["auc", "average_precision_full"]  # naive only: the mapping is NaN
    assert set(empty["estimator"]) == {"naive"}
    assert est.loc[est["k"].notna(), "k"].tolist() == [1, 2, 1, 2]
    csv = est.to_csv(index=False).splitlines()
    assert any(line.startswith("A,binomial,30,naive,auc,,") for line in csv)
    rel = relative_error_table(est)
    assert rel.set_index("metric").loc["auc", "n_k"] == 1


def test_metric_names_are_validated():
    assert set(UNTRUNCATED_METRICS) == {"auc", "average_precision_full"}
    assert StressConfig().metrics == ("recall", "ndcg", "average_precision")  # the default is unchanged
    with pytest.raises(ValueError, match=r"`metrics` must be one of .*auc.*average_precision_full.*; got 'ap'"):
        StressConfig(metrics=("recall", "ap"))
    with pytest.raises(ValueError, match="`metrics` must not repeat a name"):
        StressConfig(metrics=("auc", "auc"))
    assert StressConfig(metrics=METRIC_NAMES).columns()[0][-2:] == ("auc", "average_precision_full")
