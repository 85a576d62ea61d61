"""Honest exits (issue 22): whatever a user's scorer raises ends the command with one line, never exit 0.

A scorer's module import, its config, its constructor, ``train`` and
``__call__`` are user code (:mod:`simrec._usercode`). ``SystemExit`` (even
``SystemExit(0)``), ``KeyboardInterrupt`` raised by that code and any other
``BaseException`` must end ``simrec run``, ``stress`` and ``ranks`` with a
non-zero exit, one line naming the recommender and the exception, no
traceback, and (for the jobs with a run folder) a manifest that records the
failure; serially, with ``--jobs 2`` and on Ray. A real Ctrl-C while a scorer
runs still means "interrupted" (exit 130). Every case runs the real entry
point :func:`simrec.cli.main`. The scorers are in ``tests/fixtures/exits``.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_helpers import RUN_TOML, invoke

from simrec._usercode import UserCodeError, signals_marked, user_code

EXITS = Path(__file__).resolve().parent / "fixtures" / "exits"
PAIRS = Path(__file__).resolve().parent / "golden" / "pairs.csv"

#: case -> (scorer class in simrec_test_exits, what the one line says about the exception)
EXIT_CASES = {
    "SystemExit(0)": ("ExitZeroScorer", "SystemExit: 0"),
    "sys.exit()": ("SysExitScorer", "failed: SystemExit"),
    "KeyboardInterrupt": ("KeyboardInterruptScorer", "KeyboardInterrupt"),
    "BaseException": ("OddExitScorer", "OddExit: odd"),
    "SystemExit(0) while scoring": ("ExitWhileScoringScorer", "SystemExit: 0"),
    "SystemExit(0) in the constructor": ("ExitInConstructorScorer", "SystemExit: 0"),
}


@pytest.fixture
def exits_importable(monkeypatch):
    """The fixture modules importable by name (one folder for every test: a module is imported once per process)."""
    monkeypatch.syspath_prepend(str(EXITS))


def _run_scenario(tmp_path: Path, scorer: str, params: str = "") -> Path:
    rec = f'{{ kind = "lenskit", scorer = "{scorer}", name = "mine"{", params = " + params if params else ""} }}'
    path = tmp_path / "s.toml"
    path.write_text(
        RUN_TOML.replace(
            'recommenders = [{ kind = "oracle" }, { kind = "popular" }]',
            f'recommenders = [{{ kind = "popular" }}, {rec}]',
        )
    )
    return path


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _assert_one_failure_line(code: int, err: str, needle: str, expected: int = 1) -> list[str]:
    assert code == expected, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("simrec: error: "), err
    named = [line for line in lines if "recommender 'mine' failed: " in line]
    assert len(named) == 1 and needle in named[0], err
    assert len(lines) == 1, err  # the advice (finished tasks kept, re-run) on the same line
    return lines


# -- run -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(EXIT_CASES))
def test_a_scorer_that_exits_fails_a_serial_run_with_one_line(tmp_path, exits_importable, case):
    scorer, needle = EXIT_CASES[case]
    out = tmp_path / "out"
    code, _, err = invoke(["run", str(_run_scenario(tmp_path, f"simrec_test_exits:{scorer}")), "--out", str(out), "-q"])
    lines = _assert_one_failure_line(code, err, needle)
    assert lines[0].endswith(f"; finished tasks are kept in {out}; re-run the same command to retry the failed ones")
    manifest = _manifest(out)
    assert manifest["status"] == "failed" and needle in manifest["error"], manifest


@pytest.mark.slow
@pytest.mark.parametrize("case", ["SystemExit(0)", "KeyboardInterrupt", "BaseException"])
def test_a_scorer_that_exits_fails_a_run_on_two_processes_with_one_line(tmp_path, exits_importable, case):
    scorer, needle = EXIT_CASES[case]
    out = tmp_path / "out"
    scenario = _run_scenario(tmp_path, f"simrec_test_exits:{scorer}")
    code, _, err = invoke(["run", str(scenario), "--out", str(out), "-q", "--jobs", "2", "--no-figures"])
    _assert_one_failure_line(code, err, needle)
    assert _manifest(out)["status"] == "failed"


@pytest.mark.slow
def test_a_scorer_that_exits_fails_a_run_on_ray_with_one_line(tmp_path, exits_importable):
    pytest.importorskip("ray")
    out = tmp_path / "out"
    scenario = _run_scenario(tmp_path, "simrec_test_exits:ExitZeroScorer")
    args = ["run", str(scenario), "--out", str(out), "-q", "--jobs", "2", "--backend", "ray", "--no-figures"]
    code, _, err = invoke(args)
    _assert_one_failure_line(code, err, "SystemExit: 0")
    assert _manifest(out)["status"] == "failed"


@pytest.mark.slow
def test_a_module_that_exits_in_the_workers_fails_the_run_with_one_line(tmp_path, exits_importable):
    """Imported fine where the scenario is validated; a worker imports the scorer's module again, and it exits."""
    scenario = _run_scenario(tmp_path, "simrec_test_exit_in_worker:WorkerExitScorer")
    code, _, err = invoke(["run", str(scenario), "--out", str(tmp_path / "serial"), "-q", "--no-figures"])
    assert code == 0, err  # in this process the module imports
    out = tmp_path / "out"
    code, _, err = invoke(["run", str(scenario), "--out", str(out), "-q", "--jobs", "2", "--no-figures"])
    _assert_one_failure_line(code, err, "importing module 'simrec_test_exit_in_worker' failed: SystemExit: 0")
    assert _manifest(out)["status"] == "failed"


