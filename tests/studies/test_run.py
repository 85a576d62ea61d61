"""`simrec run`: outputs, identical results serially and on 2 processes, resume after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from simrec.cli import app
from simrec.config.run import load_scenario
from simrec.rundir import RunDirError
from simrec.studies import run_scenario
from simrec.tasks import ProcessBackend

SCENARIO = """
name = "runner-test"
seed = 7
replicates = {replicates}

[population]
n_users = 80
n_items = 120

[[world]]
preference = {{ model = "uniform", lam = 20.0 }}
observation = {{ sampler = "uniform", profile = {{ model = "pareto", m_low = 4, alpha = 1.2, m_high = 40 }} }}

[[world]]
preference = {{ model = "ibp", alpha = 12.0, c = 2.0, sigma = 0.4 }}
observation = {{ sampler = "popularity", profile = {{ model = "pareto", m_low = 4, alpha = 1.2, m_high = 40 }} }}

[evaluation]
n = 10
metrics = ["precision", "recall", "ndcg", "auc"]
recommenders = [{{ kind = "oracle" }}, {{ kind = "popular" }}, {{ kind = "random" }}]
"""


def _scenario(tmp_path: Path, replicates: int = 3) -> Path:
    p = tmp_path / "sc.toml"
    p.write_text(textwrap.dedent(SCENARIO.format(replicates=replicates)))
    return p


@pytest.mark.slow
def test_run_writes_every_output(tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(_scenario(tmp_path)), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    for name in ("results.parquet", "summary.csv", "manifest.json", "table3.csv", "scenario.toml"):
        assert (out / name).is_file(), name
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert "values_precision.png" in figs and "error_auc.png" in figs
    results = pd.read_parquet(out / "results.parquet")
    # 3 replicates x 2 worlds x 3 recommenders x 4 metrics x 2 truth kinds
    assert len(results) == 3 * 2 * 3 * 4 * 2
    assert set(results["truth"]) == {"observed", "true"}
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["kind"]) == {"observed", "true", "error"}
    t3 = pd.read_csv(out / "table3.csv")
    assert ((t3["ci_low"] <= t3["percent"]) & (t3["percent"] <= t3["ci_high"])).all()
    assert not list(out.rglob("*.tmp"))


@pytest.mark.slow
def test_serial_and_two_processes_identical(tmp_path):
    sc, path = load_scenario(_scenario(tmp_path))
    a = run_scenario(sc, path, tmp_path / "serial", progress=False, figures=False)
    with ProcessBackend(2) as backend:
        b = run_scenario(sc, path, tmp_path / "procs", backend=backend, progress=False, figures=False)
    pd.testing.assert_frame_equal(a.results, b.results)
    assert (tmp_path / "serial" / "results.parquet").read_bytes() == (
        tmp_path / "procs" / "results.parquet"
    ).read_bytes()


def test_more_replicates_keep_the_first_ones(tmp_path):
    sc3, p3 = load_scenario(_scenario(tmp_path, 3))
    a = run_scenario(sc3, p3, tmp_path / "a", progress=False, figures=False)
    sc5, p5 = load_scenario(_scenario(tmp_path, 5))
    b = run_scenario(sc5, p5, tmp_path / "b", progress=False, figures=False)
    first = b.results[b.results["replicate"] < 3].reset_index(drop=True)
    pd.testing.assert_frame_equal(a.results, first)


def test_other_scenario_in_same_folder_is_refused(tmp_path):
    sc, path = load_scenario(_scenario(tmp_path, 2))
    run_scenario(sc, path, tmp_path / "out", progress=False, figures=False)
    other, opath = load_scenario(_scenario(tmp_path, 4))
    with pytest.raises(RunDirError, match="different content"):
        run_scenario(other, opath, tmp_path / "out", progress=False, figures=False)


@pytest.mark.slow
def test_resume_after_kill_gives_the_same_results(tmp_path):
    """Kill a real `simrec run` process after its first shards, re-run, compare."""
    scen = _scenario(tmp_path, 30)
    sc, path = load_scenario(scen)
    ref = run_scenario(sc, path, tmp_path / "ref", progress=False, figures=False)

    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "simrec.cli", "run", str(scen), "--out", str(out), "--quiet", "--no-figures"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    shards = out / "replicates"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if shards.is_dir() and len(list(shards.glob("*.parquet"))) >= 3:
            break
        time.sleep(0.02)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_before = len(list(shards.glob("*.parquet")))
    if killed:
        assert not (out / "results.parquet").exists()
        assert n_before < 60
    resumed = run_scenario(sc, path, out, progress=False, figures=False)
    assert resumed.reused == n_before
    assert resumed.computed == 60 - n_before
    pd.testing.assert_frame_equal(ref.results, resumed.results)
