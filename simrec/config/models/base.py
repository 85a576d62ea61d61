"""What every simulation model's spec provides: the contracts of preference, profile-size and sampler specs.

A model's spec is the TOML table of the model (``preference = { model = "ibp",
alpha = 60.0, c = 5.0, sigma = 0.6 }``). It validates its own keys, and it is
the only place that knows what the model's parameters mean: it builds the
library object, counts the model's items, states the rules that need more
than one key, the model's share of a job's memory and, for calibration, its
search space. The world, the memory budget and the calibration ask the spec;
none of them names a model (``docs/design.md``, "Adding a model").
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, get_args

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.base import Strict

if TYPE_CHECKING:
    from simrec.preference import PreferenceModel

__all__ = [
    "Sizes",
    "PopulationSpec",
    "BasePreferenceSpec",
    "BaseProfileSpec",
    "BaseSamplerSpec",
    "lam_dim",
    "lam_problems",
]


class Sizes(Protocol):
    """What a model needs of its population: ``n_users`` and ``n_items`` (a :class:`PopulationSpec`, a
    :class:`~simrec.calibration.space.ReferenceShape`)."""

    @property
    def n_users(self) -> int: ...

    @property
    def n_items(self) -> int: ...


class PopulationSpec(Strict):
    n_users: int = Field(ge=1)
    n_items: int = Field(ge=1)


class BasePreferenceSpec(Strict):
    """A preference model's spec (a member of :data:`~simrec.config.models.PREFERENCE_MODELS`).

    Subclasses annotate ``model`` with their tag (``model: Literal["ibp"]``),
    declare their parameters as pydantic fields and implement the abstract
    methods; the others have defaults that fit a model whose item count is
    known and whose memory is its pairs and items.
    """

    model: str
    #: How messages name :meth:`item_count` (an IBP's is random: "expected number of items of this IBP").
    item_count_label: ClassVar[str] = "number of items"

    @abstractmethod
    def build(self, population: Sizes) -> PreferenceModel:
        """The library model (:mod:`simrec.preference`) for ``population``; ValueError or TypeError for
        parameters that break its rules."""

    def item_count(self, population: Sizes) -> int:
        """The number of items of a world of this model, for checks against list lengths and profile sizes:
        the model's expected item count, rounded down."""
        return int(self.build(population).expected_items())

    def problems(self, population: Sizes, where: str, items: int) -> list[str]:
        """Rules that need more than one key (``where``: this table's key path; ``items``: :meth:`item_count`)."""
        return []

    @abstractmethod
    def memory_keys(self, where: str) -> list[str]:
        """The keys that change the model's size (pairs, items), as key paths (``where``: this table's)."""

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        """Bytes one replicate holds beyond the budget's per pair and per item costs (e.g. LDA's topic
        matrices); ``model`` is :meth:`build`'s."""
        return 0.0

    @staticmethod
    @abstractmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        """The model's calibration dimensions on a reference dataset, in a fixed order (Tian 2019, Table 2)."""

    @classmethod
    @abstractmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> BasePreferenceSpec:
        """The spec at a point of :meth:`search_space`."""


class BaseProfileSpec(Strict):
    """A profile-size model's spec (a member of :data:`~simrec.config.models.PROFILE_MODELS`)."""

    model: str

    @abstractmethod
    def build(self) -> Any:
        """The library model (:mod:`simrec.observation`): ``sample(capacity, rng) -> sizes``."""

    def problems(self, items: int, where: str, items_label: str) -> list[str]:
        """Rules against the world's item count (``items``, named ``items_label`` in messages)."""
        return []

    def expected_size(self) -> float:
        """The mean profile size before any capacity cap (the model's ``ppf`` at 1,000 midpoint quantiles, sizes
        at least 1): the time estimate's observed pairs per user (:mod:`simrec.config.cost`)."""
        import numpy as np

        sizes = np.maximum(1.0, np.floor(self.build().ppf((np.arange(1000) + 0.5) / 1000)))
        return float(sizes.mean())


class BaseSamplerSpec(Strict):
    """An observation sampler's spec (a member of :data:`~simrec.config.models.SAMPLER_MODELS`).

    Written ``sampler = "popularity"`` when it has no keys to set (or all at
    their defaults), else as a table ``sampler = { model = "...", ... }``; it
    is dumped the same way, so a world's digest and preset files keep the
    bare name.
    """

    model: str
    #: The sampler's part of a calibration cell's name (``"pop"`` in ``"ibp-pop"``).
    cell: ClassVar[str]

    @abstractmethod
    def build(self) -> Any:
        """The library sampler (:mod:`simrec.observation`): ``sample(truth, sizes, rng) -> Interactions``."""

    def memory_keys(self, where: str) -> list[str]:
        """Keys that change what the sampler adds to a replicate's memory (none for a subset of the truth)."""
        return []

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        """Bytes the sampler adds to one replicate beyond the truth's budget (0: it keeps a subset of the truth)."""
        return 0.0

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        """The sampler's calibration dimensions (none for a sampler without parameters); their names must
        differ from every preference model's and the profile's (prefix them, e.g. ``obs_pop_exponent``)."""
        return []

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> BaseSamplerSpec:
        """The spec at a point of :meth:`search_space` (default: the sampler at its defaults)."""
        (tag,) = get_args(cls.model_fields["model"].annotation)
        return cls.model_validate({"model": tag})

    @model_serializer(mode="wrap")
    def _bare_tag(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return data["model"] if isinstance(data, dict) and list(data) == ["model"] else data


# -- shared by the models with a mean number of likes per user ------------------------------------------------------
def lam_dim(ref: ReferenceShape) -> Dim:
    """λ's calibration range: (s̄/2, min(I, 20 s̄)), log scale (s̄ the reference's mean profile, I its items)."""
    return Dim(
        "lam",
        max(1.0, ref.mean_profile / 2),
        max(min(float(ref.n_items), 20 * ref.mean_profile), ref.mean_profile + 1),
        log=True,
    )


def lam_problems(lam: float, items: int, where: str) -> list[str]:
    """A mean number of likes per user above the number of items."""
    if lam > items:
        return [
            f"{where}.lam: must be <= the number of items ({items}): a user cannot like "
            f"more items than there are; got {lam:g}"
        ]
    return []
