"""``simrec calibrate --export-presets DIR`` follows the rules of ``--out``, and trial logs are checked (issue 22).

Before: existing preset files in DIR were overwritten without asking, by a
plain copy; ``--export-presets afile/x`` (``afile`` a file) failed after the
sweep with advice naming ``--out``; a trial log whose lines are not trial
records ended in ``internal error: AttributeError`` / ``KeyError``.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from cli_helpers import SWEEP_TOML, files_under, invoke
from cli_helpers import assert_one_line as _one_line

PRESET = Path("pairs") / "uniform-pop.toml"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished tiny sweep (copied by each test, which then resumes it in a fraction of a second)."""
    work = tmp_path_factory.mktemp("sweep")
    spec = work / "s.toml"
    spec.write_text(SWEEP_TOML)
    code, _, err = invoke(["calibrate", str(spec), "--out", str(work / "out"), "--quiet", "--no-figures"])
    assert code == 0, err
    return work


@pytest.fixture
def sweep(tmp_path, finished) -> tuple[list[str], Path]:
    """(the calibrate command of a finished sweep in ``tmp_path``, its --out folder)."""
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    out = tmp_path / "out"
    return ["calibrate", str(tmp_path / "s.toml"), "--out", str(out), "--quiet", "--no-figures"], out


def test_export_writes_the_presets_and_repeats(sweep, tmp_path):
    args, out = sweep
    dest = tmp_path / "mine"
    code, _, err = invoke([*args, "--export-presets", str(dest)])
    assert code == 0, err
    assert (dest / PRESET).read_bytes() == (out / "pairs" / "presets" / "uniform-pop.toml").read_bytes()
    code, _, err = invoke([*args, "--export-presets", str(dest)])  # the same presets again: nothing to ask
    assert code == 0, err
    assert files_under(dest) == {"pairs", "pairs/uniform-pop.toml"}  # no temporary file left


def test_export_refuses_to_replace_a_users_file_unless_overwrite(sweep, tmp_path):
    args, out = sweep
    dest = tmp_path / "mine"
    (dest / "pairs").mkdir(parents=True)
    (dest / PRESET).write_text("# my own preset\n")
    (dest / "pairs" / "other.toml").write_text("# another of mine\n")
    code, _, err = invoke([*args, "--export-presets", str(dest)])
    _one_line(
        code,
        err,
        f"--export-presets {dest}: 1 preset file(s) there differ from this sweep's ({dest / PRESET})",
        "nothing was exported",
        f"this sweep's presets are in {out / 'pairs' / 'presets'}",
        "Re-run with --overwrite",
    )
    assert (dest / PRESET).read_text() == "# my own preset\n"
    code, _, err = invoke([*args, "--export-presets", str(dest), "--overwrite"])
    assert code == 0, err
    assert (dest / PRESET).read_bytes() == (out / "pairs" / "presets" / "uniform-pop.toml").read_bytes()
    assert (dest / "pairs" / "other.toml").read_text() == "# another of mine\n"  # only the sweep's own names
    assert files_under(dest) == {"pairs", "pairs/uniform-pop.toml", "pairs/other.toml"}


def test_a_folder_where_a_preset_goes_is_refused(sweep, tmp_path):
    args, _ = sweep
    dest = tmp_path / "mine"
    (dest / PRESET).mkdir(parents=True)
    code, _, err = invoke([*args, "--export-presets", str(dest), "--overwrite"])
    _one_line(code, err, f"{dest / PRESET} is not a file", "nothing was exported")
    assert files_under(dest) == {"pairs", "pairs/uniform-pop.toml"}


def test_a_file_on_the_export_path_is_refused_before_the_sweep(tmp_path):
    """``--export-presets afile/x``: one line about --export-presets (it named --out), before anything runs."""
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP_TOML)
    (tmp_path / "afile").write_text("mine")
    for dest in (tmp_path / "afile" / "x", tmp_path / "afile", tmp_path / ("p" * 300)):
        out = tmp_path / "out"
        code, _, err = invoke(["calibrate", str(spec), "--out", str(out), "--quiet", "--export-presets", str(dest)])
        _one_line(code, err, "--export-presets")
        assert "--out" not in err, err
        assert files_under(tmp_path) == {"s.toml", "afile"} and (tmp_path / "afile").read_text() == "mine"
    assert "a name in the path is 300 bytes long" in err and "Choose a shorter --export-presets" in err


def test_a_read_only_export_folder_is_refused_before_the_sweep(tmp_path, monkeypatch):
    """A read-only file system under --export-presets (or --out) is one line, exit 2, before anything runs.

    Found by the issue-22 audit on a read-only tmpfs mount: the sweep ran to the end, then exited 1.
    ``statvfs`` reports the mount read-only here for the folder the export would go under.
    """
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP_TOML)
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.statvfs

    class _ReadOnly:
        def __init__(self, st):
            self._st = st

        def __getattr__(self, name):
            return getattr(self._st, name)

        @property
        def f_flag(self):
            return self._st.f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: _ReadOnly(real(p)) if Path(p) == ro else real(p))
    for args in (["--out", str(tmp_path / "out"), "--export-presets", str(ro / "p")], ["--out", str(ro / "out")]):
        code, _, err = invoke(["calibrate", str(spec), "--quiet", *args])
        _one_line(code, err, "the file system is read-only")
        assert code == 2, (code, err)
        assert files_under(tmp_path) == {"s.toml", "ro"}  # nothing created, in ro or beside it


