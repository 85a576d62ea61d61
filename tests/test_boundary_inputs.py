"""The trust boundary's inputs (issue 22), through the real entry point :func:`simrec.cli.main`.

Inputs are bounded before they are read: scenario, stress, assessment and
sweep files, ranks files and datasets must be regular files within a size
limit (a FIFO and ``/dev/zero`` are refused within a second), TOML nesting
is limited, a message quotes at most ~100 characters of a value, names reach
figures as plain text, and ranks files are checked for types and repeated
columns. Every case ends in exit 2 (or 1 for a fault) with one line and
nothing created.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import RUN_TOML, STRESS_FILE_TOML, files_under, invoke

PAIRS = Path(__file__).resolve().parent / "golden" / "pairs.csv"


def _assert_one_line(code: int, err: str, *needles: str, expected: int = 2) -> None:
    assert code == expected, err
    assert err.startswith("simrec: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


def _ranks_csv(names=("A", "B"), n_users: int = 40, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    rows = ["user,recommender,rank,n_candidates"]
    rows += [f'u{u},"{name}",{rng.integers(1, 100)},100' for name in names for u in range(n_users)]
    return "\n".join(rows) + "\n"


# -- regular files only, refused within a second ----------------------------------------------------------
STRESS_DATASET_TOML = textwrap.dedent("""
    kind = "stress"
    name = "data"
    seed = 1
    [source]
    type = "dataset"
    name = "data"
    path = "{path}"
    recommenders = [{{ kind = "popular" }}]
    [sampling]
    schemes = ["binomial"]
    sizes = [10]
""")

SWEEP_TOML = textwrap.dedent("""
    name = "data"
    seed = 1
    n_calls = 5
    n_initial = 2
    preferences = ["uniform"]
    observations = ["uniform"]
    objectives = ["item_popularity"]
    [[dataset]]
    name = "data"
    path = "{path}"
""")


@pytest.mark.slow
def test_fifos_and_devices_are_refused_within_a_second(tmp_path):
    """Every file a user names, as a FIFO and as /dev/zero: exit 2 in under a second, nothing created.

    The scenario, stress, assessment and sweep files; a stress scenario's
    ranks file and dataset; a sweep's dataset; a world's preset file; the
    dataset of ``simrec ranks`` and ``datasets describe``, also as a
    MovieLens folder whose ``u.data`` is a FIFO. In a child process with its
    address space capped and a timeout, so a regression (a FIFO blocks
    forever, /dev/zero reads until memory runs out) fails the test instead of
    hanging it or exhausting the machine.
    """
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    data_fifo = tmp_path / "pipe.csv"
    os.mkfifo(data_fifo)
    (tmp_path / "ml").mkdir()
    os.mkfifo(tmp_path / "ml" / "u.data")
    os.symlink("/dev/zero", tmp_path / "zero-preset.toml")  # a preset path must end in .toml
    out = str(tmp_path / "out")
    fifo_word, device_word = "a named pipe (FIFO)", "a character device"
    cases = [(["datasets", "describe", str(tmp_path / "ml")], fifo_word)]
    for toml, data, what, tag in (
        (str(fifo), str(data_fifo), fifo_word, "fifo"),
        ("/dev/zero", "/dev/zero", device_word, "zero"),
    ):
        files = {
            f"ranks-{tag}.toml": STRESS_FILE_TOML.replace('path = "ranks.csv"', f'path = "{data}"'),
            f"dataset-{tag}.toml": STRESS_DATASET_TOML.format(path=data),
            f"sweep-{tag}.toml": SWEEP_TOML.format(path=data),
            f"preset-{tag}.toml": RUN_TOML.replace(
                'name = "unif-unif"', f'name = "unif-unif"\npreset = "{toml if tag == "fifo" else "zero-preset.toml"}"'
            ),
        }
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        cases += [
            (["run", toml, "--out", out], what),
            (["stress", toml, "--out", out], what),
            (["assess", toml, "--out", out], what),
            (["calibrate", toml, "--out", out], what),
            (["stress", str(tmp_path / f"ranks-{tag}.toml"), "--out", out], what),
            (["stress", str(tmp_path / f"dataset-{tag}.toml"), "--out", out], what),
            (["calibrate", str(tmp_path / f"sweep-{tag}.toml"), "--out", out], what),
            (["run", str(tmp_path / f"preset-{tag}.toml"), "--out", out], what),
            (["ranks", data, "-r", "popular", "--out", str(tmp_path / "r.csv")], what),
            (["datasets", "describe", data], what),
        ]
    script = textwrap.dedent(f"""
        import resource, sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from cli_helpers import invoke
        import simrec.cli, simrec.config.run, simrec.config.stress, simrec.config.assess, simrec.config.sweep
        import simrec.datasets, simrec.stress.sources, simrec.config.recommenders   # imports first, then the clock
        with open("/proc/self/status") as fh:
            vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + 2 * 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))
        for args in {[c for c, _ in cases]!r}:
            invoke(args)  # warm (lazy imports of each command)
            t0 = time.perf_counter()
            code, _, err = invoke(args)
            print(code, round(time.perf_counter() - t0, 3), err.strip().replace("\\n", " | "), flush=True)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == len(cases), res.stdout
    for line, (args, what) in zip(lines, cases):
        code, seconds, err = line.split(" ", 2)
        assert code == "2", (args, err)
        assert float(seconds) < 1.0, (args, seconds)
        assert err.startswith("simrec: error: ") and f"is {what}, not a regular file" in err, (args, err)
        assert "Traceback" not in err and "internal error" not in err, (args, err)
        assert err.count(" | ") <= 1, (args, err)  # one line (a scenario's one problem: its header and the problem)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".toml")) == ["ml", "pipe.csv"]


