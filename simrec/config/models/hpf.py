"""The hierarchical Poisson factorization preference model's spec (Gopalan, Hofman & Blei 2015, §2):
``preference = { model = "hpf", n_factors = 20, a = 0.3, a_prime = 0.3, b_prime = 1.0, c = 0.3, c_prime = 0.3 }``."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field
from scipy.optimize import brentq

from simrec.calibration.space import Dim, ReferenceShape
from simrec.config.models.base import BasePreferenceSpec, Sizes
from simrec.preference import HPF, PreferenceModel

__all__ = ["HPFSpec", "solve_b_prime"]

#: Cells of one block of users (the generator's bound, ``simrec.preference.hpf._BLOCK_CELLS``), 8 B each.
_BLOCK_BYTES = 8.0 * (1 << 24)


def solve_b_prime(model: HPF, density: float) -> float:
    """The user-activity mean b' at which ``model`` (its other parameters kept) likes ``density`` of the cells.

    E[pairs] / (U I) decreases strictly in b' (θ scales with 1/b'), from 1
    (b' → 0) to 0 (b' → ∞), so the root is unique: Brent's method on log b'
    over :meth:`HPF.expected_pairs <simrec.preference.HPF.expected_pairs>`
    (about 10 ms a call, 20-30 calls), relative tolerance 1e-6 on log b'.

    Raises
    ------
    ValueError
        ``density`` outside (0, 1), or a density the quadrature cannot
        resolve within b' in [1e-30, 1e30].
    """
    if not 0 < density < 1:
        raise ValueError(f"`density` must be in (0, 1); got {density!r}")
    cells = float(model.n_users * model.n_items)

    def gap(log_b: float) -> float:
        m = HPF(
            model.n_users,
            model.n_items,
            model.n_factors,
            model.a,
            model.a_prime,
            math.exp(log_b),
            model.c,
            model.c_prime,
            model.d_prime,
        )
        return m.expected_pairs() / cells - density

    lo, hi = -69.0, 69.0  # b' in [1e-30, 1e30]
    g_lo, g_hi = gap(lo), gap(hi)
    if not (g_lo > 0 > g_hi):
        raise ValueError(
            f"no b' in [1e-30, 1e30] gives density {density:g} with these shapes (densities {g_lo + density:.3g} to "
            f"{g_hi + density:.3g})"
        )
    return math.exp(brentq(gap, lo, hi, xtol=1e-6, rtol=1e-8))


class HPFSpec(BasePreferenceSpec):
    """Hierarchical Poisson factorization (Gopalan, Hofman & Blei 2015, §2; :class:`simrec.preference.HPF`).

    ``n_factors`` components; user activity ξ ~ Gamma(``a_prime``, rate
    ``a_prime/b_prime``) and preferences θ ~ Gamma(``a``, rate ξ); item
    popularity η ~ Gamma(``c_prime``, rate ``c_prime/d_prime``) and
    attributes β ~ Gamma(``c``, rate η); a user likes an item when its
    Poisson(θ·β) count is at least 1. ``n_items`` defaults to the
    population's.

    Memory: beside its pairs and items, the factor matrices ((U + I) K
    cells, 8 B) and one block's temporaries (at most 2^24 cells of 8 B).

    Calibration (derived from the reference, U users, I items, density
    ρ = mean profile / I): K in [5, 100], integer; a, c in [0.05, 3], log
    scale; a', c' in [0.3, 10], log scale; d' fixed at 1 (only b'd' enters
    the law, :class:`~simrec.preference.HPF`'s notes); b' through the truth's
    density, searched as ``density`` in [ρ, min(0.5, 20ρ)], log scale, and
    solved for by :func:`solve_b_prime` (a density, unlike b', means the same
    thing at every point of the other parameters, so the GP sees a smooth
    dimension).
    """

    model: Literal["hpf"]
    n_factors: int = Field(ge=1)
    a: float = Field(gt=0)
    a_prime: float = Field(gt=0)
    b_prime: float = Field(gt=0)
    c: float = Field(gt=0)
    c_prime: float = Field(gt=0)
    d_prime: float = Field(default=1.0, gt=0)
    n_items: int | None = Field(default=None, ge=1, description="default: population.n_items")

    def build(self, population: Sizes) -> HPF:
        return HPF(
            n_users=population.n_users,
            n_items=self.n_items or population.n_items,
            n_factors=self.n_factors,
            a=self.a,
            a_prime=self.a_prime,
            b_prime=self.b_prime,
            c=self.c,
            c_prime=self.c_prime,
            d_prime=self.d_prime,
        )

    def memory_keys(self, where: str) -> list[str]:
        return [f"{where}.b_prime", f"{where}.n_factors", "population.n_items"]

    def memory_bytes(self, model: PreferenceModel, population: Sizes) -> float:
        items = float(model.expected_items())
        return 8.0 * self.n_factors * (items + float(population.n_users)) + _BLOCK_BYTES

    @staticmethod
    def search_space(ref: ReferenceShape) -> list[Dim]:
        rho = min(ref.density, 0.49)
        return [
            Dim("n_factors", 5, 100, integer=True),
            Dim("a", 0.05, 3.0, log=True),
            Dim("a_prime", 0.3, 10.0, log=True),
            Dim("c", 0.05, 3.0, log=True),
            Dim("c_prime", 0.3, 10.0, log=True),
            Dim("density", rho, max(min(0.5, 20 * rho), 1.01 * rho), log=True),
        ]

    @classmethod
    def from_point(cls, point: dict[str, float], ref: ReferenceShape) -> HPFSpec:
        """The spec at a point; b' solved from ``density`` (d' = 1); ValueError if no b' gives it."""
        shapes = {k: float(point[k]) for k in ("a", "a_prime", "c", "c_prime")}
        K = int(point["n_factors"])
        probe = HPF(
            ref.n_users, ref.n_items, K, shapes["a"], shapes["a_prime"], 1.0, shapes["c"], shapes["c_prime"], 1.0
        )
        b_prime = solve_b_prime(probe, float(point["density"]))
        return cls(model="hpf", n_factors=K, b_prime=b_prime, n_items=ref.n_items, **shapes)
