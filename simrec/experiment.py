"""One replicate of the missing-data experiment (thesis §3.5, §4.2-4.3).

generate truth -> observe -> hold out -> recommend -> measure every list
against the observed test items AND against the true relevance set.
This module and :mod:`simrec.stress` are the only places that wire
generators, recommenders and metrics together.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd
import scipy.sparse as sp

from simrec._cache import use_kernel

from . import metrics as _metrics
from ._random import as_generator, spawn_seeds
from ._sampling import pair_blocks
from ._validation import check_in_range, check_int
from .interactions import Interactions
from .loo import leave_one_out
from .observation import observe
from .recommenders import lists_of
from .recommenders.coverage import empty_lists, unscored_rows
from .split import Split, holdout
from .user_sample import check_max_users, sample_evaluated

__all__ = [
    "World",
    "Evaluation",
    "Replicate",
    "ReplicateData",
    "replicate_data",
    "split_observed",
    "run_replicate",
    "true_relevance",
    "true_gains",
    "RESULT_COLUMNS",
    "SPLITS",
]

#: The evaluation's splits of each world's observed data (:attr:`Evaluation.split`).
SPLITS: tuple[str, ...] = ("holdout", "last")

T = TypeVar("T")

#: Columns of the tidy result frame, in order.
RESULT_COLUMNS = [
    "replicate",
    "world",
    "preference",
    "observation",
    "recommender",
    "metric",
    "truth",
    "value",
    "n_evaluated",
    "n_undefined",
]

#: Users per block when dense score matrices are needed (AUC, pAp@k).
_SCORE_BLOCK = 2048


@dataclass(frozen=True)
class World:
    """A preference model and an observation model (one cell of the design).

    Parameters
    ----------
    name : str
        Label used in results (e.g. ``"ibp-pop"``).
    preference : simrec.preference model
        Anything with ``generate(rng) -> Interactions``.
    profile : simrec.observation profile-size model
        ``TruncatedPareto`` or ``TruncatedBetaBinomial``.
    sampler : simrec.observation sampler
        ``UniformSampler`` or ``PopularitySampler``.
    max_pairs : int, optional
        The generator's memory guard (``generate(..., max_pairs=...)``);
        default None: the library's default (:data:`simrec.DEFAULT_MAX_PAIRS`).
        The command line sets it from ``--max-memory``, which is checked
        against the world's expected size before anything runs.
    """

    name: str
    preference: Any
    profile: Any
    sampler: Any
    max_pairs: int | None = None

    @property
    def preference_label(self) -> str:
        return type(self.preference).__name__.lower()

    @property
    def observation_label(self) -> str:
        return self.sampler.label


@dataclass(frozen=True)
class Evaluation:
    """How lists are produced and measured.

    Parameters
    ----------
    recommenders : tuple of recommenders
        Objects with ``name``, ``recommend`` and ``score`` (:mod:`simrec.recommenders`).
    metrics : tuple of metric objects, default (Precision(), Recall(), NDCG(), ReciprocalRank())
        :mod:`simrec.metrics` metric objects; list metrics score the top-N
        lists, ranking metrics (``needs_scores``: AUC, pAp@k) every candidate.
    n : int, default 50
        List length N.
    test_fraction : float, default 0.2
        Share of each user's observed items held out as test (``split = "holdout"``).
    split : {"holdout", "last"}, default "holdout"
        ``"holdout"``: ``test_fraction`` of each user's observed items, drawn
        uniformly (:func:`simrec.split.holdout`; Tian 2019 §3.5.1).
        ``"last"``: leave-last-out, each user's latest observed item held out
        (Krichene & Rendle 2020 §2), in a *simulated consumption order*.
    max_users : int, optional
        Evaluate a uniform sample of at most this many of the users with a
        test item (:mod:`simrec.user_sample`: drawn from the replicate's seed;
        at least :data:`~simrec.user_sample.MIN_MAX_USERS`); the recommenders
        still train on every user. Default None: every user.

    Notes
    -----
    Decision (issue 24, the consumption order): a simulated world has no
    time, so ``split = "last"`` gives each user's observed items a uniformly
    random order, drawn from the split's seed (child 2 of the replicate's
    seed), and holds out the last one. The held-out item is then a uniformly
    random one of the user's observed items: exactly
    :func:`simrec.loo.leave_one_out` (users with fewer than 2 observed items
    hold out nothing and are not evaluated, as on real data with
    :func:`simrec.loo.leave_last_out`). Uniform is the order that assumes
    nothing the worlds do not model (their popularity and preferences do not
    change over time); a real user's latest item need not be a random one
    (newer, often less popular items), and the assessment's sim-to-real check
    shows how far the worlds' leave-last-out metrics are from the data's.
    """

    recommenders: tuple[Any, ...]
    metrics: tuple[_metrics.Metric, ...] = (
        _metrics.Precision(),
        _metrics.Recall(),
        _metrics.NDCG(),
        _metrics.ReciprocalRank(),
    )
    n: int = 50
    test_fraction: float = 0.2
    split: str = "holdout"
    max_users: int | None = None

    def __post_init__(self) -> None:
        check_int("n", self.n, low=1)
        check_max_users(self.max_users)
        check_in_range("test_fraction", self.test_fraction, 0, 1, low_open=True, high_open=True)
        if self.split not in SPLITS:
            raise ValueError(f"`split` must be one of {', '.join(map(repr, SPLITS))}; got {self.split!r}")
        if not self.recommenders:
            raise ValueError("`recommenders` must name at least one recommender; got none")
        bad = [m for m in self.metrics if not isinstance(m, (_metrics.ListMetric, _metrics.RankingMetric))]
        if bad:
            raise TypeError(f"`metrics` must be simrec.metrics metric objects (e.g. NDCG()); got {bad}")
        names = [m.name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"`metrics` must not repeat a metric; got {names}")


@dataclass(frozen=True)
class Replicate:
    """What one replicate produced: the tidy rows, a few sizes and the per-user values they average."""

    results: pd.DataFrame
    info: dict[str, float] = field(default_factory=dict)
    #: Per recommender, the evaluated users it left without a list (or, with ranking metrics only, without a
    #: scored candidate): :mod:`simrec.recommenders.coverage`.
    unscored: dict[str, int] = field(default_factory=dict)
    #: ``(recommender, metric, truth) -> ndarray (n_evaluated,)``: each evaluated user's value (NaN where
    #: undefined), users in the order of :attr:`users`; ``results["value"]`` is its NaN-mean. What paired
    #: significance tests read (:mod:`simrec.significance`, :mod:`simrec.studies.significance`); not written
    #: to a run's shards.
    per_user: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    #: Rows (in the observed data) of the evaluated users, shape (n_evaluated,).
    users: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))


def true_relevance(truth: Interactions, truth_rows: np.ndarray, train: Interactions) -> sp.csr_array:
    """True relevance set aligned with the observed rows: Ĩ_u − train_u.

    Parameters
    ----------
    truth : Interactions, shape (n_truth_users, n_items)
    truth_rows : ndarray of shape (n_users,)
        Truth row of each observed user.
    train : Interactions, shape (n_users, n_items)
        Training items. Items outside the truth rows (consumed dislikes, as
        :class:`simrec.observation.PreferenceSampler` observes them) are
        ignored: they are never truly relevant, and, being training items,
        never candidates either.

    Returns
    -------
    csr_array of shape (n_users, n_items)
        Binary (int8 ones), canonical.

    Notes
    -----
    From ``_KERNEL_MIN_PAIRS`` truth pairs on (or once numba is loaded), one
    merge of each truth row with its training row, written straight into the
    result (:func:`simrec._rows_kernel.rows_minus`; at ML-20M size 0.4 ->
    0.1 s CPU, docs/design.md §9). Below, by blocks of about ``_BLOCK_PAIRS``
    truth pairs of consecutive users (:func:`simrec._sampling.pair_blocks`):
    each block's truth rows minus their product with the training rows
    (scipy's sparse operations), the blocks' rows written one after another
    into the result. Every temporary is of the block's size; the same
    operations on all users at once built several arrays of the truth's size
    (at ML-20M size, 40M pairs each time, all fresh memory). The same set
    either way.
    """
    rows = np.asarray(truth_rows, dtype=np.int64)
    t_ptr = truth.matrix.indptr
    n_users, n_items = len(rows), truth.n_items
    g_ptr = np.zeros(n_users + 1, dtype=np.int64)  # the observed users' truth rows, user after user
    np.cumsum(t_ptr[rows + 1] - t_ptr[rows], out=g_ptr[1:])
    if use_kernel(g_ptr[-1], _KERNEL_MIN_PAIRS):
        from simrec._rows_kernel import rows_minus

        indptr, out = rows_minus(t_ptr, truth.matrix.indices, rows, train.matrix.indptr, train.matrix.indices, n_items)
        filled = len(out)
    else:
        indptr, out, filled = _minus_blocks(truth, rows, train, g_ptr)
    idx = np.int32 if max(n_items, filled) < 2**31 else np.int64
    rel = sp.csr_array(
        (np.ones(filled, dtype=np.int8), out[:filled].astype(idx, copy=False), indptr.astype(idx)),
        shape=(n_users, n_items),
    )
    rel.has_sorted_indices = True  # every block's rows sorted and unique
    rel.has_canonical_format = True
    return rel


def _minus_blocks(
    truth: Interactions, rows: np.ndarray, train: Interactions, g_ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`true_relevance`'s rows with scipy, by blocks of truth pairs: ``(indptr, indices buffer, pairs)``."""
    n_users = len(rows)
    counts = np.zeros(n_users, dtype=np.int64)
    out = np.empty(int(g_ptr[-1]), dtype=truth.matrix.indices.dtype)
    filled = 0
    for u0, u1 in pair_blocks(g_ptr, _BLOCK_PAIRS):
        aligned = truth.matrix[rows[u0:u1]]
        blk = sp.csr_array(aligned - aligned.multiply(train.matrix[u0:u1]))
        blk.eliminate_zeros()
        blk.sort_indices()
        out[filled : filled + blk.nnz] = blk.indices
        filled += blk.nnz
        counts[u0:u1] = np.diff(blk.indptr)
    indptr = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, out, filled


#: Truth pairs per block of :func:`true_relevance`.
_BLOCK_PAIRS = 1 << 20
#: Truth pairs from which :func:`true_relevance` merges the rows with the compiled kernel
#: (:func:`simrec._rows_kernel.rows_minus`; the same set): below it, importing numba and loading the
#: kernel (about 0.4 s) costs more than it saves, unless numba is loaded already.
_KERNEL_MIN_PAIRS = 1 << 23


def true_gains(truth: Interactions, truth_rows: np.ndarray, relevant: sp.csr_array) -> np.ndarray:
    """The truth's gains of the pairs of a true relevance set, aligned with its stored pairs.

    Parameters
    ----------
    truth : Interactions, shape (n_truth_users, n_items)
        A graded truth (``truth.gains`` set, e.g. the LDA truth's like counts).
    truth_rows : ndarray of shape (n_users,)
        Truth row of each row of ``relevant``.
    relevant : csr_array of shape (n_users, n_items)
        Canonical; every pair is a pair of the truth (e.g. rows of
        :func:`true_relevance`).

    Returns
    -------
    ndarray of shape (relevant.nnz,), the dtype of ``truth.gains``
        ``gains[j]`` is the truth's gain of ``relevant``'s j-th stored pair.
    """
    if truth.gains is None:
        raise ValueError("`truth` must carry gains (a graded truth); got a binary Interactions")
    sub = sp.csr_array(truth.gain_matrix()[np.asarray(truth_rows)])
    ones = sp.csr_array(
        (np.ones(relevant.nnz, dtype=truth.gains.dtype), relevant.indices, relevant.indptr), shape=relevant.shape
    )
    on = sp.csr_array(sub.multiply(ones))
    on.eliminate_zeros()
    on.sort_indices()
    if on.nnz != relevant.nnz:
        raise ValueError(
            f"`relevant` must hold only pairs of the truth; {relevant.nnz - on.nnz} of {relevant.nnz} are not"
        )
    return on.data


@dataclass(frozen=True, eq=False)
class ReplicateData:
    """One replicate's data before any recommender runs (:func:`replicate_data`).

    Attributes
    ----------
    truth : Interactions
        The true preferences.
    observed : Observed
        The observation (observed pairs, their truth rows, the drawn sizes).
    split : Split
        Training and test pairs of the observed users.
    true_rel : csr_array, shape (n_observed_users, n_items)
        True relevance: true likes minus training pairs (:func:`true_relevance`).
    evaluated : ndarray of int64
        Observed users with at least one test pair (with ``evaluation.max_users``, a uniform sample of at most
        that many of them: :func:`simrec.user_sample.sample_evaluated` of the replicate's seed).
    recommender_rngs : list of Generator
        One per recommender, in the evaluation's order.
    """

    truth: Interactions
    observed: Any
    split: Any
    true_rel: sp.csr_array
    evaluated: np.ndarray
    recommender_rngs: list[np.random.Generator]


def replicate_data(world: World, evaluation: Evaluation, seed: np.random.SeedSequence | int) -> ReplicateData:
    """Generate, observe and split one replicate: the data :func:`run_replicate` measures.

    The seed's children are used in a fixed order (0 truth, 1 observation, 2
    split, 3 + j recommender j; the user sample of ``evaluation.max_users``
    child :data:`~simrec.user_sample.USER_SAMPLE_STREAM`), so every study
    reading a replicate of the same seed (:func:`run_replicate`,
    :func:`simrec.debias.harness.debias_replicate`) sees the same data, users
    and lists.
    """
    # spawn_seeds derives the children without mutating a caller's SeedSequence
    # (SeedSequence.spawn would), so the same seed always gives the same replicate.
    children = spawn_seeds(seed, 3 + len(evaluation.recommenders))
    truth = world.preference.generate(as_generator(children[0]), max_pairs=world.max_pairs)
    obs = observe(truth, world.profile, world.sampler, as_generator(children[1]))
    split = split_observed(obs.observed, evaluation, children[2])
    true_rel = true_relevance(truth, obs.truth_rows, split.train)
    evaluated = sample_evaluated(np.flatnonzero(split.test.user_counts() > 0), evaluation.max_users, seed)
    rngs = [as_generator(children[3 + j]) for j in range(len(evaluation.recommenders))]
    return ReplicateData(truth, obs, split, true_rel, evaluated, rngs)


def split_observed(observed: Interactions, evaluation: Evaluation, seed: np.random.SeedSequence) -> Split:
    """The evaluation's split of a world's observed data (:attr:`Evaluation.split`; the consumption order of
    ``"last"`` is uniform per user, see :class:`Evaluation`)."""
    rng = as_generator(seed)
    if evaluation.split == "last":
        return leave_one_out(observed, rng)
    return holdout(observed, evaluation.test_fraction, rng)


def _quietly(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a metric with undefined-value warnings silenced: the replicate
    counts undefined users itself (``n_undefined``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _metrics.UndefinedMetricWarning)
        return fn(*args, **kwargs)


def run_replicate(
    world: World, evaluation: Evaluation, seed: np.random.SeedSequence | int, replicate: int = 0
) -> Replicate:
    """Run one replicate and measure every recommender x metric x truth kind.

    Parameters
    ----------
    world : World
    evaluation : Evaluation
    seed : SeedSequence or int
        The replicate's own seed. Its children are used in a fixed order
        (0 truth, 1 observation, 2 split, 3 + j recommender j), so adding a
        recommender leaves the data and the other recommenders' lists unchanged.
    replicate : int, default 0
        Index written into the results.

    Returns
    -------
    Replicate
        ``results`` has the columns :data:`RESULT_COLUMNS`; ``truth`` is
        ``"observed"`` (relevance = held-out test items) or ``"true"``
        (relevance = true likes − training items). ``value`` is the mean over
        evaluated users with a defined value: users with no test item are not
        evaluated; users whose true relevance set is empty are counted in
        ``n_undefined`` for ``truth == "true"`` and left out of the mean.
        ``unscored`` counts, per recommender, the evaluated users whose list
        is empty (with ranking metrics only: whose score row has no scored
        candidate), e.g. a LensKit scorer returning NaN
        (:mod:`simrec.recommenders.coverage`).

    Notes
    -----
    Users with no observed item are dropped by the observation step. With the
    thesis's samplers the observed data are a subset of the truth; a sampler
    that consumes disliked items (:class:`simrec.observation.PreferenceSampler`)
    adds pairs outside it. Such a pair in training is a training item like any
    other (no candidate, never truly relevant); in test it counts as relevant
    against the observed test items and not against the truth (Ĩ_u − train_u
    holds liked items only). A user with no true like can then be observed
    and evaluated: its true relevance set is empty, so its ``"true"`` values
    are undefined and counted in ``n_undefined``.

    AUC of the baselines (issue 13). Random, Popular and Oracle
    (``ties="random"``) rank by a level (one level; training popularity;
    relevant or not) and break ties uniformly at random; they say so through
    ``score_levels`` (:class:`~simrec.recommenders.TiedLevels`). For them a
    metric that needs only the relevant items' mid-ranks (``from_ranks``:
    AUC) is computed from the levels, ties counting 1/2 as in
    :func:`simrec.metrics.auc`: exactly the expected AUC over their random
    tie-break, with no dense (users x items) score block and no draw. Their
    lists, and so every list metric, keep their random tie-break. Decision:
    one realised tie-break has the same expectation and only adds its own
    noise, while drawing it needs a dense score block per recommender, which
    made AUC 88% of the quickstart's task time. Other recommenders (LensKit
    scorers, ``Oracle(ties="item_id")``) and pAp@k use the dense scores of
    ``score``, blocks of users at a time.

    Graded truth: when the truth carries gains (the LDA truth's like counts)
    and a list metric reads them (``uses_gains``: ``ndcg_lenskit07``), the
    true relevance set of the list metrics carries the truth's gains of its
    pairs (:func:`true_gains`); every other metric, and the observed
    relevance, stay binary. This is the thesis authors' code: its true test
    set kept the LDA counts as ``rating``, its observed data had ``rating``
    set to 1 before the split, and LensKit 0.7's nDCG read ``rating`` as the
    gain. The recommenders receive the graded true relevance as well; only
    ``Oracle(ties="item_id")`` (the authors' Oracle) reads the gains, ranking
    relevant candidates by like count as the authors' ``Memorized`` Oracle did.
    """
    data = replicate_data(world, evaluation, seed)
    truth, obs, split, true_rel, evaluated = data.truth, data.observed, data.split, data.true_rel, data.evaluated
    train = split.train
    rel_sets = {
        "observed": sp.csr_array(split.test.matrix[evaluated]),
        "true": sp.csr_array(true_rel[evaluated]),
    }
    score_metrics = [cast(_metrics.RankingMetric, m) for m in evaluation.metrics if m.needs_scores]
    list_metrics = [cast(_metrics.ListMetric, m) for m in evaluation.metrics if not m.needs_scores]
    # a graded truth (the LDA truth's like counts): the recommenders get the true relevance with
    # its gains (only Oracle(ties="item_id"), the authors' Oracle, reads them), and so does a list
    # metric that reads gains (ndcg_lenskit07, the thesis code's reading); observed relevance stays
    # binary, as there
    rec_rel: sp.csr_array | Interactions = true_rel
    list_rel_sets: dict[str, sp.csr_array | Interactions] = dict(rel_sets)
    if truth.gains is not None:
        rec_rel = Interactions(true_rel, gains=true_gains(truth, obs.truth_rows, true_rel))
        if any(m.uses_gains for m in list_metrics):
            list_rel_sets["true"] = rec_rel.select_users(evaluated)
    rows: list[tuple] = []
    per_user: dict[tuple[str, str, str], np.ndarray] = {}
    rec_rngs = data.recommender_rngs
    measured: dict[str, list[dict[str, np.ndarray]]] = {}
    unscored = {rec.name: 0 for rec in evaluation.recommenders}
    if list_metrics:
        # every recommender's lists first, then each relevance set looked up once for all of them
        all_lists = [
            lists_of(rec, train, rec_rel, evaluation.n, rec_rng, evaluated)
            for rec, rec_rng in zip(evaluation.recommenders, rec_rngs)
        ]
        unscored = {rec.name: int(empty_lists(lists).sum()) for rec, lists in zip(evaluation.recommenders, all_lists)}
        measured = {
            kind: _quietly(_metrics.measure_lists_many, all_lists, rel, list_metrics)
            for kind, rel in list_rel_sets.items()
        }
        del all_lists
    for j, (rec, rec_rng) in enumerate(zip(evaluation.recommenders, rec_rngs)):
        values: dict[tuple[str, str], np.ndarray] = {
            (m, kind): v for kind, per_rec in measured.items() for m, v in per_rec[j].items()
        }
        # a baseline whose ranking is levels with a random tie-break (score_levels): the metrics
        # that need only the relevant items' mid-ranks (AUC) read them, without a dense score block
        levels = None
        if any(m.from_ranks for m in score_metrics) and hasattr(rec, "score_levels"):
            levels = rec.score_levels(train, rec_rel, users=evaluated)
        dense_metrics = [m for m in score_metrics if levels is None or not m.from_ranks]
        if levels is not None:
            ranked = levels.mid_ranks(list(rel_sets.values()))
            n_cand = levels.n_candidates()
            for m in score_metrics:
                if m.from_ranks:
                    values.update(
                        {(m.name, kind): v for kind, v in zip(rel_sets, _quietly(m.per_user_ranked, ranked, n_cand))}
                    )
        if dense_metrics:
            # Dense scores only for a block of users at a time.
            parts: dict[tuple[str, str], list[np.ndarray]] = {(m.name, k): [] for m in dense_metrics for k in rel_sets}
            for start in range(0, len(evaluated), _SCORE_BLOCK):
                users = evaluated[start : start + _SCORE_BLOCK]
                block = rec.score(train, rec_rel, rec_rng, users=users)
                if not list_metrics:
                    unscored[rec.name] += int(unscored_rows(block).sum())
                rel_blocks = [sp.csr_array(rel[start : start + len(users)]) for rel in rel_sets.values()]
                for m in dense_metrics:
                    for kind, v in zip(rel_sets, _quietly(m.per_user_many, block, rel_blocks)):
                        parts[m.name, kind].append(v)
            values.update({key: np.concatenate(v) if v else np.empty(0) for key, v in parts.items()})
        for name in (m.name for m in evaluation.metrics):
            for kind in rel_sets:
                vals = values[name, kind]
                per_user[rec.name, name, kind] = vals
                ok = ~np.isnan(vals)
                mean = float(vals[ok].mean()) if ok.any() else float("nan")
                rows.append(
                    (
                        replicate,
                        world.name,
                        world.preference_label,
                        world.observation_label,
                        rec.name,
                        name,
                        kind,
                        mean,
                        int(ok.sum()),
                        int((~ok).sum()),
                    )
                )
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    info = {
        "truth_users": truth.n_users,
        "truth_items": truth.n_items,
        "truth_pairs": truth.n_pairs,
        "observed_users": obs.observed.n_users,
        "observed_pairs": obs.observed.n_pairs,
        "evaluated_users": int(len(evaluated)),
    }
    return Replicate(frame, info, unscored, per_user, evaluated)
