"""The four key statistics of a dataset, computed together (Tian's thesis, §3.4)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._random import RNGLike, as_generator
from .._validation import check_int
from ..interactions import Interactions
from .bins import StatisticBins
from .counts import item_popularity, user_activity
from .divergence import DEFAULT_EPS, kl_divergence
from .similarity import DEFAULT_MAX_SIMILARITY_PAIRS, item_cosines, similarity_histogram, user_cosines

__all__ = ["STATISTICS", "KeyStatistics", "key_statistics", "kl_by_statistic"]

#: Names of the four key statistics, in the thesis's order.
STATISTICS = ("item_popularity", "user_activity", "item_similarity", "user_similarity")


def _readonly(x: Any) -> np.ndarray:
    a = np.array(x, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class KeyStatistics:
    """Normalised histograms of the four key statistics on shared bins.

    Attributes
    ----------
    item_popularity : ndarray, shape (len(bins.popularity_edges),)
    user_activity : ndarray, shape (len(bins.activity_edges),)
    item_similarity, user_similarity : ndarray, shape (bins.n_similarity_bins,)
        Masses summing to 1 (read-only), or NaN where undefined.
    bins : StatisticBins
    n_item_pairs, n_user_pairs : int
        Pairs behind each similarity histogram.
    item_pairs_exact, user_pairs_exact : bool
        True when every eligible pair was used (no sampling).

    Index by name (``stats["item_similarity"]``), iterate over names, or use
    :meth:`as_dict`.
    """

    item_popularity: np.ndarray
    user_activity: np.ndarray
    item_similarity: np.ndarray
    user_similarity: np.ndarray
    bins: StatisticBins
    n_item_pairs: int = 0
    n_user_pairs: int = 0
    item_pairs_exact: bool = False
    user_pairs_exact: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.bins, StatisticBins):
            raise TypeError(f"`bins` must be a StatisticBins; got {type(self.bins).__name__}")
        for name in STATISTICS:
            a = _readonly(getattr(self, name))
            if a.shape != (self.bins.n_bins(name),):
                raise ValueError(f"`{name}` must have shape ({self.bins.n_bins(name)},) to match `bins`; got {a.shape}")
            object.__setattr__(self, name, a)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in STATISTICS:
            raise KeyError(f"unknown statistic {name!r}; expected one of {STATISTICS}")
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(STATISTICS)

    def keys(self) -> tuple[str, ...]:
        return STATISTICS

    def as_dict(self) -> dict[str, np.ndarray]:
        """The four histograms keyed by :data:`STATISTICS`."""
        return {name: getattr(self, name) for name in STATISTICS}

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (lists); :meth:`from_dict` inverts it (NaN stays NaN)."""
        out: dict[str, Any] = {name: getattr(self, name).tolist() for name in STATISTICS}
        out.update(
            bins=self.bins.to_dict(),
            n_item_pairs=self.n_item_pairs,
            n_user_pairs=self.n_user_pairs,
            item_pairs_exact=self.item_pairs_exact,
            user_pairs_exact=self.user_pairs_exact,
        )
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeyStatistics:
        """Rebuild from :meth:`to_dict` output."""
        need = set(STATISTICS) | {"bins"}
        if not isinstance(data, dict) or not need <= set(data):
            raise ValueError(f"`data` must be a dict with keys {sorted(need)} (from KeyStatistics.to_dict)")
        extra = {
            k: data[k] for k in ("n_item_pairs", "n_user_pairs", "item_pairs_exact", "user_pairs_exact") if k in data
        }
        arrays: dict[str, Any] = {name: np.asarray(data[name], dtype=np.float64) for name in STATISTICS}
        return cls(
            **arrays,
            bins=StatisticBins.from_dict(data["bins"]),
            **extra,
        )


def key_statistics(
    inter: Interactions,
    bins: StatisticBins,
    rng: RNGLike,
    *,
    max_pairs: int = DEFAULT_MAX_SIMILARITY_PAIRS,
) -> KeyStatistics:
    """Item popularity, user activity, item-item and user-user similarity of a dataset.

    The four distributions of Tian's thesis §3.4 on the bins ``bins`` (derive
    them once from the reference with :meth:`StatisticBins.from_reference` and
    reuse them for every simulation). The two similarity samples use
    independent child streams of ``rng`` (``Generator.spawn``), items first.

    Parameters
    ----------
    inter : Interactions, shape (n_users, n_items)
    bins : StatisticBins
    rng : Generator or seed
    max_pairs : int
        Pairs sampled per similarity statistic. Default 1,000,000 (thesis).

    Returns
    -------
    KeyStatistics
    """
    if not isinstance(inter, Interactions):
        raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
    if not isinstance(bins, StatisticBins):
        raise TypeError(f"`bins` must be a StatisticBins; got {type(bins).__name__}")
    max_pairs = check_int("max_pairs", max_pairs, low=1)
    rng_items, rng_users = as_generator(rng).spawn(2)
    items = item_cosines(inter, rng_items, min_observations=bins.min_observations, max_pairs=max_pairs)
    users = user_cosines(inter, rng_users, min_observations=bins.min_observations, max_pairs=max_pairs)
    return KeyStatistics(
        item_popularity=item_popularity(inter, bins),
        user_activity=user_activity(inter, bins),
        item_similarity=similarity_histogram(items.cosines, bins.n_similarity_bins, what="item similarity"),
        user_similarity=similarity_histogram(users.cosines, bins.n_similarity_bins, what="user similarity"),
        bins=bins,
        n_item_pairs=len(items.cosines),
        n_user_pairs=len(users.cosines),
        item_pairs_exact=items.exact,
        user_pairs_exact=users.exact,
    )


def kl_by_statistic(
    reference: KeyStatistics, simulated: KeyStatistics, *, eps: float = DEFAULT_EPS
) -> dict[str, float]:
    """KL divergence D_KL(reference ‖ simulated) of each key statistic.

    Parameters
    ----------
    reference, simulated : KeyStatistics
        Computed on equal :class:`StatisticBins`.
    eps : float
        Smoothing, see :func:`kl_divergence`. Default 1e-6.

    Returns
    -------
    dict of str to float
        Keyed by :data:`STATISTICS` (NaN with a warning where a statistic is
        undefined).
    """
    for name, s in (("reference", reference), ("simulated", simulated)):
        if not isinstance(s, KeyStatistics):
            raise TypeError(f"`{name}` must be a KeyStatistics; got {type(s).__name__}")
    if reference.bins != simulated.bins:
        raise ValueError("`reference` and `simulated` must share the same StatisticBins; got different bins")
    return {name: kl_divergence(reference[name], simulated[name], eps=eps) for name in STATISTICS}
