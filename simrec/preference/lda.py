"""Latent Dirichlet allocation preferences (Blei et al. 2003; Tian's thesis §3.1.3).

Generation (docs/design.md §1): φ_k ~ Dirichlet(b·1) over items for each of
K topics; per user θ_u ~ Dirichlet(a·1) over topics, n_u ~ Poisson(λ), n_u
(topic, item) draws z ~ θ_u, i ~ φ_z; then the (user, item) pairs are
de-duplicated.

Vectorization. Users are processed in blocks (bounded memory); Python loops
run over blocks and topics, never over users or draws.

* Topics. By Poisson splitting, n_u ~ Poisson(λ) draws whose topics are
  i.i.d. from θ_u give per-topic counts C_uk ~ Poisson(λ θ_uk), independent
  given θ_u. With θ_u ~ Dirichlet(a·1) integrated out, the topics of a
  user's n_u draws follow the Pólya urn of the Dirichlet-multinomial: draw
  i takes topic k with probability (a + c_k) / (K a + i), c_k its earlier
  draws of topic k. :meth:`LDA._topic_counts` draws n_u and one uniform
  per draw with numpy and runs the urn in a small compiled kernel
  (:func:`simrec.preference._urn_kernel.urn_topic_counts`, numba,
  deterministic): O(draws). Up to draws version 1
  (:data:`simrec._random.DRAWS_VERSION`) simrec drew θ_u and the (users ×
  K) Poisson counts: the same law, other numbers for a seed, and O(users ×
  K) gamma and Poisson draws, 0.5 of the LDA's 1.2 s at Steam size (K =
  100; bench/bench_generators.py).
* Items. The T_k draws of topic k in a block are taken in order from an
  i.i.d. stream of items from φ_k (:class:`_TopicStreams`), refilled in
  chunks made as one multinomial(m, φ_k) count vector laid out as items and
  uniformly shuffled (a shuffled multinomial sample *is* an i.i.d.
  sequence): O(1) amortized per draw, no binary search (a ``searchsorted``
  per draw was 3-5x slower). The draws fill the block's topic-k slots
  (users in ascending order).

Consequence used by the tests: given θ_u and φ (C_uk ~ Poisson(λ θ_uk)),
item i's count for user u is Poisson(λ (θ_u φ)_i), independently over
items, so

.. math:: E[|\\tilde I_u| \\mid \\theta_u, \\phi] = \\sum_i \\left(1 - e^{-\\lambda (\\theta_u \\phi)_i}\\right) < \\lambda.

Like counts (graded truth). De-duplication keeps each pair's number of draws
c_ui >= 1 as the truth's :attr:`~simrec.interactions.Interactions.gains`
(int32, aligned with the pairs), so Σ_i c_ui is user u's number of draws
(Poisson(λ)) and, given θ_u and φ, c_ui ~ Poisson(λ (θ_u φ)_i) conditioned on
c_ui >= 1. This is what the thesis authors' code keeps (its LDA truth sums the
per-topic multinomial counts of every (user, item) into the pair's ``rating``)
and what LensKit 0.7's nDCG then used as the gain of a true relevant item
(:func:`simrec.metrics.ndcg_lenskit07`). Decision: the counts are always
kept, not an option. They come from the same draws (the binary pairs and the
random stream are unchanged), cost 4 bytes per pair, and only gain-aware
metrics read them, so every other result is the same with or without them;
an option would only add a way to get the thesis-code nDCG silently binary on
LDA. Binary readers ignore them (use ``Interactions(truth.matrix)`` for a
binary copy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions

__all__ = ["LDA"]

#: Bounds of one block of users: cells (users × items) and expected draws.
_BLOCK_CELLS = 1 << 25
_BLOCK_DRAWS = 1 << 22
#: About the most draws the topic streams hold over all topics (:class:`_TopicStreams`).
_STREAM_BUFFER = 1 << 23
#: Count duplicate keys with one ``bincount`` over the cells (8 bytes per cell)
#: when the cells are at most this many and at most ``_COUNT_RATIO`` times the
#: keys; otherwise sort the keys and take run lengths.
_COUNT_CELLS = 1 << 22
_COUNT_RATIO = 16


def _unique_counts(keys: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique values of ``keys`` (all in ``[0, n_cells)``) and how often each occurs.

    ``keys`` (int32 or int64) may be sorted in place: the caller gives it up.

    Returns
    -------
    unique : ndarray of int, shape (n_unique,)
        The dtype of ``keys`` (sort path) or int64 (count path).
    counts : ndarray of int32, shape (n_unique,)
        Multiplicities, >= 1; they sum to ``len(keys)``.
    """
    if n_cells <= min(_COUNT_CELLS, _COUNT_RATIO * max(len(keys), 1)):
        per_cell = np.bincount(keys, minlength=n_cells)
        unique = np.flatnonzero(per_cell)
        return unique, per_cell[unique].astype(np.int32)
    srt = keys
    srt.sort()
    if len(srt) == 0:
        return srt, np.zeros(0, dtype=np.int32)
    first = np.empty(len(srt), dtype=bool)
    first[0] = True
    np.not_equal(srt[1:], srt[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.empty(len(starts), dtype=np.int32)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1], casting="unsafe")
    counts[-1] = len(srt) - starts[-1]
    return srt[starts], counts


