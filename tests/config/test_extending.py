"""Adding a model is one spec class plus one entry in its union (issue 23), proven with toys defined here.

A toy preference model (``band``: each user likes ``width`` consecutive items
from a random start), a toy observation sampler with a parameter
(``inverse_popularity``: the popularity sampler with a negative exponent) and
a toy recommender (``least_popular``) are library objects and specs written
in this file only. Registered in simrec's unions for the duration of a test
(:meth:`simrec.config.union.SpecUnion.extended`, the test's stand-in for the
line a new model adds to ``simrec/config/models/registry.py``), they run
end to end through ``simrec run``: validation with their own rules and key
paths, the memory budget with their own keys, replicates, results; and a
calibration cell of the toy model has its search space. Nothing in simrec
names them.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from pydantic import Field
from typer.testing import CliRunner

from simrec._random import RNGLike, as_generator
from simrec._validation import check_pairs_budget
from simrec.calibration.space import Dim, ReferenceShape
from simrec.cli import app
from simrec.config import ScenarioError
from simrec.config.models import (
    PREFERENCE_MODELS,
    PREFERENCE_SPECS,
    SAMPLER_MODELS,
    BasePreferenceSpec,
    BaseSamplerSpec,
    CellSpec,
    Sizes,
)
from simrec.config.recommenders import RECOMMENDERS, BaseRecommenderSpec
from simrec.config.run import load_scenario
from simrec.interactions import Interactions
from simrec.observation import PopularitySampler
from simrec.recommenders import top_n


# -- the toys' library objects (what simrec/preference/, simrec/observation/, simrec/recommenders/ would hold) ----------
@dataclass(frozen=True)
class Band:
    """Each user likes ``min(width, n_items)`` consecutive items (wrapping around) from a random start."""

    n_users: int
    n_items: int
    width: int

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"`width` must be >= 1; got {self.width}")

    def expected_pairs(self) -> float:
        return float(self.n_users * min(self.width, self.n_items))

    def expected_items(self) -> float:
        return float(self.n_items)

    def generate(self, rng: RNGLike, *, max_pairs: int | None = None) -> Interactions:
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        start = as_generator(rng).integers(0, self.n_items, self.n_users)
        width = min(self.width, self.n_items)
        items = (start[:, None] + np.arange(width)) % self.n_items
        users = np.repeat(np.arange(self.n_users), width)
        return Interactions.from_pairs(users, items.ravel(), (self.n_users, self.n_items))


class LeastPopular:
    """The least popular candidates first (ties by item index)."""

    name = "LeastPopular"

    def score(self, train: Interactions, relevant=None, rng: RNGLike = None, users=None) -> np.ndarray:
        rows = np.arange(train.n_users) if users is None else np.asarray(users)
        scores = np.tile(-train.item_counts().astype(np.float64), (len(rows), 1))
        seen = sp.csr_array(train.matrix[rows]).nonzero()
        scores[seen] = -np.inf
        return scores

    def recommend(self, train: Interactions, relevant, n: int, rng: RNGLike = None) -> np.ndarray:
        return top_n(self.score(train, relevant, rng), n)


# -- their specs: each one class, as a new file of simrec would hold it ------------------------------------------------
class BandSpec(BasePreferenceSpec):
    """``preference = { model = "band", width = 12 }``."""

    model: Literal["band"]
    width: int = Field(ge=1)

    def build(self, population: Sizes) -> Band:
        return Band(population.n_users, population.n_items, self.width)

    def problems(self, population: Sizes, where: str, items: int) -> list[str]:
        """A band wider than the catalogue (the library takes every item; a scenario says what it means)."""
        return (
            [f"{where}.width: must be <= the number of items ({items}); got {self.width}"] if self.width > items else []
        )

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.width"]

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        return [Dim("width", 1, max(2, int(2 * ref.mean_profile)), integer=True)]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> BandSpec:
        return cls(model="band", width=int(point["width"]))


class InversePopularitySpec(BaseSamplerSpec):
    """``sampler = "inverse_popularity"`` or ``sampler = { model = "inverse_popularity", exponent = -0.5 }``."""

    model: Literal["inverse_popularity"]
    exponent: float = Field(default=-1.0, lt=0)
    cell: ClassVar[str] = "inv"

    def build(self) -> PopularitySampler:
        return PopularitySampler(exponent=self.exponent)


class LeastPopularSpec(BaseRecommenderSpec):
    """``{ kind = "least_popular" }``."""

    kind: Literal["least_popular"]

    def build(self) -> LeastPopular:
        return LeastPopular()


@pytest.fixture
def toys():
    """The toys registered in simrec's unions (one entry each), for this test only."""
    with (
        PREFERENCE_MODELS.extended(BandSpec),
        SAMPLER_MODELS.extended(InversePopularitySpec),
        RECOMMENDERS.extended(LeastPopularSpec),
    ):
        yield


