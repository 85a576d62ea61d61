"""Hierarchical Poisson factorization preferences (Gopalan, Hofman & Blei, UAI 2015, §2).

The generative process of the paper's §2 (Gamma distributions by shape and
*rate*, as there):

1. for each user u: activity :math:`\\xi_u \\sim \\mathrm{Gamma}(a', a'/b')`
   and, for each of the K components, preference
   :math:`\\theta_{uk} \\sim \\mathrm{Gamma}(a, \\xi_u)`;
2. for each item i: popularity :math:`\\eta_i \\sim \\mathrm{Gamma}(c', c'/d')`
   and, for each component, attribute
   :math:`\\beta_{ik} \\sim \\mathrm{Gamma}(c, \\eta_i)`;
3. for each user and item: :math:`y_{ui} \\sim \\mathrm{Poisson}(\\theta_u^\\top \\beta_i)`.

User u likes item i when :math:`y_{ui} \\ge 1`; the count :math:`y_{ui}` is
the pair's graded gain (:attr:`~simrec.interactions.Interactions.gains`,
as the LDA truth carries its like counts), so its preference in (0, 1] is
the count over the user's largest
(:meth:`~simrec.interactions.Interactions.pair_preference`). The hierarchy
gives heavy-tailed activity and popularity: a user's expected number of
events is :math:`\\sum_k \\theta_{uk} B_k` with
:math:`B_k = \\sum_i \\beta_{ik}`, and :math:`\\theta_{uk}` scales with
:math:`1/\\xi_u`, whose law has a power tail of index :math:`a'`.

Drawing it in O(pairs + (U + I) K) operations, never the U x I rates. By
Poisson splitting, :math:`y_{ui} = \\sum_k y_{uik}` with independent
:math:`y_{uik} \\sim \\mathrm{Poisson}(\\theta_{uk}\\beta_{ik})`. Per component
k, the items are sorted by :math:`\\beta_{ik}`; for user u the *hot* items
of the component are those with :math:`\\theta_{uk}\\beta_{ik} > 1` (a prefix
of that order), each drawn directly, one Poisson count per cell (such a cell
is liked with probability above 1 - 1/e, so these draws cost O(pairs)).
The other, *cold* cells of the component receive
:math:`\\mathrm{Poisson}(\\theta_{uk} M_{uk})` events,
:math:`M_{uk}` their total attribute, each falling on a cold item with
probability ∝ :math:`\\beta_{ik}` (given their number, Poisson counts are
multinomial), and every cold cell has a rate of at most 1, so the events
cost O(pairs) too. A (user, component) with no hot item takes its events
from the component's i.i.d. item stream, as the LDA truth does
(:mod:`simrec.preference.lda`, whose streams and block de-duplication are
shared); one with hot items by inverse-CDF search over its cold items.
Finally each cell's counts are summed over components. A user with more
hot cells over all components than items (a huge activity) is drawn as a
row instead: the rates :math:`\\theta_u^\\top\\beta_i` of every item and one
Poisson count each, O(I K) for that user. Without the split,
the events would be unbounded: at the paper's defaults (a' = c' = 0.3) the
expected number of events is infinite (E[1/ξ] diverges), a few users and
items carrying astronomical rates. Measurements: docs/design.md §9
(``bench/bench_scale.py --worlds hpf``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammainccinv, gammaincinv

from simrec._random import RNGLike, as_generator
from simrec._sampling import pair_blocks
from simrec._validation import check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions
from simrec.preference.lda import _block_pairs, _TopicStreams

__all__ = ["HPF"]

#: Bounds of one block of users: cells (users x items) and events of the stream path.
_BLOCK_CELLS = 1 << 24
_BLOCK_DRAWS = 1 << 22
#: Latent draws below this are raised to it (a Gamma draw of a small shape can underflow to 0).
_TINY = 1e-300
#: Rates of hot cells above this are capped (``Generator.poisson`` refuses means above ~9e18); the like
#: indicator is unchanged (P(y >= 1) = 1 either way) and counts are capped at 2**31 - 1 anyway.
_MAX_RATE = 1e15
_MAX_COUNT = np.iinfo(np.int32).max


def _tanh_sinh(step: float = 1 / 8, half_width: float = 3.25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tanh-sinh (double-exponential) nodes on (0, 1): ``x``, ``1 - x`` (each computed accurately) and weights.

    .. math:: x(t) = \\tfrac12\\left(1 + \\tanh(\\tfrac\\pi2 \\sinh t)\\right), \\qquad
              w(t) = h\\,\\tfrac\\pi4 \\cosh t / \\cosh^2(\\tfrac\\pi2 \\sinh t)

    for t on a grid of step h over [-T, T]: the nodes crowd towards 0 and 1
    doubly exponentially (down to about 1e-17 here), so integrands with
    endpoint singularities, such as functions of Gamma quantiles of a small
    shape, are integrated accurately with about a hundred nodes.
    """
    t = np.arange(-half_width, half_width + step / 2, step)
    s = np.pi / 2 * np.sinh(t)
    x = 1 / (1 + np.exp(-2 * s))
    one_minus_x = 1 / (1 + np.exp(2 * s))
    w = step * np.pi / 4 * np.cosh(t) / np.cosh(s) ** 2
    return x, one_minus_x, w