class _TopicStreams:
    """Per-topic streams of i.i.d. item draws, consumed in order.

    Parameters
    ----------
    phi : ndarray, shape (n_topics, n_items)
        Topic-item distributions.
    rng : numpy.random.Generator
    expected_per_topic : float
        Expected total draws of one topic (λ·n_users/K); refills are about
        min(16·n_items, this, max(4·n_items, ``_STREAM_BUFFER`` / K)) draws,
        at least what a request lacks. A refill of at least n_items/2 draws
        is a shuffled multinomial sample (O(n_items + m)); a smaller one uses
        inverse-CDF search (O(m log n_items)).

    Notes
    -----
    The multinomial costs one binomial draw per item whatever m (about 70 ns
    each), so refills of several times n_items draws keep its share small: at
    Steam size (K = 100, 10,978 items, 10.6M draws) refills of 4·n_items
    spent 0.2 s in multinomials, refills of 7.6·n_items (the buffer bound)
    0.1 s. The bound caps the draws held over all topics, about
    ``_STREAM_BUFFER`` (64 MiB). Up to draws version 1
    (:data:`simrec._random.DRAWS_VERSION`) refills were min(4·n_items,
    expected_per_topic) draws: the same law, other numbers for a seed.
    """

    def __init__(self, phi: np.ndarray, rng: np.random.Generator, expected_per_topic: float) -> None:
        self.phi = phi
        self.rng = rng
        n_topics, n_items = phi.shape
        self.items = np.arange(n_items, dtype=np.int64)
        cap = max(4 * n_items, _STREAM_BUFFER // n_topics)
        self.chunk = int(max(1, min(16 * n_items, np.ceil(expected_per_topic), cap)))
        self.buf: list[np.ndarray] = [self.items[:0]] * n_topics
        self.cdf: np.ndarray | None = None

    def take(self, k: int, n: int) -> np.ndarray:
        """The next ``n`` items of topic ``k``'s stream."""
        b = self.buf[k]
        if len(b) < n:
            m = max(self.chunk, n - len(b))
            if 2 * m >= len(self.items):
                new = np.repeat(self.items, self.rng.multinomial(m, self.phi[k]))
                self.rng.shuffle(new)
            else:
                if self.cdf is None:
                    self.cdf = np.cumsum(self.phi, axis=1)
                    self.cdf /= self.cdf[:, -1:]
                    self.cdf[:, -1] = 1.0
                new = np.searchsorted(self.cdf[k], self.rng.random(m), side="right").astype(np.int64)
            b = np.concatenate((b, new))
        self.buf[k] = b[n:]
        return b[:n]


def _block_pairs(streams: _TopicStreams, draws: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """De-duplicated likes of a block of users with per-topic draw counts ``draws`` (n, n_topics).

    Item draws come from ``streams`` (shared by all blocks). Returns
    per-user numbers of liked items, shape (n,), the row-sorted item
    indices, and each pair's number of draws (its like count, int32),
    aligned with the items. Shared by the LDA and the HPF
    (:class:`simrec.preference.HPF`, whose components are the topics).
    """
    n, K = draws.shape
    I = n_items
    per_topic = draws.sum(axis=0)
    # topic-major slots: all draws of topic k are contiguous, users ascending; the
    # keys user * I + item built in place, int32 when the block's cells fit (numpy
    # sorts 32-bit keys about twice as fast), from the non-zero cells only
    dtype = np.int32 if n * I < 2**31 else np.int64
    flat = draws.T.ravel()  # topic-major (topic, user) cells (a copy: ravel of a transpose)
    cells = np.flatnonzero(flat)  # those with a draw
    keys = np.repeat((cells % n).astype(dtype) * dtype(I), flat[cells])
    del flat, cells
    bounds = np.concatenate(([0], np.cumsum(per_topic)))
    for k in np.flatnonzero(per_topic):
        keys[bounds[k] : bounds[k + 1]] += streams.take(int(k), int(per_topic[k]))
    keys, likes = _unique_counts(keys, n * I)  # the generator's peak memory is here: one array per draw
    user, item = np.divmod(keys, I)
    return np.bincount(user, minlength=n), item, likes


@dataclass(frozen=True)
class LDA:
    """Symmetric LDA model of correlated true preferences.

    Parameters
    ----------
    n_users : int
        Number of users, >= 1.
    n_items : int
        Number of items, >= 1.
    n_topics : int
        Number of latent features K, >= 1.
    lam : float
        Poisson mean λ of the number of (topic, item) draws per user, > 0
        (the profile is smaller after de-duplication).
    a : float
        Symmetric Dirichlet parameter of the user-topic vectors θ_u, > 0
        (a < 1 concentrates a user on few topics).
    b : float
        Symmetric Dirichlet parameter of the topic-item vectors φ_k, > 0
        (b < 1 concentrates a topic on few items).

    Notes
    -----
    Users with no draw (probability e^{−λ}) are kept as empty rows.
    """

    n_users: int
    n_items: int
    n_topics: int
    lam: float
    a: float
    b: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_int("n_users", self.n_users, low=1))
        object.__setattr__(self, "n_items", check_int("n_items", self.n_items, low=1))
        object.__setattr__(self, "n_topics", check_int("n_topics", self.n_topics, low=1))
        object.__setattr__(self, "lam", check_in_range("lam", self.lam, 0, None, low_open=True))
        object.__setattr__(self, "a", check_in_range("a", self.a, 0, None, low_open=True))
        object.__setattr__(self, "b", check_in_range("b", self.b, 0, None, low_open=True))

    def expected_pairs(self) -> float:
        """Upper bound n_users · min(λ, n_items) on E[pairs] (de-duplication only removes pairs).

        The number of draws before de-duplication is λ·n_users in expectation;
        the generator holds at most one block of them at a time.
        """
        return float(self.n_users * min(self.lam, self.n_items))

    def expected_items(self) -> float:
        """The number of items, ``n_items`` (columns; some may have no like)."""
        return float(self.n_items)

    # -- internal steps (exposed to tests) ------------------------------------
    def _sample_phi(self, rng: np.random.Generator) -> np.ndarray:
        """Topic-item distributions φ, shape (n_topics, n_items) (rows renormalised for ``multinomial``)."""
        phi = rng.dirichlet(np.full(self.n_items, self.b), size=self.n_topics)
        phi /= phi.sum(axis=1, keepdims=True)
        return phi

    def _topic_counts(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Per-topic draw counts of ``n`` users, shape (n, n_topics), int64.

        A user's total is Poisson(λ) and, given it, the counts are
        Dirichlet-multinomial(total, a·1): marginally over θ_u, the law of
        C_uk ~ Poisson(λ θ_uk) with θ_u ~ Dirichlet(a·1). Drawn by the
        urn of :func:`~simrec.preference._urn_kernel.urn_topic_counts` from
        numpy uniforms (one per draw, after the n totals).
        """
        from simrec.preference._urn_kernel import urn_topic_counts  # numba: only when an LDA truth is drawn

        per_user = rng.poisson(self.lam, n).astype(np.int64)
        x = rng.random(int(per_user.sum()))
        counts = np.zeros((n, self.n_topics), dtype=np.int64)
        urn_topic_counts(x, per_user, float(self.a), counts)
        return counts

    def _block_pairs(self, streams: _TopicStreams, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """De-duplicated likes of a block of users with per-topic draw counts ``draws``: :func:`_block_pairs`."""
        return _block_pairs(streams, draws, self.n_items)

    def generate(self, rng: RNGLike, *, max_pairs: int | None = None) -> Interactions:
        """Draw the true preferences.

        Parameters
        ----------
        rng : Generator or seed
        max_pairs : int, optional
            Memory guard on :meth:`expected_pairs` (default ``DEFAULT_MAX_PAIRS``).

        Returns
        -------
        Interactions
            Shape (n_users, n_items), graded: ``gains`` holds each pair's like
            count (int32, >= 1; a user's counts sum to its number of draws).
        """
        if max_pairs is not None:
            check_int("max_pairs", max_pairs, low=0)
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        gen = as_generator(rng)
        streams = _TopicStreams(self._sample_phi(gen), gen, self.lam * self.n_users / self.n_topics)
        block = int(max(1, min(self.n_users, _BLOCK_CELLS // self.n_items, _BLOCK_DRAWS // max(self.lam, 1.0))))
        counts, items, likes = [], [], []
        for start in range(0, self.n_users, block):
            nb = min(block, self.n_users - start)
            cnt, it, lk = self._block_pairs(streams, self._topic_counts(gen, nb))
            counts.append(cnt)
            items.append(it)
            likes.append(lk)
        indptr = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(np.concatenate(counts), out=indptr[1:])
        return Interactions.from_csr(
            indptr, np.concatenate(items), (self.n_users, self.n_items), sort=False, gains=np.concatenate(likes)
        )
