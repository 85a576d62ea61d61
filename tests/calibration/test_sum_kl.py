"""The authors' code's combined objective (``sum_kl``, their ``score('all')``) beside the thesis's average loss."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pandas as pd
import pytest

from simrec.calibration import (
    OBJECTIVES,
    SUM_KL,
    THESIS_OBJECTIVES,
    CalibrationTarget,
    Objective,
    objective_column,
)
from simrec.config.datasets import DatasetSpec
from simrec.config.models import CellSpec
from simrec.config.sweep import SweepSpec
from simrec.observation import TruncatedPareto, UniformSampler, observe
from simrec.preference import Uniform
from simrec.stats import STATISTICS
from simrec.studies import run_sweep

PARETO = {"m_low": 10.0, "pareto_alpha": 1.0, "m_high": 300.0}


def _target():
    truth = Uniform(n_users=200, n_items=300, lam=40.0).generate(0)
    ref = observe(truth, TruncatedPareto(m_low=10, alpha=1.0, m_high=300), UniformSampler(), 1).observed
    return CalibrationTarget.from_interactions("toy", ref, rng=0, max_pairs=20_000)


def test_sum_kl_is_the_sum_of_the_four_kls_of_the_same_simulation():
    target = _target()
    cell = CellSpec(preference="uniform", observation="uniform")
    params = {"lam": 30.0, **PARETO}
    out = Objective(target, cell, SUM_KL, stat_pairs=20_000)(params, np.random.SeedSequence(4))
    single = Objective(target, cell, "item_popularity", stat_pairs=20_000)(params, np.random.SeedSequence(4))
    assert out.refused is None
    # same seed -> same simulation: the sum is of exactly the KLs a single-statistic trial logs
    assert out.value == pytest.approx(sum(single.details[s] for s in STATISTICS), rel=1e-12)
    assert out.details[SUM_KL] == out.value
    assert out.value > single.value > 0


def test_names_seeds_and_default_objectives():
    # new objectives go at the end, so the seeds of the thesis's searches (OBJECTIVES.index) never move
    assert OBJECTIVES[: len(THESIS_OBJECTIVES)] == THESIS_OBJECTIVES and OBJECTIVES[-3:] == (
        SUM_KL,
        "algorithm_response",
        "response_loss",
    )
    assert [objective_column(o) for o in OBJECTIVES] == [
        *(f"kl_{s}" for s in STATISTICS),
        "average_loss",
        "sum_kl",
        "algorithm_response",
        "response_loss",
    ]
    spec = SweepSpec.model_validate(
        {"name": "x", "seed": 1, "dataset": [{"name": "d", "path": "d", "kind": "movielens"}]}
    )
    assert tuple(spec.objectives) == THESIS_OBJECTIVES
    spec = SweepSpec.model_validate(
        {"name": "x", "seed": 1, "objectives": ["sum_kl"], "dataset": [{"name": "d", "path": "d", "kind": "movielens"}]}
    )
    assert spec.objectives == ["sum_kl"]


def test_a_sum_kl_sweep_needs_no_single_statistic_searches_and_writes_presets(tmp_path):
    target = _target()
    spec = SweepSpec(
        name="toy",
        seed=5,
        preferences=["uniform"],
        observations=["uniform", "popularity"],
        objectives=[SUM_KL],
        n_calls=3,
        n_initial=2,
        stat_pairs=20_000,
        denoise_seeds=0,
        dataset=[DatasetSpec(name="toy", path="toy")],
    )
    res = run_sweep([target], tmp_path, spec, figures=False)
    table = res.table
    assert list(table["objective"]) == [SUM_KL, SUM_KL]
    np.testing.assert_allclose(table[SUM_KL], table[[f"kl_{s}" for s in STATISTICS]].sum(axis=1), rtol=1e-12)
    # no single-statistic searches, so no family-best KLs: relative losses are undefined, not 0
    assert table["average_loss"].isna().all() and table["rel_item_popularity"].isna().all()
    best = pd.read_csv(tmp_path / "toy" / "best.csv")
    assert best.loc[0, "value"] == pytest.approx(table[SUM_KL].min())
    assert "sum of the four KLs for sum_kl" in (tmp_path / "toy" / "summary.md").read_text()
    assert sorted(res.presets) == ["toy/uniform-pop", "toy/uniform-unif"]
    fit = tomllib.loads(res.presets["toy/uniform-pop"].read_text())["fit"]
    assert math.isnan(fit["average_loss"]) and fit["kl_user_activity"] > 0
