"""The smaller points of issue 28, through ``simrec.cli.main`` as a new user meets them.

* forgetting ``--out`` wrote silently to ``runs/out`` (every scenario into the same folder);
* a ``;``-separated CSV got no hint to pass ``--sep``;
* "digest a0b1… != 5ef1…" was the message for an output folder of another job;
* the run's table said ``P@5`` where the figures said ``precision@5``: both now use :mod:`simrec.labels`.
"""

from __future__ import annotations

import json

from cli_helpers import RUN_TOML, assert_one_line, invoke


def test_without_out_a_run_goes_to_runs_slash_its_name_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.toml").write_text(RUN_TOML)
    (tmp_path / "b.toml").write_text(
        RUN_TOML.replace('name = "tiny"', 'name = "tiny-b"').replace("seed = 3", "seed = 4")
    )
    code, _, err = invoke(["run", "a.toml", "--quiet", "--no-figures"])
    assert code == 0, err
    notice = "simrec: no --out given: writing to runs/tiny (re-running the same command resumes there)\n"
    assert err.startswith(notice)  # before the job starts (then the run's own warnings)
    assert json.loads((tmp_path / "runs" / "tiny" / "manifest.json").read_text())["status"] == "complete"
    # another scenario, no --out either: its own folder, not a refusal to share the first one's
    code, _, err = invoke(["run", "b.toml", "--quiet", "--no-figures"])
    assert code == 0, err
    assert "runs/tiny-b" in err and (tmp_path / "runs" / "tiny-b" / "manifest.json").is_file()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["tiny", "tiny-b"]


def test_the_run_table_names_metrics_and_worlds_as_the_figures_do(tmp_path):
    (tmp_path / "a.toml").write_text(RUN_TOML)
    code, out, err = invoke(["run", str(tmp_path / "a.toml"), "--out", str(tmp_path / "o"), "--no-figures"])
    assert code == 0, err
    assert "Precision@5" in out and "Recall@5" in out and "P@5" not in out
    assert "Uniform, uniformly observed" in out and "Algorithm" in out
    assert "no --out given" not in err  # said only when --out is missing


def test_a_semicolon_separated_csv_gets_a_hint_to_pass_sep(tmp_path):
    data = tmp_path / "ratings.csv"
    data.write_text("user;item;rating\nu1;i1;5\nu1;i2;3\nu2;i1;4\n")
    code, _, err = invoke(["datasets", "describe", str(data)])
    assert_one_line(code, err, "ratings.csv: no column 'user', 'item'", "looks ';'-separated", "pass --sep ';'")
    code, out, err = invoke(["datasets", "describe", str(data), "--sep", ";"])  # the hint works
    assert code == 0, err
    assert "users" in out
    # a header that is simply wrong gets no separator hint
    data.write_text("who,what\nu1,i1\n")
    code, _, err = invoke(["datasets", "describe", str(data), "--kind", "pairs"])
    assert_one_line(code, err, "no column 'user', 'item'; found columns ['who', 'what']")
    assert "--sep" not in err and "looks" not in err


def test_an_output_folder_of_another_job_is_refused_without_digests(tmp_path):
    (tmp_path / "a.toml").write_text(RUN_TOML)
    (tmp_path / "b.toml").write_text(RUN_TOML.replace("seed = 3", "seed = 4"))
    out = tmp_path / "o"
    code, _, err = invoke(["run", str(tmp_path / "a.toml"), "--out", str(out), "--quiet", "--no-figures"])
    assert code == 0, err
    code, _, err = invoke(["run", str(tmp_path / "b.toml"), "--out", str(out), "--quiet", "--no-figures"])
    assert_one_line(code, err, "holds results of run 'tiny'", str(out / "scenario.toml"), "use a new --out folder")
    assert "digest" not in err and "!=" not in err
