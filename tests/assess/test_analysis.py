"""The assessment's numbers on hand-made frames: errors, intervals, ranking agreement, the estimator rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simrec.assess import (
    best_estimators,
    missing_data_errors,
    ranking_agreement,
    recommend,
    sampling_errors,
    total_errors,
)

Z = stats.norm.ppf(0.975)


def _results(values: dict[tuple[int, str, str, str, str], float]) -> pd.DataFrame:
    """Tidy run results from {(replicate, world, recommender, metric, truth): value}."""
    rows = [
        {
            "replicate": r,
            "world": w,
            "preference": "p",
            "observation": "o",
            "recommender": a,
            "metric": m,
            "truth": t,
            "value": v,
            "n_evaluated": 10,
            "n_undefined": 0,
        }
        for (r, w, a, m, t), v in values.items()
    ]
    return pd.DataFrame(rows)


def test_missing_data_error_is_observed_minus_true_with_a_prediction_interval():
    vals = {}
    obs = {"A": [0.30, 0.34, 0.26], "B": [0.20, 0.21, 0.25]}
    true = {"A": [0.40, 0.40, 0.40], "B": [0.20, 0.20, 0.20]}
    for a in "AB":
        for r in range(3):
            vals[(r, "w1", a, "recall", "observed")] = obs[a][r]
            vals[(r, "w1", a, "recall", "true")] = true[a][r]
    out = missing_data_errors(_results(vals))
    row = out[(out["recommender"] == "A") & (out["source"] == "all worlds")].iloc[0]
    e = np.array(obs["A"]) - np.array(true["A"])
    assert row["mean"] == pytest.approx(e.mean()) and row["sd"] == pytest.approx(e.std(ddof=1))
    assert row["lower"] == pytest.approx(e.mean() - Z * e.std(ddof=1)) and row["n"] == 3
    assert set(out["source"]) == {"all worlds", "w1"}


def test_ranking_agreement_counts_equal_orders_and_ties():
    vals = {}
    # replicate 0: same order; 1: swapped; 2: observed tie vs strict true order (disagrees)
    obs = [(0.5, 0.3), (0.2, 0.4), (0.3, 0.3)]
    tru = [(0.6, 0.2), (0.6, 0.2), (0.6, 0.2)]
    for r in range(3):
        for j, a in enumerate("AB"):
            vals[(r, "w", a, "ndcg", "observed")] = obs[r][j]
            vals[(r, "w", a, "ndcg", "true")] = tru[r][j]
    out = ranking_agreement(_results(vals))
    row = out[out["source"] == "all worlds"].iloc[0]
    assert (row["agree"], row["n"]) == (1, 3) and row["probability"] == pytest.approx(1 / 3)
    assert 0 < row["lower"] < 1 / 3 < row["upper"] < 1 and row["true_order"] == "A > B"


def _estimates(rows):
    cols = [
        "recommender",
        "scheme",
        "n",
        "estimator",
        "metric",
        "k",
        "exact",
        "mean",
        "sd",
        "bias",
        "rel_error",
        "rel_rmse",
        "n_repeats",
        "mean_sample_size",
    ]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_estimator_rule_worst_case_coverage_and_smallest_size():
    h = "hypergeometric"
    est = _estimates(
        [
            # n = 20: CLS better on average but worst on B; BV has the lower worst case
            ("A", h, 20, "CLS", "recall", 5, 0.2, 0.2, 0.01, 0.0, 0.0, 0.05, 10, 20),
            ("B", h, 20, "CLS", "recall", 5, 0.2, 0.2, 0.05, 0.0, 0.0, 0.30, 10, 20),
            ("A", h, 20, "BV", "recall", 5, 0.2, 0.2, 0.02, 0.0, 0.0, 0.20, 10, 20),
            ("B", h, 20, "BV", "recall", 5, 0.2, 0.2, 0.02, 0.0, 0.0, 0.20, 10, 20),
            ("A", h, 20, "LS", "recall", 5, 0.2, 0.2, 0.00, 0.0, 0.0, 0.01, 10, 20),  # never recommended
            ("B", h, 20, "LS", "recall", 5, 0.2, 0.2, 0.00, 0.0, 0.0, 0.01, 10, 20),
            # n = 50: naive has the lowest error but poor coverage; CLS acceptable and <= 0.1
            ("A", h, 50, "naive", "recall", 5, 0.2, 0.21, 0.01, 0.01, 0.05, 0.02, 10, 50),
            ("B", h, 50, "naive", "recall", 5, 0.2, 0.21, 0.01, 0.01, 0.05, 0.02, 10, 50),
            ("A", h, 50, "CLS", "recall", 5, 0.2, 0.2, 0.01, 0.0, 0.0, 0.08, 10, 50),
            ("B", h, 50, "CLS", "recall", 5, 0.2, 0.19, 0.01, -0.01, -0.05, 0.09, 10, 50),
            ("A", h, 50, "CLS", "recall", 10, 0.3, 0.3, 0.01, 0.0, 0.0, 0.5, 10, 50),  # other K: ignored
        ]
    )
    cov = est[["recommender", "scheme", "n", "estimator", "metric", "k"]].copy()
    cov["coverage"] = np.where(est["estimator"] == "naive", 0.2, 0.95)
    best = best_estimators(est, cov, k=5, min_coverage=0.85)
    assert list(best["estimator"]) == ["BV", "CLS"] and list(best["n"]) == [20, 50]
    assert best["worst_rel_rmse"].tolist() == pytest.approx([0.20, 0.09])
    advice = recommend(best, ["recall"], max_rel_rmse=0.1)
    assert advice.iloc[0][["report", "n", "estimator"]].tolist() == ["sampled", 50, "CLS"]
    strict = recommend(best, ["recall"], max_rel_rmse=0.05)
    assert strict.iloc[0]["report"] == "full ranking" and strict.iloc[0]["estimator"] == "CLS"
    # without intervals every estimator is acceptable: naive wins at n = 50
    assert best_estimators(est, None, k=5).set_index("n").loc[50, "estimator"] == "naive"

    samp = sampling_errors(est, best, k=5, n=50)
    b = samp[samp["recommender"] == "B"].iloc[0]
    assert (b["mean"], b["sd"], b["source"]) == (pytest.approx(-0.01), pytest.approx(0.01), f"{h}, n = 50, CLS")
    full = sampling_errors(est, best, k=5, n=None)
    assert (full["mean"] == 0).all() and (full["lower"] == 0).all()

    missing = pd.DataFrame(
        {
            "recommender": ["A", "B", "A"],
            "metric": ["recall", "recall", "precision"],
            "source": "all worlds",
            "mean": [-0.1, 0.0, 0.05],
            "sd": [0.03, 0.0, 0.01],
            "lower": 0.0,
            "upper": 0.0,
            "n": 4,
        }
    )
    tot = total_errors(missing, samp).set_index(["recommender", "metric"])
    assert tot.loc[("A", "recall"), "mean"] == pytest.approx(-0.1 + 0.0)
    assert tot.loc[("A", "recall"), "sd"] == pytest.approx(np.hypot(0.03, 0.01))
    assert np.isnan(tot.loc[("A", "precision"), "mean"])  # no sampled estimator: total not measured
