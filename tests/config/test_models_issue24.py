"""The issue-24 specs: HPF, latent factor, clustered, the preference sampler and ratings, in scenarios and cells."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from pydantic import ValidationError

from simrec.calibration import ReferenceShape
from simrec.config.models import (
    CellSpec,
    ClusteredFactorSpec,
    HPFSpec,
    LatentFactorSpec,
    PopulationSpec,
    RatingsSpec,
    WorldSpec,
)
from simrec.config.presets import preset_tables, to_toml
from simrec.observation import PreferenceSampler, Rated
from simrec.preference import HPF, ClusteredFactor, LatentFactor

REF = ReferenceShape(n_users=300, n_items=200, min_profile=20, mean_profile=60.0, max_profile=180, profile_log_sd=0.8)

FACTOR = {"model": "factor", "n_factors": 4, "signal": 1.5, "pop_exponent": 1.0, "lam": 30.0}
CLUSTERED = {**FACTOR, "model": "clustered", "n_clusters": 6, "cluster_signal": 1.5}
HPF_TABLE = {"model": "hpf", "n_factors": 5, "a": 0.3, "a_prime": 1.0, "b_prime": 1.0, "c": 0.3, "c_prime": 1.0}
PROFILE = {"model": "pareto", "m_low": 5, "alpha": 1.0, "m_high": 40}


@pytest.mark.parametrize("table, model", [(FACTOR, LatentFactor), (HPF_TABLE, HPF), (CLUSTERED, ClusteredFactor)])
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
@pytest.mark.parametrize("table", [FACTOR, CLUSTERED], ids=["factor", "clustered"])
def test_a_bad_factor_value_is_named(table, change, message):
    spec = {"preference": {**table, **change}, "observation": {"sampler": "uniform", "profile": PROFILE}}
    try:
        w = WorldSpec.model_validate(spec)
    except ValidationError as exc:
        assert message in str(exc)
        return
    problems = w.problems(PopulationSpec(n_users=60, n_items=80), "world[0]")
    assert any(p.startswith(f"world[0].preference: `{message}`") or message in p for p in problems), problems


@pytest.mark.parametrize("table", [FACTOR, CLUSTERED], ids=["factor", "clustered"])
def test_a_factor_world_too_large_in_cells_is_refused_before_work(table):
    spec = WorldSpec.model_validate({"preference": table, "observation": {"sampler": "uniform", "profile": PROFILE}})
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
        (
            "clustered",
            "preference",
            False,
            ["n_factors", "n_clusters", "signal", "cluster_signal", "pop_exponent", "lam", "activity_sd"],
        ),
        (
            "clustered",
            "preference",
            True,
            ["n_factors", "n_clusters", "signal", "cluster_signal", "pop_exponent", "lam", "activity_sd"],
        ),
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


@pytest.mark.parametrize(
    "change, message",
    [
        ({"n_clusters": 0}, "n_clusters"),
        ({"cluster_signal": -1.0}, "cluster_signal"),
        ({"n_clusters": 2.5}, "n_clusters"),
    ],
)
def test_a_bad_clustered_value_is_named(change, message):
    spec = {"preference": {**CLUSTERED, **change}, "observation": {"sampler": "uniform", "profile": PROFILE}}
    with pytest.raises(ValidationError, match=message):
        WorldSpec.model_validate(spec)


def test_clustered_spec_builds_its_model_counts_its_cluster_columns_and_searches_as_documented():
    spec = ClusteredFactorSpec.model_validate({**CLUSTERED, "activity_sd": 0.7})
    pop = PopulationSpec(n_users=60, n_items=80)
    model = spec.build(pop)
    assert model == ClusteredFactor(60, 80, 4, 6, 1.5, 1.5, 1.0, 30.0, 0.7)
    factor = LatentFactorSpec.model_validate(FACTOR)
    extra = spec.memory_bytes(model, pop) - factor.memory_bytes(factor.build(pop), pop)
    assert extra == 8.0 * 6 * (60 + 80)  # the G columns of (U + I) cells, 8 B
    assert "w.n_clusters" in spec.memory_keys("w") and "w.n_factors" in spec.memory_keys("w")
    dims = {d.name: d for d in ClusteredFactorSpec.search_space(REF)}
    assert (dims["n_clusters"].low, dims["n_clusters"].high) == (2, 100)
    assert dims["n_clusters"].integer and dims["n_clusters"].log
    assert (dims["n_factors"].low, dims["n_factors"].high, dims["n_factors"].integer) == (2, 50, True)
    assert all((dims[k].low, dims[k].high) == (0.0, 4.0) for k in ("signal", "cluster_signal", "pop_exponent"))
    assert (dims["activity_sd"].low, dims["activity_sd"].high) == pytest.approx((0.4, 1.6))
    point = {"n_factors": 7.0, "n_clusters": 13.0, "signal": 1.0, "cluster_signal": 2.0, "pop_exponent": 0.5}
    back = ClusteredFactorSpec.from_point({**point, "lam": 40.0, "activity_sd": 0.9}, REF)
    assert (back.n_factors, back.n_clusters, back.cluster_signal, back.n_items) == (7, 13, 2.0, REF.n_items)


#: The line of the spec's docstring (and the docs'), as a scenario writes it.
CLUSTERED_LINE = (
    'preference = { model = "clustered", n_factors = 10, n_clusters = 20, signal = 1.75, cluster_signal = 1.75, '
    "pop_exponent = 1.75, lam = 165.6 }"
)


def test_the_documented_clustered_line_is_a_valid_world():
    import simrec.config.models.clustered as mod

    assert " ".join(CLUSTERED_LINE.split()) in " ".join((mod.__doc__ or "").replace("``", "").split())
    table = tomllib.loads(CLUSTERED_LINE)["preference"]
    spec = WorldSpec.model_validate({"preference": table, "observation": {"sampler": "preference", "profile": PROFILE}})
    assert isinstance(spec.preference, ClusteredFactorSpec) and spec.label == "clustered-pref"


SCENARIO = """
name = "tiny-clustered"
seed = 3
replicates = 2

[population]
n_users = 60
n_items = 80

[[world]]
preference = { model = "clustered", n_factors = 3, n_clusters = 5, signal = 1.5, cluster_signal = 2.0, pop_exponent = 1.0, lam = 20.0 }
observation = { sampler = "preference", profile = { model = "pareto", m_low = 3, alpha = 1.0, m_high = 15 } }

[evaluation]
n = 5
metrics = ["precision", "recall"]
recommenders = [{ kind = "oracle" }, { kind = "popular" }]
"""


def test_a_clustered_world_runs_end_to_end_through_simrec_run(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from simrec.cli import app

    path = tmp_path / "tiny.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--quiet", "--no-figures"])
    assert res.exit_code == 0, res.output
    results = pd.read_parquet(out / "results.parquet")
    assert list(results["world"].unique()) == ["clustered-pref"]
    assert sorted(results["replicate"].unique()) == [0, 1] and results["value"].notna().all()
    assert set(results["recommender"]) == {"Oracle", "Popular"}
