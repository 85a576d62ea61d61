"""``simrec assess``'s sim-to-real check: the user's algorithms on the data vs in the worlds, and its warning.

Reference values: with one held-out item at rank R and cutoff N, Recall@N = 1[R <= N], nDCG@N =
1[R <= N] / log2(R + 1), Precision@N = Recall@N / N and RR@N = 1[R <= N] / R (Krichene & Rendle 2020, eqs. 8-11);
Wilson 95% intervals of k of R from :func:`simrec.report.wilson_interval` (Wilson 1927).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from simrec.assess.bottom_line import bottom_line
from simrec.assess.sim_to_real import sim_to_real_finding, worlds_disagree
from simrec.calibration.response import compare_to_real
from simrec.stress.sources import RankSource, RecommenderRanks
from simrec.studies.assess_sim_to_real import (
    AssessProtocol,
    compared_metrics,
    real_values_from_ranks,
    simulated_means,
)
from tests.assess.test_bottom_line import FACTS, _tables


def test_real_values_from_held_out_ranks_are_the_metrics_rank_functions():
    ranks = np.array([1, 3, 10, 11])
    users = np.array(["a", "b", "c", "d"])
    source = RankSource(
        "d",
        "dataset",
        tuple(RecommenderRanks(name, ranks, np.full(4, 50), users) for name in ("A", "B")),
    )
    got = real_values_from_ranks(source, ("A", "B"), ["recall", "ndcg", "precision", "reciprocal_rank"], 10)
    hit = np.array([1.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(got[("A", "recall")], hit)
    np.testing.assert_allclose(got[("B", "ndcg")], hit / np.log2(ranks + 1.0))
    np.testing.assert_allclose(got[("A", "precision")], hit / 10)
    np.testing.assert_allclose(got[("A", "reciprocal_rank")], hit / ranks)
    other = RankSource(
        "d",
        "dataset",
        (
            RecommenderRanks("A", ranks, np.full(4, 50), users),
            RecommenderRanks("B", ranks, np.full(4, 50), users[::-1]),
        ),
    )
    with pytest.raises(ValueError, match="different users"):
        real_values_from_ranks(other, ("A", "B"), ["recall"], 10)


def test_compared_metrics_at_each_split():
    metrics = ["recall", "ndcg", "auc", "recall_truncated", "pap_at_k"]
    assert compared_metrics("last", metrics) == (["recall", "ndcg"], ["auc", "recall_truncated", "pap_at_k"])
    assert compared_metrics("holdout", metrics) == (["recall", "ndcg", "recall_truncated"], ["auc", "pap_at_k"])


def test_simulated_means_are_each_replicates_observed_value():
    rows = [
        (r, w, rec, m, truth, 0.1 * r + (0.5 if rec == "A" else 0.0) + (1 if truth == "true" else 0))
        for r in (1, 0)
        for w in ("w1", "w2")
        for rec in ("A", "B")
        for m in ("recall",)
        for truth in ("observed", "true")
    ]
    results = pd.DataFrame(rows, columns=["replicate", "world", "recommender", "metric", "truth", "value"])
    got = simulated_means(results, "w1", ("A", "B"), ["recall"])
    np.testing.assert_allclose(got[("A", "recall")], [0.5, 0.6])  # replicates ascending, observed only
    np.testing.assert_allclose(got[("B", "recall")], [0.0, 0.1])


PROTOCOL = AssessProtocol(("MyMF", "MyKNN"), ("recall",), 10, "leave-last-out, lists of N = 10, every item ranked")


def _check(k: int, r: int, worlds: tuple[str, ...] = ("lda-pop",)):
    """The check's tables for a data set where MyMF is clearly ahead, and worlds reproducing that in k of r."""
    rng = np.random.default_rng(4)
    noise = rng.normal(0, 0.05, 400)
    real = {("MyMF", "recall"): 0.2 + noise, ("MyKNN", "recall"): 0.1 + noise[::-1]}
    sims = {("MyMF", "recall"): np.full(r, 0.15), ("MyKNN", "recall"): np.where(np.arange(r) < k, 0.1, 0.2)}
    comps = [compare_to_real(real, sims, PROTOCOL, w) for w in worlds]
    values = pd.concat([c.table.assign(world=c.world) for c in comps], ignore_index=True)
    orders = pd.concat([c.orders.assign(world=c.world) for c in comps], ignore_index=True)
    return values, orders


def _finding(k: int, r: int):
    values, orders = _check(k, r)
    return sim_to_real_finding(
        values, orders, n=10, protocol=PROTOCOL.text, source="the held-out ranks", not_compared=("auc",), real_users=400
    )


