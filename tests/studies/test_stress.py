"""`simrec stress`: validation, runs from a ranks file, serial vs processes, resume, CLI."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simrec.config import ScenarioError
from simrec.config.files import shipped_scenarios
from simrec.config.stress import load_stress_scenario
from simrec.rundir import RunDirError
from simrec.studies import run_stress_scenario
from simrec.studies import stress as stress_runner
from simrec.tasks import ProcessBackend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ranks"

FILE_SCENARIO = """
kind = "stress"
name = "tiny-file"
seed = 3
repeats = 4
[source]
type = "file"
path = "{path}"
[sampling]
schemes = ["binomial", "popularity", "adaptive"]
sizes = [20, 40]
adaptive_n_max = 160
[estimators]
names = ["naive", "CLS", "BV", "MLE", "MN_MLE", "mapping"]
bv_gammas = [0.1]
[metrics]
k_max = 10
curve_k = 5
curve_sizes = [10, 50]
"""


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _file_scenario(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """FILE_SCENARIO on the good ranks file with each (old, new) line replaced, written to ``s.toml``."""
    text = FILE_SCENARIO.format(path=FIXTURES / "good.csv")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return _write(tmp_path, text)


@pytest.fixture
def file_scenario(tmp_path):
    return _write(tmp_path, FILE_SCENARIO.format(path=FIXTURES / "good.csv"))


def test_shipped_stress_scenarios_are_valid():
    shipped = shipped_scenarios("stress")
    assert {"sampled-ml100k", "sampled-sim-ibp-pop"} <= set(shipped)
    for name in shipped:
        sc, path = load_stress_scenario(name, check_data=False)
        assert sc.kind == "stress" and path.exists()
    for name in ("sampled-ml100k", "sampled-sim-ibp-pop"):  # repository symlinks resolve to the package copy
        link = Path(__file__).resolve().parents[2] / "scenarios" / f"{name}.toml"
        assert link.resolve() == shipped[name].resolve()


@pytest.mark.parametrize(
    "patch, pattern",
    [
        (("repeats = 4", "repeats = 4\ncolour = 1"), r"colour: unknown key"),
        (("repeats = 4", "repeats = 'many'"), r"repeats: Input should be a valid integer"),
        (("sizes = [20, 40]", "sizes = [1]"), r"sampling.sizes\[0\]: Input should be greater than or equal to 2"),
        (('kind = "stress"', 'kind = "run"'), r"not a stress scenario"),
        (("bv_gammas = [0.1]", "bv_gammas = [2.0]"), r"estimators.bv_gammas\[0\]"),
        (('type = "file"', 'type = "file"\nmin_items = 3'), r"source.min_items: unknown key"),
        (
            ("k_max = 10", 'names = ["recall", "ap"]\nk_max = 10'),
            r"metrics.names\[1\]: Input should be .*'auc' or 'average_precision_full'; got 'ap'",
        ),
        (
            ("curve_sizes = [10, 50]", 'curve_sizes = [10, 50]\nnames = ["auc"]\n[user_sampling]\nsizes = [10]'),
            r"metrics.names: \[user_sampling\] needs a cutoff family .*; got \['auc'\]",
        ),
    ],
)
def test_invalid_scenarios_are_reported_with_their_key(tmp_path, patch, pattern):
    text = FILE_SCENARIO.format(path=FIXTURES / "good.csv").replace(*patch)
    with pytest.raises(ScenarioError, match=pattern):
        load_stress_scenario(_write(tmp_path, text))


def test_semantic_problems(tmp_path):
    ds = """
