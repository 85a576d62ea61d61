"""The protocol every true-preference generator follows (docs/design.md §1).

The vectorized subset kernels the generators share live in
:mod:`simrec._subsets` (the observation samplers use them too).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from simrec._random import RNGLike
from simrec.interactions import Interactions

__all__ = ["PreferenceModel"]


@runtime_checkable
class PreferenceModel(Protocol):
    """What every true-preference generator provides (docs/design.md §1).

    Attributes
    ----------
    n_users : int
        Number of users (rows of the generated matrix).
    """

    @property
    def n_users(self) -> int: ...  # read-only, so the frozen dataclasses of the generators satisfy it

    def expected_pairs(self) -> float:
        """Expected number of true (user, item) pairs (or a documented upper bound)."""
        ...

    def expected_items(self) -> float:
        """Expected number of items (columns); random only for the IBP."""
        ...

    def generate(self, rng: RNGLike, *, max_pairs: int | None = None) -> Interactions:
        """Draw one true-preference matrix; refuse it first if ``expected_pairs() > max_pairs``."""
        ...