def test_the_worlds_disagree_when_at_most_half_of_the_replicates_reproduce_the_datas_order():
    """The warning's side of the rule: 5 of 10 (at most half) -> a warning in the bottom line and the terminal,
    a caution under the ranking question, the evidence as terminal lines and JSON records (no NaN)."""
    f = _finding(5, 10)
    assert f.verdict == "warning"
    assert f.summary.startswith("Sim to real: the calibrated worlds disagree with your data on the order of your ")
    assert "Recall@10 your data has MyMF > MyKNN (gap +0.100 [" in f.summary
    assert "LDA, popularity-biased reproduces it in only 0.50 [0.24, 0.76] (5 of 10) replicates" in f.summary
    b = bottom_line(FACTS, *_tables(), checks={"sim_to_real": f})
    assert f.summary in b.warnings
    lines = b.lines()
    assert f"  ! {f.summary}" in lines
    ranking = lines.index("Is the observed ranking of your algorithms the true one?")
    assert lines[ranking + 4].startswith("  ! The calibrated worlds order your algorithms differently from your data")
    assert any("MyMF > MyKNN (gap +0.100" in line and "(5 of 10): disagrees" in line for line in lines)
    assert not any("nan" in line.lower() for line in lines)
    record = json.loads(json.dumps(b.to_dict(), allow_nan=False))["checks"]["sim_to_real"]
    assert record["verdict"] == "warning" and len(record["orders"]) == 1
    assert record["orders"][0]["reproduced"] == 5 and record["orders"][0]["verdict"] == "disagrees"
    assert {v["algorithm"] for v in record["values"]} == {"MyMF", "MyKNN"}
    assert "Not compared: AUC" in " ".join(f.paragraphs)
    assert len(worlds_disagree(_check(5, 10)[1])) == 1


@pytest.mark.parametrize("k, r, words", [(6, 10, "rest on too few replicates"), (20, 20, "reproduce every order")])
def test_no_warning_when_more_than_half_reproduce_it(k, r, words):
    """The other side: 6 of 10 (more than half, Wilson lower end 0.31: uncertain) and 20 of 20 (reproduced)."""
    f = _finding(k, r)
    assert f.verdict == "ok" and words in f.summary
    b = bottom_line(FACTS, *_tables(), checks={"sim_to_real": f})
    assert f.summary not in b.warnings and not b.cautions()
    assert f"  {f.summary}" in b.lines()


def test_a_tie_on_the_data_is_no_order_to_reproduce():
    real = {("MyMF", "recall"): np.full(300, 0.1), ("MyKNN", "recall"): np.full(300, 0.1)}
    sims = {("MyMF", "recall"): np.array([0.1, 0.3]), ("MyKNN", "recall"): np.array([0.2, 0.1])}
    c = compare_to_real(real, sims, PROTOCOL, "w")
    f = sim_to_real_finding(
        c.table.assign(world="w"), c.orders.assign(world="w"), n=10, protocol="p", source="s", real_users=300
    )
    assert f.verdict == "ok" and "every pair of your algorithms is a tie" in f.summary
    assert "real tie" in f.tables[1][1].iloc[0, -1]
    assert sim_to_real_finding(c.table.iloc[:0], c.orders.iloc[:0], n=10, protocol="p", source="s") is None


def test_the_tiny_assessment_compares_its_algorithms_at_its_holdout(tiny_assessment):
    """The real side is the user's algorithms on the data's holdout (its shard per algorithm, recomputed here
    from the seeds the module names); the simulated side the worlds' run's observed values, replicate by replicate."""
    from simrec._random import as_generator, task_seed
    from simrec.config.assess import load_assessment
    from simrec.metrics import recall
    from simrec.recommenders import Popular
    from simrec.split import holdout
    from simrec.studies.assess_sim_to_real import SEED_CHILD

    path, out, outcome = tiny_assessment
    values = pd.read_csv(out / "sim_to_real.csv")
    orders = pd.read_csv(out / "sim_to_real_orders.csv")
    assert set(values["algorithm"]) == {"Popular", "Random"} and set(values["metric"]) == {
        "recall",
        "ndcg",
        "precision",
    }
    assert len(orders) == 3 and set(orders["verdict"]) <= {"reproduced", "uncertain", "disagrees", "real tie"}
    a = load_assessment(path)
    inter = a.spec.dataset.read(a.data_path)
    split = holdout(inter, 0.2, as_generator(task_seed(a.spec.seed, SEED_CHILD, 0)))
    users = np.flatnonzero(split.evaluated)
    lists = Popular().recommend(split.train, None, 5, as_generator(task_seed(a.spec.seed, SEED_CHILD, 1, 0)))[users]
    want = float(np.mean(recall(lists, split.test.matrix[users])))
    got = values[(values["algorithm"] == "Popular") & (values["metric"] == "recall")]
    assert got["real"].iloc[0] == pytest.approx(want, rel=1e-12)
    results = pd.read_parquet(next((out / "worlds").glob("results.parquet")))
    obs = results[
        (results["truth"] == "observed") & (results["recommender"] == "Popular") & (results["metric"] == "recall")
    ]
    assert got["sim"].iloc[0] == pytest.approx(obs["value"].mean(), rel=1e-12)
    assert outcome.bottom_line.checks["sim_to_real"] is not None
    page = (out / "report.html").read_text()
    assert 'id="sim-to-real-table-1"' in page and 'id="sim-to-real-table-2"' in page
    assert (
        'data-check="sim_to_real" data-status="' in page
        and "not checked" not in page.split('id="sim-to-real"')[1][:300]
    )
    record = json.loads((out / "bottom_line.json").read_text())["checks"]["sim_to_real"]
    assert record["verdict"] in ("ok", "warning") and len(record["values"]) == 6
    assert not any(isinstance(v, float) and math.isnan(v) for row in record["values"] for v in row.values())


