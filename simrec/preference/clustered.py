"""A dense low-rank preference model with item clusters and a popularity offset (issue 24).

:class:`~simrec.preference.LatentFactor` with a neighbourhood part: items
fall into G clusters, and each user has a taste for each cluster that is
shared by all its items. Likes are drawn with weight

.. math:: \\log w_{ui} = s\\,\\frac{u_u^\\top v_i}{\\sqrt K}
          + t\\,\\eta_{u, g(i)} + \\gamma \\zeta_i, \\qquad
          u_u, v_i \\sim N(0, I_K), \\quad \\eta_u \\sim N(0, I_G), \\quad
          \\zeta_i \\sim N(0, 1), \\quad g(i) \\sim \\mathrm{Uniform}\\{0, \\dots, G-1\\},

all independent (s = ``signal``, t = ``cluster_signal``, γ =
``pop_exponent``). Why: on MovieLens-1M, LensKit's ItemKNN has the higher
nDCG@10 than ImplicitMF (heavy users favour neighbourhoods), an order the
purely low-rank LatentFactor world does not reproduce; an earlier issue-24
experiment (its code not kept) did reproduce it once clustered structure
was added, and this model rebuilds that world. For one user, two items of
one cluster have log-weights with covariance :math:`s^2 v_i^\\top v_j / K +
t^2`, of different clusters :math:`s^2 v_i^\\top v_j / K`: each user's likes
gather in the clusters of the user's largest η, a block structure (rank G,
on top of the rank-K part) that item-item neighbourhoods see directly, the
items of one cluster being co-liked.

The law of a user's likes is LatentFactor's (decision: the same law, only
the weights change). User u has a target profile size :math:`n_u =
\\min(I, \\lambda e^{\\sigma_a \\epsilon_u - \\sigma_a^2/2})`,
:math:`\\epsilon_u \\sim N(0, 1)`, and likes each item independently with
probability

.. math:: \\pi_{ui} = \\min(1, c_u w_{ui}), \\qquad \\sum_i \\pi_{ui} = n_u

(:math:`c_u` by water-filling), so :math:`E|\\tilde I_u| = n_u` exactly
and :meth:`ClusteredFactor.like_probability` is the exact like probability
of every pair. At t = 0 it is LatentFactor's law for the same u, v, ζ; at
G = 1 too, whatever t (the one cluster's offset is the user's own constant,
absorbed by :math:`c_u`).

Graded preference (decision): each liked pair's

.. math:: p_{ui} = \\Phi\\!\\left(\\frac{z_{ui} + \\eta_{u, g(i)}}{\\sqrt 2}\\right)
          \\in (0, 1), \\qquad z_{ui} = \\frac{u_u^\\top v_i}{\\sqrt K},

the percentile of the pair's combined affinity (both parts have mean 0
and variance 1, η normal and z a sum of K products, normal when K is
large, so their sum over √2 is about standard normal), stored as its ``preference``
and ``gains``. Like LatentFactor's Φ(z) it does not depend on s or t, which
set how strongly the two parts select the likes, not how they grade them,
and the popularity offset (exposure, not taste) is left out.

Drawing: LatentFactor's machinery (:mod:`simrec.preference.factor`: blocks
of users, float32 products, the compiled water-filling and thinning), the
cluster part in the same product: the left matrix is
[s u/√K, t η, 1, -shift] and the right one [v, onehot(g), γζ, 1], so the
product's depth is K + G + 2 and its cost O(U I (K + G)) flops (at
K = 10, G = 20 and ML-20M size the truth took about 21 s of CPU,
LatentFactor's at K = 10 about 15 s). The per-user shift is the bound :math:`s\\,|u_u| \\max_i |v_i| / \\sqrt K + t \\max_g
|\\eta_{ug}| + \\gamma \\max_i \\zeta_i` less 80, when positive, so that
exp stays finite in float32. Measurements: docs/design.md §9
(``bench/bench_scale.py --worlds clustered``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions
from simrec.preference.factor import (
    _LOG_CAP,
    _Block,
    _dense_truth,
    _expected_targets,
    _right_matrix,
    _target_sizes,
    _water_filling,
)

__all__ = ["ClusteredFactor"]


@dataclass(frozen=True)
class ClusteredFactor:
    """Dense low-rank truth with item clusters and a popularity offset: user u likes item i with probability
    min(1, c_u w_ui), log w_ui = s u_u·v_i/√K + t η_{u,g(i)} + γ ζ_i.

    Parameters
    ----------
    n_users : int
        Number of users, >= 1.
    n_items : int
        Number of items, >= 1.
    n_factors : int
        Latent dimension K, >= 1.
    n_clusters : int
        Number G >= 1 of item clusters (1: LatentFactor's likes).
    signal : float
        Strength s >= 0 of the low-rank affinity in the log-weight.
    cluster_signal : float
        Strength t >= 0 of the user's cluster taste in the log-weight (0:
        LatentFactor's likes).
    pop_exponent : float
        γ >= 0, the scale of the log popularity offset (0: no popularity).
    lam : float
        Mean λ > 0 of the users' target profile sizes (before the cap at
        ``n_items``).
    activity_sd : float, default 1.0
        σ_a >= 0, the log-sd of the target sizes (0: every user targets λ).

    Notes
    -----
    The draws, in order: the items' v (n_items x K), ζ (n_items) and
    clusters g (n_items, uniform integers in [0, G)), then block by block
    of users their u (block x K), η (block x G) and ε (block), then
    LatentFactor's like draws (the uniforms of the cells with π > 1/2, the
    candidate counts, the candidates' uniforms and their acceptance
    uniforms). The weights are computed in float32; a weight that underflows
    float32 (log-weight 87 below the user's largest) counts as 0, as in
    LatentFactor.
    """

    n_users: int
    n_items: int
    n_factors: int
    n_clusters: int
    signal: float
    cluster_signal: float
    pop_exponent: float
    lam: float
    activity_sd: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_int("n_users", self.n_users, low=1))
        object.__setattr__(self, "n_items", check_int("n_items", self.n_items, low=1))
        object.__setattr__(self, "n_factors", check_int("n_factors", self.n_factors, low=1))
        object.__setattr__(self, "n_clusters", check_int("n_clusters", self.n_clusters, low=1))
        object.__setattr__(self, "signal", check_in_range("signal", self.signal, 0, None))
        object.__setattr__(self, "cluster_signal", check_in_range("cluster_signal", self.cluster_signal, 0, None))
        object.__setattr__(self, "pop_exponent", check_in_range("pop_exponent", self.pop_exponent, 0, None))
        object.__setattr__(self, "lam", check_in_range("lam", self.lam, 0, None, low_open=True))
        object.__setattr__(self, "activity_sd", check_in_range("activity_sd", self.activity_sd, 0, None))

    # -- expectations ---------------------------------------------------------------
    def expected_pairs(self) -> float:
        """Exact E[pairs] = n_users · E[min(I, λ e^{σε − σ²/2})], as :meth:`LatentFactor.expected_pairs
        <simrec.preference.LatentFactor.expected_pairs>` (every user's likes have mean n_u; the weights do not enter)."""
        return _expected_targets(self.n_users, self.n_items, self.lam, self.activity_sd)

    def expected_items(self) -> float:
        """The number of items, ``n_items`` (columns; some may have no like)."""
        return float(self.n_items)

    # -- latent variables (exposed to tests) --------------------------------------------
    def _item_factors(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """v (n_items, K) and ζ (n_items,) standard normal, and the clusters g (n_items,) uniform on [0, G)."""
        v = rng.standard_normal((self.n_items, self.n_factors))
        zeta = rng.standard_normal(self.n_items)
        return v, zeta, rng.integers(0, self.n_clusters, self.n_items)

    def _user_factors(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """u (n, K) and η (n, G) standard normal, and the target sizes n_u = min(I, λ exp(σ ε − σ²/2)) of ``n`` users."""
        u = rng.standard_normal((n, self.n_factors))
        eta = rng.standard_normal((n, self.n_clusters))
        return u, eta, _target_sizes(rng, n, self.n_items, self.lam, self.activity_sd)

    def log_weights(
        self, u: np.ndarray, eta: np.ndarray, v: np.ndarray, zeta: np.ndarray, clusters: np.ndarray
    ) -> np.ndarray:
        """:math:`\\log w_{ui} = s\\,u_u^\\top v_i/\\sqrt K + t\\,\\eta_{u,g(i)} + \\gamma \\zeta_i`, shape
        (len(u), len(v)) (dense: small cases)."""
        low_rank = self.signal * (u @ v.T) / math.sqrt(self.n_factors)
        return low_rank + self.cluster_signal * eta[:, clusters] + self.pop_exponent * zeta

    def like_probability(
        self,
        u: np.ndarray,
        eta: np.ndarray,
        v: np.ndarray,
        zeta: np.ndarray,
        clusters: np.ndarray,
        targets: np.ndarray,
    ) -> np.ndarray:
        """π_ui = min(1, c_u w_ui) with Σ_i π_ui = n_u, shape (len(u), len(v)) (dense, float64: small cases)."""
        return _water_filling(self.log_weights(u, eta, v, zeta, clusters), targets)

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
            the same array) holds each liked pair's Φ((z_ui + η_{u,g(i)})/√2),
            float32 in (0, 1].
        """
        if max_pairs is not None:
            check_int("max_pairs", max_pairs, low=0)
        check_pairs_budget(self.expected_pairs(), max_pairs, repr(self))
        from simrec.preference._factor_kernel import pair_dots  # numba: only when a truth is drawn

        gen = as_generator(rng)
        I, K, G = self.n_items, self.n_factors, self.n_clusters
        v, zeta, clusters = self._item_factors(gen)
        right = _right_matrix(I, K + G + 2)  # [v, onehot(g), gamma zeta, 1]
        right[:I, :K] = v
        right[np.arange(I), K + clusters] = 1.0
        right[:I, K + G] = self.pop_exponent * zeta
        right[:I, K + G + 1] = 1.0
        scale, t = self.signal / math.sqrt(K), self.cluster_signal
        v_norm = float(np.sqrt((v * v).sum(axis=1)).max())
        z_top = self.pop_exponent * float(zeta.max())

        def block(gen: np.random.Generator, nb: int) -> _Block:
            u, eta, targets = self._user_factors(gen, nb)
            # log w - shift, shift = max(0, bound - 80): |s u.v/sqrt K| + t max|eta_u| + gamma max zeta bounds log w
            bound = scale * np.sqrt((u * u).sum(axis=1)) * v_norm + t * np.abs(eta).max(axis=1) + z_top
            left = np.empty((nb, K + G + 2), dtype=np.float32)  # [s u/sqrt K, t eta, 1, -shift]
            left[:, :K] = scale * u
            left[:, K : K + G] = t * eta
            left[:, K + G] = 1.0
            left[:, K + G + 1] = -np.maximum(0.0, bound - _LOG_CAP)

            def preference(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
                z = np.empty(len(rows))
                pair_dots(u, v, rows, cols, z)
                z /= math.sqrt(K)
                z += eta[rows, clusters[cols]]
                z /= math.sqrt(2.0)
                return np.asarray(ndtr(z))

            return _Block(left, targets, preference)

        return _dense_truth(gen, self.n_users, I, right, block)
