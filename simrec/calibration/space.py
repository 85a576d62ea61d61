"""Search spaces of the calibration: dimensions, the reference's shape, random points.

What each model's dimensions are is known by its spec (the table in
:mod:`simrec.config.models`: Tian 2019, Table 2, with ranges derived from the
reference data); this module holds what every search needs: :class:`Dim`,
:class:`ReferenceShape`, the :class:`Cell` protocol a calibration cell
implements, and :func:`sample_points`.

Points whose data would be too large (too many pairs, or an IBP with more
than ``max_items_ratio`` times the reference's items) are not excluded from the
space; the objective refuses them with a recorded reason and the search shows
the GP a penalty (see :mod:`simrec.calibration.objective`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..interactions import Interactions

__all__ = ["Dim", "ReferenceShape", "Cell", "sample_points"]


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
    """The sizes of a reference dataset that the spaces and models need.

    ``profile_log_sd`` is the standard deviation of the log profile sizes
    (the latent-factor model's activity range is a multiple of it); default
    1.0 for shapes built by hand. It is left out of :meth:`key`, the
    identity a calibration log records: it is a function of the reference
    data, which the other sizes and the dataset's name already identify, so
    logs written before it existed keep their identity.

    ``consumed_profile``: (smallest, largest) profile of the reference's users
    *before* its ``min_rating`` binarisation (None: no such filter, or not
    known). A rated world draws its users' profiles of consumed, rated items
    and then keeps those rated at least ``min_rating``, as the dataset's
    binarisation did, so its profile sizes are the consumed ones (issue 24:
    searched within the filtered sizes, a rated world could not be as dense as
    the data it is compared with). Part of :meth:`key` when set.
    """

    n_users: int
    n_items: int
    min_profile: int
    mean_profile: float
    max_profile: int
    profile_log_sd: float = 1.0
    consumed_profile: tuple[int, int] | None = None

    @classmethod
    def of(cls, inter: Interactions) -> ReferenceShape:
        sizes = inter.user_counts()
        pos = sizes[sizes > 0]
        log_sd = float(np.log(pos).std()) if len(pos) > 1 else 0.0
        return cls(
            inter.n_users,
            inter.n_items,
            int(sizes.min()),
            float(sizes.mean()),
            int(sizes.max()),
            log_sd if log_sd > 0 else 1.0,
        )

    @property
    def density(self) -> float:
        """Mean profile over the number of items: the share of (user, item) cells observed."""
        return self.mean_profile / self.n_items

    def key(self) -> dict[str, float]:
        """The sizes that identify the reference in a calibration log (all but ``profile_log_sd``, and
        ``consumed_profile`` only when set)."""
        return {
            k: v
            for k, v in self.__dict__.items()
            if k != "profile_log_sd" and not (k == "consumed_profile" and v is None)
        }

    def consumed(self) -> ReferenceShape:
        """This shape with the profile sizes before the binarisation (``consumed_profile``), if known."""
        if self.consumed_profile is None:
            return self
        low, high = self.consumed_profile
        return dataclasses.replace(self, min_profile=int(low), max_profile=int(high))

    def with_consumed(self, filtered: Interactions, unfiltered: Interactions) -> ReferenceShape:
        """This shape (of ``filtered``) with ``consumed_profile`` from ``unfiltered``: the smallest and largest
        profile sizes before the binarisation of the users ``filtered`` keeps.

        Users are matched by id when both have ids; without ids (or when no id matches) every user of
        ``unfiltered`` counts (a binarisation keeps the rows in order, so by row that is the same users
        whenever it dropped none)."""
        counts = unfiltered.user_counts()
        if filtered.user_ids is not None and unfiltered.user_ids is not None:
            rows = pd.Index(unfiltered.user_ids).get_indexer(pd.Index(filtered.user_ids))
            rows = rows[rows >= 0]
            counts = counts[rows] if rows.size else counts
        return dataclasses.replace(self, consumed_profile=(int(counts.min()), int(counts.max())))


class Cell(Protocol):
    """A calibration cell: a preference model and an observation model with a search space.

    ``preference`` and ``observation`` are the models' names (they identify
    the cell in trial logs and tables); ``search_space(ref)`` lists its
    dimensions in a fixed order; ``models(point, ref)`` returns
    ``(preference_model, profile_model, sampler)`` at a point (a dict of
    dimension name -> value), raising ValueError for impossible parameters.
    """

    @property
    def name(self) -> str: ...
    @property
    def preference(self) -> str: ...
    @property
    def observation(self) -> str: ...

    def search_space(self, ref: ReferenceShape) -> list[Dim]: ...

    def models(self, point: dict[str, Any], ref: ReferenceShape) -> tuple[Any, Any, Any]: ...


def sample_points(dims: list[Dim], n: int, rng: np.random.Generator) -> list[list[float]]:
    """``n`` independent random points (uniform, or log-uniform on log dims).

    An integer dimension on a log scale takes the integer part of a
    log-uniform draw on [low, high + 1): k with probability
    log((k + 1)/k) / log((high + 1)/low).
    """
    cols = []
    for d in dims:
        if d.integer and d.log:
            x = np.floor(np.exp(rng.uniform(np.log(d.low), np.log(d.high + 1), size=n)))
            cols.append(np.clip(x, d.low, d.high))
        elif d.integer:
            cols.append(rng.integers(int(d.low), int(d.high) + 1, size=n).astype(float))
        elif d.log:
            cols.append(np.exp(rng.uniform(np.log(d.low), np.log(d.high), size=n)))
        else:
            cols.append(rng.uniform(d.low, d.high, size=n))
    return [[int(c[i]) if d.integer else float(c[i]) for c, d in zip(cols, dims)] for i in range(n)]
