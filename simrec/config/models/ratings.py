"""Ratings on the observed pairs (issue 24; Tian 2019, §5.3): an observation's optional ``ratings`` table,
``observation = { sampler = "preference", profile = { ... }, ratings = { low = 1, high = 5, shape = 1.5, noise = 0.5,
min_rating = 4 } }``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from simrec.calibration.space import Dim
from simrec.config.base import Strict
from simrec.observation import Rated, Ratings

__all__ = ["RatingsSpec"]


class RatingsSpec(Strict):
    """A rating scale and the map from graded preference to a noisy, rounded rating (:class:`simrec.observation.Ratings`).

    ``low``, ``high``, ``step``: the dataset's scale (1 to 5 in steps of 1
    for MovieLens); ``shape`` κ and ``noise`` σ: the map
    r = round(ℓ − s/2 + (h − ℓ + s) p^κ + σ ε); ``min_rating``: keep only
    the observed pairs rated at least this, as the dataset's binarization
    keeps its pairs (``min_rating`` of its ``[dataset]`` table), default all.
    The ratings travel as the observed data's gains; a truth without graded
    preference (uniform, IBP) has p = 1 on every pair.

    Calibration (a sweep's ``ratings`` table gives the scale and
    ``min_rating``): ``rating_shape`` in [0.2, 5], log scale, and
    ``rating_noise`` in [0, 2].
    """

    low: float = Field(default=1.0, gt=0)
    high: float = Field(default=5.0, gt=0)
    step: float = Field(default=1.0, gt=0)
    shape: float = Field(default=1.0, gt=0)
    noise: float = Field(default=0.0, ge=0)
    min_rating: float | None = None

    def build(self) -> Ratings:
        """The library :class:`~simrec.observation.Ratings`; ValueError for a scale that breaks its rules."""
        return Ratings(low=self.low, high=self.high, step=self.step, shape=self.shape, noise=self.noise)

    def problems(self, where: str) -> list[str]:
        """``min_rating`` outside the scale keeps every pair or none."""
        if self.min_rating is not None and not self.low <= self.min_rating <= self.high:
            return [
                f"{where}.min_rating: must be within [low, high] = [{self.low:g}, {self.high:g}]; got {self.min_rating:g}"
            ]
        return []

    def wrap(self, sampler: Any) -> Rated:
        """``sampler`` with its observed pairs rated (and kept from ``min_rating`` on)."""
        return Rated(sampler, self.build(), self.min_rating)

    @staticmethod
    def search_space() -> list[Dim]:
        return [Dim("rating_shape", 0.2, 5.0, log=True), Dim("rating_noise", 0.0, 2.0)]

    def at_point(self, point: dict[str, float]) -> RatingsSpec:
        """This scale with the shape and noise of a point of :meth:`search_space`."""
        return RatingsSpec(**{**self.model_dump(), "shape": point["rating_shape"], "noise": point["rating_noise"]})
