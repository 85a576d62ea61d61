"""Tagged unions that are registries (simrec.config.union): tags from the Literal types, pydantic's messages."""

from __future__ import annotations

from typing import Annotated, Literal, Union

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from simrec.config.base import Strict
from simrec.config.models import (
    PREFERENCE_MODELS,
    PROFILE_MODELS,
    SAMPLER_MODELS,
    CellSpec,
    ClusteredFactorSpec,
    HPFSpec,
    IBPSpec,
    LatentFactorSpec,
    LDASpec,
    ObservationSpec,
    PopularitySamplerSpec,
    UniformSpec,
    WorldSpec,
)
from simrec.config.recommenders import RECOMMENDERS
from simrec.config.sources import SOURCES
from simrec.config.union import SpecUnion, literal_choices


def test_tags_come_from_the_members_literals_in_simrecs_fixed_order():
    # calibration seeds index the preference models and samplers: these orders must never change
    # (the thesis's first, then issue 24's appended: the thesis cells keep their seeds)
    assert PREFERENCE_MODELS.tags == ("uniform", "ibp", "lda", "hpf", "factor", "clustered")
    assert SAMPLER_MODELS.tags == ("uniform", "popularity", "preference")
    assert PROFILE_MODELS.tags == ("pareto", "beta_binomial")
    assert RECOMMENDERS.tags == ("oracle", "probabilistic_oracle", "popular", "random", "lenskit")
    assert SOURCES.tags == ("simulation", "dataset", "file")
    assert PREFERENCE_MODELS["ibp"] is IBPSpec and "lda" in PREFERENCE_MODELS and "gaussian" not in PREFERENCE_MODELS


def test_a_member_needs_one_literal_tag_of_its_own():
    class NoTag(Strict):
        model: str

    class TwoTags(Strict):
        model: Literal["a", "b"]

    class Ibp2(Strict):
        model: Literal["ibp"]

    for cls in (NoTag, TwoTags):
        with pytest.raises(TypeError, match="must annotate `model` with a Literal of one string"):
            SpecUnion("model", cls)
    with pytest.raises(TypeError, match="'ibp' is already IBPSpec; Ibp2 cannot take it"):
        SpecUnion("model", UniformSpec, IBPSpec, Ibp2)


def test_extended_restores_the_members_even_after_an_error():
    class Toy(Strict):
        model: Literal["toy"]

    union = SpecUnion("model", UniformSpec)
    with pytest.raises(RuntimeError), union.extended(Toy):
        assert union.tags == ("uniform", "toy")
        raise RuntimeError
    assert union.tags == ("uniform",)


class _Holder(Strict):
    preference: Annotated[
        UniformSpec | IBPSpec | LDASpec | HPFSpec | LatentFactorSpec | ClusteredFactorSpec, PREFERENCE_MODELS
    ]


#: The same union as pydantic's own discriminated union (the reference for the messages).
_PYDANTIC = TypeAdapter(
    Annotated[
        Union[UniformSpec, IBPSpec, LDASpec, HPFSpec, LatentFactorSpec, ClusteredFactorSpec],
        Field(discriminator="model"),
    ]
)  # noqa: UP007


@pytest.mark.parametrize(
    "value",
    [{"model": "gaussian"}, {"lam": 3.0}, "ibp", 3, None, [], {"model": 1}],
    ids=["unknown tag", "no tag", "a string", "a number", "none", "a list", "a non-string tag"],
)
def test_a_refused_table_gets_pydantics_discriminated_union_message(value):
    with pytest.raises(ValidationError) as ours:
        _Holder.model_validate({"preference": value})
    with pytest.raises(ValidationError) as theirs:
        _PYDANTIC.validate_python(value)
    got = [(e["loc"], e["type"], e["msg"]) for e in ours.value.errors()]
    assert got == [(("preference", *e["loc"]), e["type"], e["msg"]) for e in theirs.value.errors()]


