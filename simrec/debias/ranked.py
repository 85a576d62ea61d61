"""The observed test pairs of one recommender's lists, each with its position: what every estimator reads.

:func:`rank_test` looks every observed test pair up in its user's list once
(:func:`simrec.metrics.relevant_positions`: the same checks and the same
look-up as the metrics); every estimator, propensity kind and metric is then
an O(test pairs) weighted sum per user (``np.bincount``), never a loop over
users.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from simrec._sampling import row_ids
from simrec.interactions import Interactions
from simrec.metrics import relevant_positions

__all__ = ["RankedTest", "rank_test", "as_pairs"]


def as_pairs(matrix: object, name: str, shape: tuple[int, int] | None = None) -> sp.csr_array:
    """``matrix`` (csr_array, csr_matrix or Interactions) as a canonical binary csr_array of its stored non-zero pairs."""
    if isinstance(matrix, Interactions):
        m = matrix.matrix
    elif isinstance(matrix, sp.csr_array):
        m = matrix  # the caller's object: scipy keeps its canonical-format flag, so a second call does not re-check
    elif sp.issparse(matrix):
        m = sp.csr_array(matrix)
    else:
        raise TypeError(f"`{name}` must be a scipy.sparse matrix or an Interactions; got {type(matrix).__name__}")
    if m.ndim != 2:
        raise ValueError(f"`{name}` must be 2-d; got {m.ndim} dimensions")
    if shape is not None and m.shape != shape:
        raise ValueError(f"`{name}` must have shape {shape}; got {m.shape}")
    if m.has_canonical_format and (not m.nnz or (m.data.min() == 1 and m.data.max() == 1)):
        return m  # already canonical and binary: two passes over the data, no copy
    if not m.has_canonical_format or (m.nnz and bool((m.data == 0).any())):
        m = m.copy()
        m.sum_duplicates()
        m.eliminate_zeros()
    if m.nnz and not (m.data.min() == 1 and m.data.max() == 1):
        m = sp.csr_array((np.ones(m.nnz, dtype=np.int8), m.indices, m.indptr), shape=m.shape)
    return m


@dataclass(frozen=True, eq=False)
class RankedTest:
    """One recommender's lists and the observed test pairs, each pair with its position in its user's list.

    Build it with :func:`rank_test`. Rows are users (the evaluated users of a
    replicate, usually), columns items.

    Attributes
    ----------
    lists : ndarray of int, shape (n_users, N)
        The lists (or full rankings), -1 as trailing padding.
    test : csr_array, shape (n_users, n_items)
        The observed test pairs :math:`S_u`, canonical (sorted items per row).
    position : ndarray of int64, shape (test.nnz,)
        1-based position :math:`Z_{ui}` of every test pair in its user's list, 0 if absent.
    length : ndarray of int64, shape (n_users,)
        Real length :math:`|L_u|` of each list.
    labels : ndarray of float64, shape (test.nnz,), optional
        Relevance :math:`y_{ui} \\in [0, 1]` of each observed test pair (e.g.
        rating >= 4 from :class:`simrec.observation.Rated`); None: every
        observed test pair is relevant (implicit feedback).
    train : csr_array, shape (n_users, n_items), optional
        Training pairs, never candidates: the candidate set of the doubly
        robust estimator is every other item, and the resampling weights
        count the training data.
    n_relevant : ndarray of float64, shape (n_users,), optional
        :math:`n_u = |\\mathrm{Rel}_u|` where it is known (a simulation knows
        it: the true relevance set's size). The IPS and DR estimators of a
        metric normalised by it (:attr:`LinearMetric.needs_n`) need it.
    """

    lists: np.ndarray
    test: sp.csr_array
    position: np.ndarray
    length: np.ndarray
    labels: np.ndarray | None = None
    train: sp.csr_array | None = None
    n_relevant: np.ndarray | None = None

    @property
    def n_users(self) -> int:
        return self.test.shape[0]

    @property
    def n_items(self) -> int:
        return self.test.shape[1]

    @property
    def width(self) -> int:
        """N, the lists' nominal width."""
        return self.lists.shape[1]

    @cached_property
    def rows(self) -> np.ndarray:
        """User (row) of every test pair, int64 (test.nnz,)."""
        return row_ids(np.diff(self.test.indptr))

    @property
    def items(self) -> np.ndarray:
        """Item of every test pair."""
        return self.test.indices

    def label_values(self) -> np.ndarray:
        """:math:`y_{ui}` of every test pair, float64 (ones without labels)."""
        return np.ones(self.test.nnz) if self.labels is None else self.labels

    def imputed(self, imputation: Any) -> tuple[Any, np.ndarray]:
        """``imputation`` fitted on :attr:`train` and its per-user candidate sums, once per imputation model.

        The two parts of the doubly robust estimators that depend only on the
        training pairs (:func:`~simrec.debias.estimators.DR`): computed on the
        first call and kept for later calls with an equal (hashable) model, so
        a harness running DR and SNDR with several propensity kinds on one
        recommender's test pairs fits once. An unhashable model is not kept.
        """
        try:
            keep = hash(imputation) is not None
        except TypeError:
            keep = False
        cache = self.__dict__.setdefault("_imputed", {})  # frozen: the cache lives beside the fields
        if keep and imputation in cache:
            return cache[imputation]
        fitted = imputation.fitted(self.train)
        sums = np.asarray(fitted.candidate_sums(self.train, self.n_users, self.n_items), dtype=np.float64)
        sums.setflags(write=False)
        if keep:
            cache[imputation] = (fitted, sums)
        return fitted, sums

    def is_full_ranking(self) -> bool:
        """Does every list rank all of its user's candidates (every item not in ``train``)?"""
        if self.train is None:
            return bool((self.length == self.n_items).all())
        return bool((self.length == self.n_items - np.diff(self.train.indptr)).all())

    def subset(self, keep: np.ndarray) -> RankedTest:
        """The same lists with only the test pairs flagged by ``keep`` (bool, test.nnz)."""
        # the kept pairs' indices (sorted), then gathers: a random boolean mask indexes several times slower
        sel = np.flatnonzero(np.asarray(keep, dtype=bool))
        indptr = np.searchsorted(sel, self.test.indptr).astype(np.int64)  # kept pairs before each row's start
        test = sp.csr_array((np.ones(len(sel), dtype=np.int8), self.test.indices[sel], indptr), shape=self.test.shape)
        test.has_sorted_indices = True
        out = RankedTest(
            self.lists,
            test,
            self.position[sel],
            self.length,
            None if self.labels is None else self.labels[sel],
            self.train,
            self.n_relevant,
        )
        if "rows" in self.__dict__:  # rows already known: the kept pairs' rows, not a new pass over the rows
            out.__dict__["rows"] = self.rows[sel]
        return out


def rank_test(
    lists: np.ndarray,
    test: object,
    *,
    labels: np.ndarray | None = None,
    train: object | None = None,
    n_relevant: np.ndarray | None = None,
) -> RankedTest:
    """Look every observed test pair up in its user's list (once per recommender).

    Parameters
    ----------
    lists : ndarray of int, shape (n_users, N)
        Top-N lists or full rankings, -1 as trailing padding (the checks of :mod:`simrec.metrics`).
    test : csr_array or Interactions, shape (n_users, n_items)
        Observed test pairs (stored non-zero entries).
    labels : array-like of float, shape (test.nnz,), optional
        Relevance in [0, 1] of each test pair, aligned with the canonical
        test matrix's pairs; default: all 1.
    train : csr_array or Interactions, shape (n_users, n_items), optional
        Training pairs (the doubly robust estimator's candidates are the others).
    n_relevant : array-like, shape (n_users,), optional
        :math:`|\\mathrm{Rel}_u|` where known (>= 0).

    Returns
    -------
    RankedTest
    """
    arr = np.asarray(lists)
    rel = as_pairs(test, "test")
    position, length = relevant_positions(arr, rel)
    lab = None
    if labels is not None:
        lab = np.asarray(labels, dtype=np.float64)
        if lab.shape != (rel.nnz,):
            raise ValueError(f"`labels` must have shape ({rel.nnz},) (one per test pair); got {lab.shape}")
        if len(lab) and not (np.isfinite(lab).all() and lab.min() >= 0 and lab.max() <= 1):
            raise ValueError(f"`labels` must be in [0, 1]; got range [{lab.min()}, {lab.max()}]")
    tr = None if train is None else as_pairs(train, "train", rel.shape)
    nr = None
    if n_relevant is not None:
        nr = np.asarray(n_relevant, dtype=np.float64)
        if nr.shape != (rel.shape[0],):
            raise ValueError(f"`n_relevant` must have shape ({rel.shape[0]},); got {nr.shape}")
        if len(nr) and not (np.isfinite(nr).all() and nr.min() >= 0):
            raise ValueError("`n_relevant` must be finite and >= 0")
    return RankedTest(np.asarray(arr), rel, position, length, lab, tr, nr)
