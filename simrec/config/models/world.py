"""A world (one preference x observation model) and a calibration cell, over the models' specs.

Nothing here names a model: what a model means (its items, rules, memory,
search space) is asked of its spec (:mod:`simrec.config.models.base`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import InitErrorDetails

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.base import SafeName, Strict, check_safe_name
from simrec.config.budget import BYTES_PER_ITEM, BYTES_PER_PAIR, BYTES_PER_SCORE, SCORE_BLOCK_USERS, Need
from simrec.config.cost import Work
from simrec.config.models.base import Sizes
from simrec.config.models.profiles import ParetoSpec
from simrec.config.models.ratings import RatingsSpec
from simrec.config.models.registry import (
    PREFERENCE_MODELS,
    SAMPLER_MODELS,
    PreferenceSpec,
    PreferenceTag,
    ProfileSpec,
    SamplerSpec,
    SamplerTag,
)

if TYPE_CHECKING:
    from simrec.config.recommenders import BaseRecommenderSpec
    from simrec.experiment import World

__all__ = ["ObservationSpec", "WorldSpec", "CellSpec", "cell_name"]


class ObservationSpec(Strict):
    """Profile sizes and the sampler that picks the observed pairs (uniform = MAR, popularity = MNAR, preference =
    popularity and preference, with consumed dislikes); optionally ``ratings`` on the observed pairs (the sampler
    is then wrapped in :class:`~simrec.observation.Rated`)."""

    sampler: SamplerSpec
    profile: ProfileSpec
    ratings: RatingsSpec | None = None

    def build(self) -> tuple[Any, Any]:
        """``(profile_model, sampler)``."""
        sampler = self.sampler.build()
        return self.profile.build(), sampler if self.ratings is None else self.ratings.wrap(sampler)

    def problems(self, items: int, where: str, items_label: str) -> list[str]:
        """Rules against the world's item count (``items``, named ``items_label``) and the ratings' scale."""
        out = self.profile.problems(items, f"{where}.profile", items_label)
        return out + (self.ratings.problems(f"{where}.ratings") if self.ratings is not None else [])


_INCOMPLETE = "a world needs `preset`, or both `preference` and `observation`"


class WorldSpec(Strict):
    """One preference x observation model (a cell of the thesis's design), complete.

    In a file a world has ``preset`` (a calibrated cell, e.g.
    ``"ml-100k/ibp-pop"`` or a preset file's path) or both ``preference`` and
    ``observation``; the loader merges a preset's tables into the world's
    table before validation (explicit tables win,
    :func:`simrec.config.files.merge_presets`), so a validated world always
    has both, and ``preset`` only names where they came from.
    """

    name: SafeName | None = None
    preset: str | None = None
    preference: PreferenceSpec
    observation: ObservationSpec

    @model_validator(mode="wrap")
    @classmethod
    def _complete(cls, data: Any, handler: ModelWrapValidatorHandler[WorldSpec]) -> WorldSpec:
        """A table without ``preset`` and without one of the models is refused with one message (other
        problems of the table first, as when the models were optional)."""
        if not isinstance(data, dict) or data.get("preset") is not None or {"preference", "observation"} <= set(data):
            return handler(data)
        try:
            handler(data)
        except ValidationError as exc:
            missing = {("preference",), ("observation",)}
            others = [e for e in exc.errors() if not (e["type"] == "missing" and tuple(e["loc"]) in missing)]
            if others:
                details = [
                    InitErrorDetails(type=e["type"], loc=tuple(e["loc"]), input=e["input"], ctx=e.get("ctx", {}))
                    for e in others
                ]
                raise ValidationError.from_exception_data(exc.title, details) from None
        raise ValueError(_INCOMPLETE)

    @classmethod
    def from_preset(cls, name: str, base: str | Path | None = None) -> WorldSpec:
        """The world of a calibrated preset alone: its ``preference`` and ``observation`` tables
        (:func:`simrec.config.files.load_preset`: a shipped ``"<dataset>/<cell>"`` or a ``.toml`` path relative to
        ``base``), validated, with ``preset = name``. KeyError for an unknown shipped name, ValueError (a
        pydantic ValidationError among them) for a file or tables that are not a world's."""
        from simrec.config.files import load_preset

        tables = load_preset(name, base)
        return cls.model_validate({"preset": name, **{k: tables[k] for k in ("preference", "observation")}})

    @property
    def label(self) -> str:
        """The world's name in results: ``name``, else the preset's cell, else ``<model>-<pop|unif>``."""
        if self.name:
            return self.name
        if self.preset:
            return self.preset.replace("\\", "/").split("/")[-1].removesuffix(".toml")
        return cell_name(self.preference.model, self.observation.sampler.model, self.observation.ratings is not None)

    def item_count(self, population: Sizes) -> int:
        """The world's number of items (its preference model's, :meth:`BasePreferenceSpec.item_count
        <simrec.config.models.base.BasePreferenceSpec.item_count>`), for checks against list lengths and profile
        sizes."""
        return self.preference.item_count(population)

    def problems(self, population: Sizes, where: str) -> list[str]:
        """Rules of the world that need more than one key: its models are built once.

        ``where`` prefixes each message with the world's key path (e.g. ``world[2]``).
        """
        problems = []
        for key, build in (
            ("preference", lambda: self.preference.build(population)),
            ("observation", self.observation.build),
        ):
            try:
                build()
            except (ValueError, TypeError) as exc:
                problems.append(f"{where}.{key}: {exc}")
        if problems:
            return problems
        try:
            check_safe_name(self.label)
        except ValueError as exc:
            problems.append(f"{where}: the world's name {self.label!r} (from its preset) {exc}; set `name`")
        items = self.item_count(population)
        problems += self.preference.problems(population, f"{where}.preference", items)
        problems += self.observation.problems(items, f"{where}.observation", self.preference.item_count_label)
        return problems

    def work(
        self,
        population: Sizes,
        recommenders: Sequence[BaseRecommenderSpec] = (),
        *,
        max_users: int | None = None,
        test_fraction: float = 0.2,
    ) -> Work:
        """One replicate (:mod:`simrec.config.cost`): its expected true pairs, and each of ``recommenders``
        fitted to the training pairs and scoring every evaluated user (at most ``max_users``) x expected item."""
        truth, items, users, observed = self._sizes(population)
        scored = min(users, float(max_users or users))
        train = (1.0 - test_fraction) * observed
        return Work.total([Work(pairs=truth), *(r.work(scored, items, train_pairs=train) for r in recommenders)])

    def loo_work(
        self, population: Sizes, recommenders: Sequence[BaseRecommenderSpec] = (), *, max_users: int | None = None
    ) -> Work:
        """One leave-one-out replicate ranked with its truth (:func:`simrec.stress.simulate_loo_data`,
        :func:`simrec.stress.score_ranks`): its true pairs, each recommender fitted and scoring the evaluated users
        (at most ``max_users``), the held-out item's and every truly relevant item's rank among the items."""
        truth, items, users, observed = self._sizes(population)
        scored = min(users, float(max_users or users))
        relevant = max(0.0, truth - (observed - users)) / users  # true likes not trained on, per user
        ranked = Work(ranked=scored * items * (1.0 + relevant))
        return Work.total(
            [Work(pairs=truth), *(r.work(scored, items, train_pairs=observed - users) + ranked for r in recommenders)]
        )

    def _sizes(self, population: Sizes) -> tuple[float, float, float, float]:
        """Expected true pairs, items, users and observed pairs (profile sizes capped by the true likes)."""
        model = self.preference.build(population)
        truth, users = float(model.expected_pairs()), float(population.n_users)
        observed = users * min(self.observation.profile.expected_size(), truth / max(users, 1.0))
        return truth, float(model.expected_items()), users, observed

    def memory_need(self, population: Sizes, where: str, *, n_lists: int, score_users: int) -> Need:
        """One replicate of the world (truth -> observe -> split -> ``n_lists`` lists per user; dense score
        blocks over ``score_users`` users if nonzero), :mod:`simrec.config.budget`'s costs."""
        pref, sampler = self.preference, self.observation.sampler
        model = pref.build(population)
        pairs = float(model.expected_pairs())
        items = float(model.expected_items())
        users = float(population.n_users)
        total = BYTES_PER_PAIR * pairs + BYTES_PER_ITEM * items + 8.0 * users * n_lists
        if score_users:
            total += BYTES_PER_SCORE * min(users, SCORE_BLOCK_USERS, score_users) * items
        total += pref.memory_bytes(model, population) + sampler.memory_bytes(model, population)
        keys = [
            "population.n_users",
            *pref.memory_keys(f"{where}.preference"),
            *sampler.memory_keys(f"{where}.observation.sampler"),
        ]
        what = f"{where} ({self.label}): about {pairs:.2g} expected true pairs and {items:.2g} items per replicate" + (
            " with dense score blocks" if score_users else ""
        )
        return Need(what, ", ".join(keys), total)

    def build(self, population: Sizes, name: str | None = None, max_pairs: int | None = None) -> World:
        """The :class:`~simrec.experiment.World` (its models built for ``population``; ``max_pairs``: its
        generator's memory guard, default the library's)."""
        profile, sampler = self.observation.build()
        from simrec.experiment import World  # not at import: a scenario parsed to stress a ranks file needs no world

        return World(name or self.label, self.preference.build(population), profile, sampler, max_pairs)


def cell_name(preference: str, sampler: str, rated: bool = False) -> str:
    """``"ibp-pop"`` for (``"ibp"``, ``"popularity"``), ``"lda-unif"`` for (``"lda"``, ``"uniform"``): the
    preference model's tag and the sampler's :attr:`~simrec.config.models.base.BaseSamplerSpec.cell`
    (``"hpf-pref-rated"`` for a cell with ratings)."""
    return f"{preference}-{SAMPLER_MODELS[sampler].cell}" + ("-rated" if rated else "")


class CellSpec(Strict):
    """A calibration cell: a preference model and a sampler, profile sizes truncated Pareto, optionally ratings.

    Implements what :class:`simrec.calibration.Objective` needs of a cell:
    ``search_space(ref)`` and ``models(point, ref)``. A sampler with
    parameters (the preference sampler) has them searched too
    (:meth:`BaseSamplerSpec.search_space <simrec.config.models.base.BaseSamplerSpec.search_space>`);
    ``ratings`` gives the dataset's rating scale and ``min_rating``, and adds
    the ratings' shape and noise to the search (:class:`RatingsSpec`).
    """

    preference: PreferenceTag
    observation: SamplerTag
    ratings: RatingsSpec | None = None

    @property
    def name(self) -> str:
        return cell_name(self.preference, self.observation, self.ratings is not None)

    def search_space(self, ref: ReferenceShape) -> list[Dim]:
        """The cell's dimensions in a fixed order: the preference model's, the profile's, the sampler's, then the
        ratings' (the thesis's cells: the preference model's and the profile's)."""
        # a rated world's profiles count consumed (rated) items, before its min_rating keeps some of them
        profile_ref = ref.consumed() if self.ratings is not None and self.ratings.min_rating is not None else ref
        dims = PREFERENCE_MODELS[self.preference].search_space(ref) + ParetoSpec.search_space(profile_ref)
        dims += SAMPLER_MODELS[self.observation].search_space(ref)
        return dims + (RatingsSpec.search_space() if self.ratings is not None else [])

    def world_spec(self, point: dict[str, Any], ref: ReferenceShape, name: str | None = None) -> WorldSpec:
        """The world at a point of the search space (the spec a preset file holds)."""
        pref = PREFERENCE_MODELS[self.preference].from_point(point, ref)
        sampler = SAMPLER_MODELS[self.observation].from_point(point, ref)
        ratings = None if self.ratings is None else self.ratings.at_point(point)
        obs = ObservationSpec(sampler=sampler, profile=ParetoSpec.from_point(point), ratings=ratings)
        return WorldSpec(name=name, preference=pref, observation=obs)

    def models(self, point: dict[str, Any], ref: ReferenceShape) -> tuple[Any, Any, Any]:
        """``(preference_model, profile_model, sampler)`` at a point; ValueError for impossible parameters."""
        w = self.world_spec(point, ref).build(ref)
        return w.preference, w.profile, w.sampler
