"""Key statistics and their KL divergences as the thesis authors' code computes them (a named variant).

simrec's default (:mod:`.key`, :mod:`.divergence`) follows the text of Tian's
thesis (§3.4). The published code of the thesis and its CHIIR 2020 paper
(BoiseState/chiir2020-est-error: ``simulation_utils/calibration.py``,
``CalibratorCSR``, ``compute_similarity``, ``compute_dstats``;
``simulation_utils/datasets.py``, ``DataStats``) computes them differently.
A reproduction of the thesis's numbers needs both readings; this module is the
code's, side by side with the text's:

==========================  =================================  ==============================================
                            thesis text (simrec default)       authors' code (this module)
==========================  =================================  ==============================================
popularity, activity        histogram on shared, roughly       distribution over the exact count values (each
                            log-spaced integer bins with an    distinct count is its own value; nothing binned)
                            overflow bin
never-observed items        not counted (observed items only)  counted in a simulation, with popularity 0
                                                               (``getnnz`` over every item column)
similarity bins             50 equal bins on [0, 1]            numpy's ``bins='auto'`` on (−1, 1), chosen from
                                                               the reference's sample and reused for simulations
pairs sampled               up to 1,000,000 unique pairs of    a fraction 0.2 of all pairs of such rows, at most
                            rows with >= 5 observations        1,000,000 (the code draws with replacement, then
                                                               drops repeats; simrec draws unique pairs); a
                                                               simulation with <= 10 such rows uses rows with >= 1
smoothing and KL            both normalised, 1e-6 added to     zero entries dropped; the values present on either
                            every bin, renormalised;           side outer-joined; ε = min(smallest count of
                            D(reference ‖ simulated)           either side) / 10 added to both count vectors;
                                                               ``scipy.stats.entropy(reference, simulated)``
combined objective          mean relative loss (§3.4.4)        the code's ``'all'`` is the *sum* of the four KLs
                                                               (not implemented here; see the calibration notes)
==========================  =================================  ==============================================

.. math::
    D = \\sum_{v \\in V_p \\cup V_q} \\tilde p_v \\log \\frac{\\tilde p_v}{\\tilde q_v}, \\quad
    \\tilde p_v = \\frac{p_v + \\varepsilon}{\\sum_w (p_w + \\varepsilon)}, \\quad
    \\varepsilon = \\tfrac{1}{10} \\min(\\min_{v: p_v > 0} p_v, \\min_{v: q_v > 0} q_v)

where p_v (q_v) is the reference's (simulation's) count at value v, 0 where a
value occurs on one side only, and V_p, V_q are the values with a positive count.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from simrec._random import RNGLike, as_generator
from simrec.interactions import Interactions
from simrec.stats.similarity import item_cosines, user_cosines

__all__ = [
    "ValueCounts",
    "AuthorsCodeStatistics",
    "value_counts",
    "kl_divergence_joined",
    "authors_code_statistics",
    "kl_by_statistic_authors_code",
    "PAIR_FRACTION",
]

#: Fraction of all pairs the authors' code samples for a similarity statistic (``_sample_pairs(n, frac=0.2)``).
PAIR_FRACTION = 0.2
_PAIR_CAP = 1_000_000
_MIN_OBSERVATIONS = 5
_FALLBACK_BELOW = 10


@dataclass(frozen=True)
class ValueCounts:
    """A distribution as the authors' code keeps it: ``counts[i]`` entities at value ``values[i]``.

    ``values`` are the distinct counts (popularity, activity) or the right bin
    edges (similarities), increasing; ``counts`` are raw counts (not normalised).
    """

    values: np.ndarray
    counts: np.ndarray


def value_counts(x: np.ndarray) -> ValueCounts:
    """How many entries of ``x`` take each distinct value (``np.unique(x, return_counts=True)``)."""
    values, counts = np.unique(np.asarray(x), return_counts=True)
    return ValueCounts(values, counts.astype(np.float64))


def kl_divergence_joined(reference: ValueCounts, simulated: ValueCounts) -> float:
    """The authors' ``compute_similarity``: KL of outer-joined count distributions (module docstring).

    Returns
    -------
    float
        NaN, with a warning, when either side has no positive count (an
        undefined statistic).
    """
    p_keep, q_keep = reference.counts > 0, simulated.counts > 0
    if not p_keep.any() or not q_keep.any():
        warnings.warn("KL divergence of an empty distribution; returning NaN", RuntimeWarning, stacklevel=2)
        return float("nan")
    pv, pc = reference.values[p_keep], reference.counts[p_keep]
    qv, qc = simulated.values[q_keep], simulated.counts[q_keep]
    eps = min(pc.min(), qc.min()) / 10
    support = np.union1d(pv, qv)
    p = np.full(len(support), eps)
    q = np.full(len(support), eps)
    p[np.searchsorted(support, pv)] += pc
    q[np.searchsorted(support, qv)] += qc
    p /= p.sum()
    q /= q.sum()
    return float(np.sum(p * np.log(p / q)))


@dataclass(frozen=True)
class AuthorsCodeStatistics:
    """The four key statistics of one dataset in the authors' code's form.

    ``similarity_edges`` are the reference's ``bins='auto'`` edges on (−1, 1)
    (one array per similarity statistic), reused for every simulation.
    """

    item_popularity: ValueCounts
    user_activity: ValueCounts
    item_similarity: ValueCounts
    user_similarity: ValueCounts
    item_edges: np.ndarray
    user_edges: np.ndarray

    def __getitem__(self, name: str) -> ValueCounts:
        return getattr(self, name)


def _pairs_for(n_eligible: int) -> int:
    """The authors' number of pairs: a fraction 0.2 of all pairs, at most 1,000,000 (at least 1)."""
    return max(1, min(_PAIR_CAP, int(n_eligible * (n_eligible - 1) / 2 * PAIR_FRACTION)))


