"""Model specs: build, search spaces, points, presets (one place per model)."""

from __future__ import annotations

import tomllib

import pytest
from pydantic import ValidationError

from simrec.calibration import ReferenceShape
from simrec.config.models import PREFERENCE_SPECS, CellSpec, PopulationSpec, WorldSpec
from simrec.config.presets import preset_tables, to_toml
from simrec.observation import PopularitySampler, TruncatedPareto
from simrec.preference import IBP, LDA, Uniform

REF = ReferenceShape(n_users=943, n_items=1682, min_profile=20, mean_profile=106.0, max_profile=737)


def test_world_builds_typed_models():
    w = WorldSpec.model_validate(
        {
            "preference": {"model": "lda", "n_topics": 5, "lam": 30.0, "a": 0.1, "b": 0.05},
            "observation": {
                "sampler": "popularity",
                "profile": {"model": "pareto", "m_low": 5, "alpha": 1.0, "m_high": 90},
            },
        }
    )
    world = w.build(PopulationSpec(n_users=50, n_items=70))
    assert isinstance(world.preference, LDA) and world.preference.n_items == 70 and world.preference.n_users == 50
    assert isinstance(world.profile, TruncatedPareto) and isinstance(world.sampler, PopularitySampler)
    assert world.name == "lda-pop" and world.observation_label == "popularity"
    with pytest.raises(ValidationError, match="a world needs `preset`"):
        WorldSpec.model_validate({"name": "x"})


@pytest.mark.parametrize("pref, model", [("uniform", Uniform), ("ibp", IBP), ("lda", LDA)])
def test_every_point_of_a_cell_builds_its_models(pref, model):
    cell = CellSpec(preference=pref, observation="uniform")
    dims = cell.search_space(REF)
    names = [d.name for d in dims]
    assert names[-3:] == ["m_low", "pareto_alpha", "m_high"]
    assert names[:-3] == [d.name for d in PREFERENCE_SPECS[pref].search_space(REF)]
    for corner in ("low", "high"):
        point = {d.name: (int(getattr(d, corner)) if d.integer else getattr(d, corner)) for d in dims}
        p, profile, sampler = cell.models(point, REF)
        assert isinstance(p, model) and p.n_users == REF.n_users
        assert profile.m_low == point["m_low"] and profile.alpha == point["pareto_alpha"]


def test_preset_tables_are_a_world_a_scenario_reads():
    cell = CellSpec(preference="ibp", observation="popularity")
    point = {"alpha": 100.0, "c": 2.0, "sigma": 0.1, "m_low": 18.0, "pareto_alpha": 0.5, "m_high": 650.0}
    tables = preset_tables(cell, point, REF, "ml-100k", {"average_loss": 5.0})
    # key order and content as the committed presets (simrec/presets/ml-100k/*.toml)
    assert list(tables) == ["reference", "preference", "observation", "fit"]
    assert tables["preference"] == {"model": "ibp", "alpha": 100.0, "c": 2.0, "sigma": 0.1}
    assert tables["observation"] == {
        "sampler": "popularity",
        "profile": {"model": "pareto", "m_low": 18.0, "alpha": 0.5, "m_high": 650.0},
    }
    back = tomllib.loads(to_toml(tables))
    world = WorldSpec.model_validate({"preference": back["preference"], "observation": back["observation"]})
    assert world == cell.world_spec(point, REF)
