"""Calibration with the authors'-code statistics (``statistics = "authors_code"`` in a sweep file)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simrec.calibration import CalibrationTarget, Objective, log_header
from simrec.config.models import CellSpec
from simrec.datasets import load_dataset
from simrec.stats import authors_code_statistics, kl_by_statistic_authors_code

PAIRS = Path(__file__).resolve().parents[1] / "golden" / "pairs.csv"


@pytest.fixture(scope="module")
def reference():
    return load_dataset(PAIRS, kind="pairs")


def test_a_trial_measures_the_authors_code_kls(reference):
    target = CalibrationTarget.from_interactions("pairs", reference, rng=4, max_pairs=2000, statistics="authors_code")
    assert target.statistics == "authors_code" and target.code_reference is not None
    cell = CellSpec(preference="ibp", observation="popularity")
    objective = Objective(target, cell, "item_popularity", stat_pairs=2000, max_pairs=200_000)
    point = {"alpha": 30.0, "c": 1.0, "sigma": 0.3, "m_low": 5.0, "pareto_alpha": 1.0, "m_high": 60.0}
    seed = np.random.SeedSequence(11)
    outcome = objective(point, seed)
    assert outcome.refused is None
    # recompute: same simulation from the seed, then the authors' statistics with the same stream
    from simrec._random import as_generator

    gen = as_generator(np.random.SeedSequence(11))
    observed = objective.simulate(point, gen)
    expected = kl_by_statistic_authors_code(
        target.code_reference, authors_code_statistics(observed, gen, reference=target.code_reference)
    )
    assert outcome.value == pytest.approx(expected["item_popularity"], rel=1e-12)
    for name, value in expected.items():
        assert outcome.details[name] == pytest.approx(value, rel=1e-12)


def test_the_variant_is_part_of_a_logs_identity(reference):
    cell = CellSpec(preference="uniform", observation="uniform")
    thesis = CalibrationTarget.from_interactions("pairs", reference, rng=4, max_pairs=2000)
    code = CalibrationTarget.from_interactions("pairs", reference, rng=4, max_pairs=2000, statistics="authors_code")
    h_thesis = log_header(Objective(thesis, cell, "user_activity"), seed=1, n_initial=2)
    h_code = log_header(Objective(code, cell, "user_activity"), seed=1, n_initial=2)
    assert h_thesis["digest"] != h_code["digest"]


def test_sweep_file_key(tmp_path):
    from cli_helpers import invoke

    spec = tmp_path / "s.toml"
    spec.write_text(f'''
name = "variant"
seed = 5
n_calls = 2
n_initial = 2
preferences = ["uniform"]
observations = ["popularity"]
objectives = ["user_activity"]
statistics = "authors_code"
stat_pairs = 2000
max_pairs = 200000
[[dataset]]
name = "pairs"
path = "{PAIRS}"
kind = "pairs"
''')
    code, _, err = invoke(["calibrate", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-figures"])
    assert code == 0, err
    log = tmp_path / "out" / "pairs" / "cells" / "uniform-pop" / "user_activity" / "trials.jsonl"
    trials = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert len(trials) == 2 and all(t["status"] == "ok" for t in trials)
    spec.write_text(spec.read_text().replace('"authors_code"', '"code"'))
    code, _, err = invoke(["calibrate", str(spec), "--out", str(tmp_path / "out2")])
    assert code == 2 and "statistics: Input should be 'thesis' or 'authors_code'" in err
