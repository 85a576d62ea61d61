"""Scenario validation: every malformed scenario is refused with a clear message and nothing runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simrec.cli import app
from simrec.config import ScenarioError
from simrec.config.files import scenario_kind, shipped_scenarios
from simrec.config.run import load_scenario

GOOD = """
name = "tiny"
seed = 1
replicates = 2

[population]
n_users = 60
n_items = 80

[[world]]
name = "unif-unif"
preference = { model = "uniform", lam = 15.0 }
observation = { sampler = "uniform", profile = { model = "pareto", m_low = 3, alpha = 1.5, m_high = 30 } }

[evaluation]
n = 10
metrics = ["precision", "recall"]
recommenders = [{ kind = "oracle" }, { kind = "popular" }]
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "scenario.toml"
    p.write_text(textwrap.dedent(text))
    return p


def test_good_scenario_loads(tmp_path):
    sc, path = load_scenario(_write(tmp_path, GOOD))
    assert sc.world_names() == ["unif-unif"]
    assert path.name == "scenario.toml"


RUN_SCENARIOS = sorted(shipped_scenarios(kind="run"))


def test_quickstart_is_shipped():
    assert "quickstart" in RUN_SCENARIOS and "thesis-table3" in RUN_SCENARIOS


@pytest.mark.parametrize("name", RUN_SCENARIOS)
def test_shipped_run_scenarios_are_valid(name):
    sc, _ = load_scenario(name)
    assert sc.replicates >= 1


def test_scenario_kinds_partition_the_shipped_scenarios():
    kinds = {n: scenario_kind(p) for n, p in shipped_scenarios().items()}
    assert set(kinds.values()) == {"run", "stress"}
    assert set(shipped_scenarios(kind="stress")) == {n for n, k in kinds.items() if k == "stress"}


def test_stress_scenario_is_redirected(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('kind = "stress"\nname = "x"\n')
    with pytest.raises(ScenarioError, match="simrec stress"):
        load_scenario(p)


# (description, edit applied to GOOD, substrings the message must contain)
BAD = [
    ("unknown top-level key", lambda s: s.replace("seed = 1", "seed = 1\nsede = 2"), ["sede", "unknown key"]),
    (
        "unknown nested key",
        lambda s: s.replace("n = 10", "n = 10\nlist_len = 5"),
        ["evaluation.list_len", "unknown key"],
    ),
    ("wrong type", lambda s: s.replace("replicates = 2", 'replicates = "two"'), ["replicates", "integer"]),
    ("missing required", lambda s: s.replace("seed = 1\n", ""), ["seed", "missing"]),
    ("negative lambda", lambda s: s.replace("lam = 15.0", "lam = -1.0"), ["world[0].preference.lam", "greater than 0"]),
    (
        "sigma out of range",
        lambda s: s.replace(
            '{ model = "uniform", lam = 15.0 }', '{ model = "ibp", alpha = 5.0, c = 1.0, sigma = 1.2 }'
        ),
        ["world[0].preference.sigma", "1.2"],
    ),
    (
        "ibp c <= -sigma (cross-key rule)",
        lambda s: s.replace(
            '{ model = "uniform", lam = 15.0 }', '{ model = "ibp", alpha = 5.0, c = -0.6, sigma = 0.5 }'
        ),
        ["world[0].preference", "c"],
    ),
    ("pareto m_high <= m_low", lambda s: s.replace("m_high = 30", "m_high = 2"), ["world[0].observation", "m_high"]),
    (
        "unknown model tag",
        lambda s: s.replace('model = "uniform"', 'model = "gaussian"'),
        ["world[0].preference", "gaussian"],
    ),
    ("unknown metric", lambda s: s.replace('"recall"]', '"recal"]'), ["evaluation.metrics[1]", "recal"]),
    (
        "unknown recommender",
        lambda s: s.replace('{ kind = "popular" }', '{ kind = "pop" }'),
        ["evaluation.recommenders[1]", "pop"],
    ),
    (
        "probability out of range",
        lambda s: s.replace('{ kind = "popular" }', '{ kind = "probabilistic_oracle", p = 1.5 }'),
        ["evaluation.recommenders[1].p", "1.5"],
    ),
    (
        "test fraction 1",
        lambda s: s.replace("n = 10", "n = 10\ntest_fraction = 1.0"),
        ["evaluation.test_fraction", "less than 1"],
    ),
    (
        "test fraction with leave-last-out",
        lambda s: s.replace("n = 10", 'n = 10\nsplit = "last"\ntest_fraction = 0.2'),
        ["evaluation: `test_fraction` is only used with split = 'holdout'", "got test_fraction = 0.2"],
    ),
    (
        "unknown split",
        lambda s: s.replace("n = 10", 'n = 10\nsplit = "first"'),
        ["evaluation.split", "'holdout' or 'last'"],
    ),
    (
        "zero replicates",
        lambda s: s.replace("replicates = 2", "replicates = 0"),
        ["replicates", "greater than or equal to 1"],
    ),
    (
        "duplicate recommender",
        lambda s: s.replace('{ kind = "popular" }', '{ kind = "oracle" }'),
        ["recommenders", "unique"],
    ),
    (
        "world without observation",
        lambda s: s.replace(
            'observation = { sampler = "uniform", profile = { model = "pareto", m_low = 3, alpha = 1.5, m_high = 30 } }',
            "",
        ),
        ["world[0]", "observation"],
    ),
    (
        "unknown preset",
        lambda s: s.replace('name = "unif-unif"', 'name = "unif-unif"\npreset = "nowhere/nothing"'),
        ["world[0].preset", "unknown preset"],
    ),
    ("not TOML", lambda s: s.replace("[population]", "[population"), ["not valid TOML"]),
    (
        "no worlds",
        lambda s: s.split("[[world]]")[0] + '[evaluation]\nrecommenders = [{ kind = "oracle" }]\n',
        ["world", "missing"],
    ),
]


@pytest.mark.parametrize("desc,edit,needles", BAD, ids=[b[0] for b in BAD])
def test_bad_scenario_is_refused_and_nothing_runs(tmp_path, desc, edit, needles):
    path = _write(tmp_path, edit(GOOD))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    msg = str(info.value)
    assert str(path) in msg
    for needle in needles:
        assert needle in msg, f"{desc}: {needle!r} not in message:\n{msg}"
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 2
    assert "error" in result.output
    assert not out.exists()


def test_leave_last_out_scenario_loads_and_keeps_the_holdout_digest(tmp_path):
    """split = "last" reaches the evaluation; the default split is left out of the digest (existing folders resume)."""
    sc, _ = load_scenario(_write(tmp_path, GOOD.replace("n = 10", 'n = 10\nsplit = "last"')))
    assert sc.evaluation.build().split == "last"
    holdout, _ = load_scenario(_write(tmp_path, GOOD))
    explicit, _ = load_scenario(_write(tmp_path, GOOD.replace("n = 10", 'n = 10\nsplit = "holdout"')))
    assert holdout.evaluation.build().split == "holdout"
    assert holdout.digest() == explicit.digest() != sc.digest()


def test_several_problems_reported_together(tmp_path):
    path = _write(tmp_path, GOOD.replace("lam = 15.0", "lam = 0").replace("n = 10", "n = 0"))
    with pytest.raises(ScenarioError, match="2 problems") as info:
        load_scenario(path)
    assert "world[0].preference.lam" in str(info.value) and "evaluation.n" in str(info.value)


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario(tmp_path / "absent.toml")
