"""Shared bins of the four key statistics (Tian's thesis, §3.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int
from ..interactions import Interactions

__all__ = ["StatisticBins", "log_count_edges"]


def log_count_edges(max_count: int, n_bins: int) -> np.ndarray:
    """Integer, roughly log-spaced bin edges covering the counts 1 to ``max_count``.

    ``edges = unique(round(geomspace(1, max_count + 1, n_bins + 1)))``, so small
    counts get one bin each and large counts share wider bins; bin ``b`` holds
    the integers in ``[edges[b], edges[b+1])``. At most ``n_bins`` bins (fewer
    when rounding merges edges).

    Parameters
    ----------
    max_count : int
        Largest count to cover, ``>= 1``.
    n_bins : int
        Requested number of bins, ``>= 1``.

    Returns
    -------
    ndarray of int64, shape (n_edges,)
        Strictly increasing, ``edges[0] = 1``, ``edges[-1] = max_count + 1``.
    """
    max_count = check_int("max_count", max_count, low=1)
    n_bins = check_int("n_bins", n_bins, low=1)
    edges = np.unique(np.round(np.geomspace(1.0, max_count + 1.0, n_bins + 1)).astype(np.int64))
    edges[0], edges[-1] = 1, max_count + 1
    return np.unique(edges)


def _check_edges(name: str, edges: Any) -> np.ndarray:
    e = np.asarray(edges)
    if e.ndim != 1 or len(e) < 2 or not np.issubdtype(e.dtype, np.integer):
        raise ValueError(f"`{name}` must be a 1-d integer array of at least 2 edges; got {edges!r}")
    if e[0] != 1 or not (np.diff(e) > 0).all():
        raise ValueError(f"`{name}` must start at 1 and increase strictly; got {e.tolist()}")
    e = e.astype(np.int64)
    e.setflags(write=False)
    return e


@dataclass(frozen=True, eq=False)
class StatisticBins:
    """The bins shared by a reference dataset and every simulation compared with it.

    Count statistics (item popularity |U_i|, user activity |I_u|) are
    histograms of integer counts over *observed* items and users (count ≥ 1: an
    item nobody observed is not part of an observed dataset, §3.4.1) on
    roughly log-spaced integer bins ``[edges[b], edges[b+1])`` from 1 to the
    reference's largest count, plus one **overflow** bin ``[edges[-1], ∞)`` so a
    simulation with larger counts still has a bin (the reference's mass there is
    0). Similarity statistics (cosine of binary vectors, §3.4.2) use
    ``n_similarity_bins`` equal bins on [0, 1] (the thesis used NumPy's 10
    default bins on (-1, 1); a binary cosine is never negative, so all bins are
    spent on [0, 1]); only items (users) with at least ``min_observations``
    pairs enter (5 in the thesis).

    Attributes
    ----------
    popularity_edges : ndarray of int64
        Edges of the item-popularity bins (the overflow bin comes after them);
        ``len(popularity_edges)`` bins in total.
    activity_edges : ndarray of int64
        Edges of the user-activity bins, same convention.
    n_similarity_bins : int
        Equal-width cosine bins on [0, 1]. Default 50.
    min_observations : int
        Minimum pairs for an item (user) to enter the similarity sample. Default 5.
    """

    popularity_edges: np.ndarray
    activity_edges: np.ndarray
    n_similarity_bins: int = 50
    min_observations: int = 5

    def __post_init__(self) -> None:
        object.__setattr__(self, "popularity_edges", _check_edges("popularity_edges", self.popularity_edges))
        object.__setattr__(self, "activity_edges", _check_edges("activity_edges", self.activity_edges))
        object.__setattr__(self, "n_similarity_bins", check_int("n_similarity_bins", self.n_similarity_bins, low=1))
        object.__setattr__(self, "min_observations", check_int("min_observations", self.min_observations, low=1))

    @classmethod
    def from_reference(
        cls,
        inter: Interactions,
        *,
        n_count_bins: int = 50,
        n_similarity_bins: int = 50,
        min_observations: int = 5,
    ) -> StatisticBins:
        """Bins derived from a reference dataset.

        Parameters
        ----------
        inter : Interactions
            The reference; it needs at least one pair.
        n_count_bins : int
            Requested log-spaced bins for each count statistic (fewer after
            rounding; see :func:`log_count_edges`). Default 50.
        n_similarity_bins : int
            Equal cosine bins on [0, 1]. Default 50.
        min_observations : int
            Similarity eligibility threshold. Default 5 (thesis §3.4.2).
        """
        if not isinstance(inter, Interactions):
            raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
        check_int("n_count_bins", n_count_bins, low=1)
        if inter.n_pairs == 0:
            raise ValueError("`inter` must have at least one pair to derive bins from; got an empty reference")
        return cls(
            popularity_edges=log_count_edges(int(inter.item_counts().max()), n_count_bins),
            activity_edges=log_count_edges(int(inter.user_counts().max()), n_count_bins),
            n_similarity_bins=n_similarity_bins,
            min_observations=min_observations,
        )

    @property
    def similarity_edges(self) -> np.ndarray:
        """The ``n_similarity_bins + 1`` equal-width edges on [0, 1]."""
        return np.linspace(0.0, 1.0, self.n_similarity_bins + 1)

    def n_bins(self, statistic: str) -> int:
        """Number of bins of a statistic (count statistics include the overflow bin)."""
        if statistic == "item_popularity":
            return len(self.popularity_edges)
        if statistic == "user_activity":
            return len(self.activity_edges)
        if statistic in ("item_similarity", "user_similarity"):
            return self.n_similarity_bins
        raise ValueError(
            "`statistic` must be one of 'item_popularity', 'user_activity', 'item_similarity', "
            f"'user_similarity'; got {statistic!r}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict; :meth:`from_dict` inverts it."""
        return {
            "popularity_edges": self.popularity_edges.tolist(),
            "activity_edges": self.activity_edges.tolist(),
            "n_similarity_bins": self.n_similarity_bins,
            "min_observations": self.min_observations,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StatisticBins:
        """Rebuild from :meth:`to_dict` output (validated)."""
        keys = {"popularity_edges", "activity_edges", "n_similarity_bins", "min_observations"}
        if not isinstance(data, dict) or set(data) != keys:
            got = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"`data` must be a dict with keys {sorted(keys)}; got {got}")
        return cls(
            popularity_edges=np.asarray(data["popularity_edges"]),
            activity_edges=np.asarray(data["activity_edges"]),
            n_similarity_bins=data["n_similarity_bins"],
            min_observations=data["min_observations"],
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StatisticBins):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(
            (tuple(self.popularity_edges), tuple(self.activity_edges), self.n_similarity_bins, self.min_observations)
        )
