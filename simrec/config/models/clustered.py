"""The clustered latent-factor preference model's spec (issue 24's world with neighbourhood structure):
``preference = { model = "clustered", n_factors = 10, n_clusters = 20, signal = 1.75, cluster_signal = 1.75,
pop_exponent = 1.75, lam = 165.6 }``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BasePreferenceSpec, Sizes, lam_dim, lam_problems
from simrec.config.models.factor import _BLOCK_BYTES, cells_problems
from simrec.preference import ClusteredFactor, PreferenceModel

__all__ = ["ClusteredFactorSpec"]


class ClusteredFactorSpec(BasePreferenceSpec):
    """Dense low-rank preferences with item clusters and a popularity offset
    (:class:`simrec.preference.ClusteredFactor`).

    User u likes item i independently with probability min(1, c_u w_ui),
    w_ui = exp(``signal`` u_u·v_i/√K + ``cluster_signal`` η_{u,g(i)} +
    ``pop_exponent`` ζ_i), K = ``n_factors``, g(i) one of ``n_clusters``
    item clusters, the users' target sizes lognormal with mean ``lam`` and
    log-sd ``activity_sd``. ``n_items`` defaults to the population's.

    Rules: the latent-factor world's (``lam`` at most the number of items;
    users x items at most :data:`~simrec.config.models.factor.MAX_FACTOR_CELLS`).
    Memory: beside its pairs and items, the factor and cluster matrices
    ((U + I)(K + G) cells, 8 B) and the generator's 64 MiB weight block.

    Calibration (derived from the reference): K in [2, 50], integer; G in
    [2, 100], integer, log scale; signal, cluster_signal and pop_exponent in
    [0, 4]; λ as the uniform model's; activity_sd in [0.5, 2] x the
    reference's log-sd of profile sizes.
    """

    model: Literal["clustered"]
    n_factors: int = Field(ge=1)
    n_clusters: int = Field(ge=1)
    signal: float = Field(ge=0)
    cluster_signal: float = Field(ge=0)
    pop_exponent: float = Field(ge=0)
    lam: float = Field(gt=0, description="mean target number of true likes per user")
    activity_sd: float = Field(default=1.0, ge=0)
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes) -> ClusteredFactor:
        return ClusteredFactor(
            n_users=population.n_users,
            n_items=self.n_items or population.n_items,
            n_factors=self.n_factors,
            n_clusters=self.n_clusters,
            signal=self.signal,
            cluster_signal=self.cluster_signal,
            pop_exponent=self.pop_exponent,
            lam=self.lam,
            activity_sd=self.activity_sd,
        )

    def problems(self, population: Sizes, where: str, items: int) -> list[str]:
        return lam_problems(self.lam, items, where) + cells_problems(population, where, items)

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.lam", f"{where}.n_factors", f"{where}.n_clusters", "population.n_items"]

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        items = float(model.expected_items())
        return 8.0 * (self.n_factors + self.n_clusters) * (items + float(population.n_users)) + _BLOCK_BYTES

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        sd = ref.profile_log_sd
        return [
            Dim("n_factors", 2, 50, integer=True),
            Dim("n_clusters", 2, 100, log=True, integer=True),
            Dim("signal", 0.0, 4.0),
            Dim("cluster_signal", 0.0, 4.0),
            Dim("pop_exponent", 0.0, 4.0),
            lam_dim(ref),
            Dim("activity_sd", 0.5 * sd, 2.0 * sd),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> ClusteredFactorSpec:
        return cls(
            model="clustered",
            n_factors=int(point["n_factors"]),
            n_clusters=int(point["n_clusters"]),
            signal=point["signal"],
            cluster_signal=point["cluster_signal"],
            pop_exponent=point["pop_exponent"],
            lam=point["lam"],
            activity_sd=point["activity_sd"],
            n_items=ref.n_items,
        )
