"""Provenance (issue 28): the commit, command and package versions in every manifest, ``run.log``, ``--version``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import RUN_TOML, files_under, invoke

import simrec
from simrec import provenance
from simrec.provenance import git_commit, package_versions, stamp_line, version_text
from simrec.rundir import RunDir

SHA = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
REPO = Path(__file__).resolve().parents[1]


def _clone(root: Path, head: str, refs: dict[str, str] | None = None, packed: str | None = None) -> Path:
    git = root / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text(head + "\n")
    for ref, sha in (refs or {}).items():
        (git / ref).parent.mkdir(parents=True, exist_ok=True)
        (git / ref).write_text(sha + "\n")
    if packed is not None:
        (git / "packed-refs").write_text(packed)
    return root


def test_the_commit_is_read_from_loose_refs_packed_refs_and_a_detached_head(tmp_path):
    loose = _clone(tmp_path / "a", "ref: refs/heads/main", {"refs/heads/main": SHA})
    assert git_commit(loose).sha == SHA and git_commit(loose).where == str(loose)
    packed = _clone(
        tmp_path / "b",
        "ref: refs/heads/dev",
        packed=f"# pack-refs with: peeled\n{OTHER} refs/heads/main\n{SHA} refs/heads/dev\n",
    )
    assert git_commit(packed).sha == SHA
    assert git_commit(_clone(tmp_path / "c", OTHER)).sha == OTHER
    # not a repository for git either: what git could not say is None, never an error
    assert git_commit(loose).modified is None


def test_a_worktree_follows_its_gitdir_file_and_the_common_dir(tmp_path):
    main = _clone(tmp_path / "main", "ref: refs/heads/main", {"refs/heads/main": OTHER, "refs/heads/wt": SHA})
    wt_git = main / ".git" / "worktrees" / "wt"
    wt_git.mkdir(parents=True)
    (wt_git / "HEAD").write_text("ref: refs/heads/wt\n")
    (wt_git / "commondir").write_text("../..\n")
    work = tmp_path / "wt"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {wt_git}\n")
    assert git_commit(work).sha == SHA


@pytest.mark.parametrize("head", ["ref: refs/heads/missing", "garbage", ""])
def test_no_commit_is_none_never_an_error(tmp_path, head):
    assert git_commit(tmp_path) is None  # no .git at all
    _clone(tmp_path / "x", head)
    assert git_commit(tmp_path / "x") is None
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / ".git").write_text("gitdir: /nonexistent/folder\n")
    assert git_commit(tmp_path / "y") is None


@pytest.mark.skipif(not (REPO / ".git").exists() or shutil.which("git") is None, reason="not a git clone")
def test_from_this_clone_the_commit_is_gits_head():
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    if head.returncode != 0:
        pytest.skip(f"git cannot read the clone: {head.stderr.strip()}")
    if Path(simrec.__file__).resolve().parents[1] != REPO:
        pytest.skip("simrec is imported from another folder than this clone")
    found = git_commit()
    assert found is not None and found.sha == head.stdout.strip() and found.modified in (True, False)


def test_package_versions_name_the_key_packages_and_ray_only_when_imported(monkeypatch):
    versions = package_versions()
    for pkg in ("python", "simrec", "numpy", "scipy", "pandas", "lenskit", "torch"):
        assert pkg in versions
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert "ray" not in package_versions()
    monkeypatch.setitem(sys.modules, "ray", object())
    assert "ray" in package_versions()


def test_a_manifest_records_the_commit_the_command_and_the_versions(tmp_path):
    with RunDir.open(tmp_path / "out", kind="run", name="demo", digest="d1") as rd:
        rd.complete()
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    commit = git_commit()
    assert m["commit"] == (commit.sha if commit else None)
    assert m["command"].startswith("python ")  # the library, called from this test runner
    assert {"simrec", "numpy", "scipy", "pandas", "lenskit"} <= set(m["versions"])
    assert not (tmp_path / "out" / "run.log").exists()  # only the simrec command keeps a log


def test_the_stamp_line_of_a_run_folder_is_its_manifests(tmp_path):
    """A run's stamp names the commit that made it: short, ``+modified`` or ``unknown`` (not a valid stamp)."""
    from test_reproductions import STAMP

    from simrec._random import DRAWS_VERSION

    with RunDir.open(tmp_path / "out", kind="run", name="demo", digest="d1") as rd:
        rd.complete()
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    line = stamp_line(tmp_path / "out")
    commit = git_commit()
    short = "unknown" if commit is None else commit.short()
    assert line == f"Made with simrec {simrec.__version__}, commit {short}, draws version {DRAWS_VERSION}"
    assert stamp_line() == line  # this process's simrec made it
    for modified, sha, expected in [(False, SHA, "0123456"), (True, SHA, "0123456+modified"), (None, None, "unknown")]:
        m.update(commit=sha, commit_modified=modified, draws=7)
        (tmp_path / "out" / "manifest.json").write_text(json.dumps(m))
        line = stamp_line(tmp_path / "out")
        assert line == f"Made with simrec {simrec.__version__}, commit {expected}, draws version 7"
        assert bool(STAMP.fullmatch(line)) == (expected == "0123456")  # only a clean commit is a stamp
    with pytest.raises(FileNotFoundError):
        stamp_line(tmp_path)


