"""The preference-driven observation sampler's spec: ``sampler = { model = "preference", ... }``.

:class:`simrec.observation.PreferenceSampler` (issue 24): liked pairs observed
independently with probability ∝ popularity^a · preference^b, plus consumed
dislikes at ``dislike_rate`` per like. Its propensities are exact, which is
what the MNAR-correction harness (issue 25, ``[debias]`` of a run scenario)
needs to stress the estimators against the truth.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from simrec.config.budget import BYTES_PER_PAIR
from simrec.config.models.base import BaseSamplerSpec, Sizes
from simrec.observation import PreferenceSampler

if TYPE_CHECKING:
    from simrec.preference import PreferenceModel

__all__ = ["PreferenceSamplerSpec"]


class PreferenceSamplerSpec(BaseSamplerSpec):
    """Observation that depends on popularity and graded preference, with consumed dislikes."""

    model: Literal["preference"]
    pop_exponent: float = Field(default=1.0, description="a: exposure (1 + likers)^a")
    pref_exponent: float = Field(default=1.0, description="b: weight preference^b (a binary truth's is 1)")
    dislike_rate: float = Field(default=0.0, ge=0, description="expected observed dislikes per observed like")
    cell: ClassVar[str] = "pref"

    def build(self) -> PreferenceSampler:
        return PreferenceSampler(self.pop_exponent, self.pref_exponent, self.dislike_rate)

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.dislike_rate"] if self.dislike_rate else []

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        """The consumed dislikes: at most ``dislike_rate`` per true pair, each a pair of the observed data."""
        return BYTES_PER_PAIR * self.dislike_rate * float(model.expected_pairs())
