"""Full-ranking metrics (AUC, pAp@k) from dense recommender scores.

``scores`` is a float array (n_users, n_items) as returned by a recommender's
``score`` method: higher is better, ``-inf`` marks non-candidates (training
items). The candidates of user u are :math:`C_u = \\{i : s_{ui} > -\\infty\\}`;
positives are the relevant candidates :math:`P_u = \\mathrm{Rel}_u \\cap C_u`
(relevant non-candidates are ignored), negatives :math:`N_u = C_u \\setminus
\\mathrm{Rel}_u`. Tied scores count 1/2, the expected value over a random
tie-break. Users are processed in blocks so that dense temporaries stay small.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import scipy.sparse as sp

from simrec._blocks import user_blocks
from simrec._validation import check_int
from simrec.interactions import Interactions
from simrec.metrics._common import as_relevance, check_evaluated, finish

__all__ = ["auc", "auc_from_ranks", "auc_many", "pap_at_k"]

Relevance: TypeAlias = "sp.csr_array | Interactions"


def _check_scores(scores: object, relevant: object) -> tuple[np.ndarray, sp.csr_array]:
    s = np.asarray(scores)
    if s.ndim != 2:
        raise ValueError(f"`scores` must be 2-d (n_users, n_items); got shape {s.shape}")
    if not np.issubdtype(s.dtype, np.floating):
        raise TypeError(f"`scores` must be a float array; got dtype {s.dtype}")
    rel = _check_scores_rel(s, relevant)
    if np.isnan(s).any():
        raise ValueError("`scores` must not contain NaN (use -inf for non-candidates)")
    return s, rel


def _check_scores_rel(s: np.ndarray, relevant: object) -> sp.csr_array:
    rel = as_relevance(relevant, s.shape[0])
    if rel.shape != s.shape:
        raise ValueError(f"`relevant` must have the shape of `scores` {s.shape}; got {rel.shape}")
    return rel


def auc(scores: np.ndarray, relevant: Relevance, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """Area under the ROC curve of each user's full ranking of candidates.

    .. math::
        \\mathrm{AUC}_u = \\frac{1}{|P_u|\\,|N_u|} \\sum_{p \\in P_u} \\sum_{n \\in N_u}
        \\Big( 1[s_{up} > s_{un}] + \\tfrac12\\, 1[s_{up} = s_{un}] \\Big)

    computed as a Mann-Whitney statistic with mid-ranks:
    :math:`\\mathrm{AUC}_u = (\\sum_{p \\in P_u} r_{up} - |P_u|(|P_u|+1)/2) /
    (|P_u||N_u|)`, :math:`r_{up}` the 1-based mid-rank of p among the
    candidates in increasing score. With one relevant item at global rank R
    among N candidates this is :math:`(N - R)/(N - 1)` (docs/design.md §5).

    Parameters
    ----------
    scores : ndarray of float, shape (n_users, n_items)
        Scores, ``-inf`` at non-candidates; no NaN.
    relevant : csr_array or Interactions, shape (n_users, n_items)
        Relevance sets.
    evaluated : ndarray of bool, shape (n_users,), optional
        Users to evaluate (default all); others get NaN.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        NaN (with a warning) where :math:`P_u` or :math:`N_u` is empty.
    """
    s, rel = _check_scores(scores, relevant)
    mask = check_evaluated(evaluated, s.shape[0])
    values, undefined = _auc_values(s, [rel])[0]
    return finish(values, undefined, mask, "auc", "no relevant or no non-relevant candidate")


def auc_many(
    scores: np.ndarray, relevants: Sequence[Relevance], *, evaluated: np.ndarray | None = None
) -> list[np.ndarray]:
    """:func:`auc` of the same scores against several relevance sets, sorting the scores once.

    ``[auc(scores, r, evaluated=evaluated) for r in relevants]`` with identical
    values (e.g. observed and true relevance in one replicate); each relevance
    set gets its own warning about undefined users.
    """
    if not relevants:
        return []
    s, first = _check_scores(scores, relevants[0])
    rels = [first] + [_check_scores_rel(s, r) for r in relevants[1:]]
    mask = check_evaluated(evaluated, s.shape[0])
    return [
        finish(values, undefined, mask, "auc", "no relevant or no non-relevant candidate")
        for values, undefined in _auc_values(s, rels)
    ]


def auc_from_ranks(ranks: sp.csr_array, n_candidates: np.ndarray, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    r""":func:`auc` given only each relevant item's mid-rank among the candidates.

    With :math:`m_u` candidates and the :math:`k_u` relevant candidates at
    1-based mid-ranks :math:`R_{up}` in *decreasing* score (1 = first; tied
    candidates share the average of their positions), the ascending mid-rank
    is :math:`m_u + 1 - R_{up}` and the Mann-Whitney form of :func:`auc` is

    .. math::
        \mathrm{AUC}_u = \frac{\sum_{p \in P_u} (m_u + 1 - R_{up}) - k_u(k_u + 1)/2}
                               {k_u\,(m_u - k_u)}

    (ties count 1/2, as in :func:`auc`), computed as the same exact integer
    counts and one division, so the value is bit-identical to :func:`auc` of a
    score block with those mid-ranks (tests/metrics/test_auc_from_ranks.py).

    Parameters
    ----------
    ranks : csr_array of float, shape (n_users, n_items)
        The relevance sets; each stored value is the pair's mid-rank (an
        integer or half-integer in [1, m_u]), or -1 for a relevant item that
        is not a candidate (ignored, as in :func:`auc`), e.g. from
        :meth:`simrec.recommenders.TiedLevels.mid_ranks`.
    n_candidates : ndarray of int, shape (n_users,)
        :math:`m_u`.
    evaluated : ndarray of bool, shape (n_users,), optional
        Users to evaluate (default all); others get NaN.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        NaN (with a warning) where :math:`P_u` or :math:`N_u` is empty.

    Raises
    ------
    ValueError
        On a shape mismatch, or a value that is neither -1 nor a half-integer
        in [1, m_u].
    """
    r = sp.csr_array(ranks)
    n_users = r.shape[0]
    m = np.asarray(n_candidates, dtype=np.int64)
    if m.shape != (n_users,):
        raise ValueError(f"`n_candidates` must have shape ({n_users},); got {m.shape}")
    mask = check_evaluated(evaluated, n_users)
    ptr = r.indptr.astype(np.int64)
    twice = np.multiply(r.data, 2.0, dtype=np.float64)
    two_r = twice.astype(np.int64)
    cand = two_r != -2
    if (two_r != twice).any() or (two_r[cand] < 2).any():
        raise ValueError("`ranks` values must be -1 or mid-ranks: integers or half-integers in [1, n_candidates]")
    # per-row sums over the row-grouped pairs as differences of running sums (no row index array)
    two_r[~cand] = 0
    run = np.zeros(len(two_r) + 1, dtype=np.int64)
    np.cumsum(two_r, out=run[1:])
    sum_2r = run[ptr[1:]] - run[ptr[:-1]]
    np.cumsum(cand, out=run[1:])
    k = run[ptr[1:]] - run[ptr[:-1]]
    full = np.flatnonzero(k > 0)
    if len(full) and (np.maximum.reduceat(two_r, ptr[full]) > 2 * m[full]).any():
        raise ValueError("`ranks` values must be -1 or mid-ranks: integers or half-integers in [1, n_candidates]")
    # 2U = sum_p (2 (m + 1) - 2 R_p) - k (k + 1), in exact integers
    two_u = 2 * k * (m + 1) - sum_2r - k * (k + 1)
    nneg = m - k
    undefined = (k == 0) | (nneg <= 0)
    values = np.divide(two_u, 2.0 * k * nneg, out=np.zeros(n_users), where=~undefined)
    return finish(values, undefined, mask, "auc", "no relevant or no non-relevant candidate")


def _auc_values(s: np.ndarray, rels: list[sp.csr_array]) -> list[tuple[np.ndarray, np.ndarray]]:
    r"""The work of :func:`auc_many` without checks or NaN policy.

    Returns, per relevance set, ``(values, undefined)`` with ``values`` 0
    where ``undefined`` (no positive or no negative candidate). Each block of
    rows is sorted once (``np.sort``, numpy's SIMD sort) and shared by every
    relevance set; the mid-rank of a positive p among the candidates is then
    :math:`(\ell_p + h_p + 1)/2 - n^-_u`, with :math:`\ell_p` and
    :math:`h_p` the numbers of scores below and up to :math:`s_{up}` in its
    row and :math:`n^-_u` the non-candidates, found by binary searches in a
    compiled kernel (:func:`simrec.metrics._auc_kernel.auc_rows`, numba,
    imported here on first use so that importing simrec does not import
    numba). The counts are exact integers, so the values do not depend on the
    order of summation.

    Decision (issue 13, measured on the quickstart's score blocks, 943 x
    1,682 with 232,616 true-relevant pairs, observed and true relevance per
    call, CPU ms per call at load 9-12): no numpy path below a size
    threshold. The kernel costs 32-36 (np.sort 14-17 of it); the replaced
    numpy implementation (tests/test_metrics_auc.py) 73-81; a lockstep numpy
    search on the unpadded sorted block 130; ``np.argsort`` alone 36. The
    numpy path's extra ~26 ns per cell exceeds numba's one-off start-up
    (1.0-1.6 s CPU per process) after about 50 million cells, a third of the
    quickstart's 143 million, and a per-call threshold cannot know how many
    calls a process will make. A merge of each row's sorted positives with
    the sorted row, in place of the binary searches, measured 2x slower (23
    vs 11 ms per block for both relevance sets).
    """
    from simrec.metrics._auc_kernel import auc_rows  # numba: only when an AUC is computed

    n_users, n_items = s.shape
    outs = [(np.zeros(n_users), np.ones(n_users, dtype=bool)) for _ in rels]
    if n_items == 0 or n_users == 0:
        return outs
    structure = [(rel.indptr.astype(np.int64, copy=False), rel.indices.astype(np.int64, copy=False)) for rel in rels]
    for blk in user_blocks(n_users, n_items):
        S = np.ascontiguousarray(s[blk], dtype=np.float64)
        srt = np.sort(S, axis=1)
        for (indptr, indices), (out, undefined) in zip(structure, outs):
            auc_rows(srt, S, indptr, indices, blk.start, out[blk], undefined[blk])
    return outs


def _top_values(V: np.ndarray, k: int) -> np.ndarray:
    """The k largest values of each row (unordered), shape (rows, min(k, cols))."""
    if k >= V.shape[1]:
        return V
    return -np.partition(-V, k - 1, axis=1)[:, :k]


def pap_at_k(scores: np.ndarray, relevant: Relevance, k: int, *, evaluated: np.ndarray | None = None) -> np.ndarray:
    """pAp@k: partial AUC of the top relevant items against the top k irrelevant ones.

    With :math:`\\beta_u = \\min(|P_u|, k)`, :math:`p_{(i)}` the i-th positive
    and :math:`n_{(j)}` the j-th negative in decreasing score, and
    :math:`k_u = \\min(k, |N_u|)`:

    .. math::
        \\mathrm{pAp@k}_u = \\frac{1}{\\beta_u k_u}
        \\sum_{i=1}^{\\beta_u} \\sum_{j=1}^{k_u}
        \\Big( 1[s_{u p_{(i)}} > s_{u n_{(j)}}] + \\tfrac12\\, 1[s_{u p_{(i)}} = s_{u n_{(j)}}] \\Big)

    Hiranandani, Vijitbenjaronk, Koyejo & Jain, "Optimization and analysis of
    the pAp@k metric for recommender systems" (ICML 2020; slides 4-5 in
    shared/seeds/hiranandani-papk-slides.txt): one minus their empirical
    pAp@k risk, which counts :math:`f(x^+) \\le f(x^-)` as an error. Decisions:
    ties count 1/2 (the expected value under a random tie-break, as in
    :func:`auc`; with recommender scores ties are pre-broken so this only
    matters for raw scores); with fewer than k negatives all of them are used
    (:math:`k_u = |N_u|`), a case the paper does not consider.

    Parameters
    ----------
    scores : ndarray of float, shape (n_users, n_items)
        Scores, ``-inf`` at non-candidates; no NaN.
    relevant : csr_array or Interactions, shape (n_users, n_items)
        Relevance sets.
    k : int
        Cut-off, >= 1.
    evaluated : ndarray of bool, shape (n_users,), optional
        Users to evaluate (default all); others get NaN.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        NaN (with a warning) where :math:`P_u` or :math:`N_u` is empty.

    Notes
    -----
    Per block of users: the top-k positive and negative scores by
    ``np.partition``; the values are replaced by their order codes in the
    block (``np.unique``), so one global ``np.searchsorted`` on
    (user, code) keys counts, for every positive, the negatives below and
    equal to it: O(k log k) per user, no k x k table.
    """
    s, rel = _check_scores(scores, relevant)
    k = check_int("k", k, low=1)
    mask = check_evaluated(evaluated, s.shape[0])
    n_users, n_items = s.shape
    out = np.zeros(n_users)
    undefined = np.zeros(n_users, dtype=bool)
    for blk in user_blocks(n_users, n_items):
        S = np.asarray(s[blk], dtype=np.float64)
        R = (rel[blk].toarray() != 0) & (S > -np.inf)
        pos = _top_values(np.where(R, S, -np.inf), k)
        neg = _top_values(np.where(R, -np.inf, S), k)
        rows = S.shape[0]
        pv, nv = pos > -np.inf, neg > -np.inf
        beta, kk = pv.sum(axis=1), nv.sum(axis=1)
        codes = np.unique(np.concatenate((pos[pv], neg[nv])), return_inverse=True)[1]
        width = int(codes.max(initial=0)) + 1
        prow = np.repeat(np.arange(rows, dtype=np.int64), beta)
        nrow = np.repeat(np.arange(rows, dtype=np.int64), kk)
        pkey = prow * width + codes[: len(prow)]
        nkey = np.sort(nrow * width + codes[len(prow) :])
        below = np.searchsorted(nkey, pkey, side="left")
        upto = np.searchsorted(nkey, pkey, side="right")
        row_start = np.searchsorted(nkey, prow * width, side="left")
        wins = (below - row_start) + 0.5 * (upto - below)
        total = np.bincount(prow, weights=wins, minlength=rows)
        den = beta * kk
        val = np.zeros(rows)
        np.divide(total, den, out=val, where=den > 0)
        out[blk], undefined[blk] = val, den == 0
    return finish(out, undefined, mask, "pap_at_k", "no relevant or no non-relevant candidate")