def _cosines(kind: str, inter: Interactions, rng: np.random.Generator, *, simulated: bool) -> np.ndarray:
    sample = item_cosines if kind == "item" else user_cosines
    counts = inter.item_counts() if kind == "item" else inter.user_counts()
    eligible = int((counts >= _MIN_OBSERVATIONS).sum())
    min_obs = _MIN_OBSERVATIONS
    if simulated and eligible <= _FALLBACK_BELOW:  # the code's fallback for nearly empty simulations
        min_obs, eligible = 1, int((counts >= 1).sum())
    if eligible < 2:
        return np.empty(0)
    return sample(inter, rng, min_observations=min_obs, max_pairs=_pairs_for(eligible)).cosines


def _similarity(cos: np.ndarray, edges: np.ndarray) -> ValueCounts:
    hist, _ = np.histogram(cos, bins=edges)
    return ValueCounts(edges[1:], hist.astype(np.float64))


def authors_code_statistics(
    inter: Interactions, rng: RNGLike, *, reference: AuthorsCodeStatistics | None = None
) -> AuthorsCodeStatistics:
    """The four statistics as the authors' code computes them.

    Parameters
    ----------
    inter : Interactions, shape (n_users, n_items)
        Observed data (a reference dataset, or one simulation).
    rng : Generator or seed
        Pair sampling (two independent child streams, items first).
    reference : AuthorsCodeStatistics, optional
        The reference's statistics: give them for a simulation, so its
        similarities use the reference's bin edges, never-observed items count
        with popularity 0, and the code's fallback to rows with >= 1
        observation applies. Default None: ``inter`` is the reference (edges
        chosen with ``bins='auto'`` from its own sample).
    """
    if not isinstance(inter, Interactions):
        raise TypeError(f"`inter` must be an Interactions; got {type(inter).__name__}")
    simulated = reference is not None
    rng_items, rng_users = as_generator(rng).spawn(2)
    item_cos = _cosines("item", inter, rng_items, simulated=simulated)
    user_cos = _cosines("user", inter, rng_users, simulated=simulated)
    if reference is None:
        if len(item_cos) == 0 or len(user_cos) == 0:
            raise ValueError(
                "the reference needs two items and two users with >= 5 observations for the similarity statistics"
            )
        item_edges = np.histogram_bin_edges(item_cos, bins="auto", range=(-1, 1))
        user_edges = np.histogram_bin_edges(user_cos, bins="auto", range=(-1, 1))
    else:
        item_edges, user_edges = reference.item_edges, reference.user_edges
    item_counts = inter.item_counts()
    return AuthorsCodeStatistics(
        item_popularity=value_counts(item_counts if simulated else item_counts[item_counts > 0]),
        user_activity=value_counts(inter.user_counts()),
        item_similarity=_similarity(item_cos, item_edges),
        user_similarity=_similarity(user_cos, user_edges),
        item_edges=item_edges,
        user_edges=user_edges,
    )


def kl_by_statistic_authors_code(
    reference: AuthorsCodeStatistics, simulated: AuthorsCodeStatistics
) -> dict[str, float]:
    """:func:`kl_divergence_joined` of each key statistic, keyed like :func:`simrec.stats.kl_by_statistic`."""
    for name, s in (("reference", reference), ("simulated", simulated)):
        if not isinstance(s, AuthorsCodeStatistics):
            raise TypeError(f"`{name}` must be an AuthorsCodeStatistics; got {type(s).__name__}")
    return {
        name: kl_divergence_joined(reference[name], simulated[name])
        for name in ("item_popularity", "user_activity", "item_similarity", "user_similarity")
    }
