"""``simrec assess`` advice on correcting the missing-data error (``[correction]``; simrec.assess.correction).

The rule's steps on hand-made debias summaries (each verdict reached and its numbers), then the whole path
through simrec.cli.main: the worlds' run gets the harness, the tables and the report's check come out of it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from simrec.assess.correction import (
    correction_advice,
    correction_candidates,
    correction_finding,
    usable_on_real_data,
)
from tests.assess.conftest import assessment_toml
from tests.cli_helpers import invoke


def _summary(cells: list[tuple]) -> pd.DataFrame:
    """Rows (world, recommender, metric, estimator, propensity, truth, bias, rmse, coverage)."""
    cols = ["world", "recommender", "metric", "estimator", "propensity", "truth", "bias", "rmse", "coverage"]
    d = pd.DataFrame(cells, columns=cols)
    return d.assign(n_replicates=20, value=d["truth"] + d["bias"], bias_se=0.001, coverage_se=0.0)


def _cells(estimator, propensity, biases, rmses, coverage, metric="precision"):
    # two algorithms in one world, truths 0.2 and 0.4
    return [
        ("w", rec, metric, estimator, propensity, truth, b, r, coverage)
        for rec, truth, b, r in zip(("A", "B"), (0.2, 0.4), biases, rmses)
    ]


def test_only_corrections_computable_on_real_data_are_candidates():
    assert usable_on_real_data("naive", "none", "recall")
    assert usable_on_real_data("SNIPS", "fitted", "recall")
    assert usable_on_real_data("IPS", "fitted", "precision")  # precision's normaliser is known
    assert not usable_on_real_data("IPS", "fitted", "recall")  # recall's is the unknown |Rel_u|
    assert not usable_on_real_data("DR", "fitted", "ndcg")
    assert not usable_on_real_data("SNIPS", "world", "recall")  # the world's own propensities: a reference only
    assert not usable_on_real_data("SNIPS", "uniform", "recall")


def test_worst_relative_errors_over_algorithms_and_the_advised_correction():
    summary = _summary(
        _cells("naive", "none", (0.02, 0.12), (0.03, 0.13), 0.0)  # worst |bias|/truth: max(0.1, 0.3) = 0.3
        + _cells("SNIPS", "fitted", (0.004, -0.02), (0.01, 0.03), 0.9)  # max(0.02, 0.05) = 0.05, rmse max 0.075
        + _cells("IPS", "fitted", (0.002, 0.004), (0.02, 0.04), 0.95)  # 0.01, rmse 0.1: acceptable, higher RMSE
        + _cells("resampled_SKEW", "none", (0.001, 0.002), (0.004, 0.008), 0.5)  # least RMSE, covers too rarely
        + _cells("SNIPS", "world", (0.0, 0.0), (0.001, 0.001), 0.95)  # the reference: never advised
    )
    order = pd.DataFrame(
        {
            "world": "w",
            "metric": "precision",
            "estimator": ["naive", "SNIPS", "IPS", "resampled_SKEW", "SNIPS"],
            "propensity": ["none", "fitted", "fitted", "none", "world"],
            "n_replicates": 20,
            "p_true_order": [0.1, 0.9, 0.8, 1.0, 1.0],
            "p_se": 0.0,
        }
    )
    c = correction_candidates(summary, order).set_index(["estimator", "propensity"])
    assert c.loc[("naive", "none"), "worst_rel_bias"] == pytest.approx(0.3)
    assert c.loc[("SNIPS", "fitted"), "worst_rel_bias"] == pytest.approx(0.05)
    assert c.loc[("SNIPS", "fitted"), "worst_rel_rmse"] == pytest.approx(0.075)
    assert c.loc[("SNIPS", "fitted"), "p_true_order"] == 0.9 and not c.loc[("SNIPS", "world"), "usable"]
    a = correction_advice(correction_candidates(summary, order), max_rel_bias=0.1, min_coverage=0.85).iloc[0]
    # SKEW has the lowest RMSE but covers in 50% < 85%; of SNIPS (0.075) and IPS (0.1) the lower RMSE wins
    assert (a["report"], a["estimator"], a["propensity"]) == ("corrected", "SNIPS", "fitted")
    assert a["naive_rel_bias"] == pytest.approx(0.3) and a["worst_rel_rmse"] == pytest.approx(0.075)
    assert "from 32% to 8%" in a["text"]  # naive's worst relative RMSE max(0.03/0.2, 0.13/0.4) -> 0.075
    assert a["reference"].startswith("SNIPS")
    # a tighter tolerance leaves IPS (1%) alone
    b = correction_advice(correction_candidates(summary, order), max_rel_bias=0.02).iloc[0]
    assert b["estimator"] == "IPS"


def test_naive_is_advised_when_it_is_within_tolerance_and_none_when_nothing_is():
    fine = _summary(
        _cells("naive", "none", (0.002, 0.004), (0.004, 0.008), 0.95)
        + _cells("SNIPS", "fitted", (0.002, 0.004), (0.02, 0.04), 0.95)
    )
    a = correction_advice(correction_candidates(fine, pd.DataFrame())).iloc[0]
    assert a["report"] == "naive" and "no correction is needed" in a["text"]
    bad = _summary(
        _cells("naive", "none", (0.1, 0.2), (0.1, 0.2), 0.0)
        + _cells("SNIPS", "fitted", (0.04, 0.08), (0.05, 0.09), 0.2)
        + _cells("stratified", "fitted", (0.06, 0.06), (0.07, 0.07), np.nan)
    )
    cand = correction_candidates(bad, pd.DataFrame())
    a = correction_advice(cand).iloc[0]
    # none within 10%: the least biased computable one is named (stratified: max(0.3, 0.15) vs SNIPS 0.2)
    assert a["report"] == "none trusted" and a["estimator"] == "SNIPS" and "20%" in a["text"]
    f = correction_finding(correction_advice(cand), cand, 10)
    assert f.verdict == "warning" and "none can be trusted" in f.summary
    assert set(f.table["estimator"]) == {"naive", "SNIPS", "stratified"}


def test_a_threshold_out_of_range_is_refused():
    with pytest.raises(ValueError, match="`min_coverage` must be in"):
        correction_advice(pd.DataFrame(columns=["metric"]), min_coverage=2)


@pytest.mark.slow
def test_simrec_assess_with_a_correction_section_advises_from_the_worlds(tmp_path, tiny_data):
    text = assessment_toml(tiny_data) + (
        '[correction]\nestimators = ["naive", "ips", "snips", "resampled_skew", "stratified"]\n'
    )
    path = tmp_path / "a.toml"
    path.write_text(text)
    out = tmp_path / "out"
    code, stdout, err = invoke(["assess", str(path), "--out", str(out), "--no-figures"])
    assert code == 0, err
    assert (out / "worlds" / "debias_summary.csv").exists()
    cand = pd.read_csv(out / "correction.csv")
    advice = pd.read_csv(out / "correction_advice.csv")
    # the protocol's linear metrics (recall, ndcg, precision) at K = N, each with a verdict
    assert list(advice["metric"]) == ["recall", "ndcg", "precision"]
    assert set(advice["report"]) <= {"naive", "corrected", "none trusted"}
    assert not cand.loc[(cand["estimator"] == "IPS") & (cand["metric"] == "recall"), "usable"].any()
    for r in advice.itertuples():  # the advised candidate is the table's row, its numbers the advice's
        row = cand[
            (cand["metric"] == r.metric) & (cand["estimator"] == r.estimator) & (cand["propensity"] == r.propensity)
        ]
        assert len(row) == 1 and bool(row["usable"].iloc[0])
        assert row["worst_rel_bias"].iloc[0] == pytest.approx(r.worst_rel_bias)
    bottom = json.loads((out / "bottom_line.json").read_text())
    check = bottom["checks"]["missing_data_correction"]
    assert check is not None and "Correcting the missing-data error" in json.dumps(check)
    assert "Correcting the missing-data error, measured in the calibrated worlds" in stdout
    assert "Correcting the missing-data error" in (out / "report.html").read_text()


def test_without_the_section_the_worlds_run_is_unchanged(tmp_path, tiny_data):
    from simrec.config.assess import load_assessment

    path = tmp_path / "a.toml"
    path.write_text(assessment_toml(tiny_data))
    plain = load_assessment(path)
    assert plain.spec.correction is None
    scenario = plain.run_scenario(plain.best_cells())
    assert scenario.debias is None  # same digest as before the section existed: old folders still resume
    path.write_text(assessment_toml(tiny_data, metrics='metrics = ["reciprocal_rank"]') + "[correction]\n")
    code, _, err = invoke(["assess", str(path), "--out", str(tmp_path / "out")])
    assert code == 2 and "correction" in err and "linear in the relevance" in err
