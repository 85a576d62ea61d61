"""Blocks of consecutive users: the one size rule shared by the recommenders and the metrics.

Both build dense (users x items) temporaries a block of users at a time (score
blocks in :mod:`simrec.recommenders`, relevance and gain blocks in
:mod:`simrec.metrics`); this floor module holds the block size so that the two
packages, which know nothing of each other, use the same one.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["BLOCK_ELEMENTS", "user_blocks"]

#: Elements of a dense (users x items) block built at once: 2**21 float64 = 16 MiB per
#: temporary (about 190 users of an 11k-item catalogue).
BLOCK_ELEMENTS = 2**21


def user_blocks(n_users: int, n_cols: int, budget: int | None = None) -> Iterator[slice]:
    """Slices of consecutive users whose dense (rows x ``n_cols``) block fits ``budget`` elements.

    Parameters
    ----------
    n_users : int
        Number of users (rows), >= 0.
    n_cols : int
        Columns of a row (items), >= 0; 0 is treated as 1.
    budget : int, optional
        Elements per block (default :data:`BLOCK_ELEMENTS`); a block has at least one user.

    Yields
    ------
    slice
        ``slice(start, stop)``, covering ``range(n_users)`` in order.
    """
    step = max(1, (BLOCK_ELEMENTS if budget is None else budget) // max(n_cols, 1))
    for start in range(0, n_users, step):
        yield slice(start, min(start + step, n_users))
