"""The Indian-buffet-process preference model's spec (thesis §3.1.2):
``preference = { model = "ibp", alpha = 60.0, c = 5.0, sigma = 0.6 }``."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BasePreferenceSpec, Sizes
from simrec.preference import IBP

__all__ = ["IBPSpec"]


class IBPSpec(BasePreferenceSpec):
    """Indian-buffet-process preferences (thesis §3.1.2): mass ``alpha``, concentration ``c``, discount ``sigma``.

    The number of items is random: checks use its expectation, rounded
    down, and the memory budget its expected pairs and items.

    Calibration (Tian 2019, Table 2): α in (I/500, I/2), log scale (thesis:
    (10..20, 500..1000)); c in (0.01, 100), log scale; σ in (0, 0.99).
    """

    model: Literal["ibp"]
    alpha: float = Field(gt=0)
    c: float
    sigma: float = Field(ge=0, lt=1)

    item_count_label: ClassVar[str] = "expected number of items of this IBP"

    def build(self, population: Sizes) -> IBP:
        return IBP(n_users=population.n_users, alpha=self.alpha, c=self.c, sigma=self.sigma)

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.alpha"]

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
