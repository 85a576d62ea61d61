"""Profile-size models' specs (thesis §3.2.1): ``profile = { model = "pareto", m_low = 20, alpha = 1.0, m_high = 700 }``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BaseProfileSpec
from simrec.observation import TruncatedBetaBinomial, TruncatedPareto

__all__ = ["ParetoSpec", "BetaBinomialSpec"]


class ParetoSpec(BaseProfileSpec):
    """Truncated-Pareto profile sizes on [m_low, m_high] with tail index ``alpha`` (thesis §3.2.1).

    Calibration (Tian 2019, Table 2): m_low within ±20% of the reference's
    smallest profile (at least 1), m_high within ±20% of its largest (above
    m_low's range), α in (0.1, 20), log scale, searched as ``pareto_alpha``
    (an IBP has an ``alpha`` too). Every calibration cell's profile sizes are
    truncated Pareto (:class:`~simrec.config.models.CellSpec`).
    """

    model: Literal["pareto"]
    m_low: float = Field(gt=0)
    alpha: float = Field(gt=0)
    m_high: float = Field(gt=0)
    redraw: bool = False

    def build(self) -> TruncatedPareto:
        return TruncatedPareto(m_low=self.m_low, alpha=self.alpha, m_high=self.m_high, redraw=self.redraw)

    def problems(self, items: int, where: str, items_label: str) -> list[str]:
        if self.m_high > items:
            return [
                f"{where}.m_high: must be <= the {items_label} ({items}): no profile can be larger; got {self.m_high:g}"
            ]
        return []

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


class BetaBinomialSpec(BaseProfileSpec):
    """Truncated beta-binomial profile sizes on [1, n_max] (thesis §3.2.1)."""

    model: Literal["beta_binomial"]
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    n_max: int = Field(ge=1)

    def build(self) -> TruncatedBetaBinomial:
        return TruncatedBetaBinomial(a=self.a, b=self.b, n_max=self.n_max)
