"""Compiled kernel of :meth:`simrec.preference.LDA._topic_counts`: the Dirichlet-multinomial urn.

numba, deterministic and single-threaded (no ``parallel``, no fastmath, no
random numbers: the uniforms come from the caller's numpy Generator, so the
counts depend on the seed alone). Compiled on first use and cached in the
user's cache folder (:func:`simrec._cache.cached_njit`; never in the package
folder); importing this module imports numba, so
:mod:`simrec.preference.lda` imports it only when an LDA truth is drawn.
"""

from __future__ import annotations

import numpy as np

from simrec._cache import cached_njit

__all__ = ["urn_topic_counts"]


@cached_njit(nogil=True)
def urn_topic_counts(x: np.ndarray, per_user: np.ndarray, a: float, out: np.ndarray) -> None:
    r"""Per-topic counts of each user's draws from the symmetric Dirichlet-multinomial urn; adds into ``out``.

    Parameters
    ----------
    x : ndarray of float64, shape (per_user.sum(),)
        Uniforms on [0, 1), one per draw, users one after another.
    per_user : ndarray of int64, shape (n_users,)
        Each user's number of draws.
    a : float
        Symmetric Dirichlet parameter, > 0.
    out : ndarray of int64, shape (n_users, n_topics)
        Zeros on entry; the counts on exit.

    Notes
    -----
    Draw i (0-based) of a user takes topic k with probability
    :math:`(a + c_k) / (K a + i)`, :math:`c_k` its earlier draws of topic k.
    With :math:`v = x_i (K a + i)`: :math:`v < K a` (probability
    :math:`K a / (K a + i)`) gives topic :math:`\lfloor v / a \rfloor`,
    uniform on {0..K-1} given that event; otherwise the draw repeats the
    topic of draw :math:`\lfloor v - K a \rfloor`, uniform on {0..i-1} given
    that event. The two cases add up to :math:`(a + c_k) / (K a + i)`.
    O(draws): one step per draw.
    """
    n_users, n_topics = out.shape
    ka = n_topics * a
    longest = 0
    for u in range(n_users):
        longest = max(longest, per_user[u])
    topics = np.empty(longest, dtype=np.int64)  # the current user's topics so far
    t = 0
    for u in range(n_users):
        for i in range(per_user[u]):
            v = x[t] * (ka + i)
            if v < ka:
                k = min(int(v / a), n_topics - 1)
            else:
                k = topics[min(int(v - ka), i - 1)]
            topics[i] = k
            out[u, k] += 1
            t += 1
