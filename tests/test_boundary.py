"""The input boundary (issue 12): each reported case gets its one clear answer.

Every case runs the real entry point (:func:`simrec.cli.main`) and checks the
exit code (2 for bad input or an unusable --out folder, 1 for a full or
read-only disk while running, 130 for Ctrl-C), that the message names the file
and the key, that no traceback is printed, and that nothing was written where
it should not be. The fuzz suite (``tests/test_fuzz.py``) covers the inputs
nobody thought of.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import RUN_TOML, STRESS_FILE_TOML, SWEEP_TOML, files_under, invoke

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _write(folder: Path, text: str, name: str = "s.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _edit(text: str, old: str, new: str) -> str:
    if old not in text:
        raise ValueError(f"{old!r} is not in the scenario")
    return text.replace(old, new)


def _assert_clean_error(code: int, err: str, *needles: str, expected: int = 2) -> None:
    assert code == expected, err
    assert err.startswith("simrec: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


# -- names never become paths ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../../../pwned2", "a/b", "", ".hidden", "x" * 65, "a b"])
def test_a_world_name_never_becomes_a_path(tmp_path, name):
    spec = _write(tmp_path, _edit(RUN_TOML, 'name = "unif-unif"', f'name = "{name}"'))
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, "world[0].name", "must be 1-64 letters")
    assert files_under(tmp_path) == {"s.toml"}


@pytest.mark.parametrize(
    "old, new, key",
    [
        ('name = "tiny"', 'name = "../up"', "name:"),
        (
            'recommenders = [{ kind = "oracle" }, { kind = "popular" }]',
            'recommenders = [{ kind = "lenskit", algorithm = "item_knn", name = "../x" }]',
            "evaluation.recommenders[0].name",
        ),
    ],
)
def test_scenario_and_recommender_names_are_checked(tmp_path, old, new, key):
    spec = _write(tmp_path, _edit(RUN_TOML, old, new))
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, key)
    assert files_under(tmp_path) == {"s.toml"}


# -- sizes are refused during validation -----------------------------------------------------------
SIZE_CASES = {
    "n_items": ("n_items = 60", "n_items = 1000000000", "population.n_items"),
    "n_users": ("n_users = 40", "n_users = 1000000000", "population.n_users"),
    "ibp_alpha": (
        'preference = { model = "uniform", lam = 12.0 }',
        'preference = { model = "ibp", alpha = 1e9, c = 1.0, sigma = 0.1 }',
        "world[0].preference.alpha",
    ),
    "lda_topics": (
        'preference = { model = "uniform", lam = 12.0 }',
        'preference = { model = "lda", n_topics = 1000000000, lam = 12.0, a = 0.1, b = 0.1 }',
        "world[0].preference.n_topics",
    ),
    "replicates": ("replicates = 1", "replicates = 1000000000", "replicates"),
    "auc_blocks": ('metrics = ["precision", "recall"]\n', 'metrics = ["auc"]\n', "population.n_items"),
}


@pytest.mark.parametrize("case", sorted(SIZE_CASES))
def test_sizes_are_refused_before_anything_is_created(tmp_path, case):
    old, new, key = SIZE_CASES[case]
    text = _edit(RUN_TOML, old, new)
    if case == "auc_blocks":  # 40 users x 2e8 items of dense scores, but few pairs
        text = _edit(text, "n_items = 60", "n_items = 200000000")
    spec = _write(tmp_path, text)
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, "too large for the memory limit", key, "--max-memory")
    assert files_under(tmp_path) == {"s.toml"}


def test_max_memory_option(tmp_path):
    spec = _write(tmp_path, RUN_TOML)
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--max-memory", "1M"])
    _assert_clean_error(code, err, "too large for the memory limit of 1.0 MiB")
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--max-memory", "lots"])
    _assert_clean_error(code, err, "`--max-memory` must be a size such as 8G")
    assert files_under(tmp_path) == {"s.toml"}


@pytest.mark.slow
def test_refusals_allocate_nothing_under_a_memory_limit(tmp_path):
    """All size cases in one fresh process, --max-memory 2G, its address space capped at what it uses plus 3 GiB."""
    specs = []
    for case, (old, new, _) in SIZE_CASES.items():
        text = _edit(RUN_TOML, old, new)
        if case == "auc_blocks":
            text = _edit(text, "n_items = 60", "n_items = 200000000")
        specs.append(str(_write(tmp_path, text, f"{case}.toml")))
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from cli_helpers import invoke
        import simrec.config.run, simrec.config.budget, simrec.studies   # imports first, then the cap
        with open("/proc/self/status") as fh:
            vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + 3 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))
        codes = [invoke(["run", s, "--out", {str(tmp_path / "out")!r}, "--quiet", "--max-memory", "2G"])
                 for s in {specs!r}]
        for code, _, err in codes:
            print(code, err.splitlines()[0] if err else "")
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == len(specs)
    for line in lines:  # each refused by the budget (or a rule), none by running out of memory
        assert line.startswith("2 simrec: error:"), line
    assert not (tmp_path / "out").exists()


def _ranks_scenario(tmp_path: Path, ranks_csv: str, extra: str = "") -> Path:
    (tmp_path / "ranks.csv").write_text(ranks_csv)
    return _write(tmp_path, STRESS_FILE_TOML + extra)


def _ranks(n_users: int, n_candidates: object = 100) -> str:
    rows = [f"u{i},A,{1 + i % 7},{n_candidates}" for i in range(n_users)]
    return "user,recommender,rank,n_candidates\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("n_candidates", ["1000000000000", "100000000000000000000", "1e20"])
def test_huge_candidate_counts_are_refused(tmp_path, n_candidates):
    spec = _ranks_scenario(tmp_path, _ranks(40, n_candidates))
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, "n_candidates", "2^31")
    assert "-9223372036854775808" not in err
    assert not (tmp_path / "out").exists()


def test_huge_repeats_are_refused(tmp_path):
    spec = _ranks_scenario(tmp_path, _ranks(40))
    spec.write_text(spec.read_text().replace("repeats = 3", "repeats = 1000000000"))
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, "too large for the memory limit", "repeats")
    assert not (tmp_path / "out").exists()


# -- one line instead of a traceback ---------------------------------------------------------------
def test_non_utf8_scenario(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_bytes(RUN_TOML.encode().replace(b'"tiny"', b'"ti\xffny"'))
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out")])
    _assert_clean_error(code, err, "not UTF-8 text (byte 0xff")


def test_out_below_a_file(tmp_path):
    spec = _write(tmp_path, RUN_TOML)
    (tmp_path / "file").write_text("mine")
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "file" / "out"), "--quiet"])
    _assert_clean_error(code, err, "a part of the path is a file")
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize(
    "err_no, patch, advice",
    [
        (errno.ENOSPC, "simrec.rundir.RunDir.write_parquet", "the disk is full"),
        (errno.EROFS, "simrec.studies.run.plot_results", "the file system is read-only"),
    ],
)
def test_disk_errors_while_running_are_one_line(tmp_path, monkeypatch, err_no, patch, advice):
    spec = _write(tmp_path, RUN_TOML)
    out = tmp_path / "out"

    def fail(*args, **kwargs):
        raise OSError(err_no, os.strerror(err_no), str(out / "results.parquet"))

    monkeypatch.setattr(patch, fail)
    code, _, err = invoke(["run", str(spec), "--out", str(out), "--quiet"])
    _assert_clean_error(code, err, advice, "finished tasks are kept", expected=1)
    assert any(out.joinpath("replicates").iterdir())  # the finished task's shard is kept


def test_lenskit_parameters_are_reported_with_their_key(tmp_path):
    spec = _write(
        tmp_path,
        _edit(
            RUN_TOML,
            'recommenders = [{ kind = "oracle" }, { kind = "popular" }]',
            'recommenders = [{ kind = "lenskit", algorithm = "item_knn", params = { bogus = 3, max_nbrs = "x" } }]',
        ),
    )
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out")])
    _assert_clean_error(
        code,
        err,
        "evaluation.recommenders[0].params.bogus: unknown parameter",
        "evaluation.recommenders[0].params.max_nbrs",
    )
    assert "errors.pydantic.dev" not in err


def test_unexpected_errors_are_one_line_unless_debug(tmp_path, monkeypatch):
    spec = _write(tmp_path, RUN_TOML)

    def bug(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("simrec.studies.run.summarize", bug)
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 1 and err.startswith("simrec: internal error: ZeroDivisionError: a bug"), err
    assert "--debug" in err and "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        invoke(["--debug", "run", str(spec), "--out", str(tmp_path / "out2"), "--quiet", "--no-figures"])


PAIRS = Path(__file__).resolve().parent / "golden" / "pairs.csv"
_HUGE = "first line\nsecond line " + "x" * 1_000_000


def test_an_unexpected_error_with_a_huge_message_is_one_short_line(tmp_path, monkeypatch):
    """Before the fix the message was printed whole: a megabyte over several lines, then the advice."""
    spec = _write(tmp_path, RUN_TOML)

    def bug(*args, **kwargs):
        raise RuntimeError(_HUGE)

    monkeypatch.setattr("simrec.studies.run.summarize", bug)
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 1 and err.startswith("simrec: internal error: RuntimeError: first line second line xxx"), err[:300]
    assert err.count("\n") == 1 and len(err) < 500, err[:300]
    assert f"({len(' '.join(_HUGE.split()))} characters)" in err, err[:300]
    assert "--debug" in err and "please report it" in err


def test_a_recommender_failing_in_ranks_with_a_huge_message_is_one_short_line(tmp_path, monkeypatch):
    def fails(*args, **kwargs):
        raise RuntimeError(_HUGE)

    monkeypatch.setattr("simrec.studies.ranks.score_ranks", fails)
    out = tmp_path / "r.csv"
    code, _, err = invoke(["ranks", str(PAIRS), "-r", "popular", "--out", str(out), "--quiet"])
    _assert_clean_error(code, err, "recommender 'popular' failed: RuntimeError: first line second line xxx", expected=1)
    assert err.count("\n") == 1 and len(err) < 500, err[:300]
    assert "nothing was written" in err and not out.exists()


# -- no silent acceptance ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, key",
    [
        ("lam = 12.0", "lam = true", "world[0].preference.lam: Input should be a valid number"),
        ("n_users = 40", 'n_users = "40"', "population.n_users: Input should be a valid integer"),
        ("replicates = 1", "replicates = 1e3", "replicates: Input should be a valid integer"),
        ("n = 5", "n = 100", "evaluation.n: the list length must be <= the number of items"),
        ("m_high = 10", "m_high = 100", "world[0].observation.profile.m_high: must be <= the number of items"),
        ("lam = 12.0", "lam = 100.0", "world[0].preference.lam: must be <= the number of items"),
        ('name = "tiny"', 'name = ""', "name: must be 1-64 letters"),
        ('metrics = ["precision", "recall"]', 'metrics = ["pap_at_k"]\npap_k = 100000', "evaluation.pap_k: must be <="),
    ],
)
def test_impossible_values_are_refused(tmp_path, old, new, key):
    spec = _write(tmp_path, _edit(RUN_TOML, old, new))
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, key, str(spec))
    assert files_under(tmp_path) == {"s.toml"}


# -- output folders ------------------------------------------------------------------------------------
def test_a_users_folder_is_never_written_into(tmp_path):
    spec = _write(tmp_path, RUN_TOML)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.csv").write_text("my own results\n")
    code, _, err = invoke(["run", str(spec), "--out", str(out), "--quiet"])
    _assert_clean_error(code, err, "is not a simrec run folder")
    assert files_under(out) == {"summary.csv"} and (out / "summary.csv").read_text() == "my own results\n"


def test_a_locked_folder_is_refused(tmp_path):
    from simrec.rundir import RunDir

    spec = _write(tmp_path, RUN_TOML)
    from simrec.config.run import load_scenario

    sc, _ = load_scenario(spec)
    with RunDir.open(tmp_path / "out", kind="run", name=sc.name, digest=sc.digest()):
        code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    _assert_clean_error(code, err, "another simrec job is writing into this folder")


def test_calibrate_checks_the_folder_before_writing(tmp_path):
    spec = _write(tmp_path, SWEEP_TOML)
    out = tmp_path / "out"
    code, _, err = invoke(["calibrate", str(spec), "--out", str(out), "--quiet", "--no-figures"])
    assert code == 0, err
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".simrec.lock"}
    code, _, err = invoke(["calibrate", str(spec), "--out", str(out), "--quiet", "--no-figures", "--n-calls", "3"])
    _assert_clean_error(code, err, "average-loss searches were computed from the single-statistic searches")
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != ".simrec.lock"}
    trials = {p: b for p, b in before.items() if p.suffix == ".jsonl"}
    assert trials and all(after[p] == b for p, b in trials.items())  # no log was extended


# -- Ctrl-C ------------------------------------------------------------------------------------------
def _sigint_at_default() -> None:
    """In the child before exec: SIGINT at its default, as a terminal's Ctrl-C finds it. An ignored SIGINT is
    inherited (and Python then installs no KeyboardInterrupt handler), and a non-interactive shell ignores
    SIGINT in a command it starts in the background (``make test &``, a CI script run with ``&``): the
    interrupted run then went on to the end."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_stops_within_seconds_with_one_line(tmp_path):
    # the quickstart with 200 replicates: long enough that Ctrl-C always lands mid-run (the 5-replicate
    # quickstart can now finish within a second of its first replicate)
    from simrec.config.files import shipped_scenarios

    scenario = tmp_path / "long.toml"
    scenario.write_text(shipped_scenarios()["quickstart"].read_text().replace("replicates = 5", "replicates = 200"))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simrec.cli",
            "run",
            str(scenario),
            "--out",
            str(out),
            "--quiet",
            "--no-figures",
            "--jobs",
            "2",
        ],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_at_default,
    )
    # Ctrl-C once the first task has finished (the workers are running); during start-up: the next test
    deadline = time.time() + 120
    while time.time() < deadline and not any((out / "replicates").glob("*.parquet")):
        time.sleep(0.1)
    time.sleep(0.5)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.time() - t0 < 10, "Ctrl-C took more than 10 s"
    assert proc.returncode == 130, err
    assert "interrupted; finished tasks are kept in" in err and "re-run the same command to resume" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_while_workers_start_prints_one_line_only(tmp_path):
    # Ctrl-C 0.05-0.15 s after the run folder appears lands while the pool is starting its workers. Before
    # ProcessBackend held the signal during a submit, about half of such runs printed a starting worker's
    # multiprocessing traceback (SemLock FileNotFoundError) after the one line (scratch runs of
    # 2026-11-24: at least 5 of 12; this test failed without the fix). Six tries, so a regression that
    # returns to that rate is missed with probability below 1/20.
    from simrec.config.files import shipped_scenarios

    scenario = tmp_path / "long.toml"
    scenario.write_text(shipped_scenarios()["quickstart"].read_text().replace("replicates = 5", "replicates = 200"))
    for k, delay in enumerate((0.05, 0.08, 0.1, 0.1, 0.12, 0.15)):
        out = tmp_path / f"out{k}"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "simrec.cli",
                "run",
                str(scenario),
                "--out",
                str(out),
                "--quiet",
                "--no-figures",
                "--jobs",
                "2",
            ],
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_sigint_at_default,
        )
        deadline = time.time() + 120
        while time.time() < deadline and not (out / "replicates").is_dir():
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "Traceback" not in err, err