def _write(folder: Path, text: str) -> Path:
    path = folder / "s.toml"
    path.write_text(text)
    return path


def test_the_command_line_and_run_log_of_a_job(tmp_path):
    spec = _write(tmp_path, RUN_TOML)
    out = tmp_path / "out"
    args = ["run", str(spec), "--out", str(out), "--no-figures"]
    code, stdout, err = invoke(args)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "simrec " + " ".join(args)
    log = (out / "run.log").read_text()
    assert log.startswith(f"== simrec run {spec} --out {out} --no-figures\n") and "exit code 0" in log
    assert f"simrec {simrec.__version__}" in log
    assert "1 task(s) computed, 0 reused" in log and "Mean missing-data error" in log  # the summary, as printed
    assert "simrec: warning: table3.csv: only 1 replicate(s)" in log  # the warning printed on stderr
    assert provenance.run_folders() == ()  # the command is over

    # re-running appends (--quiet: nothing printed, nothing logged but the header)
    assert invoke([*args, "--quiet"])[0] == 0
    sections = (out / "run.log").read_text().split("\n== ")
    assert len(sections) == 2 and "exit code 0" in sections[1] and "task(s) computed" not in sections[1]
    # a job refused after opening its folder (exit 2) leaves it as it was: no log
    shard = next((out / "replicates").iterdir())
    shard.write_bytes(shard.read_bytes()[:-7])
    code, _, err = invoke(args)
    assert code == 2 and str(shard.name) in err
    assert (out / "run.log").read_text().count("\n== ") == 1


def test_a_failed_job_logs_its_error_and_exit_code(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent / "fixtures" / "exits"))
    rec = '{ kind = "lenskit", scorer = "simrec_test_exits:ExitZeroScorer", name = "mine" }'
    spec = _write(tmp_path, RUN_TOML.replace('{ kind = "oracle" }', rec))
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--no-figures"])
    assert code == 1 and "recommender 'mine' failed: SystemExit: 0" in err
    log = (tmp_path / "out" / "run.log").read_text()
    assert "exit code 1" in log and "simrec: error: " in log and "recommender 'mine' failed: SystemExit: 0" in log


def test_a_refused_folder_gets_no_run_log(tmp_path):
    spec = _write(tmp_path, RUN_TOML)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    code, _, err = invoke(["run", str(spec), "--out", str(mine), "--quiet", "--no-figures"])
    assert code == 2 and files_under(mine) == {"notes.txt"}
    code, _, _ = invoke(["run", str(spec), "--out", str(tmp_path / "new"), "-q"])  # a valid job: a log
    assert code == 0 and (tmp_path / "new" / "run.log").is_file()
    (tmp_path / "other.toml").write_text(RUN_TOML.replace("seed = 3", "seed = 4"))
    code, _, err = invoke(["run", str(tmp_path / "other.toml"), "--out", str(tmp_path / "new"), "-q"])
    assert code == 2 and "different content" in err
    assert (tmp_path / "new" / "run.log").read_text().count("\n== ") == 0  # another job's refusal is not logged


def test_version_shows_the_commit_the_draws_version_and_the_key_packages():
    code, stdout, _ = invoke(["--version"])
    first, *rest = stdout.splitlines()
    assert code == 0 and first.startswith(f"simrec {simrec.__version__}")
    commit = git_commit()
    if commit is not None:
        assert commit.sha[:7] in first
    assert "random draws: version " in stdout and "numpy " in stdout and "lenskit " in stdout
    assert stdout.strip() == version_text()
