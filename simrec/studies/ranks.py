"""A ranks file from a dataset and trained recommenders (``simrec ranks``).

Turns a dataset, a leave-one-out protocol and recommenders (LensKit pipelines
by name or import path, or simrec's baselines) into the ranks file that
``simrec stress`` reads (:func:`simrec.stress.read_ranks_file`): one row per
(evaluated user, recommender) with the columns

``user``
    the user's label in the dataset;
``recommender``
    the recommender's name;
``rank``
    the global rank R_u of the user's held-out item among the candidates,
    1 = best: ``1 + #{candidates scored above it} + #{tied candidates placed
    above it}``, where ties (equal scores, including candidates LensKit
    cannot score, which all share the lowest score) are broken uniformly at
    random — each tied candidate gets an independent uniform key and is above
    the held-out item iff its key is smaller — so E[R_u] = 1 + above + tied/2;
``n_candidates``
    with ``candidates="unseen"`` (default) N_u = n_items − |train_u|: every
    item of the dataset the user did not interact with in training (the
    held-out item included); with ``"all"`` N_u = n_items: the user's
    training items are scored too and stay among the candidates (Li & Jin's
    "binom" / "hyper" reading; :mod:`simrec.stress.sources`);
``popularity_share``
    s_u = Σ_{j above} w_j / Σ_{j ∈ C_u − t_u} w_j with w_j the item's
    training popularity (number of training users) and "above" the *same*
    set that gives R_u; it makes the ``popularity`` sampling scheme exact.

These are exactly the ranks ``simrec stress`` computes for a ``dataset``
source with the same dataset, split, ``min_items``, ``candidates`` and seed
(:func:`simrec.stress.loo_data`, :func:`simrec.stress.score_ranks`; the split
uses child 0 of the seed, recommender j child (1, j)), so one can compute
ranks once and stress them many times.

Protocols: ``split = "last"`` holds out each user's latest item by timestamp
(:func:`simrec.loo.leave_last_out`; ties in a user's latest timestamp are
broken at random), ``"random"`` one uniformly random item per user
(:func:`simrec.loo.leave_one_out`). Users with fewer than ``min_items``
observed items are not evaluated.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simrec._io import write_csv, write_parquet
from simrec._random import task_seed
from simrec.interactions import Interactions
from simrec.recommenders.coverage import UnscoredWarning
from simrec.stress import RankSource, check_candidates, loo_data, ranks_frame, score_ranks

__all__ = ["dataset_ranks", "write_ranks_file", "RANKS_SUFFIXES"]

#: Output suffixes: CSV, or Parquet.
RANKS_SUFFIXES: tuple[str, ...] = (".csv", ".parquet", ".pq")


class _Counting:
    """A recommender whose ``score`` reports how many users were scored (score_ranks calls it per block)."""

    def __init__(self, inner: Any, report: Callable[[int], None]) -> None:
        self.inner, self.report, self.name = inner, report, inner.name

    def score(
        self,
        train: Interactions,
        relevant: object,
        rng: Any,
        users: np.ndarray | None = None,
        *,
        exclude_train: bool = True,
    ) -> np.ndarray:
        # the inner recommender's own call when training items are excluded (it may not take the keyword);
        # dataset_ranks checked it can score them before wrapping it (check_candidates)
        more = {} if exclude_train else {"exclude_train": False}
        out = self.inner.score(train, relevant, rng, users=users, **more)
        self.report(len(out))
        return out


def dataset_ranks(
    observed: Interactions,
    recommenders: Sequence[Any],
    seed: int,
    *,
    timestamps: np.ndarray | None = None,
    min_items: int = 2,
    candidates: str = "unseen",
    on_progress: Callable[[str, int, int], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The ranks-file frame of ``recommenders`` on a leave-one-out split of ``observed``.

    Parameters
    ----------
    observed : Interactions, shape (n_users, n_items)
        The dataset (labels in ``user_ids`` become the ``user`` column).
    recommenders : sequence of recommenders
        Objects with ``name`` and ``score(train, relevant, rng, users=...)``
        (:mod:`simrec.recommenders`), unique names.
    seed : int
        Root seed: the split uses ``task_seed(seed, 0)``, recommender j
        ``task_seed(seed, 1, j)`` (training and tie-breaking), as in
        ``simrec stress``.
    timestamps : ndarray of shape (n_pairs,), optional
        One per stored pair: hold out each user's latest item; without,
        a uniformly random one.
    min_items : int, default 2
        Users with fewer observed items are not evaluated.
    candidates : {"unseen", "all"}, default "unseen"
        What the held-out item is ranked among: the items the user has not
        trained on, or every item (:func:`simrec.stress.score_ranks`).
    on_progress : callable, optional
        ``on_progress(name, users_done, n_users)`` after each block of users
        is scored (and once with 0 when a recommender starts).
    on_warning : callable, optional
        ``on_warning(message)`` for a recommender that scored no candidate
        for more than :data:`~simrec.recommenders.coverage.MAX_UNSCORED_SHARE`
        of the users (:mod:`simrec.recommenders.coverage`); default: an
        :class:`~simrec.recommenders.coverage.UnscoredWarning`.

    Returns
    -------
    DataFrame
        Columns ``user, recommender, rank, n_candidates, popularity_share``
        (see the module docstring), recommenders in the given order.

    Raises
    ------
    ValueError
        No user with ``min_items`` items, repeated recommender names, an
        unknown ``candidates``, or ``"all"`` with a recommender that cannot
        score training items (:func:`simrec.stress.check_candidates`).
    """
    names = [r.name for r in recommenders]
    if len(set(names)) != len(names):
        raise ValueError(f"recommender names must be unique; got {names}")
    for rec in recommenders:
        check_candidates(rec, candidates)
    data = loo_data(observed, task_seed(seed, 0), min_items=min_items, timestamps=timestamps)
    total = int(data.users.size)
    out = []
    for j, rec in enumerate(recommenders):
        done = {"n": 0}
        if on_progress is not None:
            on_progress(rec.name, 0, total)

            def report(k: int, name: str = rec.name) -> None:
                done["n"] += k
                on_progress(name, done["n"], total)

            rec = _Counting(rec, report)
        out.append(score_ranks(rec, data, task_seed(seed, 1, j), truth=False, candidates=candidates))
        note = out[-1].unscored_note()
        if note is not None:
            if on_warning is None:
                warnings.warn(note, UnscoredWarning, stacklevel=2)
            else:
                on_warning(note)
    return ranks_frame(RankSource("ranks", "dataset", tuple(out), data.info))


def write_ranks_file(path: str | Path, frame: pd.DataFrame) -> Path:
    """Write a ranks frame atomically: Parquet for ``.parquet``/``.pq``, else CSV (full float precision)."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        return write_parquet(path, frame)
    return write_csv(path, frame)
