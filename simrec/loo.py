"""Leave-one-out split: hold out one random observed item per user.

Sampled-metric studies (Krichene & Rendle 2020 §2; Li's dissertation §2.2)
evaluate one held-out item per user, ranked among the user's candidates
C_u = I − train_u. :func:`leave_one_out` draws that item uniformly from each
user's observed items, vectorized over users (one uniform draw per user).

Decision: users with fewer than ``min_items`` observed items (default 2) hold
out nothing; they keep every item for training and are *not evaluated*
(``Split.evaluated`` is False), so every evaluated user keeps at least one
training item.
"""

from __future__ import annotations

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_int
from simrec.interactions import Interactions
from simrec.split import Split

__all__ = ["leave_one_out"]


def leave_one_out(observed: Interactions, rng: RNGLike = None, *, min_items: int = 2) -> Split:
    """Hold out one uniformly random observed item of every user with >= ``min_items`` items.

    .. math:: t_u \\sim \\mathrm{Uniform}(\\mathrm{observed}_u), \\quad
              \\mathrm{train}_u = \\mathrm{observed}_u \\setminus \\{t_u\\}

    Parameters
    ----------
    observed : Interactions, shape (n_users, n_items)
    rng : Generator or seed
    min_items : int, default 2
        Users with fewer observed items are not evaluated (no test item);
        1 evaluates every user, even those left with an empty training profile.

    Returns
    -------
    Split
        ``test`` holds exactly one item for evaluated users and none for the
        others; ``train + test == observed``. Rows, shapes and ids as in
        ``observed``.
    """
    if not isinstance(observed, Interactions):
        raise TypeError(f"`observed` must be an Interactions; got {type(observed).__name__}")
    min_items = check_int("min_items", min_items, low=1)
    gen = as_generator(rng)
    m = observed.matrix
    counts = observed.user_counts().astype(np.int64)
    users = np.flatnonzero(counts >= min_items)
    pick = (gen.random(users.size) * counts[users]).astype(np.int64)
    pick = np.minimum(pick, counts[users] - 1)  # guard the (measure-zero) float edge
    is_test = np.zeros(m.nnz, dtype=bool)
    is_test[m.indptr[:-1][users].astype(np.int64) + pick] = True
    rows = observed.row_of_pairs()

    def part(mask: np.ndarray) -> Interactions:
        indptr = np.zeros(observed.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[mask], minlength=observed.n_users), out=indptr[1:])
        return Interactions.from_csr(
            indptr, m.indices[mask], m.shape, sort=False, user_ids=observed.user_ids, item_ids=observed.item_ids
        )

    return Split(train=part(~is_test), test=part(is_test))
