"""Search spaces of the calibration, derived from the reference data.

The thesis fixes its spaces by hand (Tian 2019, Table 2) and names deriving
them from the reference data as future work; simrec derives them (decisions
below), keeping Table 2's shapes:

============  =====================================  =====================================
parameter     thesis Table 2                          simrec (reference with U users, I items,
                                                      profile sizes min s_lo, mean s̄, max s_hi)
============  =====================================  =====================================
Unif λ        (5, 2000)                               (s̄/2, min(I, 20 s̄)), log scale
IBP α         (10..20, 500..1000)                     (I/500, I/2) log scale: the expected item
                                                      count spans the reference's I over the
                                                      (c, σ) space (α·H_U for σ = 0, c = 1;
                                                      ≈ α·2√U/Γ(1.5) for σ = 0.5)
IBP c         (0.01, 100)                             (0.01, 100), log scale
IBP σ         (0, 0.99)                               (0, 0.99)
LDA K         (5, 200)                                (5, 200), integer
LDA λ         (5, 2000)                               as Unif λ
LDA a, b      (0.01, 1)                               (0.01, 1), log scale
Pareto m_low  ±20% of the smallest profile            (0.8 s_lo, 1.2 s_lo), at least 1
Pareto m_high ±20% of the largest profile             (0.8 s_hi, 1.2 s_hi), above m_low's range
Pareto α      (0.1, 20)                               (0.1, 20), log scale
============  =====================================  =====================================

Points whose data would be too large (too many pairs, or an IBP with more
than ``max_items_ratio`` times the reference's items) are not excluded from the
space; the objective refuses them with a recorded reason and the search shows
the GP a penalty (see :mod:`simrec.calibration.objective`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice

__all__ = ["Dim", "ReferenceShape", "search_space", "sample_points", "PREFERENCE_MODELS", "OBSERVATION_MODELS"]

PREFERENCE_MODELS: tuple[str, ...] = ("uniform", "ibp", "lda")
OBSERVATION_MODELS: tuple[str, ...] = ("uniform", "popularity")


@dataclass(frozen=True)
class Dim:
    """One search dimension: ``name`` in ``[low, high]``, log scale or not, integer or not."""

    name: str
    low: float
    high: float
    log: bool = False
    integer: bool = False

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"dimension `{self.name}` needs low < high; got [{self.low}, {self.high}]")
        if self.log and self.low <= 0:
            raise ValueError(f"log-scale dimension `{self.name}` needs low > 0; got {self.low}")


@dataclass(frozen=True)
class ReferenceShape:
    """The sizes of a reference dataset that the spaces and models need."""

    n_users: int
    n_items: int
    min_profile: int
    mean_profile: float
    max_profile: int

    @classmethod
    def of(cls, inter) -> ReferenceShape:
        sizes = inter.user_counts()
        return cls(inter.n_users, inter.n_items, int(sizes.min()), float(sizes.mean()), int(sizes.max()))


def search_space(preference: str, observation: str, ref: ReferenceShape) -> list[Dim]:
    """The dimensions of one (preference, observation) cell, in a fixed order.

    Parameter names are those of the models (``lam``, ``alpha``, ``c``,
    ``sigma``, ``n_topics``, ``a``, ``b``) and, for the truncated-Pareto
    profile sizes, ``m_low``, ``pareto_alpha``, ``m_high``.
    """
    check_choice("preference", preference, PREFERENCE_MODELS)
    check_choice("observation", observation, OBSERVATION_MODELS)
    lam = Dim("lam", max(1.0, ref.mean_profile / 2), max(min(float(ref.n_items), 20 * ref.mean_profile), ref.mean_profile + 1), log=True)
    if preference == "uniform":
        dims = [lam]
    elif preference == "ibp":
        dims = [
            Dim("alpha", max(0.5, ref.n_items / 500), max(1.0, ref.n_items / 2), log=True),
            Dim("c", 0.01, 100.0, log=True),
            Dim("sigma", 0.0, 0.99),
        ]
    else:
        dims = [
            Dim("n_topics", 5, 200, integer=True),
            lam,
            Dim("a", 0.01, 1.0, log=True),
            Dim("b", 0.01, 1.0, log=True),
        ]
    m_low_hi = max(1.2 * ref.min_profile, 1.5)
    m_high_lo = max(0.8 * ref.max_profile, m_low_hi + 1)
    dims += [
        Dim("m_low", max(0.8 * ref.min_profile, 1.0), m_low_hi),
        Dim("pareto_alpha", 0.1, 20.0, log=True),
        Dim("m_high", m_high_lo, max(1.2 * ref.max_profile, m_high_lo + 1)),
    ]
    return dims


def sample_points(dims: list[Dim], n: int, rng: np.random.Generator) -> list[list[float]]:
    """``n`` independent random points (uniform, or log-uniform on log dims)."""
    cols = []
    for d in dims:
        if d.integer:
            cols.append(rng.integers(int(d.low), int(d.high) + 1, size=n).astype(float))
        elif d.log:
            cols.append(np.exp(rng.uniform(np.log(d.low), np.log(d.high), size=n)))
        else:
            cols.append(rng.uniform(d.low, d.high, size=n))
    return [[int(c[i]) if d.integer else float(c[i]) for c, d in zip(cols, dims)] for i in range(n)]
