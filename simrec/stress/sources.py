"""The three sources of global ranks for the stress harness (simrec issue 6).

A stress test needs, per recommender, the global rank R_u of each evaluated
user's held-out item among its N_u candidates (docs/design.md §5):

1. **simulation** — truth from a preference model, observed data from an
   observation model, a leave-one-out split (:func:`simrec.loo.leave_one_out`),
   recommenders scoring every candidate; the truth is kept, so the ranks of
   every *truly* relevant candidate are recorded too (for the error
   decomposition, :mod:`.decomposition`);
2. **dataset** — the same on real data (e.g. ML-100K), without a truth;
3. **file** — a user's own ranks (:func:`read_ranks_file`).

Candidate sets (``candidates`` of :func:`score_ranks`; the ``candidates`` key
of a dataset or simulation source; ``simrec ranks --candidates``). Which
items the held-out item is ranked among, and so which items the sampling
schemes draw negatives from (every scheme draws from the user's candidates
other than the held-out item):

* ``"unseen"`` (default) — C_u = all items − train_u (the held-out item
  included), N_u = n_items − |train_u|: Krichene & Rendle's protocol ("we
  rank all items (leaving out the user's training items)", §6.1). With the
  ``hypergeometric`` scheme this is Li & Jin's **"actual"** block
  (KDD 2020, Appendix A and Tables 5-6: "sampling without replacement using
  only irrelevant items", the global ranking ranks "only the irrelevant
  items", "training data rank bottom"); ``binomial`` is the same with
  replacement.
* ``"all"`` — C_u = every item: the user's training items stay in the
  global ranking, scored by the recommender like any other item (the
  recommender must accept ``score(..., exclude_train=False)``: LensKit
  scorers, Popular, Random), and can be drawn as negatives; N_u = n_items.
  With ``binomial`` / ``hypergeometric`` these are Li & Jin's **"binom"**
  and **"hyper"** blocks (Tables 5-6), whose global HR@K ranks all N items.

In a simulation the truly relevant candidates Rel_u = truth_u − train_u (the
held-out item among them) are ranked among the same candidates: with
``"all"`` the user's training items, though truly liked, are not targets of
the true metric (they are known to the recommender, as in the observed
evaluation) but stay in the ranking as competitors, so the observed and the
true metric of the error decomposition read one candidate set.

Decisions
---------
* Candidates C_u as above, so with ``"unseen"`` N_u = n_items − |train_u|
  differs between users. Sampled ranks are drawn from each user's own
  candidates (θ_u = (R_u − 1)/(N_u − 1)); the estimators are given one N
  (see :mod:`.harness`).
* Ranks and shares come from :func:`simrec.sampling.global_ranks`
  (``return_shares=True``), with the training items excluded (``"unseen"``)
  or not (``"all"``). Ties in the
  scores (LensKit leaves unscored candidates tied) are broken uniformly at
  random: tied candidates rank above the target iff an independent uniform
  key is below the target's key; the rank and the popularity share of a user
  are computed from the *same* above-set.
* Popularity weights are the items' training popularity (number of training
  users); the share s_u = Σ_{j above} w_j / Σ_{j ∈ C_u − t_u} w_j makes
  popularity-weighted sampling with replacement exact:
  r − 1 ~ Binomial(n − 1, s_u) (:func:`simrec.sampling.above_weight_share`).
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from simrec._inputs import InputFileError, open_input
from simrec._random import RNGLike, as_generator
from simrec._validation import check_choice, quote, shorten
from simrec.interactions import Interactions
from simrec.sampling import global_ranks
from simrec.user_sample import sample_evaluated

__all__ = [
    "CANDIDATE_SETS",
    "check_candidates",
    "RecommenderRanks",
    "RankSource",
    "LooData",
    "RanksFileError",
    "RANKS_FILE_COLUMNS",
    "loo_data",
    "simulate_loo_data",
    "score_ranks",
    "read_ranks_file",
    "ranks_frame",
]

#: Required columns of a ranks file (CSV or Parquet); ``popularity_share`` is optional.
RANKS_FILE_COLUMNS: tuple[str, ...] = ("user", "recommender", "rank", "n_candidates")

#: The candidate sets a held-out item can be ranked among (see the module docstring).
CANDIDATE_SETS: tuple[str, ...] = ("unseen", "all")

#: Dense (rows x items) elements scored or compared at once.
_BLOCK = 1 << 21


class RanksFileError(ValueError):
    """A ranks file is malformed; the message names the file, the row and the column."""


@dataclass(frozen=True, eq=False)
class RecommenderRanks:
    """Global ranks of one recommender's held-out items.

    Attributes
    ----------
    name : str
        Recommender name.
    ranks : ndarray of int64, shape (M,)
        Global rank R_u in [1, N_u] of user u's held-out item.
    n_candidates : ndarray of int64, shape (M,)
        N_u >= 2, the number of candidates the rank is taken among.
    users : ndarray, shape (M,)
        User labels (row indices or external ids), for output only.
    popularity_shares : ndarray of float64, shape (M,), optional
        Training-popularity weight share of the candidates ranked above the
        held-out item (enables the ``popularity`` scheme).
    true_ranks, true_users : ndarray of int64, shape (P,), optional
        Simulations only: the global rank of every truly relevant candidate
        (truth_u − train_u, held-out item included) and the position
        (0..M-1) of its user.
    n_unscored : int, default 0
        Users among the M for whom the recommender scored no candidate (their
        ranks are ties broken at random; :func:`score_ranks`,
        :mod:`simrec.recommenders.coverage`); 0 for a ranks file, which cannot tell.
    """

    name: str
    ranks: np.ndarray
    n_candidates: np.ndarray
    users: np.ndarray
    popularity_shares: np.ndarray | None = None
    true_ranks: np.ndarray | None = None
    true_users: np.ndarray | None = None
    n_unscored: int = 0

    def __post_init__(self) -> None:
        r = np.asarray(self.ranks, dtype=np.int64)
        nc = np.asarray(self.n_candidates, dtype=np.int64)
        if r.ndim != 1 or r.size == 0 or nc.shape != r.shape or np.shape(self.users) != r.shape:
            raise ValueError(
                f"`ranks`, `n_candidates` and `users` must be 1-d of one non-zero length; got shapes "
                f"{r.shape}, {nc.shape}, {np.shape(self.users)}"
            )
        if (nc < 2).any():
            raise ValueError(f"`n_candidates` must be >= 2; got {int(nc.min())}")
        if (r < 1).any() or (r > nc).any():
            u = int(np.flatnonzero((r < 1) | (r > nc))[0])
            raise ValueError(f"`ranks` must be in [1, n_candidates]; got {r[u]} of {nc[u]} at position {u}")
        object.__setattr__(self, "ranks", r)
        object.__setattr__(self, "n_candidates", nc)
        if self.popularity_shares is not None:
            s = np.asarray(self.popularity_shares, dtype=np.float64)
            if s.shape != r.shape or not np.isfinite(s).all() or (s < 0).any() or (s > 1).any():
                raise ValueError("`popularity_shares` must have shape (M,) and values in [0, 1]")
            object.__setattr__(self, "popularity_shares", s)
        if not 0 <= int(self.n_unscored) <= r.size:
            raise ValueError(f"`n_unscored` must be in [0, {r.size}] (the users); got {self.n_unscored}")
        object.__setattr__(self, "n_unscored", int(self.n_unscored))
        if (self.true_ranks is None) != (self.true_users is None):
            raise ValueError("`true_ranks` and `true_users` go together")
        if self.true_ranks is not None:
            tr = np.asarray(self.true_ranks, dtype=np.int64)
            tu = np.asarray(self.true_users, dtype=np.int64)
            if tr.shape != tu.shape or tr.ndim != 1 or (tu < 0).any() or (tu >= r.size).any():
                raise ValueError("`true_ranks`/`true_users` must be 1-d of equal length with users in [0, M)")
            if (tr < 1).any() or (tr > nc[tu]).any():
                raise ValueError("`true_ranks` must be in [1, n_candidates of their user]")
            object.__setattr__(self, "true_ranks", tr)
            object.__setattr__(self, "true_users", tu)

    @property
    def n_users(self) -> int:
        """M, the number of evaluated users."""
        return int(self.ranks.size)

    @property
    def has_truth(self) -> bool:
        return self.true_ranks is not None

    def unscored_note(self) -> str | None:
        """The warning when the recommender scored no candidate for many of its users (else None)."""
        from simrec.recommenders.coverage import unscored_note

        return unscored_note(
            self.name, self.n_unscored, self.n_users, "no candidate scored (ranks are ties broken at random)"
        )


@dataclass(frozen=True, eq=False)
class RankSource:
    """Ranks of several recommenders from one source.

    Attributes
    ----------
    name : str
    kind : {"simulation", "dataset", "file"}
    recommenders : tuple of RecommenderRanks
    info : dict
        Sizes (users, items, pairs, evaluated users, ...), for the manifest.
    """

    name: str
    kind: str
    recommenders: tuple[RecommenderRanks, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [r.name for r in self.recommenders]
        if not names:
            raise ValueError("a rank source needs at least one recommender")
        if len(set(names)) != len(names):
            raise ValueError(f"recommender names must be unique; got {names}")

    def get(self, name: str) -> RecommenderRanks:
        for r in self.recommenders:
            if r.name == name:
                return r
        raise KeyError(name)


# ---------------------------------------------------------------------------
# leave-one-out data
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class LooData:
    """A leave-one-out split ready for scoring.

    Attributes
    ----------
    train : Interactions, shape (n_users, n_items)
    users : ndarray of int64, shape (M,)
        Rows of the evaluated users.
    targets : ndarray of int64, shape (M,)
        Held-out item of each evaluated user.
    relevant : csr_array (n_users, n_items) or None
        True relevance truth_u − train_u (simulations; what oracles read).
    weights : ndarray of float64, shape (n_items,)
        Training popularity of each item (popularity-weighted sampling).
    info : dict
    """

    train: Interactions
    users: np.ndarray
    targets: np.ndarray
    relevant: sp.csr_array | None
    weights: np.ndarray
    info: dict[str, Any]

    def with_user_sample(self, max_users: int | None, seed: np.random.SeedSequence | int) -> LooData:
        """The same split evaluating a uniform sample of at most ``max_users`` of its users (:mod:`simrec.user_sample`,
        drawn from ``seed``, the split's); training data, candidates and weights unchanged. Itself when every user
        is kept."""
        users = sample_evaluated(self.users, max_users, seed)
        if users is self.users:
            return self
        keep = np.searchsorted(self.users, users)
        info = dict(self.info)
        info.update(
            evaluated_users=int(users.size),
            sampled_from_users=int(self.users.size),
            mean_candidates=float(self.train.n_items - self.train.user_counts()[users].mean()),
        )
        return LooData(self.train, users, self.targets[keep], self.relevant, self.weights, info)


def loo_data(
    observed: Interactions,
    rng: RNGLike = None,
    *,
    min_items: int = 2,
    truth: Interactions | None = None,
    truth_rows: np.ndarray | None = None,
    timestamps: np.ndarray | None = None,
) -> LooData:
    """Leave-one-out split of ``observed`` (and, with ``truth``, the true relevance).

    With ``timestamps`` (one per stored pair), each user's *latest* item is
    held out (:func:`simrec.loo.leave_last_out`, Krichene & Rendle's
    protocol); without, a uniformly random one (:func:`simrec.loo.leave_one_out`).

    Parameters
    ----------
    observed : Interactions
    rng : Generator or seed
        Chooses the held-out items.
    min_items : int, default 2
        Users with fewer observed items are not evaluated.
    truth, truth_rows : optional
        The true preferences and the truth row of each observed user
        (:class:`simrec.observation.Observed`); gives ``relevant``.
    """
    from simrec.experiment import true_relevance
    from simrec.loo import leave_last_out, leave_one_out

    if timestamps is None:
        split = leave_one_out(observed, rng, min_items=min_items)
    else:
        split = leave_last_out(observed, timestamps, rng, min_items=min_items)
    users = np.flatnonzero(split.test.user_counts() > 0).astype(np.int64)
    if users.size == 0:
        raise ValueError(f"no user has at least `min_items` = {min_items} observed items; nothing to evaluate")
    targets = split.test.matrix.indices[split.test.matrix.indptr[users]].astype(np.int64)
    relevant = None
    if truth is not None:
        if truth_rows is None:
            raise ValueError("`truth_rows` is required with `truth` (the truth row of each observed user); got None")
        relevant = true_relevance(truth, truth_rows, split.train)
    info = {
        "users": observed.n_users,
        "items": observed.n_items,
        "pairs": observed.n_pairs,
        "evaluated_users": int(users.size),
        "mean_candidates": float(observed.n_items - split.train.user_counts()[users].mean()),
    }
    if truth is not None and relevant is not None:
        info.update(
            truth_users=truth.n_users,
            truth_pairs=truth.n_pairs,
            mean_true_relevant=float(relevant[users].sum() / users.size),
        )
    return LooData(split.train, users, targets, relevant, split.train.item_counts().astype(np.float64), info)


def simulate_loo_data(
    world: Any, seed: np.random.SeedSequence | int, *, min_items: int = 2, max_users: int | None = None
) -> LooData:
    """Generate truth, observe it and split it leave-one-out (a :class:`simrec.experiment.World`).

    The seed's children are used in a fixed order (0 truth, 1 observation,
    2 split), so every task of a run rebuilds the same data; ``max_users``
    evaluates a uniform sample of the users (:meth:`LooData.with_user_sample`,
    drawn from ``seed``).
    """
    from simrec.observation import observe

    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    children = ss.spawn(3)
    truth = world.preference.generate(as_generator(children[0]), max_pairs=world.max_pairs)
    obs = observe(truth, world.profile, world.sampler, as_generator(children[1]))
    data = loo_data(obs.observed, children[2], min_items=min_items, truth=truth, truth_rows=obs.truth_rows)
    return data.with_user_sample(max_users, ss)


# ---------------------------------------------------------------------------
# ranks from scores
# ---------------------------------------------------------------------------
def check_candidates(recommender: Any, candidates: str) -> bool:
    """Check that ``recommender`` can rank among ``candidates``; True when the training items are candidates.

    Parameters
    ----------
    recommender : a :mod:`simrec.recommenders` recommender
    candidates : {"unseen", "all"}
        See the module docstring.

    Returns
    -------
    bool
        ``candidates == "all"``.

    Raises
    ------
    ValueError
        ``candidates`` is not one of :data:`CANDIDATE_SETS`, or it is ``"all"``
        and the recommender cannot score the user's training items (its
        ``score`` has no ``exclude_train`` parameter: the oracles, which know
        only the relevance of truth_u − train_u).
    """
    check_choice("candidates", candidates, CANDIDATE_SETS)
    every = candidates == "all"
    if every and "exclude_train" not in inspect.signature(recommender.score).parameters:
        raise ValueError(
            f"`candidates` 'all' needs a recommender that scores training items "
            f"(score(..., exclude_train=False)); {recommender.name!r} cannot"
        )
    return every


def score_ranks(
    recommender: Any,
    data: LooData,
    rng: RNGLike = None,
    *,
    truth: bool = True,
    candidates: str = "unseen",
) -> RecommenderRanks:
    """Score every candidate of every evaluated user and rank the held-out (and true) items.

    Parameters
    ----------
    recommender : a :mod:`simrec.recommenders` recommender
        Anything with ``name`` and ``score(train, relevant, rng, users=...)``.
    data : LooData
    rng : Generator or seed
        Used by the recommender, then for breaking ties.
    truth : bool, default True
        Also rank every truly relevant candidate (needs ``data.relevant``).
    candidates : {"unseen", "all"}, default "unseen"
        Rank among the items the user has not trained on (N_u = n_items −
        |train_u|), or among all items, the training items scored by the
        recommender (``score(..., exclude_train=False)``; N_u = n_items).
        See the module docstring (Li & Jin's "actual" vs "binom"/"hyper").

    Returns
    -------
    RecommenderRanks
        With ``popularity_shares`` (training popularity weights) and, in
        simulations, ``true_ranks``/``true_users``. Scores are built in user
        blocks of about 2M entries; a non-finite score at a candidate
        (e.g. unscored) ranks below every finite one; users with no scored
        candidate are counted in ``n_unscored``.
    """
    from simrec.recommenders.coverage import unscored_rows

    every = check_candidates(recommender, candidates)
    more = {"exclude_train": False} if every else {}  # the oracles' score takes no exclude_train
    gen = as_generator(rng)
    train, users, targets = data.train, data.users, data.targets
    n_items = train.n_items
    step = max(1, _BLOCK // n_items)
    ranks = np.empty(users.size, dtype=np.int64)
    shares = np.empty(users.size)
    relevant_all = data.relevant if truth else None
    want_truth = relevant_all is not None
    t_ranks: list[np.ndarray] = []
    t_users: list[np.ndarray] = []
    n_unscored = 0
    tm = train.matrix
    for r0 in range(0, users.size, step):
        blk = users[r0 : r0 + step]
        s = np.asarray(recommender.score(train, data.relevant, gen, users=blk, **more), dtype=np.float64)
        train_items = np.zeros(s.shape, dtype=bool)  # not candidates
        if not every:
            train_items[tm[blk].nonzero()] = True
        n_unscored += int(unscored_rows(s, train_items).sum())
        s = np.where(np.isfinite(s), s, -np.inf)
        # one block holds at most _BLOCK scores, so sampling's row chunks (twice as large) draw the same keys
        ranks[r0 : r0 + blk.size], shares[r0 : r0 + blk.size] = global_ranks(
            s, targets[r0 : r0 + blk.size], exclude=train_items, rng=gen, return_shares=True, weights=data.weights
        )
        if relevant_all is not None:
            rel = relevant_all[blk].tocoo()
            pu, pi = rel.row.astype(np.int64), rel.col.astype(np.int64)
            order = np.lexsort((pi, pu))
            pu, pi = pu[order], pi[order]
            pstep = max(1, _BLOCK // n_items)
            for p0 in range(0, pu.size, pstep):
                bu, bi = pu[p0 : p0 + pstep], pi[p0 : p0 + pstep]
                t_ranks.append(global_ranks(s[bu], bi, exclude=train_items[bu], rng=gen))
                t_users.append(r0 + bu)
    n_cand = (
        np.full(users.size, n_items, dtype=np.int64)
        if every
        else (n_items - train.user_counts()[users]).astype(np.int64)
    )
    return RecommenderRanks(
        recommender.name,
        ranks,
        n_cand,
        users.copy() if train.user_ids is None else np.asarray(train.user_ids)[users],
        popularity_shares=shares,
        true_ranks=np.concatenate(t_ranks) if want_truth else None,
        true_users=np.concatenate(t_users) if want_truth else None,
        n_unscored=n_unscored,
    )


# ---------------------------------------------------------------------------
# ranks files
# ---------------------------------------------------------------------------
def ranks_frame(source: RankSource) -> pd.DataFrame:
    """The held-out ranks as a tidy ranks-file frame (user, recommender, rank, n_candidates[, popularity_share])."""
    frames = []
    for rec in source.recommenders:
        cols = {"user": rec.users, "recommender": rec.name, "rank": rec.ranks, "n_candidates": rec.n_candidates}
        if rec.popularity_shares is not None:
            cols["popularity_share"] = rec.popularity_shares
        frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True)


def _where(path: Path, row: int, csv: bool) -> str:
    return f"row {row + 1}" + (f" (line {row + 2})" if csv else "")


def _numeric(frame: pd.DataFrame, col: str, path: Path, csv: bool, *, integer: bool) -> np.ndarray:
    raw = frame[col]
    kind = "integers (or floats with integral values)" if integer else "numbers"
    if not csv and (pd.api.types.is_bool_dtype(raw) or not pd.api.types.is_numeric_dtype(raw)):
        # a Parquet column has a type: booleans are not ranks (True would become rank 1), nor are strings
        raise RanksFileError(f"{path}: column `{col}` has dtype {raw.dtype}; it must hold {kind}")
    vals = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(vals)
    if integer:
        bad |= np.where(np.isfinite(vals), vals != np.floor(vals), False)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "an integer" if integer else "a number"
        raise RanksFileError(f"{path}: {_where(path, i, csv)}, column `{col}`: {quote(raw.iloc[i])} is not {what}")
    return vals


#: Every column a ranks file's reader looks at (a column named twice among them is refused).
_KNOWN_COLUMNS = (*RANKS_FILE_COLUMNS, "popularity_share")


def _read_table(path: Path, csv: bool) -> tuple[list[str], pd.DataFrame]:
    """The header's column names as written (duplicates kept) and the table (CSV cells as strings).

    The file is bounded before it is read (:func:`simrec._inputs.open_input`:
    a regular file within the data size limit, never a FIFO or a device).
    pandas renames a repeated CSV column (``rank``, ``rank.1``) and pyarrow
    keeps both, so the names come from the header itself.
    """
    with open_input(path, "data", "a ranks file (CSV or Parquet)") as fh:
        if not csv:
            import pyarrow.parquet as pq

            names = list(pq.read_schema(fh).names)
            if len(set(names)) < len(names):
                return names, pd.DataFrame(columns=list(dict.fromkeys(names)))
            fh.seek(0)
            return names, pd.read_parquet(fh)
        options = {"dtype": str, "keep_default_na": False, "skipinitialspace": True}
        names = pd.read_csv(fh, header=None, nrows=1, **options).iloc[0].tolist()
        fh.seek(0)
        return names, pd.read_csv(fh, **options)


#: Largest ``n_candidates`` a ranks file may give (2^31; beyond it int64 rank arithmetic and P(r|R) are out of reach).
MAX_CANDIDATES = 2**31


def read_ranks_file(path: str | os.PathLike, *, name: str | None = None) -> RankSource:
    """Read a user's ranks file (CSV or Parquet) into a :class:`RankSource`.

    Columns (header required, any order, extra columns ignored):

    ``user``
        user label (any value; unique per recommender);
    ``recommender``
        recommender name;
    ``rank``
        global rank of the user's held-out item among its candidates, 1 = best;
    ``n_candidates``
        the number of candidate items it was ranked among (>= 2, >= rank);
    ``popularity_share`` (optional)
        the popularity-weight share of the candidates ranked above the
        held-out item, in [0, 1]; enables the ``popularity`` scheme.

    Raises
    ------
    RanksFileError
        Unreadable file, missing columns, an empty file, a non-numeric or
        fractional rank, rank < 1, rank > n_candidates, n_candidates < 2, a
        share outside [0, 1], or a user listed twice for one recommender; the
        message names the file, the (1-based data) row, its CSV line and the
        column.
    """
    path = Path(path)
    csv = path.suffix.lower() not in {".parquet", ".pq"}
    try:
        names, frame = _read_table(path, csv)
    except InputFileError as exc:
        raise RanksFileError(str(exc)) from None
    except FileNotFoundError:
        raise RanksFileError(f"{path}: no such ranks file") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise RanksFileError(f"{path}: cannot read ranks file: {shorten(str(exc), 300)}") from None
    names = [str(c).strip() for c in names]
    twice = sorted({c for c in names if names.count(c) > 1} & set(_KNOWN_COLUMNS))
    if twice:
        raise RanksFileError(
            f"{path}: column {', '.join(f'`{c}`' for c in twice)} appears more than once in the header; "
            "give each column once"
        )
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in RANKS_FILE_COLUMNS if c not in frame.columns]
    if missing:
        raise RanksFileError(
            f"{path}: missing column(s) {', '.join(repr(c) for c in missing)}; a ranks file needs "
            f"{', '.join(RANKS_FILE_COLUMNS)} (got {quote(list(frame.columns))})"
        )
    if len(frame) == 0:
        raise RanksFileError(f"{path}: no rows")
    rank = _numeric(frame, "rank", path, csv, integer=True)
    ncand = _numeric(frame, "n_candidates", path, csv, integer=True)
    for bad, rule in (
        (ncand < 2, "`n_candidates` must be >= 2"),
        (ncand > MAX_CANDIDATES, f"`n_candidates` must be <= {MAX_CANDIDATES} (2^31: simrec's limit on a catalogue)"),
        (rank < 1, "`rank` must be >= 1"),
        (rank > ncand, "`rank` must be <= `n_candidates`"),
    ):
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            col = "n_candidates" if "`n_candidates` must be" in rule else "rank"
            raise RanksFileError(
                f"{path}: {_where(path, i, csv)}, column `{col}`: {rule}; got rank {quote(frame['rank'].iloc[i])}, "
                f"n_candidates {quote(frame['n_candidates'].iloc[i])}"
            )
    share = None
    if "popularity_share" in frame.columns:
        share = _numeric(frame, "popularity_share", path, csv, integer=False)
        bad = (share < 0) | (share > 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RanksFileError(
                f"{path}: {_where(path, i, csv)}, column `popularity_share`: must be in [0, 1]; "
                f"got {quote(frame['popularity_share'].iloc[i])}"
            )
    recs = frame["recommender"].astype(str).str.strip().to_numpy()
    users = frame["user"].astype(str).str.strip().to_numpy()
    empty = (recs == "") | (users == "")
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        col = "recommender" if recs[i] == "" else "user"
        raise RanksFileError(f"{path}: {_where(path, i, csv)}, column `{col}`: empty value")
    dup = pd.Series(list(zip(recs, users))).duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise RanksFileError(
            f"{path}: {_where(path, i, csv)}: user {quote(users[i])} is listed twice for recommender {quote(recs[i])}"
        )
    out = []
    for rec in dict.fromkeys(recs):  # one group per recommender (not per user)
        sel = recs == rec
        out.append(
            RecommenderRanks(
                str(rec),
                rank[sel].astype(np.int64),
                ncand[sel].astype(np.int64),
                users[sel],
                popularity_shares=None if share is None else share[sel],
            )
        )
    info = {
        "rows": int(len(frame)),
        "recommenders": len(out),
        "mean_candidates": float(np.mean(ncand)),
        "max_candidates": int(ncand.max()),
    }
    return RankSource(name or path.stem, "file", tuple(out), info)
