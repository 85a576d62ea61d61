"""The LDA preference model's spec (thesis §3.1.3):
``preference = { model = "lda", n_topics = 20, lam = 40.0, a = 0.1, b = 0.05 }``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BasePreferenceSpec, Sizes, lam_dim, lam_problems
from simrec.preference import LDA, PreferenceModel

__all__ = ["LDASpec"]


class LDASpec(BasePreferenceSpec):
    """LDA preferences (thesis §3.1.3): ``n_topics`` topics, ``lam`` likes per user, Dirichlet ``a`` (users), ``b`` (items).

    Memory: beside its pairs and items, a replicate holds the topic matrices
    φ (topics x items) and θ (users x topics), 8 B per cell.

    Calibration (Tian 2019, Table 2): K in (5, 200), integer; λ as the
    uniform model's; a, b in (0.01, 1), log scale.
    """

    model: Literal["lda"]
    n_topics: int = Field(ge=1)
    lam: float = Field(gt=0)
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes) -> LDA:
        return LDA(
            n_users=population.n_users,
            n_items=self.n_items or population.n_items,
            n_topics=self.n_topics,
            lam=self.lam,
            a=self.a,
            b=self.b,
        )

    def problems(self, population: Sizes, where: str, items: int) -> list[str]:
        return lam_problems(self.lam, items, where)

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.lam", "population.n_items", f"{where}.n_topics"]

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        items = float(model.expected_items())
        return 8.0 * self.n_topics * (items + float(population.n_users))

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        return [
            Dim("n_topics", 5, 200, integer=True),
            lam_dim(ref),
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
