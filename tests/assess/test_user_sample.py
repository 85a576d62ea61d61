"""An assessment's user sample (``[protocol] max_users``, the quick size's; issue 28): one protocol on both sides.

The synthetic assessment of :mod:`tests.assess.conftest` (120 users of a pairs
table, worlds of the shipped ML-100K presets, 943 users) with ``max_users =
100``: every world replicate and the real data's leave-one-out evaluate 100
users, and the report says so.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simrec.config import ScenarioError
from simrec.config.assess import QUICK_USERS, load_assessment
from tests.assess.conftest import assessment_toml


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "a.toml"
    p.write_text(text)
    return p


def test_max_users_reaches_the_worlds_and_the_real_data_alike(tmp_path, tiny_data):
    a = load_assessment(_write(tmp_path, assessment_toml(tiny_data, n="n = 5\nmax_users = 100")))
    run, stress = a.run_scenario(a.best_cells()), a.stress_scenario()
    assert run.evaluation.max_users == stress.source.max_users == 100
    # the estimate counts the sample: scoring 100 users instead of the worlds' 943
    full = load_assessment(_write(tmp_path, assessment_toml(tiny_data)))
    assert a.work().scores < full.work().scores / 5


def test_the_quick_size_samples_both_sides_and_keeps_a_smaller_sample(tmp_path, tiny_data):
    quick = load_assessment(_write(tmp_path, assessment_toml(tiny_data)), quick=True)
    assert quick.spec.protocol.max_users == QUICK_USERS
    assert quick.run_scenario(quick.best_cells()).evaluation.max_users == QUICK_USERS
    assert quick.stress_scenario().source.max_users == QUICK_USERS
    smaller = load_assessment(_write(tmp_path, assessment_toml(tiny_data, n="n = 5\nmax_users = 200")), quick=True)
    assert smaller.spec.protocol.max_users == 200  # the file's own sample when smaller than the quick size's


@pytest.mark.parametrize(
    "value, expected",
    [
        (
            "20",
            "protocol.max_users: `max_users` must be at least 100 (a smaller sample of users makes every "
            "interval too wide to read), or absent to evaluate every user; got 20",
        ),
        ("0", "protocol.max_users: `max_users` must be at least 100"),
        ("500.0", "protocol.max_users: Input should be a valid integer; got 500.0"),
        ('"all"', "protocol.max_users: Input should be a valid integer"),
    ],
)
def test_a_bad_max_users_is_refused_with_the_key_the_rule_and_the_value(tmp_path, tiny_data, value, expected):
    path = _write(tmp_path, assessment_toml(tiny_data, n=f"n = 5\nmax_users = {value}"))
    with pytest.raises(ScenarioError) as err:
        load_assessment(path)
    assert str(path) in str(err.value) and expected in str(err.value), str(err.value)


def test_a_sampled_assessment_evaluates_the_sample_everywhere_and_says_so(tmp_path, tiny_data):
    from simrec.studies import run_assessment

    small = {"replicates": "replicates = 1", "sizes": "sizes = [20]", "estimators": 'estimators = ["naive", "BV"]'}
    a = load_assessment(_write(tmp_path, assessment_toml(tiny_data, n="n = 5\nmax_users = 100", **small)))
    out = tmp_path / "out"
    outcome = run_assessment(a, out, progress=False, figures=False)
    results = pd.read_parquet(out / "worlds" / "results.parquet")
    assert (results["n_evaluated"] == 100).all()  # every replicate of the 943-user world: 100 users
    ranks = pd.read_parquet(out / "sampling" / "ranks.parquet")
    assert ranks.groupby("recommender")["user"].nunique().eq(100).all()  # the real data's 120: 100 ranked
    assert outcome.bottom_line is not None
    page = (out / "report.html").read_text()
    assert "a uniform sample of 100 of the 120 users evaluated" in page
    # the sim-to-real check's real side (the data's holdout, trained once more) evaluates the same sample
    assert "over its 100 evaluated users" in page
