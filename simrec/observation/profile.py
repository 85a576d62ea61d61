"""Observed profile sizes n_u (Tian's thesis §3.2.1; docs/design.md §2).

A profile-size model draws, for every user, how many of its true likes are
observed: ``sample(capacity, rng)`` returns one size per user in
``[1, capacity_u]`` (0 for users with capacity 0), ``capacity_u = |Ĩ_u|``.

Two policies for a draw above the capacity (the thesis's footnote 1):

* **clamp** (default): the size becomes ``capacity_u``, which piles the
  excess probability mass at ``capacity_u``;
* **redraw**: the draw is repeated until it fits. This is sampled *exactly*,
  without a loop, as the model's distribution conditioned on
  ``size <= capacity_u`` (inverse transform on the truncated CDF), which is
  what infinitely many redraws would give. A user whose capacity is below the
  model's smallest size can never be satisfied; it is clamped (size =
  capacity), and so is every user under the clamp policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, gammaln

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int

__all__ = ["TruncatedPareto", "TruncatedBetaBinomial"]


def _check_capacity(capacity: np.ndarray) -> np.ndarray:
    cap = np.asarray(capacity)
    if cap.ndim != 1:
        raise ValueError(f"`capacity` must be 1-d (one value per user); got shape {cap.shape}")
    if cap.dtype.kind not in "iu":
        raise TypeError(f"`capacity` must be an integer array; got dtype {cap.dtype}")
    cap = cap.astype(np.int64, copy=False)
    if len(cap) and cap.min() < 0:
        raise ValueError(f"`capacity` must be >= 0; got minimum {cap.min()}")
    return cap


def _check_probabilities(p: np.ndarray) -> None:
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError(
            f"`p` must be in [0, 1]; got values in [{np.nanmin(p):g}, {np.nanmax(p):g}] (NaN: {bool(np.isnan(p).any())})"
        )


def _check_redraw(redraw: object) -> bool:
    if not isinstance(redraw, (bool, np.bool_)):
        raise TypeError(f"`redraw` must be a bool; got {redraw!r}")
    return bool(redraw)


@dataclass(frozen=True)
class TruncatedPareto:
    """Truncated Pareto profile sizes, rounded down (thesis §3.2.1).

    The continuous draw is x ∈ [m_low, m_high] by inverse transform,
    p ~ Uniform(0, F(m_high)), x = F⁻¹(p), with the Pareto CDF

    .. math:: F(x) = 1 - (m_{low}/x)^{\\alpha}, \\qquad
              \\bar F(x) = F(x) / F(m_{high}) \\text{ (the truncated CDF, :meth:`cdf`)}.

    The size is ``max(1, floor(x))`` — floor, so that m_low = 20 reproduces
    MovieLens's "at least 20 ratings" and P(size <= k) = F̄(k + 1) — then
    capped at the user's capacity by the clamp or redraw policy (module doc).
    Sizes therefore range over [max(1, floor(m_low)), floor(m_high)].

    Parameters
    ----------
    m_low : float
        Scale (lower bound), > 0.
    alpha : float
        Shape, > 0 (smaller = heavier tail).
    m_high : float
        Upper bound, > m_low.
    redraw : bool, default False
        Redraw (exactly: condition on size <= capacity) instead of clamping.
    """

    m_low: float
    alpha: float
    m_high: float
    redraw: bool = False

    def __post_init__(self) -> None:
        m_low = check_in_range("m_low", self.m_low, 0, None, low_open=True)
        object.__setattr__(self, "m_low", m_low)
        object.__setattr__(self, "alpha", check_in_range("alpha", self.alpha, 0, None, low_open=True))
        object.__setattr__(self, "m_high", check_in_range("m_high", self.m_high, m_low, None, low_open=True))
        object.__setattr__(self, "redraw", _check_redraw(self.redraw))

    def _pareto_cdf(self, x: np.ndarray | np.floating) -> np.ndarray:
        """Untruncated F(x) for x >= m_low, as −expm1(α log(m_low/x)) for accuracy."""
        return -np.expm1(self.alpha * np.log(self.m_low / x))

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """Truncated CDF F̄(x) of the continuous draw (0 below m_low, 1 above m_high)."""
        x = np.asarray(x, dtype=np.float64)
        xc = np.clip(x, self.m_low, self.m_high)
        return self._pareto_cdf(xc) / self._pareto_cdf(np.float64(self.m_high))

    def ppf(self, p: np.ndarray | float) -> np.ndarray:
        """Inverse of :meth:`cdf`: x = m_low (1 − p F(m_high))^{−1/α}, p ∈ [0, 1]."""
        p = np.asarray(p, dtype=np.float64)
        _check_probabilities(p)
        return self._ppf_raw(p * self._pareto_cdf(np.float64(self.m_high)))

    def _ppf_raw(self, q: np.ndarray) -> np.ndarray:
        """F⁻¹(q) of the untruncated Pareto, q ∈ [0, F(m_high)]."""
        x = self.m_low * np.exp(-np.log1p(-q) / self.alpha)
        return np.clip(x, self.m_low, self.m_high)

    def _sample_continuous(self, n: int, rng: RNGLike, upper: np.ndarray | None = None) -> np.ndarray:
        """Unrounded draws x, shape (n,); with ``upper``, conditioned on x < upper (elementwise)."""
        gen = as_generator(rng)
        top = (
            np.float64(self.m_high)
            if upper is None
            else np.clip(np.asarray(upper, np.float64), self.m_low, self.m_high)
        )
        return self._ppf_raw(gen.random(n) * self._pareto_cdf(top))

    def sample(self, capacity: np.ndarray, rng: RNGLike) -> np.ndarray:
        """One profile size per user.

        Parameters
        ----------
        capacity : ndarray of int, shape (n_users,)
            |Ĩ_u|, the number of true likes of each user (>= 0).
        rng : Generator or seed

        Returns
        -------
        ndarray of int64, shape (n_users,)
            Sizes in [1, capacity_u]; 0 where capacity_u = 0.
        """
        cap = _check_capacity(capacity)
        gen = as_generator(rng)
        if self.redraw:
            # size <= cap  <=>  floor(x) <= cap  <=>  x < cap + 1 (for cap >= 1)
            upper = np.minimum(cap + 1.0, self.m_high)
            ok = upper > self.m_low
            x = self._sample_continuous(len(cap), gen, np.where(ok, upper, self.m_high))
            size = np.maximum(np.floor(x).astype(np.int64), 1)
            size = np.where(ok, np.minimum(size, cap), cap)  # minimum guards x rounding up to cap + 1
        else:
            x = self._sample_continuous(len(cap), gen)
            size = np.minimum(np.maximum(np.floor(x).astype(np.int64), 1), cap)
        return size.astype(np.int64, copy=False)


@dataclass(frozen=True)
class TruncatedBetaBinomial:
    """Beta-binomial profile sizes on [n_min, n_max] (thesis §3.2.1, footnote 1).

    .. math:: n = n_{min} + B, \\quad B \\sim \\mathrm{BetaBinomial}(n_{max} - n_{min}, a, b),
    .. math:: P(B = j) = \\binom{N}{j} \\frac{\\mathrm{B}(j + a, N - j + b)}{\\mathrm{B}(a, b)},
              \\quad N = n_{max} - n_{min},

    then capped at the user's capacity by the clamp or redraw policy (module
    doc). The thesis does not give its parameterisation; this one keeps the
    role of the truncated Pareto (a size distribution on a fixed range, the
    same for every user) with mean n_min + N a/(a + b); a < 1 with b > 1 gives
    a long right tail.

    Parameters
    ----------
    n_max : int
        Largest size, > n_min.
    a, b : float
        Beta parameters, > 0.
    n_min : int, default 1
        Smallest size, >= 1.
    redraw : bool, default False
        Redraw (exactly: condition on size <= capacity) instead of clamping.
    """

    n_max: int
    a: float
    b: float
    n_min: int = 1
    redraw: bool = False

    def __post_init__(self) -> None:
        n_min = check_int("n_min", self.n_min, low=1)
        object.__setattr__(self, "n_min", n_min)
        object.__setattr__(self, "n_max", check_int("n_max", self.n_max, low=n_min + 1))
        object.__setattr__(self, "a", check_in_range("a", self.a, 0, None, low_open=True))
        object.__setattr__(self, "b", check_in_range("b", self.b, 0, None, low_open=True))
        object.__setattr__(self, "redraw", _check_redraw(self.redraw))

    def pmf(self, k: np.ndarray | int) -> np.ndarray:
        """P(size = k) before capping, for integer k (0 outside [n_min, n_max])."""
        k = np.asarray(k, dtype=np.float64)
        N = self.n_max - self.n_min
        j = k - self.n_min
        inside = (j >= 0) & (j <= N)
        jj = np.where(inside, j, 0.0)
        logp = (
            gammaln(N + 1.0)
            - gammaln(jj + 1.0)
            - gammaln(N - jj + 1.0)
            + betaln(jj + self.a, N - jj + self.b)
            - betaln(self.a, self.b)
        )
        return np.where(inside, np.exp(logp), 0.0)

    def cdf(self, k: np.ndarray | int) -> np.ndarray:
        """P(size <= k) before capping, for real k (summed pmf; O(n_max))."""
        c = np.cumsum(self.pmf(np.arange(self.n_min, self.n_max + 1)))
        c /= c[-1]
        idx = np.floor(np.asarray(k, dtype=np.float64)) - self.n_min
        return np.where(idx < 0, 0.0, c[np.clip(idx, 0, len(c) - 1).astype(np.int64)])

    def ppf(self, p: np.ndarray | float) -> np.ndarray:
        """Smallest k with cdf(k) >= p, p ∈ [0, 1]."""
        p = np.asarray(p, dtype=np.float64)
        _check_probabilities(p)
        c = np.cumsum(self.pmf(np.arange(self.n_min, self.n_max + 1)))
        c /= c[-1]
        return self.n_min + np.minimum(np.searchsorted(c, p, side="left"), len(c) - 1)

    def sample(self, capacity: np.ndarray, rng: RNGLike) -> np.ndarray:
        """One profile size per user (same contract as :meth:`TruncatedPareto.sample`).

        Only the CDF up to the largest capacity is tabulated (sizes above it
        are capped anyway), so the cost is O(n_users log + min(n_max, max capacity)).
        """
        cap = _check_capacity(capacity)
        gen = as_generator(rng)
        n = len(cap)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        top = int(min(self.n_max, max(cap.max(), self.n_min)))
        support = np.arange(self.n_min, top + 1)
        c = np.cumsum(self.pmf(support))  # P(size <= k) for k in support (the pmf is normalised)
        u = gen.random(n)
        if self.redraw:
            ok = cap >= self.n_min
            # conditioned on size <= cap: u scaled to P(size <= cap)
            lim = c[np.clip(cap - self.n_min, 0, len(c) - 1)]
            u = u * np.where(ok, lim, 1.0)
        idx = np.searchsorted(c, u, side="right")  # first k with cdf(k) > u
        size = np.minimum(np.minimum(self.n_min + idx, self.n_max), cap)
        return size.astype(np.int64, copy=False)
