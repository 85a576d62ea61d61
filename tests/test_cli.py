"""The `simrec` command's small subcommands and its input errors (exit code 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simrec.cli import app
from simrec.observation import TruncatedPareto, UniformSampler, observe
from simrec.preference import Uniform

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def test_scenarios_lists_every_shipped_scenario_with_its_command():
    res = runner.invoke(app, ["scenarios"])
    assert res.exit_code == 0
    lines = {line.split()[2]: line.split()[1] for line in res.output.splitlines() if line.strip()}
    assert lines["quickstart"] == "run" and lines["thesis-table3"] == "run"
    assert lines["sampled-ml100k"] == "stress"
    assert lines["ml100k-assess"] == "assess" and lines["ml1m-assess"] == "assess"


@pytest.mark.parametrize(
    "command", [["run"], ["stress"], ["calibrate"], ["assess"], ["ranks"], ["sim-to-real"], ["datasets", "describe"]]
)
def test_help_is_plain_text_without_docstring_markup(command):
    """``--help`` shows the command's docstring: no reST roles or literals reach the user (issue 28)."""
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    for markup in ("``", ":meth:", ":func:", ":class:", ":mod:", ":data:"):
        assert markup not in res.output, f"simrec {' '.join(command)} --help shows {markup!r}"


def test_datasets_describe_prints_the_sizes():
    res = runner.invoke(app, ["datasets", "describe", str(FIXTURES / "ml-100k")])
    assert res.exit_code == 0, res.output
    assert "users" in res.output and "items" in res.output and "pairs" in res.output


def test_datasets_describe_missing_file_is_a_clear_error(tmp_path):
    res = runner.invoke(app, ["datasets", "describe", str(tmp_path / "nothing.csv")])
    assert res.exit_code == 2
    assert "nothing.csv" in res.output


def test_calibrate_bad_spec_is_refused_and_writes_nothing(tmp_path):
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        'name = "x"\nseed = 1\nn_calls = 5\nn_initial = 9\n[[dataset]]\nname = "toy"\npath = "missing-folder"\n'
    )
    out = tmp_path / "out"
    res = runner.invoke(app, ["calibrate", str(spec), "--out", str(out), "-q"])
    assert res.exit_code == 2
    assert "n_initial" in res.output and str(spec) in res.output
    assert not out.exists()
    spec.write_text('name = "x"\nseed = 1\n[[dataset]]\nname = "toy"\npath = "missing-folder"\n')
    res = runner.invoke(app, ["calibrate", str(spec), "--out", str(out), "-q"])
    assert res.exit_code == 2 and "dataset[0].path" in res.output and "does not exist" in res.output
    assert not out.exists()


@pytest.mark.parametrize("objectives", ['["average_loss"]', '["user_activity", "average_loss"]'])
def test_calibrate_refuses_average_loss_without_every_statistic_before_work(tmp_path, objectives):
    """'average_loss' divides each KL by its statistic's own family-best search: without those searches it
    used to reach the user as an internal error after the sweep; now refused at validation, nothing written."""
    from tests.cli_helpers import SWEEP_TOML

    spec = tmp_path / "sweep.toml"
    spec.write_text(
        SWEEP_TOML.replace('observations = ["popularity"]', f'observations = ["popularity"]\nobjectives = {objectives}')
    )
    out = tmp_path / "out"
    res = runner.invoke(app, ["calibrate", str(spec), "--out", str(out), "-q"])
    assert res.exit_code == 2, res.output
    assert str(spec) in res.output and "'average_loss'" in res.output and "item_popularity" in res.output
    assert "internal error" not in res.output and not out.exists()