def test_a_dataset_folder_is_never_walked(tmp_path):
    """``simrec ranks DIR`` estimates the memory of reading only the ratings file a loader reads, never every
    file below DIR: a 1 TiB sparse file in a subfolder does not count (before the fix it was counted,
    the dataset refused as too large for memory, and ``simrec ranks /`` walked the whole disk). A folder without
    a ratings file, ``/`` included, is refused in one line by the loader."""
    ml = tmp_path / "ml"
    (ml / "extras").mkdir(parents=True)
    with open(ml / "extras" / "huge.bin", "wb") as fh:  # sparse: no disk used
        fh.truncate(2**40)
    (ml / "u.data").write_text("not\ta\trating\n")
    out = tmp_path / "r.csv"
    code, _, err = invoke(["ranks", str(ml), "-r", "popular", "--out", str(out)])
    _assert_one_line(code, err, "u.data", "line 1")
    assert "memory" not in err
    for folder in ("/", str(ml / "extras")):
        code, _, err = invoke(["ranks", folder, "-r", "popular", "--out", str(out)])
        _assert_one_line(code, err, f"{folder}: folder has none of u.data, ratings.dat, ratings.csv")
    assert not out.exists()


# -- size limits ---------------------------------------------------------------------------------------------
def test_a_scenario_over_the_size_limit_is_refused_and_the_limit_can_be_raised(tmp_path, monkeypatch):
    monkeypatch.delenv("SIMREC_MAX_TOML_SIZE", raising=False)
    spec = tmp_path / "s.toml"
    spec.write_text(RUN_TOML.replace("n = 5", "n = 5\nbogus = 1") + "#" * 2**20)
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out")])
    _assert_one_line(
        code, err, "s.toml: 1.0 MiB", "over simrec's limit of 1.0 MiB for a TOML file", "SIMREC_MAX_TOML_SIZE"
    )
    monkeypatch.setenv("SIMREC_MAX_TOML_SIZE", "2M")  # read now: refused for its content, not its size
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out")])
    assert code == 2 and "evaluation.bogus: unknown key" in err, err
    monkeypatch.setenv("SIMREC_MAX_TOML_SIZE", "big")
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out")])
    _assert_one_line(code, err, "s.toml: cannot check its size: `SIMREC_MAX_TOML_SIZE` must be a size such as 8G")
    assert files_under(tmp_path) == {"s.toml"}


