"""The uniform preference model's spec (thesis §3.1.1): ``preference = { model = "uniform", lam = 40.0 }``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BasePreferenceSpec, Sizes, lam_dim, lam_problems
from simrec.preference import Uniform

__all__ = ["UniformSpec"]


class UniformSpec(BasePreferenceSpec):
    """Uniform preferences (thesis §3.1.1): ``lam`` likes per user on average.

    Calibration (Tian 2019, Table 2): λ in (s̄/2, min(I, 20 s̄)), log scale
    (thesis: (5, 2000)); ``n_items`` is the reference's.
    """

    model: Literal["uniform"]
    lam: float = Field(gt=0, description="mean number of true likes per user")
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes) -> Uniform:
        return Uniform(n_users=population.n_users, n_items=self.n_items or population.n_items, lam=self.lam)

    def problems(self, population: Sizes, where: str, items: int) -> list[str]:
        return lam_problems(self.lam, items, where)

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.lam", "population.n_items"]

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        return [lam_dim(ref)]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> UniformSpec:
        return cls(model="uniform", lam=point["lam"], n_items=ref.n_items)
