"""The issue-24 specs: HPF, latent factor, the preference sampler and ratings, in scenarios and calibration cells."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from pydantic import ValidationError

from simrec.calibration import ReferenceShape
from simrec.config.models import CellSpec, HPFSpec, PopulationSpec, RatingsSpec, WorldSpec
from simrec.config.presets import preset_tables, to_toml
from simrec.observation import PreferenceSampler, Rated
from simrec.preference import HPF, LatentFactor

REF = ReferenceShape(n_users=300, n_items=200, min_profile=20, mean_profile=60.0, max_profile=180, profile_log_sd=0.8)

FACTOR = {"model": "factor", "n_factors": 4, "signal": 1.5, "pop_exponent": 1.0, "lam": 30.0}
HPF_TABLE = {"model": "hpf", "n_factors": 5, "a": 0.3, "a_prime": 1.0, "b_prime": 1.0, "c": 0.3, "c_prime": 1.0}
PROFILE = {"model": "pareto", "m_low": 5, "alpha": 1.0, "m_high": 40}


@pytest.mark.parametrize("table, model", [(FACTOR, LatentFactor), (HPF_TABLE, HPF)])
def test_new_worlds_build_and_generate(table, model):
    obs = {
        "sampler": {"model": "preference", "pop_exponent": 0.5, "pref_exponent": 2.0, "dislike_rate": 0.1},
        "profile": PROFILE,
        "ratings": {"shape": 1.5, "noise": 0.3, "min_rating": 4},
    }
    spec = WorldSpec.model_validate({"preference": table, "observation": obs})
    world = spec.build(PopulationSpec(n_users=60, n_items=80))
    assert isinstance(world.preference, model) and world.preference.n_items == 80
    assert isinstance(world.sampler, Rated) and isinstance(world.sampler.sampler, PreferenceSampler)
    assert spec.label == f"{table['model']}-pref-rated"
    truth = world.preference.generate(np.random.default_rng(0))
    assert truth.gains is not None and truth.n_pairs > 0  # graded (HPF: its counts; factor: Φ(z))


def test_the_preference_sampler_is_its_bare_tag_at_its_defaults():
    spec = WorldSpec.model_validate(
        {"preference": FACTOR, "observation": {"sampler": "preference", "profile": PROFILE}}
    )
    s = spec.observation.sampler.build()
    assert (s.pop_exponent, s.pref_exponent, s.dislike_rate) == (1.0, 1.0, 0.0)
    assert spec.label == "factor-pref"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"lam": 500.0}, "lam"),
        ({"n_factors": 0}, "n_factors"),
        ({"signal": -1.0}, "signal"),
    ],
)
def test_a_bad_factor_value_is_named(change, message):
    spec = {"preference": {**FACTOR, **change}, "observation": {"sampler": "uniform", "profile": PROFILE}}
    try:
        w = WorldSpec.model_validate(spec)
    except ValidationError as exc:
        assert message in str(exc)
        return
    problems = w.problems(PopulationSpec(n_users=60, n_items=80), "world[0]")
    assert any(p.startswith(f"world[0].preference: `{message}`") or message in p for p in problems), problems


def test_a_factor_world_too_large_in_cells_is_refused_before_work():
    spec = WorldSpec.model_validate({"preference": FACTOR, "observation": {"sampler": "uniform", "profile": PROFILE}})
    problems = spec.problems(PopulationSpec(n_users=10_000_000, n_items=10_000), "world[0]")
    assert any("users x items must be <= 2e+10; got 10000000 x 10000 = 1e+11" in p for p in problems)


def test_min_rating_outside_the_scale_is_refused():
    assert RatingsSpec(min_rating=6).problems("world[0].observation.ratings") == [
        "world[0].observation.ratings.min_rating: must be within [low, high] = [1, 5]; got 6"
    ]
    assert RatingsSpec(min_rating=4).problems("x") == []


@pytest.mark.parametrize(
    "pref, obs, rated, names",
    [
        ("factor", "preference", False, ["n_factors", "signal", "pop_exponent", "lam", "activity_sd"]),
        ("hpf", "preference", True, ["n_factors", "a", "a_prime", "c", "c_prime", "density"]),
        ("hpf", "popularity", False, ["n_factors", "a", "a_prime", "c", "c_prime", "density"]),
    ],
)
def test_cells_of_the_new_models_search_and_build(pref, obs, rated, names):
    cell = CellSpec(preference=pref, observation=obs, ratings=RatingsSpec(min_rating=4) if rated else None)
    dims = cell.search_space(REF)
    got = [d.name for d in dims]
    sampler_dims = ["obs_pop_exponent", "obs_pref_exponent", "dislike_rate"] if obs == "preference" else []
    rating_dims = ["rating_shape", "rating_noise"] if rated else []
    assert got == names + ["m_low", "pareto_alpha", "m_high"] + sampler_dims + rating_dims
    assert len(set(got)) == len(got)
    for corner in ("low", "high"):
        point = {d.name: (int(getattr(d, corner)) if d.integer else getattr(d, corner)) for d in dims}
        spec = cell.world_spec(point, REF)
        # a preset is a world a scenario reads back
        tables = preset_tables(cell, point, REF, "ref", {"sum_kl": 1.0})
        again = WorldSpec.model_validate(
            {k: v for k, v in tomllib.loads(to_toml(tables)).items() if k in ("preference", "observation")}
        )
        assert again == spec.model_copy(update={"name": None})
        pref_model, _, _ = cell.models(point, REF)
        assert pref_model.n_users == REF.n_users and pref_model.n_items == REF.n_items


def test_factor_activity_range_is_derived_from_the_reference():
    (act,) = [
        d for d in CellSpec(preference="factor", observation="uniform").search_space(REF) if d.name == "activity_sd"
    ]
    assert (act.low, act.high) == pytest.approx((0.4, 1.6))  # [0.5, 2] x the reference's log-sd 0.8


@pytest.mark.parametrize("density", [0.05, 0.2])
def test_hpf_point_has_the_searched_truth_density(density):
    point = {"n_factors": 8, "a": 0.3, "a_prime": 1.0, "c": 0.3, "c_prime": 1.0, "density": density}
    spec = HPFSpec.from_point(point, REF)
    model = spec.build(REF)
    assert model.expected_pairs() / (REF.n_users * REF.n_items) == pytest.approx(density, rel=1e-5)
    # and a drawn truth has it within 5 standard errors of its sampling noise (HPF's pairs are correlated:
    # the bound is loose on purpose, the exact check is the quadrature above)
    got = model.generate(np.random.default_rng(1)).n_pairs / (REF.n_users * REF.n_items)
    assert abs(got - density) < 0.5 * density


def test_reference_shape_log_sd_is_left_out_of_the_log_identity():
    shape = ReferenceShape(10, 20, 1, 3.0, 9, 0.7)
    assert "profile_log_sd" not in shape.key() and shape.key()["n_users"] == 10
    assert shape.density == pytest.approx(3.0 / 20)


def test_the_thesis_cells_stay_the_defaults_of_sweeps_and_assessments():
    from simrec.config.assess import CELLS
    from simrec.config.sweep import SweepSpec

    assert CELLS == ("uniform-unif", "uniform-pop", "ibp-unif", "ibp-pop", "lda-unif", "lda-pop")
    base = {"name": "s", "seed": 1, "dataset": [{"name": "d", "path": "x"}]}
    assert [c.name for c in SweepSpec.model_validate(base).cells()] == list(CELLS)
    rated = SweepSpec.model_validate(
        {
            **base,
            "preferences": ["factor"],
            "observations": ["preference"],
            "ratings": {"min_rating": 4},
            "dataset": [{"name": "d", "path": "x", "min_rating": 4}],  # binarised as the rated worlds are
        }
    )
    assert [c.name for c in rated.cells()] == ["factor-pref-rated"]