def test_data_files_over_the_size_limit_are_refused(tmp_path, monkeypatch):
    (tmp_path / "ranks.csv").write_text(_ranks_csv())
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML)
    monkeypatch.setenv("SIMREC_MAX_DATA_SIZE", "1K")
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out")])
    assert code == 2 and "ranks.csv" in err and "over simrec's limit of 1.0 KiB for a data file" in err, err
    assert "SIMREC_MAX_DATA_SIZE" in err
    code, _, err = invoke(["ranks", str(PAIRS), "-r", "popular", "--out", str(tmp_path / "r.csv")])
    _assert_one_line(code, err, "pairs.csv", "over simrec's limit of 1.0 KiB for a data file")
    assert files_under(tmp_path) == {"s.toml", "ranks.csv"}


# -- TOML nesting -----------------------------------------------------------------------------------------------
DEEP = {
    "arrays": "deep = " + "[" * 10_000 + "]" * 10_000,
    "inline-tables": "deep = " + "{ a = " * 10_000 + "1" + " }" * 10_000,
    "dotted-keys": "deep" + ".a" * 10_000 + " = 1",
}


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "stress", "assess", "calibrate"])
@pytest.mark.parametrize("case", sorted(DEEP))
def test_deep_toml_is_one_line(tmp_path, command, case):
    spec = tmp_path / "s.toml"
    spec.write_text(DEEP[case] + "\n")
    code, _, err = invoke([command, str(spec), "--out", str(tmp_path / "out")])
    _assert_one_line(code, err, f"{spec}: nested more than 32 levels deep")
    assert files_under(tmp_path) == {"s.toml"}


def test_a_deep_recommender_option_is_one_line(tmp_path):
    value = '{ kind = "lenskit", algorithm = "item_knn", params = { a = ' + "[" * 5000 + "]" * 5000 + " } }"
    code, _, err = invoke(["ranks", str(PAIRS), "-r", value, "--out", str(tmp_path / "r.csv")])
    _assert_one_line(code, err, "--recommender: nested more than 32 levels deep")
    assert files_under(tmp_path) == set()


# -- values are quoted short ---------------------------------------------------------------------------------------
BIG = 52_428_800  # 50 MiB


@pytest.mark.slow
@pytest.mark.parametrize(
    "old, new, key",
    [
        ('name = "tiny"', f"name = '{'x' * BIG}'", "name:"),
        ("n = 5", f"n = '{'x' * BIG}'", "evaluation.n:"),
        ("n = 5", f"n = 5\n'{'k' * BIG}' = 1", "evaluation.'kkkk"),
    ],
    ids=["name", "wrong-type", "unknown-key"],
)
def test_a_50_mb_value_is_quoted_short(tmp_path, monkeypatch, old, new, key):
    monkeypatch.setenv("SIMREC_MAX_TOML_SIZE", "64M")
    spec = tmp_path / "s.toml"
    spec.write_text(RUN_TOML.replace(old, new))
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out")])
    assert code == 2, err[:300]
    assert len(err) < 600, err[:600]
    assert key in err and "(52,428,800 characters)" in err, err
    assert files_under(tmp_path) == {"s.toml"}


def test_huge_values_in_a_ranks_file_and_an_option_are_quoted_short(tmp_path):
    lines = _ranks_csv().splitlines()
    lines[1] = 'u0,"A",' + "7" * 10**6 + "x,100"  # a rank cell of a million characters
    (tmp_path / "ranks.csv").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML)
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out")])
    assert code == 2 and len(err) < 600 and "(1,000,001 characters) is not an integer" in err, err[:600]
    code, _, err = invoke(["ranks", str(PAIRS), "-r", "x" * 10**6, "--out", str(tmp_path / "r.csv")])
    assert code == 2 and len(err) < 800 and "(1,000,000 characters)" in err, err[:800]


# -- names reach figures as written; a failed figure loses nothing ---------------------------------------------------
@pytest.mark.slow
def test_a_mathtext_name_in_a_ranks_file_draws_and_completes(tmp_path):
    (tmp_path / "ranks.csv").write_text(_ranks_csv(names=("$\\frac{$", "B")))
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML)
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 0, err
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["status"] == "complete"
    assert (tmp_path / "out" / "figures" / "expected_vs_n.png").stat().st_size > 0
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet"])  # and again
    assert code == 0, err