def _latest_is_rare(folder, n_users: int = 300, n_items: int = 150, seed: int = 0):
    """A pairs table whose users' latest item is their least popular one (real data's latest items need not be
    random ones): on it Random beats Popular leave-last-out, in every calibrated world Popular beats Random."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_items + 1) ** 0.8
    p /= p.sum()
    rows = []
    for u in range(n_users):
        items = rng.choice(n_items, size=int(rng.integers(8, 30)), replace=False, p=p)
        latest = items.max()  # item ids are in popularity order: the largest id is the user's rarest item
        rows += [f"u{u},i{i},{2_000_000 if i == latest else 1_000_000 + len(rows)}" for i in items]
    path = folder / "pairs.csv"
    path.write_text("user,item,timestamp\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_the_command_line_warns_when_the_worlds_disagree_with_the_data(tmp_path):
    """End to end through simrec.cli.main: leave-last-out on a data set whose latest items are rare ones; the
    warning is in the terminal's bottom line, in bottom_line.json and on the page, with the caution."""
    from tests.assess.conftest import assessment_toml
    from tests.cli_helpers import invoke

    data = _latest_is_rare(tmp_path)
    spec = tmp_path / "a.toml"
    spec.write_text(
        assessment_toml(
            data,
            n='n = 10\nsplit = "last"',
            sizes="sizes = [20]",
            estimators='estimators = ["naive"]',
            n_boot="n_boot = 0",
        )
    )
    out = tmp_path / "out"
    code, stdout, stderr = invoke(["assess", str(spec), "--out", str(out), "--no-figures"])
    assert code == 0, stderr
    assert "[6/7] sim-to-real: your algorithms on your data vs in the calibrated worlds" in stderr
    orders = pd.read_csv(out / "sim_to_real_orders.csv").set_index("metric")
    assert orders.loc["recall", "real_order"] == "Popular < Random" and orders.loc["recall", "verdict"] == "disagrees"
    assert orders.loc["recall", "reproduced"] == 0 and orders.loc["recall", "replicates"] == 2
    warning = next(line for line in stdout.splitlines() if "disagree with your data" in line)
    assert warning.startswith("  ! Sim to real: the calibrated worlds disagree with your data on the order")
    assert "  ! The calibrated worlds order your algorithms differently from your data" in stdout
    bottom = json.loads((out / "bottom_line.json").read_text())
    assert warning[4:] in bottom["warnings"] and bottom["checks"]["sim_to_real"]["verdict"] == "warning"
    page = (out / "report.html").read_text()
    assert page.index("disagree with your data") < page.index('id="values"')  # in the bottom line, first


def test_simulated_means_of_a_metric_undefined_in_every_replicate_are_nan():
    """A (recommender, metric) whose values are all NaN (undefined everywhere) or absent is NaN per replicate."""
    rows = [
        (r, "w", rec, "recall", "observed", np.nan if rec == "B" else 0.1 * r) for r in (0, 1) for rec in ("A", "B")
    ]
    results = pd.DataFrame(rows, columns=["replicate", "world", "recommender", "metric", "truth", "value"])
    got = simulated_means(results, "w", ("A", "B", "C"), ["recall"])
    np.testing.assert_allclose(got[("A", "recall")], [0.0, 0.1])
    assert np.isnan(got[("B", "recall")]).all() and len(got[("B", "recall")]) == 2
    assert np.isnan(got[("C", "recall")]).all() and len(got[("C", "recall")]) == 2


def test_a_pair_no_replicate_measured_is_listed_not_warned_about():
    rng = np.random.default_rng(4)
    noise = rng.normal(0, 0.05, 400)
    real = {("MyMF", "recall"): 0.2 + noise, ("MyKNN", "recall"): 0.1 + noise[::-1]}
    sims = {("MyMF", "recall"): np.array([np.nan, np.nan]), ("MyKNN", "recall"): np.array([0.1, 0.2])}
    c = compare_to_real(real, sims, PROTOCOL, "w")
    f = sim_to_real_finding(
        c.table.assign(world="w"), c.orders.assign(world="w"), n=10, protocol="p", source="s", real_users=400
    )
    assert f.verdict == "ok" and "could not be compared" in f.summary
    assert "not measured" in f.tables[1][1].iloc[0, -1]
    assert not len(worlds_disagree(c.orders))


def test_the_checks_text_states_its_confidence():
    values, orders = _check(20, 20)
    f = sim_to_real_finding(values, orders, n=10, protocol="p", source="s", real_users=400, confidence=0.9)
    text = " ".join(f.paragraphs)
    assert "a 90% interval over its 400 evaluated users" in text and "95%" not in text
    assert "Your data (90% interval over users)" in f.tables[0][1].columns
