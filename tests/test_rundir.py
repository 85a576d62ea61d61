"""The run directory shared by run, stress and calibrate: checks, manifest, lock, shards."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from simrec._random import DRAWS_VERSION
from simrec.rundir import RunDir, RunDirError


def _open(out, digest="d1", **kw):
    return RunDir.open(out, kind="run", name="demo", digest=digest, manifest={"seed": 3}, **kw)


def test_manifest_copy_and_completion(tmp_path):
    src = tmp_path / "demo.toml"
    src.write_text('name = "demo"\n')
    out = tmp_path / "out"
    with _open(out, source=src) as rd:
        m = json.loads((out / "manifest.json").read_text())
        assert m["status"] == "running" and m["digest"] == "d1" and m["kind"] == "run" and m["seed"] == 3
        assert "numpy" in m["versions"]
        assert (out / "scenario.toml").read_text() == 'name = "demo"\n'
        shards = rd.shards("replicates", ".parquet")
        shards.write_frame("rep00000__w000", pd.DataFrame({"a": [1]}))
        assert shards.exists("rep00000__w000") and not shards.exists("rep00001__w000")
        rd.complete(tasks_computed=1)
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "complete" and m["tasks_computed"] == 1
    assert not list(out.rglob("*.tmp"))


def test_refuses_a_file_another_job_and_a_broken_manifest(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RunDirError, match="is not a folder"):
        _open(f)
    out = tmp_path / "out"
    _open(out).close()
    with pytest.raises(RunDirError, match="different content"):
        _open(out, digest="d2")
    with pytest.raises(RunDirError, match="different content"):
        RunDir.open(out, kind="stress", name="demo", digest="d1")
    _open(out).close()  # the same job resumes
    (out / "manifest.json").write_text("{not json")
    with pytest.raises(RunDirError, match="unreadable manifest"):
        _open(out)


@pytest.mark.parametrize("earlier", [None, 1, DRAWS_VERSION + 1])
def test_refuses_to_resume_results_of_other_random_draws(tmp_path, earlier):
    """A folder started by a simrec that draws differently (a manifest without "draws" is version 1) is
    refused, its files untouched; the current version resumes."""
    out = tmp_path / "out"
    _open(out).close()
    m = json.loads((out / "manifest.json").read_text())
    assert m["draws"] == DRAWS_VERSION
    if earlier is None:
        del m["draws"]
    else:
        m["draws"] = earlier
    (out / "manifest.json").write_text(json.dumps(m))
    before = (out / "manifest.json").read_text()
    want = f"draws version {1 if earlier is None else earlier}, this simrec {DRAWS_VERSION}.*use a new --out folder"
    with pytest.raises(RunDirError, match=want):
        _open(out)
    assert (out / "manifest.json").read_text() == before


def test_lock_refuses_a_second_job_and_dies_with_its_process(tmp_path):
    out = tmp_path / "out"
    with _open(out):
        with pytest.raises(RunDirError, match="another simrec job is writing into this folder"):
            _open(out)
    _open(out).close()  # released on close
    # a process that holds the lock and dies releases it (flock dies with its file descriptor)
    code = textwrap.dedent(f"""
        import os
        from simrec.rundir import RunDir
        rd = RunDir.open({str(out)!r}, kind="run", name="demo", digest="d1")
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", code], check=True)
    _open(out).close()


def test_csv_tables_write_floating_point_noise_as_zero(tmp_path):
    import numpy as np

    from simrec.rundir import NOISE, snap_noise

    frame = pd.DataFrame(
        {
            "error": [0.3 - 0.1 - 0.2, -3.47e-16, 0.25, np.nan, np.inf, 2e-12],
            "name": list("abcdef"),
            "count": [0, 1, 2, 3, 4, 5],
        }
    )
    assert frame["error"].iloc[0] != 0  # 0.3 - 0.1 - 0.2 is -2.8e-17 in binary floating point
    with RunDir.open(tmp_path / "o", kind="run", name="t", digest="d", manifest={}) as rd:
        rd.write_csv("t.csv", frame)
        rd.write_parquet("t.parquet", frame)
    text = (tmp_path / "o" / "t.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in text[1:]] == ["0.0", "0.0", "0.25", "", "inf", "2e-12"]
    assert pd.read_parquet(tmp_path / "o" / "t.parquet")["error"].iloc[1] == -3.47e-16  # Parquet: as computed
    assert snap_noise(frame)["count"].tolist() == list(range(6)) and NOISE == 1e-12