SCENARIO = """
name = "toys"
seed = 5
replicates = 2

[population]
n_users = 60
n_items = 90

[[world]]
preference = { model = "band", width = 12 }
observation = { sampler = "inverse_popularity", profile = { model = "pareto", m_low = 2, alpha = 1.0, m_high = 10 } }

[[world]]
name = "band-half"
preference = { model = "band", width = 20 }
observation = { sampler = { model = "inverse_popularity", exponent = -0.5 }, profile = { model = "pareto", m_low = 2, alpha = 1.0, m_high = 10 } }

[[world]]
preference = { model = "uniform", lam = 15.0 }
observation = { sampler = "popularity", profile = { model = "pareto", m_low = 2, alpha = 1.0, m_high = 10 } }

[evaluation]
n = 5
metrics = ["precision", "recall"]
recommenders = [{ kind = "oracle" }, { kind = "least_popular" }, { kind = "popular" }]
"""


def _write(tmp_path, text: str):
    p = tmp_path / "toys.toml"
    p.write_text(textwrap.dedent(text))
    return p


def test_toy_models_run_end_to_end_through_simrec_run(toys, tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app, ["run", str(_write(tmp_path, SCENARIO)), "--out", str(out), "--quiet", "--no-figures"]
    )
    assert res.exit_code == 0, res.output
    results = pd.read_parquet(out / "results.parquet")
    assert list(results["world"].unique()) == ["band-inv", "band-half", "uniform-pop"]
    assert set(results["recommender"]) == {"Oracle", "LeastPopular", "Popular"}
    assert sorted(results["replicate"].unique()) == [0, 1]
    assert results["value"].notna().all()
    # a band of 20 likes leaves every user >= 10 unseen ones: the oracle's 5 items are all true likes
    oracle = results.query("world == 'band-half' and recommender == 'Oracle' and metric == 'precision'")
    assert len(oracle) and (oracle[oracle["truth"] == "true"]["value"] == 1.0).all()
    # the toy sampler's parameter is part of the scenario's content (digest, manifest) in its table form
    content = json.loads((out / "manifest.json").read_text())["scenario_content"]
    samplers = [w["observation"]["sampler"] for w in content["world"]]
    assert samplers == [
        {"model": "inverse_popularity", "exponent": -1.0},
        {"model": "inverse_popularity", "exponent": -0.5},
        "popularity",
    ]


def test_toy_rules_and_key_paths_come_from_their_specs(toys, tmp_path):
    bad = SCENARIO.replace("width = 12", "width = 200").replace("exponent = -0.5", "exponent = 0.5")
    bad = bad.replace('{ kind = "popular" }', '{ kind = "least_popular", depth = 1 }')
    with pytest.raises(ScenarioError) as info:
        load_scenario(_write(tmp_path, bad))
    msg = str(info.value)
    assert "world[1].observation.sampler.exponent: Input should be less than 0; got 0.5" in msg
    assert "evaluation.recommenders[2].depth: unknown key" in msg
    with pytest.raises(ScenarioError, match=r"world\[0\]\.preference\.width: must be <= the number of items \(90\)"):
        load_scenario(_write(tmp_path, SCENARIO.replace("width = 12", "width = 200")))
    with pytest.raises(
        ScenarioError,
        match=r"does not match any of the expected tags: 'uniform', 'ibp', 'lda', 'hpf', 'factor', 'clustered', 'band'",
    ):
        load_scenario(_write(tmp_path, SCENARIO.replace('model = "band", width = 12', 'model = "bands"')))


def test_toy_memory_needs_name_its_keys(toys, tmp_path):
    huge = SCENARIO.replace("n_users = 60", "n_users = 60000000")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", str(_write(tmp_path, huge)), "--out", str(out), "--max-memory", "1G"])
    assert res.exit_code == 2 and not out.exists()
    assert "world[1] (band-half): about 1.2e+09 expected true pairs" in res.output
    assert "change population.n_users, world[1].preference.width" in res.output


def test_toy_cell_is_calibratable(toys):
    ref = ReferenceShape(n_users=50, n_items=80, min_profile=3, mean_profile=9.0, max_profile=30)
    cell = CellSpec(preference="band", observation="inverse_popularity")
    assert cell.name == "band-inv"
    assert [d.name for d in cell.search_space(ref)] == ["width", "m_low", "pareto_alpha", "m_high"]
    pref, profile, sampler = cell.models({"width": 7.0, "m_low": 3.0, "pareto_alpha": 1.0, "m_high": 30.0}, ref)
    assert isinstance(pref, Band) and pref.width == 7 and sampler.exponent == -1.0
    assert list(PREFERENCE_SPECS) == [
        "uniform",
        "ibp",
        "lda",
        "hpf",
        "factor",
        "clustered",
        "band",
    ]  # appended: the thesis cells keep their seeds


def test_the_unions_are_restored_after_the_test(tmp_path):
    assert PREFERENCE_MODELS.tags == ("uniform", "ibp", "lda", "hpf", "factor", "clustered")
    assert SAMPLER_MODELS.tags == ("uniform", "popularity", "preference")
    with pytest.raises(ScenarioError, match="Input tag 'band' found using 'model' does not match"):
        load_scenario(_write(tmp_path, SCENARIO))
