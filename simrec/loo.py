"""Leave-one-out splits: hold out one random observed item per user, or each user's latest one.

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

__all__ = ["leave_one_out", "leave_last_out"]


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
    return _split(observed, is_test)


def _split(observed: Interactions, is_test: np.ndarray) -> Split:
    """Train and test parts of ``observed`` by a mask over its stored pairs."""
    m = observed.matrix
    rows = observed.row_of_pairs()

    def part(mask: np.ndarray) -> Interactions:
        indptr = np.zeros(observed.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows[mask], minlength=observed.n_users), out=indptr[1:])
        return Interactions.from_csr(
            indptr, m.indices[mask], m.shape, sort=False, user_ids=observed.user_ids, item_ids=observed.item_ids
        )

    return Split(train=part(~is_test), test=part(is_test))


def leave_last_out(observed: Interactions, timestamps: np.ndarray, rng: RNGLike = None, *, min_items: int = 2) -> Split:
    """Hold out each user's latest item (Krichene & Rendle 2020, §2: "the last event of each user").

    .. math:: t_u = \\arg\\max_{i \\in \\mathrm{observed}_u} \\tau_{ui}, \\quad
              \\mathrm{train}_u = \\mathrm{observed}_u \\setminus \\{t_u\\}

    Decision: when several of a user's items share the latest timestamp
    (MovieLens records seconds; several ratings in one second are common), one
    of them is held out uniformly at random with ``rng``; the paper does not
    say. Users with fewer than ``min_items`` observed items are not evaluated,
    as in :func:`leave_one_out`.

    Parameters
    ----------
    observed : Interactions, shape (n_users, n_items)
    timestamps : array of shape (observed.n_pairs,)
        The time of each stored pair, in the matrix's order (row by row,
        items ascending), e.g. from :func:`simrec.datasets.load_timestamped`
        (the latest record of a pair).
    rng : Generator or seed
        Breaks ties at the latest time.
    min_items : int, default 2

    Returns
    -------
    Split
        As :func:`leave_one_out`.
    """
    if not isinstance(observed, Interactions):
        raise TypeError(f"`observed` must be an Interactions; got {type(observed).__name__}")
    min_items = check_int("min_items", min_items, low=1)
    ts = np.asarray(timestamps)
    if ts.shape != (observed.n_pairs,):
        raise ValueError(
            f"`timestamps` must have one entry per stored pair, shape ({observed.n_pairs},); got {ts.shape}"
        )
    if not np.issubdtype(ts.dtype, np.number) or not np.isfinite(ts.astype(np.float64)).all():
        raise ValueError("`timestamps` must be finite numbers")
    gen = as_generator(rng)
    m = observed.matrix
    counts = observed.user_counts().astype(np.int64)
    starts = m.indptr[:-1].astype(np.int64)
    rows = observed.row_of_pairs()
    nonempty = counts > 0
    times = ts.astype(np.float64)
    latest = np.full(observed.n_users, -np.inf)
    latest[nonempty] = np.maximum.reduceat(times, starts[nonempty])
    at_latest = times == latest[rows]
    key = np.where(at_latest, gen.random(m.nnz), -1.0)  # a uniform pick among each user's latest
    best = np.full(observed.n_users, -np.inf)
    best[nonempty] = np.maximum.reduceat(key, starts[nonempty])
    is_test = at_latest & (key == best[rows]) & (counts[rows] >= min_items)
    return _split(observed, is_test)