def test_a_members_errors_have_no_tag_in_their_key_path():
    with pytest.raises(ValidationError) as ours:
        _Holder.model_validate({"preference": {"model": "ibp", "alpha": -1, "c": 1.0, "sigma": 2, "beta": 0}})
    with pytest.raises(ValidationError) as theirs:
        _PYDANTIC.validate_python({"model": "ibp", "alpha": -1, "c": 1.0, "sigma": 2, "beta": 0})
    assert [(e["loc"], e["msg"]) for e in ours.value.errors()] == [
        (("preference", *e["loc"][1:]), e["msg"]) for e in theirs.value.errors()
    ]
    assert {e["loc"] for e in ours.value.errors()} == {("preference", k) for k in ("alpha", "sigma", "beta")}


def test_a_member_instance_is_taken_as_is():
    spec = LDASpec(model="lda", n_topics=3, lam=2.0, a=0.1, b=0.1)
    assert _Holder(preference=spec).preference is spec


def test_a_sampler_is_its_bare_tag_or_a_table_and_dumps_as_its_tag():
    profile = {"model": "pareto", "m_low": 2, "alpha": 1.0, "m_high": 10}
    bare = ObservationSpec.model_validate({"sampler": "popularity", "profile": profile})
    table = ObservationSpec.model_validate({"sampler": {"model": "popularity"}, "profile": profile})
    assert bare == table and isinstance(bare.sampler, PopularitySamplerSpec)
    assert (
        bare.model_dump()["sampler"] == "popularity" == table.model_dump(mode="json", exclude_defaults=True)["sampler"]
    )
    with pytest.raises(ValidationError) as info:
        ObservationSpec.model_validate({"sampler": "pop", "profile": profile})
    (e,) = info.value.errors()
    assert e["loc"] == ("sampler",) and e["msg"] == "Input should be 'uniform', 'popularity' or 'preference'"


def test_a_tag_field_lists_the_unions_tags_as_a_literal_would():
    assert literal_choices(("a",)) == "'a'" and literal_choices(("a", "b", "c")) == "'a', 'b' or 'c'"
    for bad in ("gaussian", 3):
        with pytest.raises(ValidationError) as ours:
            CellSpec(preference=bad, observation="uniform")  # type: ignore[arg-type]
        with pytest.raises(ValidationError) as theirs:
            TypeAdapter(Literal["uniform", "ibp", "lda", "hpf", "factor", "clustered"]).validate_python(bad)
        assert ours.value.errors()[0]["msg"] == theirs.value.errors()[0]["msg"]
        assert ours.value.errors()[0]["loc"] == ("preference",)


_OBS = {"sampler": "uniform", "profile": {"model": "pareto", "m_low": 2, "alpha": 1.0, "m_high": 10}}


@pytest.mark.parametrize(
    "table,errors",
    [
        ({"preference": {"model": "uniform", "lam": 3.0}}, [((), "a world needs `preset`, or both")]),
        ({"observation": _OBS}, [((), "a world needs `preset`, or both")]),
        ({}, [((), "a world needs `preset`, or both")]),
        # other problems of the table come first, as when the models were optional keys
        ({"preference": {"model": "uniform", "lam": -3.0}}, [(("preference", "lam"), "greater than 0")]),
        ({"name": "../x"}, [(("name",), "must be 1-64 letters")]),
    ],
)
def test_a_world_without_preset_needs_both_models(table, errors):
    with pytest.raises(ValidationError) as info:
        WorldSpec.model_validate(table)
    got = info.value.errors()
    assert [e["loc"] for e in got] == [loc for loc, _ in errors]
    assert all(msg in e["msg"] for e, (_, msg) in zip(got, errors))


def test_a_validated_world_always_has_both_models():
    w = WorldSpec.model_validate(
        {
            "preset": "ml-100k/ibp-pop",
            "preference": {"model": "ibp", "alpha": 5.0, "c": 1.0, "sigma": 0.1},
            "observation": _OBS,
        }
    )
    assert w.label == "ibp-pop" and w.preference.model == "ibp" and w.observation.sampler.model == "uniform"
    with pytest.raises(ValidationError, match="observation"):  # a preset's tables are merged by the loader, not here
        WorldSpec.model_validate({"preset": "ml-100k/ibp-pop", "preference": {"model": "uniform", "lam": 3.0}})
