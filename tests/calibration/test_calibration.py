"""Calibration: objectives, identifiability of known parameters, sweeps, presets."""

from __future__ import annotations

import math
import signal
import tomllib

import numpy as np
import pandas as pd
import pytest

from simrec.calibration import (
    AVERAGE_LOSS,
    CalibrationTarget,
    Objective,
    calibrate_cell,
    read_log,
)
from simrec.config.datasets import DatasetSpec
from simrec.config.models import CellSpec
from simrec.config.run import load_scenario
from simrec.config.sweep import SweepSpec
from simrec.observation import TruncatedPareto, UniformSampler, observe
from simrec.preference import IBP, Uniform
from simrec.studies import run_sweep

PARETO = {"m_low": 10.0, "pareto_alpha": 1.0, "m_high": 300.0}


def _reference(pref, seed=0):
    truth = pref.generate(seed)
    return observe(truth, TruncatedPareto(m_low=10, alpha=1.0, m_high=300), UniformSampler(), seed + 1).observed


def test_objective_is_deterministic_and_zero_free():
    ref = _reference(Uniform(n_users=300, n_items=400, lam=50.0))
    target = CalibrationTarget.from_interactions("toy", ref, rng=0)
    obj = Objective(target, CellSpec(preference="uniform", observation="uniform"), "user_activity")
    params = {"lam": 50.0, **PARETO}
    seed = np.random.SeedSequence(3)
    a, b = obj(params, seed), obj(params, np.random.SeedSequence(3))
    assert a == b and a.refused is None
    assert set(a.details) >= {"item_popularity", "user_activity", "item_similarity", "user_similarity"}
    # far-off parameters fit worse than the true ones on the statistic they drive
    worse = obj({"lam": 12.0, **PARETO}, seed)
    assert worse.value > 3 * a.value


def test_objective_refuses_oversized_points_with_a_reason():
    ref = _reference(Uniform(n_users=300, n_items=400, lam=50.0))
    target = CalibrationTarget.from_interactions("toy", ref, rng=0)
    obj = Objective(target, CellSpec(preference="ibp", observation="uniform"), "item_popularity", max_pairs=10_000)
    out = obj({"alpha": 200.0, "c": 1.0, "sigma": 0.0, **PARETO}, np.random.SeedSequence(0))
    assert out.refused and "max_pairs" in out.refused
    out = Objective(target, CellSpec(preference="ibp", observation="uniform"), "item_popularity")(
        {"alpha": 200.0, "c": 50.0, "sigma": 0.9, **PARETO}, np.random.SeedSequence(0)
    )
    assert out.refused and "items" in out.refused
    with pytest.raises(ValueError, match="best_kl"):
        Objective(target, CellSpec(preference="ibp", observation="uniform"), AVERAGE_LOSS)


@pytest.mark.slow
def test_uniform_lambda_is_identifiable():
    """Data from Unif(λ = 60) observed through a known truncated Pareto
    (α = 0.5, so 41% of users draw more than 60 and show the Poisson(λ) cap):
    a 25-call search on user activity (the Pareto held at its true values)
    recovers λ within 10%.

    The valley of the objective is narrow (KL 0.04 at λ = 60 against 0.3 from
    λ = 80 up): in trials, 15 calls missed it for 2 of 8 seeds; 25 calls found
    λ in [59.9, 62.5] for 8 of 8 seeds."""
    truth = Uniform(n_users=600, n_items=800, lam=60.0).generate(4)
    ref = observe(truth, TruncatedPareto(m_low=10, alpha=0.5, m_high=300), UniformSampler(), 5).observed
    target = CalibrationTarget.from_interactions("toy", ref, rng=0)
    res = calibrate_cell(
        Objective(target, CellSpec(preference="uniform", observation="uniform"), "user_activity"),
        seed=1,
        n_calls=25,
        n_initial=8,
        fixed={**PARETO, "pareto_alpha": 0.5},
    )
    assert abs(res.best.params["lam"] - 60) / 60 < 0.10, res.best.params


@pytest.mark.slow
def test_ibp_sigma_is_identifiable():
    """Data from IBP(α = 30, c = 1, σ = 0.5): a 16-call search of σ on item
    popularity (α, c and the Pareto held at their true values) recovers σ
    within 0.1 (seeds 0-7 gave 0.48-0.55 in trials)."""
    ref = _reference(IBP(n_users=600, alpha=30.0, c=1.0, sigma=0.5), seed=8)
    target = CalibrationTarget.from_interactions("toy", ref, rng=0)
    res = calibrate_cell(
        Objective(target, CellSpec(preference="ibp", observation="uniform"), "item_popularity"),
        seed=2,
        n_calls=16,
        n_initial=6,
        fixed={"alpha": 30.0, "c": 1.0, **PARETO},
    )
    assert abs(res.best.params["sigma"] - 0.5) < 0.1, res.best.params