def _gamma_log_quantiles(shape: float, x: np.ndarray, one_minus_x: np.ndarray) -> np.ndarray:
    """log of the Gamma(shape, 1) quantiles at x (the upper tail through 1 - x, for accuracy)."""
    q = np.where(x <= 0.5, gammaincinv(shape, np.minimum(x, 0.5)), gammainccinv(shape, np.minimum(one_minus_x, 0.5)))
    return np.log(np.maximum(q, _TINY))


@dataclass(frozen=True)
class HPF:
    """Hierarchical Poisson factorization (Gopalan, Hofman & Blei, UAI 2015, §2) as a true-preference model.

    Parameters
    ----------
    n_users : int
        Number of users, >= 1.
    n_items : int
        Number of items, >= 1.
    n_factors : int
        Number of components K, >= 1.
    a : float
        Shape of the user preferences :math:`\\theta_{uk} \\sim \\mathrm{Gamma}(a, \\xi_u)`, > 0.
    a_prime, b_prime : float
        User activity :math:`\\xi_u \\sim \\mathrm{Gamma}(a', a'/b')` (shape, rate; mean :math:`b'`), > 0.
        The paper's defaults are a = a' = 0.3, b' = 1.
    c : float
        Shape of the item attributes :math:`\\beta_{ik} \\sim \\mathrm{Gamma}(c, \\eta_i)`, > 0.
    c_prime, d_prime : float
        Item popularity :math:`\\eta_i \\sim \\mathrm{Gamma}(c', c'/d')` (mean :math:`d'`), > 0.
        The paper's defaults are c = c' = 0.3, d' = 1.

    Notes
    -----
    Only the product :math:`b'd'` enters the law of the counts: with
    standard Gamma variables, :math:`\\theta_u^\\top\\beta_i =
    \\frac{a'c'}{b'd'} \\sum_k G_{a,uk} G_{c,ik} / (G_{a',u} G_{c',i})`
    (θ scales with 1/b', β with 1/d'), so a calibration searches one of the
    two (e.g. b' with d' = 1).

    A user likes item i with probability
    :math:`1 - e^{-\\theta_u^\\top \\beta_i}` given the latent variables
    (:meth:`like_probability`), independently over items; users with no
    like are kept as empty rows. Gamma draws that underflow to 0 (small
    shapes) are raised to 1e-300, and the direct path caps a rate at 1e15
    and a count at 2**31 - 1 (int32 gains); neither changes which pairs are
    liked.

    The order of the random draws: the items' η then β, then, block by block
    of users, each user's ξ then θ, the light users' per-component counts
    and their items, then the heavy users' counts.
    """

    n_users: int
    n_items: int
    n_factors: int
    a: float
    a_prime: float
    b_prime: float
    c: float
    c_prime: float
    d_prime: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_int("n_users", self.n_users, low=1))
        object.__setattr__(self, "n_items", check_int("n_items", self.n_items, low=1))
        object.__setattr__(self, "n_factors", check_int("n_factors", self.n_factors, low=1))
        for name in ("a", "a_prime", "b_prime", "c", "c_prime", "d_prime"):
            object.__setattr__(self, name, check_in_range(name, getattr(self, name), 0, None, low_open=True))

    # -- expectations -----------------------------------------------------------
    def no_like_probability(self) -> float:
        """P(y_ui = 0) for a random user and item, :math:`E[e^{-\\theta_u^\\top\\beta_i}]`, by quadrature.

        With :math:`\\theta_{uk} = G_{a,k}/\\xi_u`, :math:`\\beta_{ik} = G_{c,k}/\\eta_i`
        (standard Gamma variables) and
        :math:`t = 1/(\\xi_u\\eta_i) = \\kappa / (G_{a'} G_{c'})`,
        :math:`\\kappa = a'c'/(b'd')`, the components are independent given
        t and :math:`E[e^{-t G_a G_c} \\mid G_c] = (1 + t G_c)^{-a}`, so

        .. math:: P(y_{ui} = 0) = E\\left[g(t)^K\\right], \\qquad
                  g(t) = E\\left[(1 + t\\,G_c)^{-a}\\right],

        a three-dimensional integral over the Gamma quantiles of
        :math:`G_{a'}, G_{c'}` (outer) and :math:`G_c` (inner), each by
        tanh-sinh quadrature on (0, 1) (53 nodes; the integrands are
        bounded in [0, 1]). Against steps of 1/32 (four times the nodes) on
        15 parameter sets (shapes 0.05 to 50, K = 1 to 100), the expected
        pairs agree to 1e-6 relative at worst (tests compare
        it with Monte Carlo over the latent variables and with generated
        truths).
        """
        x, xc, w = _tanh_sinh()
        log_ga = _gamma_log_quantiles(self.a_prime, x, xc)
        log_gc_prime = _gamma_log_quantiles(self.c_prime, x, xc)
        log_gc = _gamma_log_quantiles(self.c, x, xc)
        log_kappa = np.log(self.a_prime * self.c_prime / (self.b_prime * self.d_prime))
        log_t = log_kappa - log_ga[:, None] - log_gc_prime[None, :]  # (n, n)
        # g(t) = sum_r w_r (1 + t q_r)^-a = sum_r w_r exp(-a softplus(log t + log q_r))
        g = np.exp(-self.a * np.logaddexp(0.0, log_t[..., None] + log_gc)) @ w  # (n, n)
        g = np.minimum(g / w.sum(), 1.0)
        return float(w @ (g**self.n_factors) @ w / w.sum() ** 2)

    def expected_pairs(self) -> float:
        """E[pairs] = n_users · n_items · (1 − :meth:`no_like_probability`), by quadrature (about 1e-6 relative).

        Exact up to the quadrature; the number of Poisson events (before
        de-duplication) has an infinite mean when :math:`a' \\le 1` or
        :math:`c' \\le 1` (the mean of :math:`1/\\xi_u` diverges), which is
        why the generator draws the hot cells directly (module docstring).
        """
        return float(self.n_users * self.n_items * (1.0 - self.no_like_probability()))

    def expected_items(self) -> float:
        """The number of items, ``n_items`` (columns; some may have no like)."""
        return float(self.n_items)

    # -- latent variables (exposed to tests) ----------------------------------------
    def _item_factors(self, rng: np.random.Generator) -> np.ndarray:
        """β, shape (n_items, n_factors): η_i ~ Gamma(c', rate c'/d'), then β_ik ~ Gamma(c, rate η_i)."""
        eta = np.maximum(rng.gamma(self.c_prime, self.d_prime / self.c_prime, self.n_items), _TINY)
        beta = rng.standard_gamma(self.c, (self.n_items, self.n_factors))
        beta /= eta[:, None]
        return np.minimum(beta, 1e300)

    def _user_factors(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """θ of ``n`` users, shape (n, n_factors): ξ_u ~ Gamma(a', rate a'/b'), then θ_uk ~ Gamma(a, rate ξ_u)."""
        xi = np.maximum(rng.gamma(self.a_prime, self.b_prime / self.a_prime, n), _TINY)
        theta = rng.standard_gamma(self.a, (n, self.n_factors))
        theta /= xi[:, None]
        return np.minimum(theta, 1e300)

    @staticmethod
    def like_probability(theta: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """P(user likes item | θ, β) = 1 − exp(−θ_u·β_i), shape (len(theta), len(beta)) (dense: small cases only)."""
        return -np.expm1(-(theta @ beta.T))

    # -- generation ---------------------------------------------------------------------
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
            Shape (n_users, n_items), graded: ``gains`` holds each pair's
            count :math:`y_{ui} \\ge 1` (int32).
        """
        if max_pairs is not None:
            check_int("max_pairs", max_pairs, low=0)
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        gen = as_generator(rng)
        U, I = self.n_users, self.n_items
        order, neg, asc = self._tables(self._item_factors(gen))
        block = int(max(1, min(U, _BLOCK_CELLS // I)))
        streams: _TopicStreams | None = None
        cut = np.zeros(self.n_factors, dtype=np.int64)
        counts, items, likes = [], [], []
        for start in range(0, U, block):
            theta = self._user_factors(gen, min(block, U - start))
            if streams is None:  # from the first block (speed only; every cut gives the same law)
                cut = self._cuts(theta, neg)
                streams = self._tail_streams(gen, theta, order, neg, asc, cut, U)
            c, it, lk = self._block(gen, streams, theta, order, neg, asc, cut)
            counts.append(c)
            items.append(it)
            likes.append(lk)
        indptr = np.zeros(U + 1, dtype=np.int64)
        np.cumsum(np.concatenate(counts), out=indptr[1:])
        return Interactions.from_csr(
            indptr, np.concatenate(items), (U, I), sort=False, gains=np.concatenate(likes).astype(np.int32)
        )

    @staticmethod
    def _tables(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the blocks read of β (I, K), component-major (each component's row contiguous, for the searches):
        the items by descending β (``order``, K x I), their β negated (``neg``, ascending), and ``asc``
        (K, I + 1): the sums of the t smallest β (accumulated from the small ones, for accuracy)."""
        order = np.ascontiguousarray(np.argsort(-beta, axis=0, kind="stable").T)
        neg = -np.take_along_axis(beta.T, order, axis=1)
        asc = np.hstack((np.zeros((beta.shape[1], 1)), np.cumsum(-neg[:, ::-1], axis=1)))
        return order, neg, asc

    @staticmethod
    def _hot(theta: np.ndarray, neg: np.ndarray) -> np.ndarray:
        """Number of hot items (θ_uk β_ik > 1) of every (component, user), shape (K, n): a prefix of each order."""
        with np.errstate(divide="ignore"):
            thr = -1.0 / theta.T  # (K, n)
        hot = np.empty(thr.shape, dtype=np.int64)
        for k in range(len(neg)):
            hot[k] = np.searchsorted(neg[k], thr[k], side="left")
        return hot

    def _cuts(self, theta: np.ndarray, neg: np.ndarray) -> np.ndarray:
        """Per component, the rank R_k from which the cold events come from the component's stream: the 99th
        percentile of the users' hot counts (speed only: ranks below it are drawn by inverse CDF)."""
        hot = self._hot(theta, neg)
        return np.minimum(np.quantile(hot, 0.99, axis=1, method="higher").astype(np.int64), self.n_items)

    @staticmethod
    def _tail_streams(
        gen: np.random.Generator,
        theta: np.ndarray,
        order: np.ndarray,
        neg: np.ndarray,
        asc: np.ndarray,
        cut: np.ndarray,
        n_users: int,
    ) -> _TopicStreams:
        """Each component's i.i.d. item stream over its ranks >= R_k (probability ∝ β_ik)."""
        K, I = order.shape
        phi = np.zeros((K, I))
        tail = np.arange(I)[None, :] >= cut[:, None]  # in rank order
        np.put_along_axis(phi, order, np.where(tail, -neg, 0.0), axis=1)
        mass = phi.sum(axis=1, keepdims=True)
        phi = np.where(mass > 0, phi / np.where(mass > 0, mass, 1.0), 1.0 / I)
        phi /= phi.sum(axis=1, keepdims=True)
        # refills sized by the expected stream events of one component over all users (speed only)
        per_user = (theta * asc[np.arange(K), I - cut]).clip(max=I).mean(axis=0)  # (K,), this block's users
        return _TopicStreams(phi, gen, float(per_user.mean()) * n_users)

    def _block(
        self,
        gen: np.random.Generator,
        streams: _TopicStreams,
        theta: np.ndarray,
        order: np.ndarray,
        neg: np.ndarray,
        asc: np.ndarray,
        cut: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Liked items of a block of users with preferences ``theta`` (n, K): per-user counts, items, counts y.

        ``order``, ``neg``, ``asc``: the component-major tables of :meth:`_tables`; ``streams`` each
        component's items of rank >= ``cut[k]``.
        """
        n, I = len(theta), self.n_items
        K = self.n_factors
        hot = self._hot(theta, neg)
        keys, ys = [], []
        # users with more hot cells than items: a row of Poisson counts at the full rates
        dense = np.flatnonzero(hot.sum(axis=0) > I)
        if len(dense):
            beta = np.empty((K, I))
            np.put_along_axis(beta, order, -neg, axis=1)
            step = max(1, _BLOCK_DRAWS // I)
            for s in range(0, len(dense), step):
                users = dense[s : s + step]
                y = gen.poisson(np.minimum(theta[users] @ beta, _MAX_RATE))
                r, i = np.nonzero(y)
                keys.append(users[r] * I + i)
                ys.append(y[r, i])
        # the others: ranks >= max(h, R_k) from the stream, below by one Poisson count per hot cell (rank < h)
        # and inverse-CDF events (h <= rank < R_k)
        live = np.ones(n, dtype=bool)
        live[dense] = False
        lo = np.maximum(hot, cut[:, None])  # (K, n): the first rank of the stream part
        tail = np.where(live[None, :] & (lo == cut[:, None]), asc[np.arange(K), I - cut][:, None], 0.0)
        draws = gen.poisson(theta.T * tail).T  # (n, K); rate <= I: every cold cell's is <= 1
        ends = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(draws.sum(axis=1), out=ends[1:])
        for r0, r1 in pair_blocks(ends, _BLOCK_DRAWS):
            per_user, it, lk = _block_pairs(streams, draws[r0:r1], I)
            keys.append(np.repeat(np.arange(r0, r1, dtype=np.int64), per_user) * I + it)
            ys.append(lk.astype(np.int64))
        for k in range(K):
            users = np.flatnonzero(live & (hot[k] > 0))
            if len(users):
                h = hot[k, users]
                rows = np.repeat(users, h)
                pos = np.arange(len(rows)) - np.repeat(np.cumsum(h) - h, h)
                y = gen.poisson(np.minimum(theta[rows, k] * -neg[k, pos], _MAX_RATE))
                keys.append(rows * I + order[k, pos])
                ys.append(y)
            # the cold ranks below the stream's: [h, R_k) when h < R_k, by inverse CDF among the top R_k; [h, I)
            # when h > R_k (no stream part then), by inverse CDF, or, when the events outnumber a fifth of those
            # cells, one Poisson count per cell (fewer operations than the events' searches)
            far = live & (hot[k] > cut[k])
            mass_far = np.where(far, asc[k, I - hot[k]], 0.0)
            cellwise = far & (theta[:, k] * mass_far > (I - hot[k]) / 5)
            users = np.flatnonzero(cellwise)
            if len(users):
                h = hot[k, users]
                rows = np.repeat(users, I - h)
                pos = np.arange(len(rows)) - np.repeat(np.cumsum(I - h) - (I - h), I - h) + np.repeat(h, I - h)
                y = gen.poisson(theta[rows, k] * -neg[k, pos])
                hit = y > 0
                keys.append(rows[hit] * I + order[k, pos[hit]])
                ys.append(y[hit])
            for users, end, top in (
                (np.flatnonzero(live & (hot[k] < cut[k])), cut[k], cut[k]),
                (np.flatnonzero(far & ~cellwise), I, I),
            ):
                if not len(users):
                    continue
                h = hot[k, users]
                base = asc[k, I - end]
                mass = asc[k, I - h] - base
                n_ev = gen.poisson(np.maximum(theta[users, k] * mass, 0.0))  # every cold cell's rate is <= 1
                x = base + gen.random(int(n_ev.sum())) * np.repeat(mass, n_ev)
                # ascending index t in [I - end, I - h): rank I - 1 - t in [h, end)
                t = np.searchsorted(asc[k, I - top :], x, side="right") + (I - top - 1)
                t = np.clip(t, I - end, np.repeat(I - h, n_ev) - 1)
                keys.append(np.repeat(users, n_ev) * I + order[k, I - 1 - t])
                ys.append(np.ones(len(t), dtype=np.int64))
        # sum each cell's counts over the parts: one sort of (cell << 31 | count) keys (cells < 2**24 per block)
        packed = np.concatenate(keys) << 31
        packed |= np.minimum(np.concatenate(ys), _MAX_COUNT)
        packed.sort()
        key, y = packed >> 31, packed & _MAX_COUNT
        del packed
        if len(key):
            head = np.ones(len(key), dtype=bool)
            head[1:] = key[1:] != key[:-1]
            starts = np.flatnonzero(head)
            y = np.add.reduceat(y, starts)
            key = key[starts]
            nz = y > 0
            key, y = key[nz], y[nz]
        user = key // I
        return np.bincount(user, minlength=n), key - user * I, np.minimum(y, _MAX_COUNT).astype(np.int32)
