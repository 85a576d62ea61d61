"""A dense low-rank preference model with a popularity offset (Gaussian latent factors).

Issue 24's scratch experiment: likes drawn with weight

.. math:: w_{ui} = \\mathrm{pop}_i^{\\gamma}\\,
          \\exp\\!\\left(s\\,\\frac{u_u^\\top v_i}{\\sqrt K}\\right), \\qquad
          u_u, v_i \\sim N(0, I_K), \\quad \\log \\mathrm{pop}_i \\sim N(0, 1),

(K = 10, s = γ = 1.75) reproduced ML-1M's algorithm order (ImplicitMF >
ItemKNN > Popular on Recall@10) where the thesis's worlds do not. The
popularity law is a lognormal whose own scale is absorbed by γ (only
γ·sd(log pop) is identified), so :math:`\\gamma \\zeta_i`,
:math:`\\zeta_i \\sim N(0, 1)`, is the log popularity offset; the affinity
:math:`z_{ui} = u_u^\\top v_i / \\sqrt K` has mean 0 and variance 1.

The law of a user's likes (decision: independent inclusion, so that a
pair's like probability is exact and simple). User u has a target profile
size :math:`n_u = \\min(I, \\lambda e^{\\sigma_a \\epsilon_u - \\sigma_a^2/2})`,
:math:`\\epsilon_u \\sim N(0, 1)` (lognormal activity of mean λ before the
cap at the number of items, :math:`\\sigma_a` = ``activity_sd``), and likes
each item independently with probability

.. math:: \\pi_{ui} = \\min(1, c_u w_{ui}), \\qquad \\sum_i \\pi_{ui} = n_u,

(a Poisson-sampling design; :math:`c_u` by water-filling: the items whose
:math:`c_u w_{ui}` reaches 1 are liked surely and the rest share the
remaining mass in proportion to their weights). So
:math:`E|\\tilde I_u| = n_u` exactly, and the like probability of every
pair is :meth:`LatentFactor.like_probability`. (Successive sampling of
exactly :math:`n_u` items ∝ w has no closed-form inclusion probability.)
Each liked pair's graded preference is a monotone map of its affinity,
:math:`p_{ui} = \\Phi(z_{ui}) \\in (0, 1)` (Φ the standard normal CDF: the
affinity's percentile when K is large, z being a sum of K products; the
popularity offset is exposure, not taste, and is left out), stored as the
pair's ``preference`` and ``gains``. It does not depend on s: s sets how
strongly the affinity selects the likes (at s = 0 it grades them without
selecting them).

Drawing: O(U I K) flops for the weights (stated: the model is dense; at
ML-20M size, 138,493 x 26,744 with K = 10, that is 3.7e9 cells),
O(pairs) random draws, memory in blocks of about 64 MiB. Blocks of users:
the block's log-weights by float32 matrix products
([s u/√K, 1, -shift] · [v, γζ, 1]ᵀ; the shift keeps exp below float32's
range) into one reused buffer, a slice of rows (about 4 MiB) at a time,
each slice exponentiated in place and summarised by the compiled kernel
while it is in cache (BLAS on one thread: idle OpenBLAS threads spin
between products, CPU for nothing). Items are grouped in chunks of 32,
whose sums and largest weights the kernel computes
(:mod:`simrec.preference._factor_kernel`, numba, deterministic, fed numpy
uniforms). Per user, the kernel solves the water-filling on the
cells above :math:`\\tau/(2c)` only (read from the chunks whose largest
weight passes it) and returns the cells with :math:`\\pi_{ui} > \\tau = 1/2`,
which are drawn one uniform each (:math:`\\pi = 1`: included). The other
cells, all with :math:`\\pi \\le \\tau`, are drawn as a thinned Poisson
process: Bernoulli(π) is "a Poisson(μ) count, μ = −log(1 − π), is at least
1"; candidates come at rate :math:`m c_u w_{ui}`,
:math:`m = -\\log(1-\\tau)/\\tau \\ge \\mu/\\pi`, each located by a search
over the user's cumulative chunk sums and a scan inside the chunk, and kept
with probability :math:`\\mu/(m\\pi)`; a cell is liked when it keeps at least
one candidate. About 1.4 candidates per like, no uniform per cell. The
slicing does not change a number: every slice's product is the one BLAS
kernel's (:func:`_sub_rows`), and the kernels keep every sum's order.
The block loop (:func:`_dense_truth`) takes its right matrix and each
block's left matrix, targets and preference from the model, so
:class:`~simrec.preference.ClusteredFactor` draws with it too (its cluster
columns appended to both matrices).
Measurements: docs/design.md §9 (``bench/bench_scale.py --worlds factor,factor-preset``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from simrec._blas import single_threaded_blas
from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions

__all__ = ["LatentFactor"]

#: Items per chunk (sums and maxima per chunk locate the large cells).
_CHUNK = 32
#: Bytes of one block's float32 weights (users x padded items).
_BLOCK_BYTES = 1 << 26
#: Cells with pi above this are drawn one uniform each; the rest by the thinned Poisson process.
_TAU = 0.5
#: Candidate rate multiplier m = -log(1 - tau)/tau (>= mu/pi for every pi <= tau).
_M = -math.log1p(-_TAU) / _TAU
#: Largest log-weight kept before exp (float32 overflows above 88.7).
_LOG_CAP = 80.0
#: Bytes of weights per slice of a block (computed, exponentiated and summarised while in cache).
_SUB_BYTES = 1 << 22
#: OpenBLAS's small-matrix sgemm kernels take products of at most this many multiply-adds (M x N x K).
_SMALL_GEMM = 1e6


@dataclass(frozen=True)
class LatentFactor:
    """Dense low-rank truth with a popularity offset: user u likes item i with probability min(1, c_u w_ui).

    Parameters
    ----------
    n_users : int
        Number of users, >= 1.
    n_items : int
        Number of items, >= 1.
    n_factors : int
        Latent dimension K, >= 1.
    signal : float
        Strength s >= 0 of the personal affinity in the log-weight (0: likes
        depend on popularity alone).
    pop_exponent : float
        γ >= 0, the scale of the log popularity offset (0: no popularity).
    lam : float
        Mean λ > 0 of the users' target profile sizes (before the cap at
        ``n_items``).
    activity_sd : float, default 1.0
        σ_a >= 0, the log-sd of the target sizes (0: every user targets λ).

    Notes
    -----
    The draws, in order: the items' v (n_items x K) and ζ, then block by
    block of users their u (block x K) and ε, the uniforms of the cells with
    π > 1/2, the candidate counts, the candidates' uniforms and their
    acceptance uniforms. The weights are computed in float32 (relative error
    about 1e-6 in a like probability). A weight that underflows float32
    (log-weight 87 below the user's largest; only at extreme ``signal`` or
    ``pop_exponent``) counts as 0, so such a user's expected profile may
    fall short of its target when the target is close to ``n_items``.
    """

    n_users: int
    n_items: int
    n_factors: int
    signal: float
    pop_exponent: float
    lam: float
    activity_sd: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_int("n_users", self.n_users, low=1))
        object.__setattr__(self, "n_items", check_int("n_items", self.n_items, low=1))
        object.__setattr__(self, "n_factors", check_int("n_factors", self.n_factors, low=1))
        object.__setattr__(self, "signal", check_in_range("signal", self.signal, 0, None))
        object.__setattr__(self, "pop_exponent", check_in_range("pop_exponent", self.pop_exponent, 0, None))
        object.__setattr__(self, "lam", check_in_range("lam", self.lam, 0, None, low_open=True))
        object.__setattr__(self, "activity_sd", check_in_range("activity_sd", self.activity_sd, 0, None))

    # -- expectations ---------------------------------------------------------------
    def expected_pairs(self) -> float:
        """Exact E[pairs] = n_users · E[min(I, λ e^{σε − σ²/2})] (every user's likes have mean n_u).

        .. math:: E[\\min(I, X)] = \\lambda\\,\\Phi(d - \\sigma) + I\\,(1 - \\Phi(d)), \\qquad
                  d = \\frac{\\ln(I/\\lambda) + \\sigma^2/2}{\\sigma}

        (the lognormal's partial expectation; min(I, λ) when σ = 0).
        """
        return _expected_targets(self.n_users, self.n_items, self.lam, self.activity_sd)

    def expected_items(self) -> float:
        """The number of items, ``n_items`` (columns; some may have no like)."""
        return float(self.n_items)

    # -- latent variables (exposed to tests) --------------------------------------------
    def _item_factors(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """v (n_items, K) and ζ (n_items,), standard normal."""
        return rng.standard_normal((self.n_items, self.n_factors)), rng.standard_normal(self.n_items)

    def _user_factors(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """u (n, K) and the target sizes n_u = min(I, λ exp(σ ε − σ²/2)) of ``n`` users."""
        u = rng.standard_normal((n, self.n_factors))
        return u, _target_sizes(rng, n, self.n_items, self.lam, self.activity_sd)

    def log_weights(self, u: np.ndarray, v: np.ndarray, zeta: np.ndarray) -> np.ndarray:
        """:math:`\\log w_{ui} = s\\,u_u^\\top v_i/\\sqrt K + \\gamma \\zeta_i`, shape (len(u), len(v)) (dense: small cases)."""
        return self.signal * (u @ v.T) / math.sqrt(self.n_factors) + self.pop_exponent * zeta

    def like_probability(self, u: np.ndarray, v: np.ndarray, zeta: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """π_ui = min(1, c_u w_ui) with Σ_i π_ui = n_u, shape (len(u), len(v)) (dense, float64: small cases)."""
        return _water_filling(self.log_weights(u, v, zeta), targets)

    # -- generation -------------------------------------------------------------------
    def generate(self, rng: RNGLike, *, max_pairs: int | None = None) -> Interactions:
        """Draw the true preferences (module docstring).

        Parameters
        ----------
        rng : Generator or seed
        max_pairs : int, optional
            Memory guard on :meth:`expected_pairs` (default ``DEFAULT_MAX_PAIRS``).

        Returns
        -------
        Interactions
            Shape (n_users, n_items), graded: ``preference`` (and ``gains``,
            the same array) holds each liked pair's Φ(z_ui), float32 in (0, 1].
        """
        if max_pairs is not None:
            check_int("max_pairs", max_pairs, low=0)
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        from simrec.preference._factor_kernel import pair_dots  # numba: only when a truth is drawn

        gen = as_generator(rng)
        I, K = self.n_items, self.n_factors
        v, zeta = self._item_factors(gen)
        right = _right_matrix(I, K + 2)
        right[:I, :K] = v
        right[:I, K] = self.pop_exponent * zeta
        right[:I, K + 1] = 1.0
        scale = self.signal / math.sqrt(K)
        v_norm = float(np.sqrt((v * v).sum(axis=1)).max())
        z_top = self.pop_exponent * float(zeta.max())

        def block(gen: np.random.Generator, nb: int) -> _Block:
            u, targets = self._user_factors(gen, nb)
            # log w - shift, shift = max(0, bound - 80): the bound |s u.v/sqrt K| + gamma max zeta keeps exp finite
            shift = np.maximum(0.0, scale * np.sqrt((u * u).sum(axis=1)) * v_norm + z_top - _LOG_CAP)
            left = np.empty((nb, K + 2), dtype=np.float32)
            left[:, :K] = scale * u
            left[:, K] = 1.0
            left[:, K + 1] = -shift

            def preference(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
                z = np.empty(len(rows))
                pair_dots(u, v, rows, cols, z)
                z /= math.sqrt(K)
                return np.asarray(ndtr(z))

            return _Block(left, targets, preference)

        return _dense_truth(gen, self.n_users, I, right, block)


# -- the machinery shared with ClusteredFactor (simrec.preference.clustered) ---------------------------------------
def _expected_targets(n_users: int, n_items: int, lam: float, sd: float) -> float:
    """n_users · E[min(I, λ e^{σε − σ²/2})], the lognormal's partial expectation (:meth:`LatentFactor.expected_pairs`)."""
    I = float(n_items)
    if sd == 0:
        return n_users * min(I, lam)
    d = (math.log(I / lam) + sd * sd / 2) / sd
    return float(n_users * (lam * ndtr(d - sd) + I * (1 - ndtr(d))))


def _target_sizes(rng: np.random.Generator, n: int, n_items: int, lam: float, sd: float) -> np.ndarray:
    """``n`` target sizes min(I, λ exp(σ ε − σ²/2)), ε ~ N(0, 1) (one standard normal per user)."""
    return np.minimum(float(n_items), lam * np.exp(sd * rng.standard_normal(n) - sd * sd / 2))


def _water_filling(lw: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """π_ui = min(1, c_u w_ui) with Σ_i π_ui = targets[u], from log-weights ``lw`` (dense float64: small cases).

    The weight outside the t largest cells is the sum of those cells, the
    smallest first (not the total less the t largest, whose rounding noise
    is all that is left when a few cells carry a row: c overshot and every
    cell came out at 1).
    """
    w = np.exp(lw - lw.max(axis=1, keepdims=True))
    srt = -np.sort(-w, axis=1)  # descending
    below = np.cumsum(srt[:, ::-1], axis=1)[:, ::-1]  # W - P_t: the cells from the (t+1)-th largest on
    t = np.arange(w.shape[1])
    n = np.asarray(targets, dtype=np.float64)[:, None]
    # the number of capped cells: the first t with (n - t) w_(t+1) <= W - P_t (water-filling)
    ok = ((n - t) <= 0) | ((n - t) * srt <= below)
    first = np.where(ok.any(axis=1), ok.argmax(axis=1), w.shape[1])
    rows = np.arange(len(w))
    left = np.where(first < w.shape[1], below[rows, np.minimum(first, w.shape[1] - 1)], 0.0)
    with np.errstate(divide="ignore"):
        c = np.where(left > 0, (n[:, 0] - first) / np.where(left > 0, left, 1.0), np.inf)
    with np.errstate(invalid="ignore"):
        return np.where(w > 0, np.minimum(1.0, c[:, None] * w), 0.0)


def _right_matrix(n_items: int, depth: int) -> np.ndarray:
    """A zero float32 right matrix (width, ``depth``), width = ``n_items`` padded to a multiple of ``_CHUNK``.

    The caller fills its first ``n_items`` rows (one per item); the padding
    rows stay 0, so the padding cells' weights are exp(0) until
    :meth:`_Caps.fill` zeroes them.
    """
    return np.zeros((-(-n_items // _CHUNK) * _CHUNK, depth), dtype=np.float32)


@dataclass(frozen=True)
class _Block:
    """One block of users' part of :func:`_dense_truth`: its left matrix, its target sizes, its pairs' preference.

    ``left`` (users, depth) float32, each row's last column minus its shift;
    ``preference(rows, cols)``: the graded preference of the block's liked
    cells (block rows, item columns), float64 in (0, 1).
    """

    left: np.ndarray
    targets: np.ndarray
    preference: Callable[[np.ndarray, np.ndarray], np.ndarray]


def _dense_truth(
    gen: np.random.Generator,
    n_users: int,
    n_items: int,
    right: np.ndarray,
    block: Callable[[np.random.Generator, int], _Block],
) -> Interactions:
    """The likes of a dense world whose log-weights are ``left @ right.T`` (module docstring: blocks, slices, kernels).

    ``right`` (width, depth) float32 from :func:`_right_matrix`, its item
    rows filled (the item latents drawn before); ``block(gen, n)`` draws the
    next ``n`` users' latents and returns their :class:`_Block`. Per block of
    users, in order: ``block``'s draws, then :func:`_block_likes`'s. Returns
    the truth, graded by ``preference`` (float32, at least the smallest
    normal float32).
    """
    U, I = n_users, n_items
    width, depth = right.shape
    n_chunks = width // _CHUNK
    size = int(max(1, min(U, _BLOCK_BYTES // (4 * width))))
    sub = _sub_rows(width, depth)
    buf = np.empty((size, width), dtype=np.float32)  # reused: no fresh memory per block
    counts, items, prefs = [], [], []
    with single_threaded_blas():  # idle BLAS threads spin between products: CPU for nothing
        for start in range(0, U, size):
            nb = min(size, U - start)
            b = block(gen, nb)
            left, targets = b.left, b.targets
            w = buf[:nb]
            caps = _Caps.empty(targets, n_chunks)
            for r0, r1 in _row_slices(nb, sub):  # each few rows' passes while their cells are in cache
                np.matmul(left[r0:r1], right.T, out=w[r0:r1])
                np.exp(w[r0:r1], out=w[r0:r1])
                caps.fill(w, r0, r1, I)
            rows, cols = _block_likes(gen, w, targets, caps)
            p = np.maximum(b.preference(rows, cols), np.finfo(np.float32).tiny).astype(np.float32)
            counts.append(np.bincount(rows, minlength=nb))
            items.append(cols)
            prefs.append(p)
    indptr = np.zeros(U + 1, dtype=np.int64)
    np.cumsum(np.concatenate(counts), out=indptr[1:])
    pref = np.concatenate(prefs)
    return Interactions.from_csr(indptr, np.concatenate(items), (U, I), sort=False, gains=pref, preference=pref)


def _sub_rows(width: int, depth: int) -> int:
    """Rows per slice of a block: about ``_SUB_BYTES`` of weights, but never a product BLAS computes another way.

    A slice's weights must equal the whole block's bit for bit (the draws do
    not depend on the slicing): numpy hands a one-row product to gemv and
    OpenBLAS products with rows x ``width`` x ``depth`` <= 1e6 to its
    small-matrix kernels, both rounding differently, so a slice has at least
    3 rows and more than 1e6 / (``width`` x ``depth``). A block at or below
    that size was one such product and stays one slice
    (:func:`_row_slices`).
    """
    return max(3, _SUB_BYTES // (4 * width), int(_SMALL_GEMM // (width * depth)) + 1)


def _row_slices(n: int, sub: int) -> list[tuple[int, int]]:
    """``[r0, r1)`` slices of ``n`` rows, each of ``sub`` rows except the last, which takes up to ``2 sub - 1``."""
    edges = list(range(0, n - sub + 1, sub)) if n >= 2 * sub else [0]
    return [(a, b) for a, b in zip(edges, edges[1:] + [n])]


@dataclass(frozen=True)
class _Caps:
    """A block's chunk statistics and water-filling (:func:`~simrec.preference._factor_kernel.row_caps`'s outputs)."""

    targets: np.ndarray
    sums: np.ndarray
    tops: np.ndarray
    scale: np.ndarray
    rest: np.ndarray
    big_ptr: np.ndarray
    big_cols: np.ndarray
    big_pi: np.ndarray
    big_count: np.ndarray

    @classmethod
    def empty(cls, targets: np.ndarray, n_chunks: int) -> _Caps:
        """Room for ``len(targets)`` rows; row r's cells with pi > tau at ``big_ptr[r]:`` (at most floor(n_r/tau) + 1)."""
        targets = np.asarray(targets, dtype=np.float64)
        n = len(targets)
        big_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.floor(targets / _TAU).astype(np.int64) + 1, out=big_ptr[1:])
        return cls(
            targets,
            np.empty((n, n_chunks)),
            np.empty((n, n_chunks), dtype=np.float32),
            np.empty(n),
            np.empty(n),
            big_ptr,
            np.empty(big_ptr[-1], dtype=np.int64),
            np.empty(big_ptr[-1]),
            np.empty(n, dtype=np.int64),
        )

    def fill(self, w: np.ndarray, r0: int, r1: int, n_items: int) -> None:
        """Rows ``r0:r1``: zero their padding columns, then their chunk statistics and caps (``w`` modified)."""
        from simrec.preference._factor_kernel import stats_caps

        rs = slice(r0, r1)
        stats_caps(
            w[rs], n_items, _CHUNK, self.targets[rs], _TAU, self.sums[rs], self.tops[rs], self.scale[rs],
            self.rest[rs], self.big_ptr[r0 : r1 + 1], self.big_cols, self.big_pi, self.big_count[rs],
        )  # fmt: skip


def _block_likes(
    gen: np.random.Generator, w: np.ndarray, targets: np.ndarray, caps: _Caps | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Liked cells of a block: independent Bernoulli(min(1, c_u w_ui)) with Σ_i π_ui = targets[u] (module docstring).

    ``w`` (n, width) float32 weights, zero in padding columns; modified (the
    cells drawn one by one are zeroed). ``caps``: its statistics, when the
    caller computed them slice by slice (:meth:`_Caps.fill`). Returns the
    liked cells' rows and columns, sorted by (row, column), int64. Draws, in
    order: one uniform per cell with π > τ, the candidate counts, the
    candidates' positions and their acceptance uniforms.
    """
    from simrec.preference._factor_kernel import thin_rows

    n, width = w.shape
    if caps is None:
        caps = _Caps.empty(targets, width // _CHUNK)
        caps.fill(w, 0, n, width)
    big_ptr, big_count, scale, rest = caps.big_ptr, caps.big_count, caps.scale, caps.rest
    at = np.repeat(big_ptr[:-1] - np.concatenate(([0], np.cumsum(big_count)[:-1])), big_count)
    at += np.arange(len(at))
    b_rows = np.repeat(np.arange(n, dtype=np.int64), big_count)
    b_cols = caps.big_cols[at]
    take = gen.random(len(at)) < caps.big_pi[at]  # pi = 1: always
    live = rest > 0
    rate = np.zeros(n)
    rate[live] = _M * scale[live] * rest[live]
    n_cand = gen.poisson(rate)
    cand_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(n_cand, out=cand_ptr[1:])
    x = gen.random(int(cand_ptr[-1]))
    accept = gen.random(int(cand_ptr[-1]))
    cols = np.empty(int(cand_ptr[-1]), dtype=np.int64)
    thin_rows(w, caps.sums, _CHUNK, scale, cand_ptr, x, accept, _M, cols)
    c_rows = np.repeat(np.arange(n, dtype=np.int64), n_cand)
    ok = cols >= 0
    keys = np.concatenate((b_rows[take] * width + b_cols[take], c_rows[ok] * width + cols[ok]))
    keys.sort()
    if len(keys) > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys // width, keys % width