def test_a_disk_error_while_exporting_is_one_line_and_keeps_the_users_file(sweep, tmp_path, monkeypatch):
    args, out = sweep
    dest = tmp_path / "mine"
    (dest / "pairs").mkdir(parents=True)
    (dest / PRESET).write_text("# my own preset\n")
    real_replace = os.replace

    def full_disk(src, dst, *a, **k):  # the temporary copy was written; moving it into place fails
        if Path(dst).parent == dest / "pairs":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr("simrec._io.os.replace", full_disk)
    code, _, err = invoke([*args, "--export-presets", str(dest), "--overwrite"])
    _one_line(
        code,
        err,
        f"cannot write {dest / PRESET}: No space left on device",
        "choose an --export-presets folder on another disk",
        f"the presets are in {out}",
        expected=1,
    )
    assert (dest / PRESET).read_text() == "# my own preset\n" and files_under(dest) == {"pairs", str(PRESET)}


# -- trial and de-noising logs: a line that is not a record -------------------------------------------------
def _second_line(new: bytes | None = None, old: bytes = b"", by: bytes = b""):
    """An edit of a log's lines: its second line replaced by ``new``, or ``old`` replaced by ``by`` in it."""
    return lambda ls: [ls[0], new if new is not None else ls[1].replace(old, by), *ls[2:]]


@pytest.mark.parametrize(
    "log_name, edit, needle",
    [
        ("trials.jsonl", lambda ls: [b"[]", *ls[1:]], "not a simrec calibration log"),
        ("trials.jsonl", _second_line(b"[1]"), "line 2 is not a trial record (a JSON object expected; got list)"),
        ("trials.jsonl", _second_line(old=b'"index"', by=b'"indexx"'), "line 2 is not a trial record (no index)"),
        (
            "trials.jsonl",
            _second_line(old=b'"params": {', by=b'"params": "x", "p": {'),
            "line 2 is not a trial record (params of the wrong type)",
        ),
        ("trials.jsonl", _second_line(old=b'"lam"', by=b'"lambda"'), "line 2 is not a trial record (params"),
        ("denoise.jsonl", _second_line(b"[1]"), "line 2 is not a de-noising record"),
        ("denoise.jsonl", _second_line(old=b'"rep": 0', by=b'"rep": "0"'), "line 2 is not a de-noising record"),
        ("denoise.jsonl", _second_line(b"\xff"), "not UTF-8 text (byte "),
        ("denoise.jsonl", lambda ls: [b'{"kind": "x"}', *ls[1:]], "de-noising log of another search"),
    ],
)
@pytest.mark.parametrize("objective", ["user_activity", "average_loss"])
def test_a_log_line_that_is_not_a_record_is_one_line(sweep, log_name, edit, needle, objective):
    """Checked before any task runs (an average-loss log too, whose search runs after the others); before:
    ``internal error: AttributeError`` / ``KeyError``, or a failed task (exit 1)."""
    args, out = sweep
    log = out / "pairs" / "cells" / "uniform-pop" / objective / log_name
    log.write_bytes(b"\n".join(edit(log.read_bytes().split(b"\n"))))
    before = log.read_bytes()
    code, _, err = invoke(args)
    _one_line(code, err, f"{log}: {needle}")
    assert log.read_bytes() == before


@pytest.mark.parametrize("log_name", ["trials.jsonl", "denoise.jsonl"])
def test_a_log_changed_during_the_run_is_one_line_naming_it(sweep, monkeypatch, log_name):
    """A log that passes the check before the tasks and is then changed (here, just after the check) is
    refused by the task that reads it: one line naming the file, exit 2, and the other searches' logs kept.
    Before: a failed task, exit 1, two lines advising a retry that fails the same way."""
    import simrec.studies.calibrate as calibrate_study

    args, out = sweep
    log = out / "pairs" / "cells" / "uniform-pop" / "user_activity" / log_name
    other = out / "pairs" / "cells" / "uniform-pop" / "item_popularity" / "trials.jsonl"
    real_preflight = calibrate_study._preflight

    def preflight_then_change(*a, **kw):
        real_preflight(*a, **kw)
        lines = log.read_bytes().split(b"\n")
        log.write_bytes(b"\n".join([lines[0], b"[1]", *lines[2:]]))

    monkeypatch.setattr(calibrate_study, "_preflight", preflight_then_change)
    kept = other.read_bytes()
    code, _, err = invoke(args)
    _one_line(code, err, f"{log}: line 2 is not a ")
    assert "task" not in err and "retry" not in err
    assert other.read_bytes() == kept
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and str(log) in manifest["error"]
