"""The preference-driven observation sampler's spec (issue 24; Tian 2019, §5.3's selection bias and consumed
dislikes): ``sampler = { model = "preference", pop_exponent = 1.0, pref_exponent = 1.0, dislike_rate = 0.1 }``.

Its propensities are exact, which is what the MNAR-correction harness (issue 25, ``[debias]`` of a run
scenario) needs to stress the estimators against the truth.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.budget import BYTES_PER_PAIR
from simrec.config.models.base import BaseSamplerSpec, Sizes
from simrec.observation import PreferenceSampler
from simrec.preference import PreferenceModel

__all__ = ["PreferenceSamplerSpec"]


class PreferenceSamplerSpec(BaseSamplerSpec):
    """Poisson sampling of liked pairs ∝ popularity^a · preference^b, plus popularity-weighted consumed dislikes
    (:class:`simrec.observation.PreferenceSampler`).

    The profile sizes are each user's *expected* observed likes (the
    profile spec is the thesis's, e.g. truncated Pareto). ``sampler =
    "preference"`` is the sampler at its defaults (a = b = 1, no dislikes).

    Memory: the consumed dislikes are observed pairs outside the truth, at
    most ``dislike_rate`` per observed like, so a replicate holds up to
    ``dislike_rate`` x the truth's pairs more (96 B each).

    Calibration: ``obs_pop_exponent`` (a) in [-0.5, 3], ``obs_pref_exponent``
    (b) in [0, 4], ``dislike_rate`` in [0, 1] (prefixed: the latent-factor
    model has a ``pop_exponent`` of its own).
    """

    model: Literal["preference"]
    pop_exponent: float = Field(default=1.0, description="a: exposure (1 + likers)^a")
    pref_exponent: float = Field(default=1.0, description="b: weight preference^b of a liked pair")
    dislike_rate: float = Field(default=0.0, ge=0, description="expected consumed dislikes per observed like")
    cell: ClassVar[str] = "pref"

    def build(self) -> PreferenceSampler:
        return PreferenceSampler(
            pop_exponent=self.pop_exponent, pref_exponent=self.pref_exponent, dislike_rate=self.dislike_rate
        )

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.dislike_rate"] if self.dislike_rate > 0 else []

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        return BYTES_PER_PAIR * self.dislike_rate * float(model.expected_pairs())

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        return [
            Dim("obs_pop_exponent", -0.5, 3.0),
            Dim("obs_pref_exponent", 0.0, 4.0),
            Dim("dislike_rate", 0.0, 1.0),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> PreferenceSamplerSpec:
        return cls(
            model="preference",
            pop_exponent=point["obs_pop_exponent"],
            pref_exponent=point["obs_pref_exponent"],
            dislike_rate=point["dislike_rate"],
        )