kind = "stress"
name = "d"
seed = 1
[source]
type = "dataset"
name = "no-such-data"
path = "nowhere/ml-100k"
recommenders = [{ kind = "oracle" }, { kind = "popular" }]
"""
    with pytest.raises(ScenarioError, match=r"source.recommenders\[0\]: oracle needs the true preferences"):
        load_stress_scenario(_write(tmp_path, ds), check_data=False)
    ds2 = ds.replace('{ kind = "oracle" }, ', "")
    with pytest.raises(ScenarioError, match=r"source.path: dataset 'no-such-data' not found at .*SIMREC_DATA"):
        load_stress_scenario(_write(tmp_path, ds2))
    load_stress_scenario(_write(tmp_path, ds2), check_data=False)  # the file alone is valid
    no_share = tmp_path / "noshare.csv"
    pd.read_csv(FIXTURES / "good.csv").drop(columns="popularity_share").to_csv(no_share, index=False)
    with pytest.raises(ScenarioError, match=r"'popularity' needs the ranks file's optional `popularity_share`"):
        load_stress_scenario(_write(tmp_path, FILE_SCENARIO.format(path=no_share)))
    with pytest.raises(ScenarioError, match=r"source.path: .*row 2 \(line 3\), column `rank`"):
        load_stress_scenario(_write(tmp_path, FILE_SCENARIO.format(path=FIXTURES / "rank_below_one.csv")))


def _tables(out: Path) -> dict[str, pd.DataFrame]:
    return {
        "estimates": pd.read_parquet(out / "estimates.parquet"),
        "ordering": pd.read_csv(out / "ordering.csv"),
        "winners": pd.read_csv(out / "winners.csv"),
        "hit_ratio": pd.read_csv(out / "hit_ratio.csv"),
        "expected": pd.read_csv(out / "expected_vs_n.csv"),
    }


@pytest.mark.slow
def test_file_scenario_serial_equals_processes_and_resumes(tmp_path, file_scenario, monkeypatch):
    sc, path = load_stress_scenario(file_scenario)
    serial = run_stress_scenario(sc, path, tmp_path / "serial", progress=False, figures=False)
    assert serial.computed == 3 * 3 * 2 and serial.reused == 0
    est = serial.estimates
    assert set(est["scheme"]) == {"binomial", "popularity", "adaptive"}
    assert set(est[est["scheme"] == "adaptive"]["estimator"]) == {"adaptive_MLE"}
    assert set(est[est["metric"] != "recall"]["estimator"]).isdisjoint({"mapping:linear", "mapping:beta@P"})
    manifest = (tmp_path / "serial" / "manifest.json").read_text()
    assert '"status": "complete"' in manifest and sc.digest() in manifest

    with ProcessBackend(2) as backend:
        par = run_stress_scenario(sc, path, tmp_path / "par", backend=backend, progress=False, figures=False)
    for key, frame in _tables(tmp_path / "serial").items():
        pd.testing.assert_frame_equal(frame, _tables(tmp_path / "par")[key], check_exact=True, obj=key)
    assert par.computed == serial.computed

    # interruption: the 5th task fails; the 4 finished shards are kept, a re-run computes only the rest
    out = tmp_path / "resumed"
    calls = {"n": 0}
    real = stress_runner._stress_task

    def flaky(task):
        calls["n"] += 1
        if calls["n"] == 5:  # Ctrl-C (a KeyboardInterrupt the task raised itself would be its failure: issue 22)
            signal.raise_signal(signal.SIGINT)
        return real(task)

    monkeypatch.setattr(stress_runner, "_stress_task", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_stress_scenario(sc, path, out, progress=False, figures=False)
    assert len(list((out / "tasks").glob("*.npz"))) == 4
    assert not (out / "estimates.parquet").exists()
    assert not list((out / "tasks").glob(".*.tmp"))  # no half-written shard
    monkeypatch.setattr(stress_runner, "_stress_task", real)
    again = run_stress_scenario(sc, path, out, progress=False, figures=False)
    assert again.reused == 4 and again.computed == 14
    for key, frame in _tables(tmp_path / "serial").items():
        pd.testing.assert_frame_equal(frame, _tables(out)[key], check_exact=True, obj=key)


def test_out_dir_of_another_scenario_is_refused(tmp_path, file_scenario):
    sc, path = load_stress_scenario(file_scenario)
    out = tmp_path / "o"
    out.mkdir()
    (out / "manifest.json").write_text('{"scenario": "x", "digest": "0000"}')
    with pytest.raises(RunDirError, match="different content"):
        run_stress_scenario(sc, path, out, progress=False, figures=False)


@pytest.mark.slow
def test_auc_and_untruncated_ap_flow_through_the_tables(tmp_path):
    spec = _file_scenario(
        tmp_path,
        ('schemes = ["binomial", "popularity", "adaptive"]', 'schemes = ["binomial", "adaptive"]'),
        ("sizes = [20, 40]", "sizes = [20]"),
        ("k_max = 10", 'names = ["recall", "auc", "average_precision_full"]\nk_max = 10'),
    )
    sc, path = load_stress_scenario(spec)
    outcome = run_stress_scenario(sc, path, tmp_path / "o", progress=False, figures=True)
    summary = pd.read_csv(tmp_path / "o" / "summary.csv")
    untr = summary[summary["k"].isna()]
    assert set(untr["metric"]) == {"auc", "average_precision_full"}
    assert set(untr["estimator"]) == {"naive", "CLS", "BV(gamma=0.1)", "MLE", "MN_MLE", "adaptive_MLE"}  # no mapping
    assert set(summary.loc[summary["k"].notna(), "k"]) == {1, 5, 10}
    assert set(pd.read_csv(tmp_path / "o" / "expected_vs_n.csv")["metric"]) == {"recall"}
    rel = pd.read_csv(tmp_path / "o" / "relative_error.csv")
    assert set(rel["metric"]) == {"recall", "auc", "average_precision_full"}
    assert (tmp_path / "o" / "figures" / "relative_error_binomial_n20.png").exists()
    assert outcome.estimates["k"].isna().sum() == len(untr)  # every untruncated row is in the summary
    from simrec.cli import _stress_summary_frame

    printed, k = _stress_summary_frame(outcome)  # the printed summary: a column each beside recall@10
    assert k == 10 and {"recall", "auc", "average_precision_full"} <= set(printed.columns)


@pytest.mark.slow
def test_simulation_scenario_decomposes_errors(tmp_path):
    text = """