def test_every_recommender_of_a_ranks_file_is_in_the_legend(tmp_path, monkeypatch):
    """matplotlib leaves labels that start with ``_`` out of legends: before the fix ``_baseline`` of a ranks
    file was drawn in expected_vs_n.png but missing from its legend."""
    from matplotlib.figure import Figure

    legends: list[list[str]] = []
    real_savefig = Figure.savefig

    def recording_savefig(fig, *args, **kwargs):
        legends.extend([t.get_text() for t in legend.get_texts()] for legend in fig.legends)
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", recording_savefig)
    names = ("_baseline", "__x", "B")
    (tmp_path / "ranks.csv").write_text(_ranks_csv(names=names))
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML)
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 0, err
    titled = [texts for texts in legends if any("exact metric" in t for t in texts)]  # expected_vs_n.png
    assert len(titled) == 1, legends
    assert [t.removeprefix("\u200b") for t in titled[0][: len(names)]] == list(names), titled


@pytest.mark.slow
@pytest.mark.parametrize("command", ["run", "stress"])
def test_a_figure_failure_completes_the_job_and_exits_1(tmp_path, monkeypatch, command):
    def broken(*args, **kwargs):
        raise ValueError("a figure bug")

    if command == "run":
        monkeypatch.setattr("simrec.studies.run.plot_results", broken)
        spec = tmp_path / "s.toml"
        spec.write_text(RUN_TOML)
        tables = ["results.parquet", "summary.csv"]
    else:
        monkeypatch.setattr("simrec.stress.figures.plot_stress", broken)
        (tmp_path / "ranks.csv").write_text(_ranks_csv())
        spec = tmp_path / "s.toml"
        spec.write_text(STRESS_FILE_TOML)
        tables = ["estimates.parquet", "summary.csv"]
    out = tmp_path / "out"
    code, _, err = invoke([command, str(spec), "--out", str(out), "--quiet"])
    err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("simrec: warning: "))
    _assert_one_line(code, err, "the job is complete and every table written", "ValueError: a figure bug", expected=1)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["figures_failed"] == ["figures: ValueError: a figure bug"]
    assert all((out / t).exists() for t in tables)
    monkeypatch.undo()  # fixed: the re-run reuses every task and draws the figures
    code, _, err = invoke([command, str(spec), "--out", str(out), "--quiet"])
    assert code == 0, err
    assert "figures_failed" not in json.loads((out / "manifest.json").read_text())


# -- ranks files ---------------------------------------------------------------------------------------------------
def _parquet_ranks(path: Path, **columns) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = {"user": [f"u{i}" for i in range(40)], "recommender": ["A"] * 40}
    cols = {**{k: pa.array(v) for k, v in base.items()}, **columns}
    names = [k.rstrip("_") for k in cols]  # "rank_" -> a second column named "rank"
    pq.write_table(pa.table(list(cols.values()), names=names), path)


@pytest.mark.parametrize(
    "columns, message",
    [
        (
            {"rank": [True] * 40, "n_candidates": [100] * 40},
            "column `rank` has dtype bool; it must hold integers (or floats with integral values)",
        ),
        (
            {"rank": [str(1 + i % 7) for i in range(40)], "n_candidates": [100] * 40},
            "column `rank` has dtype object; it must hold integers",
        ),
        (
            {"rank": [1 + i % 7 for i in range(40)], "n_candidates": [False] * 40},
            "column `n_candidates` has dtype bool",
        ),
        (
            {"rank": [1 + i % 7 for i in range(40)], "n_candidates": [100] * 40, "rank_": [5] * 40},
            "column `rank` appears more than once in the header",
        ),
    ],
    ids=["bool-rank", "string-rank", "bool-n_candidates", "two-rank-columns"],
)
def test_parquet_ranks_files_are_checked(tmp_path, columns, message):
    _parquet_ranks(tmp_path / "ranks.parquet", **columns)
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML.replace("ranks.csv", "ranks.parquet"))
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out")])
    assert code == 2 and "ranks.parquet" in err and message in err, err
    assert files_under(tmp_path) == {"s.toml", "ranks.parquet"}