@pytest.mark.parametrize(
    "scorer, params, needle",
    [
        (
            "simrec_test_exit_on_import:Anything",
            "",
            "scorer: `scorer` 'simrec_test_exit_on_import:Anything': importing module 'simrec_test_exit_on_import' failed: "
            "SystemExit: 0",
        ),
        (
            "simrec_test_exits:ExitingConfigScorer",
            "{ shrinkage = 2.0 }",
            "params: checking the configuration of ExitingConfigScorer failed: SystemExit: 0",
        ),
    ],
)
def test_user_code_that_exits_during_validation_is_bad_input(tmp_path, exits_importable, scorer, params, needle):
    scenario = _run_scenario(tmp_path, scorer, params)
    code, _, err = invoke(["run", str(scenario), "--out", str(tmp_path / "out")])
    assert code == 2 and err.startswith(f"simrec: error: {scenario}"), err
    assert f"evaluation.recommenders[1].{needle}" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


# -- stress and ranks ----------------------------------------------------------------------------


def test_a_scorer_that_exits_fails_a_stress_run_with_one_line(tmp_path, exits_importable):
    text = (Path(__file__).parent / "fixtures" / "byo" / "byo-stress.toml").read_text()
    start, end = text.index("recommenders = ["), text.index("[sampling]")
    rec = '{ kind = "lenskit", scorer = "simrec_test_exits:ExitZeroScorer", name = "mine" }'
    scenario = tmp_path / "stress.toml"
    scenario.write_text(text[:start] + f'recommenders = [{rec}, {{ kind = "popular" }}]\n\n' + text[end:])
    out = tmp_path / "out"
    code, _, err = invoke(["stress", str(scenario), "--out", str(out), "-q", "--no-figures"])
    _assert_one_failure_line(code, err, "SystemExit: 0")
    assert _manifest(out)["status"] == "failed"


