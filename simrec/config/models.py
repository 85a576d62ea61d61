"""Specs of the simulation models: preference, profile sizes, observation, world.

Each spec is the TOML table of one model (``preference = { model = "ibp",
alpha = 60.0, c = 5.0, sigma = 0.6 }``), validates itself, builds its library
object (``IBPSpec.build(population) -> IBP``), and — for calibration —
describes its search space on a reference dataset (``search_space(ref)``) and
builds from a point of it (``from_point(point, ref)``). These are the only
places that know what a model's parameters are.

Search spaces (Tian 2019, Table 2, derived from the reference data; shapes as
in the thesis, ranges as documented in :mod:`simrec.calibration.space`):

============  =====================================  =====================================
parameter     thesis Table 2                          simrec (reference with U users, I items,
                                                      profile sizes min s_lo, mean s̄, max s_hi)
============  =====================================  =====================================
Unif λ        (5, 2000)                               (s̄/2, min(I, 20 s̄)), log scale
IBP α         (10..20, 500..1000)                     (I/500, I/2) log scale
IBP c         (0.01, 100)                             (0.01, 100), log scale
IBP σ         (0, 0.99)                               (0, 0.99)
LDA K         (5, 200)                                (5, 200), integer
LDA λ         (5, 2000)                               as Unif λ
LDA a, b      (0.01, 1)                               (0.01, 1), log scale
Pareto m_low  ±20% of the smallest profile            (0.8 s_lo, 1.2 s_lo), at least 1
Pareto m_high ±20% of the largest profile             (0.8 s_hi, 1.2 s_hi), above m_low's range
Pareto α      (0.1, 20)                               (0.1, 20), log scale
============  =====================================  =====================================

The Pareto α is searched as ``pareto_alpha`` (IBP has an ``alpha`` too).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, Union

from pydantic import Field, model_validator

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.base import SafeName, Strict
from simrec.experiment import World

__all__ = [
    "Sizes",
    "PopulationSpec",
    "UniformSpec",
    "IBPSpec",
    "LDASpec",
    "PreferenceSpec",
    "PREFERENCE_SPECS",
    "ParetoSpec",
    "BetaBinomialSpec",
    "ProfileSpec",
    "ObservationSpec",
    "SAMPLERS",
    "WorldSpec",
    "CellSpec",
    "cell_name",
]


class Sizes(Protocol):
    """What a model needs of its population: ``n_users`` and ``n_items``."""

    n_users: int
    n_items: int


class PopulationSpec(Strict):
    n_users: int = Field(ge=1)
    n_items: int = Field(ge=1)


def _lam_dim(ref: ReferenceShape) -> Dim:
    return Dim(
        "lam",
        max(1.0, ref.mean_profile / 2),
        max(min(float(ref.n_items), 20 * ref.mean_profile), ref.mean_profile + 1),
        log=True,
    )


# -- preference models -------------------------------------------------------
class UniformSpec(Strict):
    """Uniform preferences (thesis §3.1.1): ``lam`` likes per user on average."""

    model: Literal["uniform"]
    lam: float = Field(gt=0, description="mean number of true likes per user")
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes):
        from simrec.preference import Uniform

        return Uniform(n_users=population.n_users, n_items=self.n_items or population.n_items, lam=self.lam)

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        return [_lam_dim(ref)]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> UniformSpec:
        return cls(model="uniform", lam=point["lam"], n_items=ref.n_items)


class IBPSpec(Strict):
    """Indian-buffet-process preferences (thesis §3.1.2): mass ``alpha``, concentration ``c``, discount ``sigma``."""

    model: Literal["ibp"]
    alpha: float = Field(gt=0)
    c: float
    sigma: float = Field(ge=0, lt=1)

    def build(self, population: Sizes):
        from simrec.preference import IBP

        return IBP(n_users=population.n_users, alpha=self.alpha, c=self.c, sigma=self.sigma)

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        """α spans the reference's item count over the (c, σ) space: α·H_U for σ = 0, c = 1;
        ≈ α·2√U/Γ(1.5) for σ = 0.5."""
        return [
            Dim("alpha", max(0.5, ref.n_items / 500), max(1.0, ref.n_items / 2), log=True),
            Dim("c", 0.01, 100.0, log=True),
            Dim("sigma", 0.0, 0.99),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> IBPSpec:
        return cls(model="ibp", alpha=point["alpha"], c=point["c"], sigma=point["sigma"])


class LDASpec(Strict):
    """LDA preferences (thesis §3.1.3): ``n_topics`` topics, ``lam`` likes per user, Dirichlet ``a`` (users), ``b`` (items)."""

    model: Literal["lda"]
    n_topics: int = Field(ge=1)
    lam: float = Field(gt=0)
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes):
        from simrec.preference import LDA

        return LDA(
            n_users=population.n_users,
            n_items=self.n_items or population.n_items,
            n_topics=self.n_topics,
            lam=self.lam,
            a=self.a,
            b=self.b,
        )

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        return [
            Dim("n_topics", 5, 200, integer=True),
            _lam_dim(ref),
            Dim("a", 0.01, 1.0, log=True),
            Dim("b", 0.01, 1.0, log=True),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> LDASpec:
        return cls(
            model="lda",
            n_topics=int(point["n_topics"]),
            lam=point["lam"],
            a=point["a"],
            b=point["b"],
            n_items=ref.n_items,
        )


PreferenceSpec = Annotated[Union[UniformSpec, IBPSpec, LDASpec], Field(discriminator="model")]
#: Preference specs by their TOML ``model`` tag, in simrec's fixed order (calibration seeds index it).
PREFERENCE_SPECS: dict[str, type[UniformSpec] | type[IBPSpec] | type[LDASpec]] = {
    "uniform": UniformSpec,
    "ibp": IBPSpec,
    "lda": LDASpec,
}


# -- observation ---------------------------------------------------------------
class ParetoSpec(Strict):
    """Truncated-Pareto profile sizes on [m_low, m_high] with tail index ``alpha`` (thesis §3.2.1)."""

    model: Literal["pareto"]
    m_low: float = Field(gt=0)
    alpha: float = Field(gt=0)
    m_high: float = Field(gt=0)
    redraw: bool = False

    def build(self):
        from simrec.observation import TruncatedPareto

        return TruncatedPareto(m_low=self.m_low, alpha=self.alpha, m_high=self.m_high, redraw=self.redraw)

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        m_low_hi = max(1.2 * ref.min_profile, 1.5)
        m_high_lo = max(0.8 * ref.max_profile, m_low_hi + 1)
        return [
            Dim("m_low", max(0.8 * ref.min_profile, 1.0), m_low_hi),
            Dim("pareto_alpha", 0.1, 20.0, log=True),
            Dim("m_high", m_high_lo, max(1.2 * ref.max_profile, m_high_lo + 1)),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float]) -> ParetoSpec:
        return cls(model="pareto", m_low=point["m_low"], alpha=point["pareto_alpha"], m_high=point["m_high"])


class BetaBinomialSpec(Strict):
    """Truncated beta-binomial profile sizes on [1, n_max] (thesis §3.2.1)."""

    model: Literal["beta_binomial"]
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    n_max: int = Field(ge=1)

    def build(self):
        from simrec.observation import TruncatedBetaBinomial

        return TruncatedBetaBinomial(a=self.a, b=self.b, n_max=self.n_max)


ProfileSpec = Annotated[Union[ParetoSpec, BetaBinomialSpec], Field(discriminator="model")]

#: Observation samplers by their TOML name, in simrec's fixed order (calibration seeds index it).
SAMPLERS: tuple[str, ...] = ("uniform", "popularity")


class ObservationSpec(Strict):
    """Profile sizes and the sampler that picks the observed likes (uniform = MAR, popularity = MNAR)."""

    sampler: Literal["uniform", "popularity"]
    profile: ProfileSpec

    def build(self):
        """``(profile_model, sampler)``."""
        from simrec.observation import PopularitySampler, UniformSampler

        return self.profile.build(), PopularitySampler() if self.sampler == "popularity" else UniformSampler()


class WorldSpec(Strict):
    """One preference x observation model (a cell of the thesis's design).

    Either ``preset`` (a calibrated cell, e.g. ``"ml-100k/ibp-pop"`` or a
    preset file's path) or both ``preference`` and ``observation``; explicit
    tables override the preset's (the loader merges them before validation).
    """

    name: SafeName | None = None
    preset: str | None = None
    preference: PreferenceSpec | None = None
    observation: ObservationSpec | None = None

    @model_validator(mode="after")
    def _complete(self) -> WorldSpec:
        if self.preset is None and (self.preference is None or self.observation is None):
            raise ValueError("a world needs `preset`, or both `preference` and `observation`")
        return self

    @property
    def label(self) -> str:
        """The world's name in results: ``name``, else the preset's cell, else ``<model>-<pop|unif>``."""
        if self.name:
            return self.name
        if self.preset:
            return self.preset.replace("\\", "/").split("/")[-1].removesuffix(".toml")
        return cell_name(self.preference.model, self.observation.sampler)  # type: ignore[union-attr]

    def item_count(self, population: Sizes) -> int:
        """The world's number of items: ``n_items`` of Uniform and LDA, the expected item count of an IBP
        (rounded down; its items are random), for checks against list lengths and profile sizes."""
        model = self.preference.build(population)  # type: ignore[union-attr]
        return int(model.expected_items()) if self.preference.model == "ibp" else int(model.n_items)  # type: ignore[union-attr]

    def build(self, population: Sizes, name: str | None = None, max_pairs: int | None = None) -> World:
        """The :class:`~simrec.experiment.World` (its models built for ``population``; ``max_pairs``: its
        generator's memory guard, default the library's)."""
        profile, sampler = self.observation.build()  # type: ignore[union-attr]
        return World(
            name or self.label,
            self.preference.build(population),
            profile,
            sampler,  # type: ignore[union-attr]
            max_pairs,
        )


def cell_name(preference: str, sampler: str) -> str:
    """``"ibp-pop"`` for (``"ibp"``, ``"popularity"``), ``"lda-unif"`` for (``"lda"``, ``"uniform"``)."""
    return f"{preference}-{'pop' if sampler == 'popularity' else 'unif'}"


class CellSpec(Strict):
    """A calibration cell: a preference model and a sampler, profile sizes truncated Pareto.

    Implements what :class:`simrec.calibration.Objective` needs of a cell:
    ``search_space(ref)`` and ``world(point, ref)``.
    """

    preference: Literal["uniform", "ibp", "lda"]
    observation: Literal["uniform", "popularity"]

    @property
    def name(self) -> str:
        return cell_name(self.preference, self.observation)

    def search_space(self, ref: ReferenceShape) -> list[Dim]:
        """The cell's dimensions in a fixed order: the preference model's, then the profile's."""
        return PREFERENCE_SPECS[self.preference].search_space(ref) + ParetoSpec.search_space(ref)

    def world_spec(self, point: dict[str, Any], ref: ReferenceShape, name: str | None = None) -> WorldSpec:
        """The world at a point of the search space (the spec a preset file holds)."""
        pref = PREFERENCE_SPECS[self.preference].from_point(point, ref)
        obs = ObservationSpec(sampler=self.observation, profile=ParetoSpec.from_point(point))
        return WorldSpec(name=name, preference=pref, observation=obs)

    def models(self, point: dict[str, Any], ref: ReferenceShape):
        """``(preference_model, profile_model, sampler)`` at a point; ValueError for impossible parameters."""
        w = self.world_spec(point, ref).build(ref)
        return w.preference, w.profile, w.sampler
