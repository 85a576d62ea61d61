"""A printable summary of an interaction dataset (``simrec datasets describe``)."""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

from ..interactions import Interactions

__all__ = ["CountSummary", "DatasetSummary", "describe", "gini"]


def gini(counts: np.ndarray) -> float:
    """Gini coefficient of non-negative counts (0 = all equal, → 1 = one holds all).

    .. math:: G = \\frac{\\sum_{i=1}^{n} (2i - n - 1)\\, x_{(i)}}{n \\sum_i x_i}

    with :math:`x_{(1)} \\le \\dots \\le x_{(n)}` (the mean-difference form,
    e.g. Damgaard & Weiner, Encyclopedia of Social Measurement, 2000). NaN
    with a warning when the counts are empty or all zero.
    """
    x = np.sort(np.asarray(counts, dtype=np.float64))
    n = len(x)
    total = x.sum()
    if n == 0 or total <= 0:
        warnings.warn(
            "Gini coefficient undefined for empty or all-zero counts; returning NaN", RuntimeWarning, stacklevel=2
        )
        return float("nan")
    ranks = np.arange(1, n + 1, dtype=np.float64)
    return float(((2 * ranks - n - 1) * x).sum() / (n * total))


@dataclass(frozen=True)
class CountSummary:
    """Summary of a count vector (profile sizes or item popularities).

    Attributes
    ----------
    min, median, mean, max : float
        Over all rows (users) or columns (items), empty ones included.
    gini : float
        :func:`gini` of the counts.
    n_empty : int
        Rows / columns with no pair (0 for loaded data; simulated observed data
        may have unobserved items).
    """

    min: float
    median: float
    mean: float
    max: float
    gini: float
    n_empty: int

    @classmethod
    def of(cls, counts: np.ndarray) -> CountSummary:
        c = np.asarray(counts, dtype=np.int64)
        if len(c) == 0:
            warnings.warn("no rows/columns: count summary undefined; returning NaN", RuntimeWarning, stacklevel=2)
            nan = float("nan")
            return cls(nan, nan, nan, nan, nan, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            g = gini(c) if c.sum() > 0 else float("nan")
        if c.sum() == 0:
            warnings.warn("all counts are zero: Gini undefined; returning NaN", RuntimeWarning, stacklevel=2)
        return cls(float(c.min()), float(np.median(c)), float(c.mean()), float(c.max()), g, int((c == 0).sum()))


@dataclass(frozen=True)
class DatasetSummary:
    """Size, density, user activity and item popularity of a dataset.

    Attributes
    ----------
    n_users, n_items, n_pairs : int
        Matrix shape and stored pairs.
    density : float
        ``n_pairs / (n_users * n_items)``.
    activity : CountSummary
        Profile sizes |I_u| (pairs per user).
    popularity : CountSummary
        Item popularities |U_i| (pairs per item).
    name : str or None
        Label printed in the table (e.g. the file name).
    """

    n_users: int
    n_items: int
    n_pairs: int
    density: float
    activity: CountSummary
    popularity: CountSummary
    name: str | None = None

    def to_dict(self) -> dict:
        """Plain nested dict (JSON-serialisable)."""
        return asdict(self)

    def to_text(self) -> str:
        """A small fixed-width table."""
        lines = []
        if self.name:
            lines.append(f"dataset   {self.name}")
        lines += [
            f"users     {self.n_users:>12,}",
            f"items     {self.n_items:>12,}",
            f"pairs     {self.n_pairs:>12,}",
            f"density   {self.density:>12.4%}",
            "",
            f"{'':18s}{'min':>8s}{'median':>9s}{'mean':>10s}{'max':>9s}{'gini':>7s}{'empty':>7s}",
        ]
        for label, c in (("user activity", self.activity), ("item popularity", self.popularity)):
            lines.append(
                f"{label:18s}{c.min:>8.0f}{c.median:>9.1f}{c.mean:>10.2f}{c.max:>9.0f}{c.gini:>7.3f}{c.n_empty:>7d}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def describe(inter: Interactions, *, name: str | None = None) -> DatasetSummary:
    """Summarise an interaction matrix.

    Parameters
    ----------
    inter : Interactions
        Shape (n_users, n_items).
    name : str, optional
        Label for the printed table.

    Returns
    -------
    DatasetSummary
        Counts are over every row and column of the matrix, empty ones included
        (their number is reported as ``n_empty``); the density of an empty
        shape is NaN.

    Examples
    --------
    ML-100K: 943 users, 1,682 items, 100,000 pairs, density 6.30%.
    """
    if not isinstance(inter, Interactions):
        raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
    if inter.n_users * inter.n_items == 0:
        warnings.warn("empty matrix: density undefined; returning NaN", RuntimeWarning, stacklevel=2)
    return DatasetSummary(
        n_users=inter.n_users,
        n_items=inter.n_items,
        n_pairs=inter.n_pairs,
        density=inter.density,
        activity=CountSummary.of(inter.user_counts()),
        popularity=CountSummary.of(inter.item_counts()),
        name=name,
    )
