"""The latent-factor preference model's spec (issue 24's dense low-rank world):
``preference = { model = "factor", n_factors = 10, signal = 1.75, pop_exponent = 1.75, lam = 165.6 }``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BasePreferenceSpec, Sizes, lam_dim, lam_problems
from simrec.preference import LatentFactor, PreferenceModel

__all__ = ["LatentFactorSpec", "MAX_FACTOR_CELLS", "cells_problems"]

#: Largest users x items of a latent-factor world: it computes every (user, item) weight, O(U I K) flops
#: (ML-20M size, 3.7e9 cells at K = 10, took about 31 s of CPU: docs/design.md §9), so the limit is on the
#: cells, not only the pairs: 2e10 cells is about 5 x ML-20M.
MAX_FACTOR_CELLS = 2e10
#: Bytes of the generator's weight block (``simrec.preference.factor._BLOCK_BYTES``).
_BLOCK_BYTES = float(1 << 26)


def cells_problems(population: Sizes, where: str, items: int) -> list[str]:
    """A dense world (latent factor, clustered) over :data:`MAX_FACTOR_CELLS` users x items."""
    cells = float(population.n_users) * float(items)
    if cells <= MAX_FACTOR_CELLS:
        return []
    return [
        f"{where}: a latent-factor world computes every (user, item) weight (O(users x items x n_factors) "
        f"time); users x items must be <= {MAX_FACTOR_CELLS:.3g}; got {population.n_users} x {items} = "
        f"{cells:.3g}"
    ]


class LatentFactorSpec(BasePreferenceSpec):
    """Dense low-rank preferences with a popularity offset (:class:`simrec.preference.LatentFactor`).

    User u likes item i independently with probability min(1, c_u w_ui),
    w_ui = exp(``signal`` u_u·v_i/√K + ``pop_exponent`` ζ_i), K =
    ``n_factors``, the users' target sizes lognormal with mean ``lam`` and
    log-sd ``activity_sd``. ``n_items`` defaults to the population's.

    Rules: ``lam`` at most the number of items; users x items at most
    :data:`MAX_FACTOR_CELLS` (the model is dense in time, O(U I K)).
    Memory: beside its pairs and items, the factor matrices ((U + I) K
    cells, 8 B) and the generator's 64 MiB weight block.

    Calibration (derived from the reference): K in [2, 50], integer; signal
    and pop_exponent in [0, 4]; λ as the uniform model's; activity_sd in
    [0.5, 2] x the reference's log-sd of profile sizes.
    """

    model: Literal["factor"]
    n_factors: int = Field(ge=1)
    signal: float = Field(ge=0)
    pop_exponent: float = Field(ge=0)
    lam: float = Field(gt=0, description="mean target number of true likes per user")
    activity_sd: float = Field(default=1.0, ge=0)
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes) -> LatentFactor:
        return LatentFactor(
            n_users=population.n_users,
            n_items=self.n_items or population.n_items,
            n_factors=self.n_factors,
            signal=self.signal,
            pop_exponent=self.pop_exponent,
            lam=self.lam,
            activity_sd=self.activity_sd,
        )

    def problems(self, population: Sizes, where: str, items: int) -> list[str]:
        return lam_problems(self.lam, items, where) + cells_problems(population, where, items)

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.lam", f"{where}.n_factors", "population.n_items"]

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        items = float(model.expected_items())
        return 8.0 * self.n_factors * (items + float(population.n_users)) + _BLOCK_BYTES

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        sd = ref.profile_log_sd
        return [
            Dim("n_factors", 2, 50, integer=True),
            Dim("signal", 0.0, 4.0),
            Dim("pop_exponent", 0.0, 4.0),
            lam_dim(ref),
            Dim("activity_sd", 0.5 * sd, 2.0 * sd),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> LatentFactorSpec:
        return cls(
            model="factor",
            n_factors=int(point["n_factors"]),
            signal=point["signal"],
            pop_exponent=point["pop_exponent"],
            lam=point["lam"],
            activity_sd=point["activity_sd"],
            n_items=ref.n_items,
        )