kind = "stress"
name = "mini-sim"
seed = 1
repeats = 3
[source]
type = "simulation"
population = { n_users = 200, n_items = 300 }
world = { name = "ibp-pop", preference = { model = "ibp", alpha = 40.0, c = 2.0, sigma = 0.1 }, observation = { sampler = "popularity", profile = { model = "pareto", m_low = 8, alpha = 1.0, m_high = 100 } } }
recommenders = [{ kind = "oracle" }, { kind = "popular" }, { kind = "random" }]
[sampling]
schemes = ["binomial"]
sizes = [30]
[estimators]
names = ["naive", "BV", "MLE"]
bv_gammas = [0.1]
[metrics]
k_max = 10
curve_sizes = [10, 30]
"""
    sc, path = load_stress_scenario(_write(tmp_path, text))
    outcome = run_stress_scenario(sc, path, tmp_path / "o", progress=False, figures=True)
    d = outcome.decomposition
    assert len(d) == 3 * 3 * 30  # recommenders x estimators x (3 families x 10 K)
    np.testing.assert_allclose(d["total_error"], d["sampling_error"] + d["missing_data_error"], atol=1e-12)
    # the missing-data error is the same for every estimator of a recommender x metric
    spread = d.groupby(["recommender", "metric", "k"])["missing_data_error"].nunique()
    assert (spread == 1).all()
    # the naive sampled Recall@10 over 30 items overstates the exact metric for every recommender
    naive = d[(d["estimator"] == "naive") & (d["metric"] == "recall") & (d["k"] == 10)]
    assert (naive["sampling_error"] > 0).all()
    assert (tmp_path / "o" / "figures" / "decomposition.png").exists()
    ranks = pd.read_parquet(tmp_path / "o" / "ranks.parquet")
    assert set(ranks.columns) >= {"user", "recommender", "rank", "n_candidates", "popularity_share"}


@pytest.mark.slow
def test_cli_stress(tmp_path, file_scenario):
    from simrec.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["stress", str(file_scenario), "--out", str(tmp_path / "cli"), "--no-figures"])
    assert res.exit_code == 0, res.output
    assert "Mean |relative error|" in res.output
    bad = _write(
        tmp_path, FILE_SCENARIO.format(path=FIXTURES / "good.csv").replace("repeats = 4", "repeats = 0"), "bad.toml"
    )
    res = runner.invoke(app, ["stress", str(bad), "--out", str(tmp_path / "bad")])
    assert res.exit_code == 2
    assert "repeats" in res.output
    assert not (tmp_path / "bad").exists()  # nothing written for an invalid scenario


def test_dataset_scenario_on_ml100k(tmp_path, ml100k_path):
    text = f"""
