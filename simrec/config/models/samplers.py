"""The thesis's observation samplers' specs (thesis §3.2.2-3.2.3): ``sampler = "uniform"`` or ``"popularity"``."""

from __future__ import annotations

from typing import ClassVar, Literal

from simrec.config.models.base import BaseSamplerSpec
from simrec.observation import PopularitySampler, UniformSampler

__all__ = ["UniformSamplerSpec", "PopularitySamplerSpec"]


class UniformSamplerSpec(BaseSamplerSpec):
    """Missing at random: each user's observed likes drawn uniformly (thesis §3.2.2)."""

    model: Literal["uniform"]
    cell: ClassVar[str] = "unif"

    def build(self) -> UniformSampler:
        return UniformSampler()


class PopularitySamplerSpec(BaseSamplerSpec):
    """Missing not at random: observed likes drawn with probability ∝ the item's likers (thesis §3.2.3)."""

    model: Literal["popularity"]
    cell: ClassVar[str] = "pop"

    def build(self) -> PopularitySampler:
        return PopularitySampler()