def test_calibrate_refuses_a_reference_without_similarity_statistics(tmp_path):
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f'name = "x"\nseed = 1\n[[dataset]]\nname = "fixture"\npath = "{(FIXTURES / "ml-100k").as_posix()}"\n'
    )
    res = runner.invoke(app, ["calibrate", str(spec), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 2
    assert "dataset[0]" in res.output and "similarity" in res.output and "undefined" in res.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_calibrate_small_sweep_end_to_end(tmp_path):
    """A 3-call sweep of one model on a simulated CSV reference: presets, table and figure appear."""
    truth = Uniform(n_users=120, n_items=150, lam=30.0).generate(0)
    ref = observe(truth, TruncatedPareto(m_low=5, alpha=1.0, m_high=60), UniformSampler(), 1).observed
    ref.to_frame().to_csv(tmp_path / "pairs.csv", index=False)
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        'name = "tiny"\nseed = 3\nn_calls = 3\nn_initial = 3\npreferences = ["uniform"]\n'
        'observations = ["uniform"]\nstat_pairs = 2000\n'
        '[[dataset]]\nname = "sim"\npath = "pairs.csv"\nkind = "pairs"\n'
    )
    out = tmp_path / "out"
    presets = tmp_path / "presets"
    res = runner.invoke(app, ["calibrate", str(spec), "--out", str(out), "-q", "--export-presets", str(presets)])
    assert res.exit_code == 0, res.output
    assert (out / "sim" / "table.csv").is_file() and (out / "sim" / "summary.md").is_file()
    assert (out / "sim" / "figures" / "uniform-unif.png").is_file()
    assert (presets / "sim" / "uniform-unif.toml").is_file()
    from simrec.cli import count_trials

    assert count_trials(out) == 5 * 3  # the progress bar's count: 5 objectives x 3 GP calls of the one cell


def test_run_bad_backend_is_refused(tmp_path):
    res = runner.invoke(app, ["run", "quickstart", "--out", str(tmp_path / "o"), "--backend", "dask"])
    assert res.exit_code == 2 and "--backend" in res.output
    assert not (tmp_path / "o").exists()
    res = runner.invoke(app, ["run", "quickstart", "--out", str(tmp_path / "o"), "--address", "10.0.0.1:6379"])
    assert res.exit_code == 2 and "--address" in res.output
    assert not (tmp_path / "o").exists()


def test_version():
    import simrec

    res = runner.invoke(app, ["--version"])  # more in tests/test_provenance.py
    assert res.exit_code == 0 and res.output.splitlines()[0].startswith(f"simrec {simrec.__version__}")


def test_python_m_simrec_is_the_simrec_command(monkeypatch, capsys):
    """``python -m simrec`` runs :func:`simrec.cli.main` (before: "No module named simrec.__main__")."""
    import runpy

    import simrec

    monkeypatch.setattr("sys.argv", ["simrec", "--version"])
    with pytest.raises(SystemExit) as info:
        runpy.run_module("simrec", run_name="__main__", alter_sys=True)
    out = capsys.readouterr().out
    assert info.value.code == 0 and out.splitlines()[0].startswith(f"simrec {simrec.__version__}"), out


def test_calibrate_lines_explain_refused_and_resumed_trials():
    from types import SimpleNamespace

    from simrec.cli import _search_note

    def cell(refused, resumed):
        return SimpleNamespace(n_trials=150, best=SimpleNamespace(index=104), n_refused=refused, resumed_from=resumed)

    assert _search_note(cell(0, 0)) == "at trial 104 (0-based, as in trials.jsonl) of 150"
    note = _search_note(cell(3, 40))
    assert "3 of the 150 trials were refused, i.e. not simulated" in note and "size guard" in note
    assert "resumed: trials 0-39 were read from the trial log of an earlier run, 40-149 computed now" in note
    assert "all 150 trials were read from the trial log" in _search_note(cell(0, 150))


def test_stress_summary_notes_explain_dashes_and_huge_errors():
    import numpy as np
    import pandas as pd

    from simrec.cli import _stress_summary_notes

    idx = pd.MultiIndex.from_tuples(
        [("binomial", 100, "CLS"), ("binomial", 100, "LS"), ("binomial", 100, "mapping:beta@P")],
        names=["scheme", "n", "estimator"],
    )
    frame = pd.DataFrame(
        {"recall": [0.1, 2400.0, 0.2], "ndcg": [0.1, 3.0, np.nan], "winner_share": [1.0, 0.5, 1.0]}, index=idx
    )
    notes = _stress_summary_notes(frame)
    assert notes[0].startswith("—: not defined. Li & Jin's mappings") and "not NDCG or AP" in notes[0]
    assert notes[1].startswith("LS: mean |relative error| above 10") and "unconstrained least squares" in notes[1]
    assert _stress_summary_notes(frame.iloc[:1]) == []