@pytest.mark.parametrize("case", ["SystemExit(0)", "KeyboardInterrupt", "BaseException"])
def test_a_scorer_that_exits_fails_ranks_with_one_line(tmp_path, exits_importable, monkeypatch, case):
    scorer, needle = EXIT_CASES[case]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "ranks.csv"
    rec = f'{{ kind = "lenskit", scorer = "simrec_test_exits:{scorer}", name = "mine" }}'
    code, _, err = invoke(["ranks", str(PAIRS), "-r", rec, "-o", str(out), "-q"])
    lines = _assert_one_failure_line(code, err, needle)
    assert len(lines) == 1 and "(nothing was written" in lines[0], err
    assert not out.exists()


# -- a real Ctrl-C is not the scorer's KeyboardInterrupt ----------------------------------------------


@pytest.mark.slow
def test_ctrl_c_while_a_scorer_trains_is_an_interruption(tmp_path):
    """SIGINT while the user's code runs (a serial run: in simrec's own process) is Ctrl-C: exit 130, resumable."""
    shutil.copy(EXITS / "simrec_test_exits.py", tmp_path)
    marker = tmp_path / "training"
    scenario = _run_scenario(tmp_path, "simrec_test_exits:PopScorer", f'{{ sleep = 60.0, marker = "{marker}" }}')
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "simrec.cli", "run", str(scenario), "--out", str(out), "-q", "--no-figures"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted; finished tasks are kept in" in err and "failed" not in err and "Traceback" not in err, err
    assert _manifest(out)["status"] == "interrupted"


# -- the guard itself ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc, line",
    [
        (SystemExit(0), "scorer 'x' failed: SystemExit: 0"),
        (SystemExit(), "scorer 'x' failed: SystemExit"),
        (KeyboardInterrupt(), "scorer 'x' failed: KeyboardInterrupt"),
        (GeneratorExit(), "scorer 'x' failed: GeneratorExit"),
        (StopIteration(), "scorer 'x' failed: StopIteration"),
        (ValueError("two\nlines"), "scorer 'x' failed: ValueError: two lines"),
    ],
)
def test_user_code_turns_every_exception_into_one_line(exc, line):
    with pytest.raises(UserCodeError) as info:
        with user_code("scorer 'x'"):
            raise exc
    assert str(info.value) == line and info.value.__cause__ is exc


def test_user_code_lets_a_real_interrupt_and_memory_errors_through():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with user_code("scorer 'x'"):
            signal.raise_signal(signal.SIGINT)  # what Ctrl-C does
            time.sleep(1)  # the handler raises at the next bytecode
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(MemoryError):
        with user_code("scorer 'x'"):
            raise MemoryError
    with pytest.raises(UserCodeError, match="^inner failed"):
        with user_code("outer"):
            with user_code("inner"):
                raise SystemExit(3)


def test_signals_marked_records_delivered_signals_only():
    with signals_marked() as signalled:
        assert not signalled()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            time.sleep(1)
        assert signalled()


def test_a_long_message_is_cut_and_its_length_said():
    with pytest.raises(UserCodeError) as info:
        with user_code("x"):
            raise ValueError("v" * 5000)
    assert str(info.value).endswith("... (5000 characters)") and len(str(info.value)) < 400


@pytest.mark.slow
def test_the_exits_fixture_really_exits():
    """Guards against a test that cannot fail: run bare, each scorer raises what its case says."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(EXITS)!r})
        import simrec_test_exits as m
        for name in {sorted(v[0] for v in EXIT_CASES.values())!r}:
            cls = getattr(m, name)
            try:
                obj = cls()
                obj.train(None) if name != "ExitWhileScoringScorer" else obj(None)
            except BaseException as exc:
                print(name, type(exc).__name__)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    got = dict(line.split() for line in res.stdout.splitlines())
    assert got == {
        "ExitInConstructorScorer": "SystemExit",
        "ExitWhileScoringScorer": "SystemExit",
        "ExitZeroScorer": "SystemExit",
        "KeyboardInterruptScorer": "KeyboardInterrupt",
        "OddExitScorer": "OddExit",
        "SysExitScorer": "SystemExit",
    }, res.stderr