def test_fixed_must_name_searched_parameters():
    ref = _reference(Uniform(n_users=100, n_items=200, lam=30.0))
    target = CalibrationTarget.from_interactions("toy", ref, rng=0)
    with pytest.raises(ValueError, match="not in the search space"):
        calibrate_cell(
            Objective(target, CellSpec(preference="uniform", observation="uniform"), "user_activity"),
            seed=0,
            n_calls=2,
            n_initial=2,
            fixed={"sigma": 0.3},
        )


def test_cell_models_validate():
    from simrec.calibration import ReferenceShape

    shape = ReferenceShape(100, 200, 5, 20.0, 80)
    with pytest.raises(ValueError, match="m_high"):
        CellSpec(preference="uniform", observation="uniform").models(
            {"lam": 10.0, "m_low": 20.0, "pareto_alpha": 1.0, "m_high": 10.0}, shape
        )


@pytest.mark.slow
def test_sweep_resumes_and_writes_presets_a_scenario_can_use(tmp_path, monkeypatch):
    ref = _reference(Uniform(n_users=200, n_items=300, lam=40.0))
    target = CalibrationTarget.from_interactions("toy", ref, rng=0, max_pairs=20_000)
    spec = SweepSpec(
        name="toy",
        seed=5,
        preferences=["uniform", "ibp"],
        observations=["popularity"],
        n_calls=4,
        n_initial=3,
        stat_pairs=20_000,
        denoise_seeds=0,
        dataset=[DatasetSpec(name="toy", path="toy")],
    )
    full = run_sweep([target], tmp_path / "a", spec, figures=False)

    # interrupt a second sweep in the middle of its 7th trial, then resume
    import simrec.calibration.objective as objmod

    real_call = objmod.Objective.__call__
    calls = {"n": 0}

    def flaky(self, params, seed):
        calls["n"] += 1
        if calls["n"] == 7:  # Ctrl-C (a KeyboardInterrupt the task raised itself would be its failure: issue 22)
            signal.raise_signal(signal.SIGINT)
        return real_call(self, params, seed)

    monkeypatch.setattr(objmod.Objective, "__call__", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_sweep([target], tmp_path / "b", spec, figures=False)
    monkeypatch.setattr(objmod.Objective, "__call__", real_call)
    resumed = run_sweep([target], tmp_path / "b", spec, figures=True)

    key = ["cell", "objective", "best_trial", "average_loss"]
    pd.testing.assert_frame_equal(full.table[key], resumed.table[key])
    for cell in ("uniform-pop", "ibp-pop"):
        for obj in ("item_popularity", "user_activity", "item_similarity", "user_similarity", AVERAGE_LOSS):
            a = read_log(tmp_path / "a" / "toy" / "cells" / cell / obj / "trials.jsonl")
            b = read_log(tmp_path / "b" / "toy" / "cells" / cell / obj / "trials.jsonl")
            assert [(t.params, t.value, t.status) for t in a] == [(t.params, t.value, t.status) for t in b]
            assert len(a) == 4
    # 2 cells x 5 objectives, average loss >= 1 by construction for the average-loss cells
    assert len(resumed.table) == 10
    avg = resumed.table[resumed.table["objective"] == AVERAGE_LOSS]
    assert (avg["average_loss"] >= 1 - 1e-9).all()
    assert (tmp_path / "b" / "toy" / "figures" / "ibp-pop.png").stat().st_size > 10_000
    assert set(pd.read_csv(tmp_path / "b" / "toy" / "best.csv")["objective"]) >= {AVERAGE_LOSS}
    md = (tmp_path / "b" / "toy" / "summary.md").read_text()
    assert "| average_loss |" in md and "| ibp-pop |" in md and "**" in md

    # the preset is a valid world for a scenario
    preset = resumed.presets["toy/ibp-pop"]
    tables = tomllib.loads(preset.read_text())
    assert tables["preference"]["model"] == "ibp" and tables["observation"]["sampler"] == "popularity"
    assert math.isfinite(tables["fit"]["average_loss"])
    presets_dir = tmp_path / "presets"
    (presets_dir / "toy").mkdir(parents=True)
    (presets_dir / "toy" / "ibp-pop.toml").write_text(preset.read_text())
    import simrec.config.files as files

    monkeypatch.setattr(files, "_presets_root", lambda: presets_dir)
    sc_file = tmp_path / "sc.toml"
    sc_file.write_text(
        'name = "p"\nseed = 1\nreplicates = 1\n[population]\nn_users = 200\nn_items = 300\n'
        '[[world]]\npreset = "toy/ibp-pop"\n[evaluation]\nrecommenders = [{ kind = "popular" }]\n'
    )
    sc, _ = load_scenario(sc_file)
    assert sc.world[0].preference.model == "ibp"
    assert sc.world[0].preference.sigma == pytest.approx(tables["preference"]["sigma"])
