"""The run directory shared by run, stress and calibrate: checks, manifest, lock, shards."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import RUN_TOML, SWEEP_TOML, files_under, invoke
from cli_helpers import assert_one_line as _one_line

from simrec._random import DRAWS_VERSION
from simrec.rundir import FRAMES, RunDir, RunDirError
from simrec.shards import ARRAYS, ShardError, Shards, arrays_digest, frame_digest


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
        shards = rd.shards("replicates", FRAMES)
        shards.write("rep00000__w000", pd.DataFrame({"a": [1]}))
        assert shards.exists("rep00000__w000") and not shards.exists("rep00001__w000")
        assert shards.reusable(["rep00000__w000", "rep00001__w000"]) == {"rep00000__w000"}
        assert shards.read("rep00000__w000").equals(pd.DataFrame({"a": [1]}))
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


# == issue 22: every folder simrec writes is guarded alike ==========================================
PAIRS = Path(__file__).resolve().parent / "golden" / "pairs.csv"


def _write(folder: Path, text: str, name: str = "s.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _contents(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` and its bytes (the lock file aside)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".simrec.lock"
    }


# -- the lock, and the checks made again once it is held -------------------------------------------
def test_a_job_that_found_the_folder_empty_is_refused_once_it_holds_the_lock(tmp_path, monkeypatch):
    """The race of issue 22: job B checks an empty --out, then job A runs there to its end before B takes
    the lock (the delay is injected at B's lock: deterministic, no sleep). B must check again under the
    lock and refuse in one line, exit 2, with A's manifest and tables untouched; before the fix B wrote
    its manifest and summary over A's."""
    job_a = _write(tmp_path, RUN_TOML, "a.toml")
    job_b = _write(tmp_path, RUN_TOML.replace("seed = 3", "seed = 4"), "b.toml")
    out = tmp_path / "out"
    real_lock, pending, finished = RunDir._lock, [job_a], {}

    def delayed_lock(self):
        if pending:  # job B has passed the first check; job A runs meanwhile, to its end
            code, _, err = invoke(["run", str(pending.pop()), "--out", str(out), "--quiet", "--no-figures"])
            assert code == 0, err
            finished.update(_contents(out))
        real_lock(self)

    monkeypatch.setattr(RunDir, "_lock", delayed_lock)
    code, _, err = invoke(["run", str(job_b), "--out", str(out), "--quiet", "--no-figures"])
    _one_line(code, err, "different content", "use a new --out folder")
    assert {"manifest.json", "summary.csv", "results.parquet"} <= set(finished)
    assert json.loads(finished["manifest.json"])["status"] == "complete"
    assert _contents(out) == finished


def test_files_put_into_the_folder_before_the_lock_is_taken_are_refused(tmp_path, monkeypatch):
    out = tmp_path / "out"
    real_lock = RunDir._lock

    def user_writes_first(self):
        (out / "mine.csv").write_text("a user's file\n")
        real_lock(self)

    monkeypatch.setattr(RunDir, "_lock", user_writes_first)
    with pytest.raises(RunDirError, match=r"holds files \(mine.csv\) but is not a simrec run folder"):
        _open(out)
    assert files_under(out) == {"mine.csv", ".simrec.lock"} and not (out / "manifest.json").exists()


# -- the copy of the job's file ----------------------------------------------------------------------
def _swap_after_validation(monkeypatch, swap) -> None:
    """``simrec run`` validates its scenario, then ``swap(path)`` replaces the file before the job starts."""
    import simrec.config.run as run_config

    real = run_config.load_scenario

    def load_then_swap(*args, **kwargs):
        sc, path = real(*args, **kwargs)
        swap(Path(path))
        return sc, path

    monkeypatch.setattr(run_config, "load_scenario", load_then_swap)


@pytest.mark.slow
def test_a_scenario_replaced_by_a_fifo_after_validation_is_one_line(tmp_path, monkeypatch):
    """The copy into --out is read with the checks of validation: before the fix, ``Path.read_text`` of a FIFO
    blocked until a writer came (here a thread opens it 5 s after the swap, so the unfixed code fails instead
    of hanging) and copied what it wrote."""
    import os
    import threading
    import time

    src = _write(tmp_path, RUN_TOML)
    out = tmp_path / "out"
    swapped: list[float] = []

    def late_writer() -> None:
        time.sleep(5)
        with open(src, "w") as fh:  # unblocks a reader, if any (else waits for the test's own, below)
            fh.write(RUN_TOML)

    writer = threading.Thread(target=late_writer, daemon=True)

    def to_fifo(path: Path) -> None:
        path.unlink()
        os.mkfifo(path)
        swapped.append(time.monotonic())
        writer.start()

    _swap_after_validation(monkeypatch, to_fifo)
    code, _, err = invoke(["run", str(src), "--out", str(out), "--quiet", "--no-figures"])
    elapsed = time.monotonic() - swapped[0]
    _one_line(code, err, str(src), "named pipe (FIFO)", "nothing was written")
    assert elapsed < 3 and not out.exists()
    fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer finish
    writer.join(10)
    os.close(fd)


def test_a_scenario_grown_past_the_limit_after_validation_loses_nothing(tmp_path, monkeypatch):
    """A finished run re-run after its file grew past the TOML limit between validation and the copy: one
    line, and the folder (manifest, scenario copy, tables) is exactly as the first run left it."""
    src = _write(tmp_path, RUN_TOML)
    out = tmp_path / "out"
    args = ["run", str(src), "--out", str(out), "--quiet", "--no-figures"]
    code, _, err = invoke(args)
    assert code == 0, err
    finished = _contents(out)
    monkeypatch.setenv("SIMREC_MAX_TOML_SIZE", "4K")
    _swap_after_validation(monkeypatch, lambda path: path.write_text(RUN_TOML + "#" * 65_536 + "\n"))
    code, _, err = invoke(args)
    _one_line(code, err, str(src), "over simrec's limit of 4.0 KiB", "not copied into --out")
    assert _contents(out) == finished


# -- a manifest that is not simrec's ------------------------------------------------------------------
@pytest.mark.parametrize(
    "content, reason",
    [
        (b"[]", "not a simrec manifest (a JSON object expected; got list)"),
        (b'"complete"', "not a simrec manifest (a JSON object expected; got str)"),
        (b"null", "not a simrec manifest (a JSON object expected; got NoneType)"),
        (b"{}", "not a simrec manifest (no 'digest' text)"),
        (b'{"digest": 5, "kind": "run"}', "not a simrec manifest (no 'digest' text)"),
        (b'{"digest": "4e9b", "kind": ["run"]}', "not a simrec manifest (no 'kind' text)"),
        (b'{"digest": "\xff"}', "unreadable manifest (UnicodeDecodeError"),
        (b'{"digest": ', "unreadable manifest (JSONDecodeError"),
        # nested deeper than Python's recursion limit (issue 22 audit; before: 'internal error: RecursionError')
        (b"[" * 100_000 + b"]" * 100_000, "unreadable manifest (RecursionError"),
    ],
    ids=lambda v: v[:24] if isinstance(v, bytes) else None,
)
def test_a_manifest_that_is_not_simrecs_is_one_line(tmp_path, content, reason):
    spec = _write(tmp_path, RUN_TOML)
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_bytes(content)
    code, _, err = invoke(["run", str(spec), "--out", str(out), "--quiet", "--no-figures"])
    _one_line(code, err, f"{out / 'manifest.json'}: {reason}", "use a new --out folder")
    assert _contents(out) == {"manifest.json": content} and files_under(out) == {"manifest.json"}


# -- an --out name longer than the file system allows ----------------------------------------------------
STRESS_SIM = """
kind = "stress"
name = "tiny-sim"
seed = 3
repeats = 2
[source]
type = "simulation"
population = { n_users = 60, n_items = 80 }
world = { name = "u", preference = { model = "uniform", lam = 12.0 }, observation = { sampler = "uniform", profile = { model = "pareto", m_low = 3, alpha = 1.0, m_high = 10 } } }
min_items = 2
recommenders = [{ kind = "popular" }, { kind = "random" }]
[sampling]
schemes = ["binomial"]
sizes = [20]
[estimators]
names = ["naive"]
[metrics]
names = ["recall"]
k_max = 5
curve_k = 5
curve_sizes = [10, 50]
[user_sampling]
sizes = [20, 40]
repeats = 3
item_estimator = "naive"
"""


def _job_args(tmp_path: Path, command: str) -> list[str]:
    """The arguments of a small valid job of ``command`` (its input files written into ``tmp_path``)."""
    if command == "run":
        return ["run", str(_write(tmp_path, RUN_TOML))]
    if command == "stress":
        return ["stress", str(_write(tmp_path, STRESS_SIM))]
    if command == "calibrate":
        return ["calibrate", str(_write(tmp_path, SWEEP_TOML))]
    if command == "assess":
        from assess.conftest import assessment_toml, write_pairs

        return ["assess", str(_write(tmp_path, assessment_toml(write_pairs(tmp_path))))]
    return ["ranks", str(PAIRS), "-r", "popular"]


@pytest.mark.parametrize("command", ["run", "stress", "calibrate", "assess", "ranks"])
@pytest.mark.parametrize("nested", [False, True])
def test_an_out_name_too_long_for_the_file_system_is_one_line(tmp_path, command, nested):
    """OSError 36 (File name too long) was an internal error (and ``d/<long>/x`` created ``d``): now one
    line naming --out and the rule, exit 2, before anything is created."""
    args = _job_args(tmp_path, command)
    before = files_under(tmp_path)
    long = "x" * 296 + ".csv"  # 300 bytes; a ranks file must end in .csv
    out = tmp_path / "d" / long / "ranks.csv" if nested else tmp_path / long
    code, _, err = invoke([*args, "--out", str(out), *([] if command == "ranks" else ["--no-figures"])])
    _one_line(code, err, f"--out {str(out)[:100]}... ({len(str(out))} characters)")
    assert "a name in the path is 300 bytes long; each name must be at most 255 bytes" in err
    assert err.endswith("Choose a shorter --out\n")
    assert files_under(tmp_path) == before


# -- shards: the identity record and its checks -----------------------------------------------------
def _frame() -> pd.DataFrame:
    neg_nan = np.frombuffer(np.array([0xFFF8000000000000], dtype="<u8").tobytes(), dtype="<f8")[0]
    return pd.DataFrame(
        {
            "replicate": np.array([0, 1, 2], dtype=np.int64),
            "world": ["a", "b", None],
            "value": [0.25, neg_nan, -0.0],
            "flag": [True, False, True],
        }
    )


def test_shards_round_trip_with_their_identity(tmp_path):
    frames = Shards(tmp_path / "replicates", FRAMES, owner="job1")
    frames.write("rep00000__w000", _frame())
    back = frames.read("rep00000__w000")
    pd.testing.assert_frame_equal(back, _frame())
    assert frame_digest(back) == frame_digest(_frame())  # -NaN and the +NaN Parquet gives back digest alike
    arrays = {"name": np.array("Popular"), "ranks": np.arange(6.0).reshape(2, 3), "users": np.array(["u1", "u2"])}
    npz = Shards(tmp_path / "tasks", ARRAYS, owner="job1")
    npz.write("0__binomial__n20", arrays)
    got = npz.read("0__binomial__n20")
    assert set(got) == set(arrays) and all(np.array_equal(got[k], arrays[k]) for k in arrays)
    assert arrays_digest(got) == arrays_digest(arrays)
    assert npz.reusable(["0__binomial__n20", "1__binomial__n20"]) == {"0__binomial__n20"}
    with pytest.raises(ValueError, match="reserved"):
        npz.write("x", {"__simrec_shard__": np.zeros(1)})
    for key in ("../escape", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="a shard key must be"):
            npz.path(key)


def test_digests_see_every_value_and_name():
    base = frame_digest(_frame())
    changed = _frame()
    changed.loc[0, "value"] = 0.25000000000000006
    assert frame_digest(changed) != base
    assert frame_digest(_frame().rename(columns={"flag": "flags"})) != base
    assert frame_digest(_frame()[["world", "replicate", "value", "flag"]]) != base
    assert frame_digest(_frame().assign(replicate=lambda f: f["replicate"].astype(np.int32))) != base
    assert arrays_digest({"a": np.zeros(2)}) != arrays_digest({"a": np.zeros((1, 2))})
    assert arrays_digest({"a": np.zeros(2), "b": np.ones(1)}) == arrays_digest({"b": np.ones(1), "a": np.zeros(2)})


def _refused(shards: Shards, key: str, *needles: str) -> str:
    with pytest.raises(ShardError) as info:
        shards.read(key)
    msg = str(info.value)
    assert "\n" not in msg and str(shards.path(key)) in msg, msg
    for needle in needles:
        assert needle in msg, msg
    with pytest.raises(ShardError):
        shards.reusable([key])
    return msg


def test_broken_and_foreign_shards_are_refused_naming_the_file(tmp_path):
    mine = Shards(tmp_path / "replicates", FRAMES, owner="job1")
    for r in range(3):
        mine.write(f"rep0000{r}__w000", _frame().assign(replicate=r))
    do = "delete it and re-run the same command to recompute it"
    # another task's shard under this task's name
    (mine.folder / "rep00001__w000.parquet").write_bytes((mine.folder / "rep00000__w000.parquet").read_bytes())
    _refused(mine, "rep00001__w000", "holds task replicates/rep00000__w000, not replicates/rep00001__w000", do)
    # another job's shard of the same task
    theirs = Shards(tmp_path / "other" / "replicates", FRAMES, owner="job2")
    theirs.write("rep00002__w000", _frame())
    (mine.folder / "rep00002__w000.parquet").write_bytes(theirs.path("rep00002__w000").read_bytes())
    _refused(mine, "rep00002__w000", "belongs to another job (one with other settings than this folder's", do)
    # changed after it was written, its identity record kept
    import pyarrow.parquet as pq

    path = mine.path("rep00000__w000")
    table = pq.read_table(path)
    edited = table.set_column(2, "value", pq.read_table(path).column("value").fill_null(9.0))
    pq.write_table(edited.replace_schema_metadata(table.schema.metadata), path)
    _refused(mine, "rep00000__w000", "does not match the checksum recorded when it was written", do)
    # truncated, empty, not Parquet at all
    for data in (mine.path("rep00000__w000").read_bytes()[:-40], b"", b"PAR1 garbage"):
        path.write_bytes(data)
        msg = _refused(mine, "rep00000__w000", "unreadable (truncated, or not a Parquet file", do)
        assert "Traceback" not in msg and len(msg) < 400
    # the record itself unreadable
    pq.write_table(table.replace_schema_metadata({b"simrec.shard": b"[1, 2"}), path)
    _refused(mine, "rep00000__w000", "unreadable shard identity record")
    pq.write_table(table.replace_schema_metadata({b"simrec.shard": b"[" * 100_000}), path)  # past the recursion limit
    _refused(mine, "rep00000__w000", "unreadable shard identity record")
    forged = {"format": 1, "phase": "replicates", "key": "rep\n" + "0" * 500, "owner": "job1", "sha256": ""}
    pq.write_table(table.replace_schema_metadata({b"simrec.shard": json.dumps(forged).encode()}), path)
    _refused(mine, "rep00000__w000", "holds task replicates/rep 000", "(504 characters)")  # one line, quoted short
    pq.write_table(table.replace_schema_metadata({b"simrec.shard": json.dumps({**forged, "format": 7}).encode()}), path)
    _refused(mine, "rep00000__w000", "is of format 7; this simrec reads format 1")
    # several at once: one line, the first named, the others counted
    with pytest.raises(ShardError, match=r"and 2 more shard\(s\) in .*replicates cannot be used"):
        mine.reusable([f"rep0000{r}__w000" for r in range(3)])


def test_npz_shards_refuse_pickles_and_garbage(tmp_path):
    shards = Shards(tmp_path / "tasks", ARRAYS, owner="job1")
    path = shards.path("0__binomial__n20")
    path.parent.mkdir()
    forged = json.dumps({"format": 1, "phase": "tasks", "key": "0__binomial__n20", "owner": "job1", "sha256": "0" * 64})
    with open(path, "wb") as fh:  # an object array, with a forged record: np.load would need to unpickle it
        np.savez(fh, x=np.array([{"a": 1}], dtype=object), __simrec_shard__=np.array(forged))
    _refused(shards, "0__binomial__n20", "unreadable (truncated, or not an npz file", "allow_pickle=False")
    path.write_bytes(b"\x80\x04K\x01.")  # a pickle
    _refused(shards, "0__binomial__n20", "unreadable (truncated, or not an npz file")


def test_shards_without_identity_are_refused_as_a_folder(tmp_path):
    """Decision: shards of the previous simrec (no identity record) cannot be checked, so they are refused,
    one line naming the folder and what to do (as a folder of another draws version is)."""
    shards = Shards(tmp_path / "replicates", FRAMES, owner="job1")
    shards.folder.mkdir()
    for r in range(2):
        _frame().to_parquet(shards.path(f"rep0000{r}__w000"), index=False)  # as simrec wrote shards before
    with pytest.raises(ShardError) as info:
        shards.reusable(["rep00000__w000", "rep00001__w000"])
    msg = str(info.value)
    assert msg.startswith(f"{shards.folder}: 2 shard(s) without simrec's shard identity record") and "\n" not in msg
    assert f"delete the folder {shards.folder} and re-run the same command" in msg and "new --out folder" in msg


# -- shards through the command line ------------------------------------------------------------------------
def _run_three(tmp_path: Path) -> tuple[list[str], Path, dict[str, bytes]]:
    spec = _write(tmp_path, RUN_TOML.replace("replicates = 1", "replicates = 3"))
    out = tmp_path / "out"
    args = ["run", str(spec), "--out", str(out), "--quiet", "--no-figures"]
    code, _, err = invoke(args)
    assert code == 0, err
    return args, out, _contents(out)


def _refused_then_recomputed(args: list[str], out: Path, finished: dict[str, bytes], shard: Path, *needles: str):
    """The re-run is refused in one line naming ``shard``; nothing changes; deleting it and re-running gives
    the first run's tables again."""
    broken = _contents(out)
    code, _, err = invoke(args)
    _one_line(code, err, str(shard), "delete it and re-run the same command", *needles)
    assert _contents(out) == broken  # nothing written, nothing deleted: manifest, tables, shards as they were
    shard.unlink()
    code, _, err = invoke(args)
    assert code == 0, err
    tables = {k: v for k, v in finished.items() if k.endswith((".csv", ".parquet")) and "/" not in k}
    assert tables and all(_contents(out)[k] == v for k, v in tables.items())


def test_run_refuses_a_swapped_replicate_shard(tmp_path):
    """Before: replicate 1's shard copied over replicate 2's was reused silently and changed summary.csv."""
    args, out, finished = _run_three(tmp_path)
    shards = out / "replicates"
    (shards / "rep00002__w000.parquet").write_bytes((shards / "rep00001__w000.parquet").read_bytes())
    _refused_then_recomputed(
        args, out, finished, shards / "rep00002__w000.parquet", "holds task replicates/rep00001__w000"
    )


def test_run_refuses_a_truncated_replicate_shard(tmp_path):
    """Before: ``internal error: ArrowInvalid ... magic bytes``, the file not named."""
    args, out, finished = _run_three(tmp_path)
    shard = out / "replicates" / "rep00001__w000.parquet"
    shard.write_bytes(shard.read_bytes()[: len(shard.read_bytes()) // 2])
    _refused_then_recomputed(args, out, finished, shard, "unreadable (truncated, or not a Parquet file")


def test_run_refuses_a_shard_of_another_run(tmp_path):
    args, out, finished = _run_three(tmp_path)
    other = _write(
        tmp_path, RUN_TOML.replace("replicates = 1", "replicates = 3").replace("seed = 3", "seed = 9"), "o.toml"
    )
    code, _, err = invoke(["run", str(other), "--out", str(tmp_path / "other"), "--quiet", "--no-figures"])
    assert code == 0, err
    shard = out / "replicates" / "rep00000__w000.parquet"
    shard.write_bytes((tmp_path / "other" / "replicates" / "rep00000__w000.parquet").read_bytes())
    _refused_then_recomputed(args, out, finished, shard, "belongs to another job")


@pytest.mark.slow
@pytest.mark.parametrize(
    "phase, victim, source, how",
    [
        ("tasks", "1__binomial__n20.npz", "0__binomial__n20.npz", "swap"),
        ("tasks", "1__binomial__n20.npz", None, "truncate"),
        ("ranks", "1.npz", "0.npz", "swap"),
        ("ranks", "0.npz", None, "truncate"),
        ("user_sampling", "m40.npz", "m20.npz", "swap"),
        ("user_sampling", "m20.npz", None, "truncate"),
    ],
)
def test_stress_refuses_swapped_and_truncated_shards_of_every_phase(tmp_path, phase, victim, source, how):
    spec = _write(tmp_path, STRESS_SIM)
    out = tmp_path / "out"
    args = ["stress", str(spec), "--out", str(out), "--quiet", "--no-figures"]
    code, _, err = invoke(args)
    assert code == 0, err
    finished = _contents(out)
    shard = out / phase / victim
    if how == "swap":
        shard.write_bytes((out / phase / source).read_bytes())
        needle = f"holds task {phase}/{source.removesuffix('.npz')}, not {phase}/{victim.removesuffix('.npz')}"
    else:
        shard.write_bytes(shard.read_bytes()[:-30])
        needle = "unreadable (truncated, or not an npz file"
    _refused_then_recomputed(args, out, finished, shard, needle)