def test_a_csv_ranks_file_with_two_rank_columns_is_refused(tmp_path):
    text = _ranks_csv().splitlines()
    text = [text[0] + ",rank"] + [line + ",1" for line in text[1:]]
    (tmp_path / "ranks.csv").write_text("\n".join(text) + "\n")
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML)
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out")])
    assert code == 2 and "column `rank` appears more than once in the header" in err, err
    assert files_under(tmp_path) == {"s.toml", "ranks.csv"}


def test_integral_float_ranks_in_parquet_are_accepted(tmp_path):
    _parquet_ranks(tmp_path / "ranks.parquet", rank=[float(1 + i % 7) for i in range(40)], n_candidates=[100.0] * 40)
    spec = tmp_path / "s.toml"
    spec.write_text(STRESS_FILE_TOML.replace("ranks.csv", "ranks.parquet"))
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 0, err


# -- a recommender that scores nothing is named ---------------------------------------------------------------------
NAN_SCORER = textwrap.dedent("""
    import numpy as np
    from lenskit.data import Dataset, ItemList
    from lenskit.pipeline import Component
    from lenskit.training import Trainable, TrainingOptions


    class NaNScorer(Component[ItemList], Trainable):
        \"\"\"Scores every item NaN (a broken model).\"\"\"

        config: None

        def train(self, data: Dataset, options: TrainingOptions = TrainingOptions()) -> None:
            self.items_ = data.items

        def __call__(self, items: ItemList) -> ItemList:
            return ItemList(items, scores=np.full(len(items), np.nan))
""")


@pytest.fixture()
def nan_scorer(tmp_path, request) -> str:
    """A module with a NaN scorer beside the scenario files; its import path (a module name per test)."""
    module = f"nan_scorer_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(NAN_SCORER)
    return f"{module}:NaNScorer"


@pytest.mark.filterwarnings("ignore:item list collection has empty lists")  # LensKit's own note on the empty lists
def test_run_warns_about_a_recommender_without_lists(tmp_path, nan_scorer):
    spec = tmp_path / "s.toml"
    spec.write_text(
        RUN_TOML.replace('{ kind = "oracle" }', f'{{ kind = "lenskit", name = "broken", scorer = "{nan_scorer}" }}')
    )
    code, _, err = invoke(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 0, err
    assert "simrec: warning: recommender 'broken': an empty list or no scored candidate" in err, err
    assert "(100%, more than 10%)" in err
    assert "Popular" not in err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert any("'broken'" in w for w in manifest["warnings"])


def test_stress_warns_about_a_recommender_without_scores(tmp_path, nan_scorer):
    spec = tmp_path / "s.toml"
    spec.write_text(
        textwrap.dedent(f"""
        kind = "stress"
        name = "nan"
        seed = 5
        repeats = 3
        [source]
        type = "simulation"
        population = {{ n_users = 40, n_items = 60 }}
        world = {{ preference = {{ model = "uniform", lam = 12.0 }}, observation = {{ sampler = "uniform", profile = {{ model = "pareto", m_low = 3, alpha = 1.0, m_high = 10 }} }} }}
        recommenders = [{{ kind = "lenskit", scorer = "{nan_scorer}", name = "broken" }}, {{ kind = "popular" }}]
        [sampling]
        schemes = ["binomial"]
        sizes = [20]
        [metrics]
        names = ["recall"]
        k_max = 5
        curve_k = 5
        curve_sizes = [10, 20]
    """)
    )
    code, _, err = invoke(["stress", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 0, err
    assert "simrec: warning: recommender 'broken': no candidate scored (ranks are ties broken at random)" in err, err
    assert "'popular'" not in err


def test_ranks_warns_about_a_recommender_without_scores(tmp_path, nan_scorer, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the scorer's module is imported from the current folder
    code, _, err = invoke(["ranks", str(PAIRS), "-r", nan_scorer, "-r", "popular", "--out", "r.csv", "--quiet"])
    assert code == 0, err
    assert "simrec: warning: recommender 'NaNScorer': no candidate scored" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert pd.read_csv(tmp_path / "r.csv")["recommender"].nunique() == 2
