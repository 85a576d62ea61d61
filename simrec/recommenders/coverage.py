"""Users a recommender left without a list or a score, and the warning when they are many (issue 22).

A LensKit scorer that returns NaN for every candidate (a bug, a model that
did not train, a scorer that cannot score these users) gives empty top-N
lists and candidates that all share the lowest score (:data:`UNSCORED`):
precision is then undefined (NaN) and recall 0 for those users, and their
global ranks are ties broken at random. Nothing in the numbers says why, so
simrec counts such users per recommender and warns, naming it, when they are
more than :data:`MAX_UNSCORED_SHARE` of the users evaluated.

Decision: 10%. A working scorer leaves few users unscored (LensKit's
ItemKNN cannot score a user whose training items have no neighbours, a
small share of users on real data); a share above 10% changes the means
materially and is worth a look. Used by ``simrec run`` (empty lists, or
score rows without a scored candidate when only ranking metrics are asked),
``simrec stress`` (dataset and simulation sources) and ``simrec ranks``
(rows of scores without a scored candidate).
"""

from __future__ import annotations

import numpy as np

from simrec._validation import quote
from simrec.recommenders.lenskit_adapter import UNSCORED

__all__ = ["MAX_UNSCORED_SHARE", "UNSCORED", "UnscoredWarning", "empty_lists", "unscored_rows", "unscored_note"]

#: Share of evaluated users above which a recommender without lists or scores for them gets a warning.
MAX_UNSCORED_SHARE = 0.10


class UnscoredWarning(UserWarning):
    """A recommender left more than :data:`MAX_UNSCORED_SHARE` of the users without a list or a scored candidate."""


def empty_lists(lists: np.ndarray) -> np.ndarray:
    """Rows of top-N lists (int, -1 padding) that hold no item: bool array of shape (n_users,)."""
    lists = np.asarray(lists)
    return np.asarray(~(lists >= 0).any(axis=1)) if lists.shape[1] else np.ones(lists.shape[0], dtype=bool)


def unscored_rows(scores: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
    """Rows of a score block in which no candidate has a score: shape (n_users,).

    A candidate is scored when its score is above :data:`UNSCORED` (NaN,
    ``-inf`` (a non-candidate) and :data:`UNSCORED` itself are not scores);
    ``exclude`` (bool, the block's shape) marks entries that are not
    candidates whatever their score.
    """
    scored = np.asarray(scores) > UNSCORED
    if exclude is not None:
        scored &= ~exclude
    return np.asarray(~scored.any(axis=1))


def unscored_note(name: str, n_unscored: int, n_users: int, what: str) -> str | None:
    """The warning for a recommender with ``what`` for more than :data:`MAX_UNSCORED_SHARE` of ``n_users``, else None.

    ``what`` says what those users got and what it does to the numbers,
    e.g. ``"an empty list (no candidate scored): precision is NaN and
    recall 0 for them"``.
    """
    if n_users <= 0 or n_unscored <= MAX_UNSCORED_SHARE * n_users:
        return None
    return (
        f"recommender {quote(name)}: {what}, for {n_unscored:,} of {n_users:,} users ({n_unscored / n_users:.0%}, "
        f"more than {MAX_UNSCORED_SHARE:.0%}); its scorer returned no usable score (NaN or nothing) for them: "
        "check the recommender"
    )