# -- loaders -----------------------------------------------------------------------------------------
def test_movielens_is_recognised_by_its_files(tmp_path):
    copy = tmp_path / "my-copy"
    shutil.copytree(FIXTURES / "ml-100k", copy)
    code, out, err = invoke(["datasets", "describe", str(copy)])
    assert code == 0, err
    assert "users" in out and "cannot access local variable" not in err


def test_describe_takes_column_names_and_filters(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("userId,itemId,score\n1,10,5\n1,11,3\n2,10,4\n3,12,1\n")
    code, _, err = invoke(["datasets", "describe", str(table)])
    _assert_clean_error(code, err, "--user-col/--item-col")
    code, out, err = invoke(
        [
            "datasets",
            "describe",
            str(table),
            "--user-col",
            "userId",
            "--item-col",
            "itemId",
            "--rating-col",
            "score",
            "--min-rating",
            "3",
        ]
    )
    assert code == 0, err
    assert [int(line.split()[1]) for line in out.splitlines()[:3]] == [2, 2, 3]  # users, items, pairs
    code, _, err = invoke(["datasets", "describe", str(table), "--k-core", "0"])
    assert code == 2 and "--k-core" in err


# -- results resting on too few users ---------------------------------------------------------------------
def test_stress_on_few_users_warns_in_terminal_and_tables(tmp_path):
    spec = _ranks_scenario(tmp_path, _ranks(3))
    out = tmp_path / "out"
    code, _, err = invoke(["stress", str(spec), "--out", str(out), "--quiet", "--no-figures"])
    assert code == 0, err
    assert "simrec: warning: fewer than 30 evaluated users for A (3)" in err
    for table in ("summary.csv", "ordering.csv", "winners.csv"):
        frame = pd.read_csv(out / table)
        if len(frame):
            assert frame["warning"].str.contains("too few users").all(), table


def test_table3_on_few_replicates_warns(tmp_path):
    spec = _write(tmp_path, RUN_TOML)
    out = tmp_path / "out"
    code, _, err = invoke(["run", str(spec), "--out", str(out), "--quiet", "--no-figures"])
    assert code == 0, err
    assert "simrec: warning: table3.csv: only 1 replicate(s)" in err
    assert pd.read_csv(out / "table3.csv")["warning"].str.startswith("only 1 replicate").all()


def test_calibrate_n_calls_override_is_budgeted(tmp_path):
    spec = _write(tmp_path, SWEEP_TOML)
    code, _, err = invoke(["calibrate", str(spec), "--out", str(tmp_path / "out"), "--n-calls", "1000000000"])
    _assert_clean_error(code, err, "with --n-calls 1000000000", "the Gaussian process over 1000000000 calls")
    assert files_under(tmp_path) == {"s.toml"}


@pytest.mark.parametrize(
    "command, name, hint",
    [("run", "sampled-ml100k", "simrec stress sampled-ml100k"), ("stress", "quickstart", "simrec run quickstart")],
)
def test_a_shipped_scenario_of_the_other_kind_names_its_command(tmp_path, command, name, hint):
    code, _, err = invoke([command, name, "--out", str(tmp_path / "out")])
    _assert_clean_error(code, err, "this is a shipped", hint)
    assert not (tmp_path / "out").exists()


# -- one line per value refused (issue 22 audit) ----------------------------------------------------
def test_a_value_refused_by_every_member_of_a_union_is_one_problem(tmp_path):
    """A ``params`` value given as a table is refused by each member of the value union (number, integer,
    string, boolean, list): one problem line naming the key, not five lines ending in pydantic's type names
    (``params.score.float``, ``params.score.int``, ...). Two such values stay two problems. Found by the issue-22
    audit (``scorer = "scipy.io:savemat"``, ``params = { mdict = {} }``: five lines)."""
    rec = 'recommenders = [{ kind = "oracle" }, { kind = "popular" }]'
    one = _write(
        tmp_path,
        _edit(RUN_TOML, rec, 'recommenders = [{ kind = "lenskit", algorithm = "popular", params = { score = {} } }]'),
    )
    code, _, err = invoke(["run", str(one), "--out", str(tmp_path / "o"), "--quiet"])
    assert code == 2 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "(1 problem)" in lines[0], err
    assert lines[1].startswith("  evaluation.recommenders[0].params.score: Input should be a valid number"), err
    assert "a valid list" in lines[1] and ".float" not in err and ".int:" not in err, err
    two = _write(
        tmp_path,
        _edit(
            RUN_TOML,
            rec,
            'recommenders = [{ kind = "lenskit", algorithm = "popular", params = { score = {}, x = {} } }]',
        ),
        "two.toml",
    )
    code, _, err = invoke(["run", str(two), "--out", str(tmp_path / "o"), "--quiet"])
    assert code == 2 and "(2 problems)" in err and len(err.strip().splitlines()) == 3, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["run", "stress", "assess", "calibrate"])
@pytest.mark.parametrize("text", ["", "# only a comment\n\n"])
def test_a_file_without_keys_is_one_line(tmp_path, command, text):
    """An empty scenario file (or comments only) is one line saying so, exit 2, nothing created. Before: one
    'required key is missing' line per key of the schema (six for a run scenario). Found by the issue-22 audit."""
    path = _write(tmp_path, text)
    code, _, err = invoke([command, str(path), "--out", str(tmp_path / "o"), "--quiet"])
    _assert_clean_error(code, err, str(path), "holds no keys")
    assert err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()