kind = "stress"
name = "ml"
seed = 2
repeats = 2
[source]
type = "dataset"
name = "ml-100k"
path = "{ml100k_path}"
recommenders = [{{ kind = "popular" }}, {{ kind = "random" }}]
[sampling]
schemes = ["binomial", "popularity"]
sizes = [100]
[estimators]
names = ["naive", "MLE"]
[metrics]
k_max = 10
curve_sizes = [100]
"""
    sc, path = load_stress_scenario(_write(tmp_path, text))
    outcome = run_stress_scenario(sc, path, tmp_path / "o", progress=False, figures=False)
    assert outcome.source.info["users"] == 943 and outcome.source.info["evaluated_users"] == 943
    pop = outcome.source.get("Popular")
    # popularity shares >= uniform shares for Popular (heavier items rank above)
    assert np.all(pop.popularity_shares >= (pop.ranks - 1) / (pop.n_candidates - 1) - 1e-12)


def test_cli_stress_says_what_the_estimates_and_intervals_are(tmp_path):
    """Issue 22: fits stopped at their cap, naive cutoffs above n and intervals known to fail are reported."""
    from tests.cli_helpers import invoke

    spec = _file_scenario(
        tmp_path,
        ('schemes = ["binomial", "popularity", "adaptive"]', 'schemes = ["binomial"]'),
        ("sizes = [20, 40]", "sizes = [8, 20]"),
        ('names = ["naive", "CLS", "BV", "MLE", "MN_MLE", "mapping"]', 'names = ["naive", "BV", "MLE"]'),
        ("bv_gammas = [0.1]", "bv_gammas = [0.1]\nn_boot = 5\nmax_iter = 5"),
    )
    code, stdout, stderr = invoke(["stress", str(spec), "--out", str(tmp_path / "o"), "--no-figures"])
    assert code == 0, stderr
    assert (
        "simrec: warning: iterative fits stopped at their cap before meeting their tolerance (repeats stopped / "
        "repeats): EM at max_iter = 5, tolerance 1e-09: MLE 24/24." in stderr  # 3 recommenders x 2 sizes x 4
    )
    assert "simrec: warning: naive at sample size(s) n = 8 <= k_max = 10" in stderr
    assert "Intervals (coverage.csv): naive, BV(gamma=0.1): coverage known to fail" in stdout
    est = pd.read_parquet(tmp_path / "o" / "estimates.parquet").groupby("estimator").first()
    assert est.loc["MLE", ["n_iter", "converged", "interval"]].tolist() == [5, 0, "sampling"]
    assert est.loc["naive", ["n_iter", "converged", "interval"]].tolist() == [0, 1, "sampling_biased"]
    naive_wide = pd.read_parquet(tmp_path / "o" / "estimates.parquet").query(
        "estimator == 'naive' and metric == 'recall' and n == 8 and k >= 8"
    )
    assert (naive_wide["mean"] == 1).all()  # what the note is about
    cov = pd.read_csv(tmp_path / "o" / "coverage.csv").groupby("estimator")["coverage_known_to_fail"].all()
    assert cov.to_dict() == {"BV(gamma=0.1)": True, "MLE": False, "naive": True}
