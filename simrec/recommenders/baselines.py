"""Reference recommenders of Tian's thesis: Oracle, Popular, Random (+ ProbabilisticOracle).

Tian's thesis §3.5.2 (shared/seeds/tian-thesis-offline-eval-error.txt) and
docs/design.md §4. All lists are drawn over the candidates
:math:`C_u = I \\setminus \\mathrm{train}_u` and are exactly (not only
approximately) distributed as ``top_n(score(...), n)``; ``recommend`` works on
the sparse structure (O(nnz log nnz + n_users n), never a dense
n_users x n_items array), ``score`` builds dense scores block by block.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from simrec._blocks import user_blocks
from simrec._random import RNGLike, as_generator
from simrec._sampling import (
    nth_allowed,
    rank_within_rows,
    row_ids,
)
from simrec._validation import check_choice, check_in_range, check_int
from simrec.interactions import Interactions
from simrec.recommenders._base import (
    check_relevant,
    check_train,
    check_users,
    lists_from_entries,
    train_mask,
)
from simrec.recommenders._candidates import (
    _allowed_laid,
    _Excluded,
    _permuted_into,
    _random_outside,
    _random_relevant,
    _train_or_relevant,
)
from simrec.recommenders._popular_lists import popular_lists
from simrec.recommenders.levels import TiedLevels

__all__ = ["Oracle", "ProbabilisticOracle", "Popular", "RandomRecommender"]


# -- helpers -------------------------------------------------------------------


def _csr_rows(m: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    return row_ids(np.diff(m.indptr)), m.indices.astype(np.int64)


def _scatter_rows(
    out: np.ndarray, m: sp.csr_array, users: np.ndarray, value: float | None, *, add: bool = False
) -> None:
    """Set (or add ``value`` to) ``out[k, i]`` for every stored pair (users[k], i) of ``m``
    (``value=None``: the pair's stored value).

    ``out`` must be C-contiguous (a fresh score block; else ``ValueError``);
    it is written through a flat view. O(stored pairs of those users), no dense (users x n_items) mask:
    flat indices ``row * n_items + item`` and a one-dimensional assignment or
    ``np.add.at`` (the stored pairs of a canonical CSR row are distinct, so
    every cell receives one addition: the same floating-point result as
    ``out[rows, cols] += value``). When ``users`` is every row in order, ``m``
    is used as it is (no row-selection copy). Identical values to the
    earlier two-dimensional fancy assignment (pinned in
    tests/test_recommenders_scores.py); measured at the quickstart's size
    (943 x 1,682, 232,616 relevant pairs, load 8.6): setting -inf 0.49 ->
    0.09 ms, adding Oracle's 1.0 4.55 -> 1.27 ms.
    """
    n_rows, n_items = out.shape
    whole = len(users) == m.shape[0] and np.array_equal(users, np.arange(m.shape[0]))
    sub = m if whole else m[users]
    if not out.flags.c_contiguous:
        raise ValueError("`out` must be a C-contiguous score block (it is written through a flat view)")
    flat = out.reshape(-1)  # a view: out is C-contiguous
    idx = row_ids(np.diff(sub.indptr)) * n_items + sub.indices
    if value is None:
        value = sub.data
    if add:
        np.add.at(flat, idx, value)
    else:
        flat[idx] = value


def _rows_of(m: sp.csr_array, users: np.ndarray) -> sp.csr_array:
    """``m[users]`` as a csr_array (``m`` itself when ``users`` is every row in order)."""
    if len(users) == m.shape[0] and np.array_equal(users, np.arange(m.shape[0])):
        return sp.csr_array(m)
    return sp.csr_array(m[users])


def _item_levels(train: Interactions, relevant: object, users: object, *, popularity: bool) -> TiedLevels:
    """Levels of the non-oracle baselines for ``users``: the training popularity or one level; training items excluded."""
    train = check_train(train)
    check_relevant(relevant, train, required=False)
    users = check_users(users, train.n_users)
    level = train.item_counts().astype(np.float64) if popularity else np.zeros(train.n_items)
    return TiedLevels(len(users), level, None, _rows_of(train.matrix, users))


def _check_n(n: object) -> int:
    return check_int("n", n, low=1)


# -- Random -----------------------------------------------------------------------


class RandomRecommender:
    """Random candidates: each list is a uniform random ordered sample of :math:`C_u`.

    Tian's thesis §3.5.2: "The Random recommender recommends random unrated
    items for each user", the lower reference point.

    Parameters
    ----------
    name : str, default "Random"
    """

    def __init__(self, name: str = "Random") -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"RandomRecommender(name={self.name!r})"

    def recommend(self, train: Interactions, relevant: sp.csr_array | None, n: int, rng: RNGLike = None) -> np.ndarray:
        """Top-n random candidates per user, shape (n_users, n), -1 padding."""
        train = check_train(train)
        check_relevant(relevant, train, required=False)
        n = _check_n(n)
        gen = as_generator(rng)
        allowed = train.n_items - train.user_counts()
        out = np.full((train.n_users, n), -1, dtype=np.int64)
        if (allowed <= n).all():  # every candidate (a full ranking): by 2-D blocks, the same draws and lists
            _permuted_into(out, allowed, lambda u: _allowed_laid(train.matrix[u], train.n_items), gen)
            return out
        for rows, rank, items in _random_outside(
            _Excluded(train.matrix), np.minimum(n, allowed), allowed, train.n_items, gen
        ):
            out[rows, rank] = items
        return out

    def score(
        self,
        train: Interactions,
        relevant: sp.csr_array | None,
        rng: RNGLike = None,
        users: np.ndarray | None = None,
        *,
        exclude_train: bool = True,
    ) -> np.ndarray:
        """Uniform(0, 1) scores at candidates, -inf at training items (``exclude_train=False``: scored too)."""
        train = check_train(train)
        check_relevant(relevant, train, required=False)
        users = check_users(users, train.n_users)
        gen = as_generator(rng)
        out = gen.random((len(users), train.n_items))
        if exclude_train:
            _scatter_rows(out, train.matrix, users, -np.inf)
        return out

    def score_levels(
        self, train: Interactions, relevant: sp.csr_array | None, users: np.ndarray | None = None
    ) -> TiedLevels:
        """The ranking of :meth:`score` as levels: one level, every order of the candidates equally likely."""
        return _item_levels(train, relevant, users, popularity=False)


# -- Popular ----------------------------------------------------------------------


class Popular:
    """Most popular candidates by training popularity, ties broken at random per user.

    Popularity is :math:`|\\{v : i \\in \\mathrm{train}_v\\}|`
    (``train.item_counts()``; Tian's thesis §3.5.2: "popularity statistics
    from the observable training data").

    Parameters
    ----------
    name : str, default "Popular"

    Notes
    -----
    Decision: ties between equally popular items are broken independently for
    every user (uniformly at random), so no tied item is favoured across all
    users; LensKit's ``PopScorer`` instead gives every user the same order.
    ``recommend`` is exact and sparse: the first n non-training positions of
    the global popularity order (a bitmap of the top positions per block of
    users; :func:`~simrec._sampling.nth_allowed` for users whose list reaches
    beyond), then, per user, a shuffle inside each fully included popularity
    level and a uniform sample from the level cut by the list end
    (``simrec.recommenders._popular_lists``).
    """

    def __init__(self, name: str = "Popular") -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Popular(name={self.name!r})"

    def recommend(self, train: Interactions, relevant: sp.csr_array | None, n: int, rng: RNGLike = None) -> np.ndarray:
        """Top-n candidates by training popularity, shape (n_users, n), -1 padding."""
        train = check_train(train)
        check_relevant(relevant, train, required=False)
        n = _check_n(n)
        gen = as_generator(rng)
        return popular_lists(train, n, gen)

    def score(
        self,
        train: Interactions,
        relevant: sp.csr_array | None,
        rng: RNGLike = None,
        users: np.ndarray | None = None,
        *,
        exclude_train: bool = True,
    ) -> np.ndarray:
        """Popularity plus a Uniform(0, 1/2) tie-break, -inf at training items (``exclude_train=False``: scored too).

        .. math:: s_{ui} = |U_i^{\\mathrm{train}}| + \\tfrac12 \\epsilon_{ui},
                  \\quad \\epsilon_{ui} \\sim U(0, 1)

        The tie-break never reorders items of different popularity.
        """
        train = check_train(train)
        check_relevant(relevant, train, required=False)
        users = check_users(users, train.n_users)
        gen = as_generator(rng)
        out = gen.random((len(users), train.n_items))
        out *= 0.5
        out += train.item_counts().astype(np.float64)
        if exclude_train:
            _scatter_rows(out, train.matrix, users, -np.inf)
        return out

    def score_levels(
        self, train: Interactions, relevant: sp.csr_array | None, users: np.ndarray | None = None
    ) -> TiedLevels:
        """The ranking of :meth:`score` as levels: the training popularity, ties in uniformly random order."""
        return _item_levels(train, relevant, users, popularity=True)


# -- Oracles ----------------------------------------------------------------------


def _slot_kinds(r: np.ndarray, m: np.ndarray, n_slots: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """Kind of every list slot: 1 relevant, 0 non-relevant, -1 empty.

    Each slot asks for a relevant item with probability p (else a non-relevant
    one); once a pool (r[u] relevant, m[u] non-relevant candidates) is
    exhausted the remaining slots take the other kind, and slots beyond
    r[u] + m[u] are empty. Shape (len(r), n_slots), int8.
    """
    want = rng.random((len(r), n_slots)) < p
    c_rel = np.cumsum(want, axis=1)
    c_non = np.arange(1, n_slots + 1) - c_rel
    over_r = c_rel > r[:, None]
    over_m = c_non > m[:, None]
    t_r = np.where(over_r.any(axis=1), over_r.argmax(axis=1), n_slots)
    t_m = np.where(over_m.any(axis=1), over_m.argmax(axis=1), n_slots)
    t = np.minimum(t_r, t_m)[:, None]
    slot = np.arange(n_slots)
    kinds = np.where(slot < t, want, (t_m < t_r)[:, None]).astype(np.int8)
    kinds[slot >= (r + m)[:, None]] = -1
    return kinds


class ProbabilisticOracle:
    """Oracle whose every list slot is a relevant candidate with probability p.

    Tian's thesis §5.3 proposes "a probabilistic Oracle recommender [...]
    randomly recommending M% relevant items on top-N recommendation list",
    giving M% precision "in controlled conditions". Here each slot
    independently asks for a relevant candidate with probability ``p`` and
    for a non-relevant candidate otherwise; the relevant items are drawn at
    random without replacement among the user's relevant candidates, the
    non-relevant ones among the other candidates. Expected precision is ``p``
    while both pools last.

    Parameters
    ----------
    p : float
        Probability in [0, 1] that a slot holds a relevant item. ``p = 1`` is
        distributed as :class:`Oracle`; ``p = 0`` puts every relevant
        candidate after all non-relevant ones.
    name : str, optional
        Default ``"ProbabilisticOracle(p)"``.

    Notes
    -----
    Decision (the thesis is silent): when a pool runs out, the remaining slots
    take items of the other kind (so the list is as long as
    :math:`\\min(N, |C_u|)` and precision falls below/rises above p for users
    with few relevant/non-relevant candidates). The full ranking of ``score``
    continues the same process over all of :math:`C_u`, scoring each item by
    minus its slot.
    """

    def __init__(self, p: float, name: str | None = None) -> None:
        self.p = check_in_range("p", p, 0, 1)
        self.name = f"ProbabilisticOracle({self.p:g})" if name is None else name

    def __repr__(self) -> str:
        return f"ProbabilisticOracle(p={self.p!r}, name={self.name!r})"

    def recommend(self, train: Interactions, relevant: sp.csr_array, n: int, rng: RNGLike = None) -> np.ndarray:
        """Top-n lists, shape (n_users, n), -1 padding.

        ``relevant`` (csr_array, (n_users, n_items)): true relevant items;
        those in ``train`` are ignored.
        """
        train = check_train(train)
        rel = check_relevant(relevant, train, required=True)
        n = _check_n(n)
        gen = as_generator(rng)
        n_users, n_items = train.n_users, train.n_items
        r = np.diff(rel.indptr).astype(np.int64)
        m = n_items - train.user_counts() - r
        kinds = _slot_kinds(r, m, n, self.p, gen)
        n_rel = (kinds == 1).sum(axis=1)
        n_non = (kinds == 0).sum(axis=1)
        out = np.full((n_users, n), -1, dtype=np.int64)
        # the rank-th item drawn for a user goes to its rank-th slot of that kind
        for kind, count, draws in (
            (1, n_rel, _random_relevant(rel, n_rel, gen)),
            (0, n_non, _random_outside(_train_or_relevant(train, rel), n_non, m, n_items, gen)),
        ):
            slot_cols = np.nonzero(kinds == kind)[1]  # row-major: each user's slots of this kind, in order
            first = np.cumsum(count) - count
            for rows, rank, items in draws:
                out[rows, slot_cols[first[rows] + rank]] = items
        return out

    def score(
        self, train: Interactions, relevant: sp.csr_array, rng: RNGLike = None, users: np.ndarray | None = None
    ) -> np.ndarray:
        """Minus the slot of each candidate in the full probabilistic ranking; -inf at training items."""
        train = check_train(train)
        rel = check_relevant(relevant, train, required=True)
        users = check_users(users, train.n_users)
        gen = as_generator(rng)
        n_items = train.n_items
        out = np.full((len(users), n_items), -np.inf)
        for blk in user_blocks(len(users), n_items):
            u = users[blk]
            tr = train_mask(train, u)
            R = rel[u].toarray() != 0
            N = ~tr & ~R
            kinds = _slot_kinds(R.sum(axis=1), N.sum(axis=1), n_items, self.p, gen)
            S = out[blk]
            # one random permutation per user (O(n_items), no sort); its restrictions
            # to the two pools are independent uniform orders of each pool
            perm = gen.permuted(np.broadcast_to(np.arange(n_items), R.shape), axis=1)
            for kind, pool in ((1, R), (0, N)):
                prow, pcol = np.nonzero(np.take_along_axis(pool, perm, axis=1))
                rows, slots = np.nonzero(kinds == kind)  # same count per row as the pool
                S[rows, perm[prow, pcol]] = -slots.astype(np.float64)
        return out


class Oracle:
    """Perfect recommender: relevant candidates first, then random non-relevant ones.

    Tian's thesis §3.5.2: "knows all relevant items and always recommends
    top-N relevant candidate items"; docs/design.md §4: scores relevant
    candidates 1 and the rest 0, ties broken at random, so with fewer than N
    relevant candidates the list ends with random non-relevant candidates.

    Parameters
    ----------
    name : str, default "Oracle"
    ties : {"random", "item_id"}, default "random"
        How ties are broken (a named protocol variant, issue 11). ``"random"``
        is the thesis text's reading (above). ``"item_id"`` is the thesis
        authors' code: candidates ranked by (relevant first, then ascending
        item index), and only items seen in training are candidates (a
        relevant item nobody trained on is never recommended). Under IBP,
        whose item indices follow first appearance, low indices are the
        popular items, so this Oracle also favours popular items.

    Notes
    -----
    Graded truth (issue 11). When ``relevant`` is an
    :class:`~simrec.interactions.Interactions` with ``gains`` (the LDA
    truth's like counts), ``ties="item_id"`` ranks the relevant candidates by
    descending gain, then ascending item index: the authors' Oracle was
    LensKit 0.7's ``Memorized`` scorer on the truth's ``rating`` (the counts)
    behind ``TopN``, whose ``nlargest`` keeps the first of equal scores in the
    candidates' ascending item order (binary truth: the rule above). The
    default ``ties="random"`` (the thesis text: relevant or not) ignores gains.
    """

    TIES: tuple[str, ...] = ("random", "item_id")

    def __init__(self, name: str = "Oracle", *, ties: str = "random") -> None:
        self.name = name
        self.ties = check_choice("ties", ties, self.TIES)

    def __repr__(self) -> str:
        extra = "" if self.ties == "random" else f", ties={self.ties!r}"
        return f"Oracle(name={self.name!r}{extra})"

    def _relevant(self, relevant: object, train: Interactions) -> tuple[sp.csr_array, bool]:
        """The checked relevance and whether it is graded (its values are then the gains).

        Gains are read only by ``ties="item_id"`` (see the class notes).
        """
        if self.ties == "item_id" and isinstance(relevant, Interactions) and relevant.gains is not None:
            return check_relevant(relevant.gain_matrix(), train, required=True), True
        return check_relevant(relevant, train, required=True), False

    def _recommend_by_item_id(
        self, train: Interactions, rel: sp.csr_array, n: int, gains: np.ndarray | None = None
    ) -> np.ndarray:
        """The ``ties="item_id"`` lists: relevant seen candidates by ascending index, then other seen candidates.

        With ``gains`` (aligned with ``rel``'s pairs) the relevant candidates
        come by descending gain first, then ascending index.

        Works in the space of the items seen in training (their sorted
        indices ``seen``); the fill is the first allowed items of each row
        (:func:`~simrec._sampling.nth_allowed`), so no dense matrix is built.
        """
        n_users, n_items = train.n_users, train.n_items
        seen = np.flatnonzero(train.item_counts() > 0)
        in_seen = np.full(n_items, -1, dtype=np.int64)
        in_seen[seen] = np.arange(len(seen))
        rrows, ritems = _csr_rows(rel)
        keep = in_seen[ritems] >= 0
        rrows, rs = rrows[keep], in_seen[ritems[keep]]
        if gains is not None:  # by (row, -gain); stable, so equal gains keep ascending items; rows stay in place
            rs = rs[np.lexsort((-np.asarray(gains)[keep], rrows))]
        r = np.bincount(rrows, minlength=n_users)
        t = np.minimum(n, r)
        rank = rank_within_rows(rrows, n_users)
        first = rank < t[rrows]
        out = lists_from_entries(rrows[first], rank[first], seen[rs[first]], n_users, n)
        trows, titems = _csr_rows(train.matrix)
        width = max(len(seen), 1)
        keys = np.sort(np.concatenate((trows * width + in_seen[titems], rrows * width + rs)))
        erows, evals = np.divmod(keys, width)
        f = np.minimum(n - t, len(seen) - train.user_counts() - r)
        q_rows = np.repeat(np.arange(n_users, dtype=np.int64), f)
        q_j = rank_within_rows(q_rows, n_users)
        fill = nth_allowed(erows, evals, n_users, q_rows, q_j, len(seen) + 1)
        out[q_rows, t[q_rows] + q_j] = seen[fill]
        return out

    def recommend(self, train: Interactions, relevant: sp.csr_array, n: int, rng: RNGLike = None) -> np.ndarray:
        """Top-n lists, shape (n_users, n), -1 padding.

        ``relevant`` (csr_array, (n_users, n_items)): true relevant items;
        those in ``train`` are ignored.
        """
        train = check_train(train)
        rel, graded = self._relevant(relevant, train)
        n = _check_n(n)
        if self.ties == "item_id":
            return self._recommend_by_item_id(train, rel, n, rel.data if graded else None)
        gen = as_generator(rng)
        n_users, n_items = train.n_users, train.n_items
        r = np.diff(rel.indptr).astype(np.int64)
        t = np.minimum(n, r)
        out = np.full((n_users, n), -1, dtype=np.int64)
        # Only users with fewer than n relevant candidates get random fill
        # items, outside their training and relevant items (disjoint:
        # check_relevant drops relevant training pairs); rows with f = 0 draw
        # nothing, so the draws are those of the full-matrix version.
        allowed = n_items - train.user_counts() - r
        f = np.minimum(n - t, allowed)
        excluded = _train_or_relevant(train, rel)
        if (t == r).all() and (f == allowed).all():  # every candidate (a full ranking): by 2-D blocks, the same lists
            _permuted_into(out, r, lambda u: rel[u].indices, gen)
            _permuted_into(out, allowed, lambda u: _allowed_laid(excluded(u), n_items), gen, offset=t)
            return out
        for rows, rank, items in _random_relevant(rel, t, gen):  # t relevant items per user, in random order
            out[rows, rank] = items
        for rows, rank, items in _random_outside(excluded, f, allowed, n_items, gen):
            out[rows, t[rows] + rank] = items
        return out

    def score(
        self, train: Interactions, relevant: sp.csr_array, rng: RNGLike = None, users: np.ndarray | None = None
    ) -> np.ndarray:
        """1 + U(0, 1) at relevant candidates, U(0, 1) at other candidates, -inf at training items.

        .. math:: s_{ui} = 1[i \\in \\mathrm{Rel}_u] + \\epsilon_{ui}, \\quad \\epsilon_{ui} \\sim U(0, 1)

        With ``ties="item_id"``, :math:`\\epsilon_{ui} = 1 - (i + 1) / (n_{items} + 1)` (lower
        indices first, no randomness), and items never seen in training score -inf too;
        with graded relevance, the relevant term is the dense rank (1, 2, ...) of the
        pair's gain among the distinct gains instead of 1, so the scores rank like the lists.
        """
        train = check_train(train)
        rel, graded = self._relevant(relevant, train)
        users = check_users(users, train.n_users)
        gen = as_generator(rng)
        if self.ties == "item_id":
            tie = 1.0 - np.arange(1, train.n_items + 1) / (train.n_items + 1.0)
            out = np.repeat(np.where(train.item_counts() > 0, tie, -np.inf)[None, :], len(users), axis=0)
        else:
            out = gen.random((len(users), train.n_items))
        if graded:
            levels = np.unique(rel.data, return_inverse=True)[1] + 1.0
            rel = sp.csr_array((levels, rel.indices, rel.indptr), shape=rel.shape)
        _scatter_rows(out, rel, users, None if graded else 1.0, add=True)
        _scatter_rows(out, train.matrix, users, -np.inf)
        return out

    def score_levels(
        self, train: Interactions, relevant: sp.csr_array, users: np.ndarray | None = None
    ) -> TiedLevels | None:
        """The ranking of :meth:`score` as levels (relevant candidates 1, others 0, ties at random); ``None`` for ``ties="item_id"``.

        ``ties="item_id"`` ranks without randomness (and excludes the items
        nobody trained on), which levels with a random tie-break do not
        describe: its callers use :meth:`score`.
        """
        if self.ties == "item_id":
            return None
        train = check_train(train)
        rel, _ = self._relevant(relevant, train)
        users = check_users(users, train.n_users)
        return TiedLevels(len(users), np.zeros(train.n_items), _rows_of(rel, users), _rows_of(train.matrix, users))
