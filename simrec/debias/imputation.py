"""Imputation models of the doubly robust estimator: a predicted relevance for every (user, candidate) pair.

The doubly robust estimator (:class:`simrec.debias.DR`) needs, for every
user, the imputed relevance :math:`\\hat y_{ui}` of the items in its list,
of its observed test pairs, and the sum over all of its candidates (every
item not in its training data). An imputation model supplies the first two
with :meth:`at` and the third with :meth:`candidate_sums`, each vectorised
over users.

* :class:`ItemRate` — the stated default: :math:`\\hat y_{ui} = \\hat y_i`,
  one rate per item, e.g. :meth:`ItemRate.from_train`, the share of users
  whose training data hold the item (a popularity model of relevance);
* :class:`ConstantImputation` — :math:`\\hat y_{ui} = c` (0 gives back IPS);
* :class:`DenseImputation` — any (n_users, n_items) table, e.g. the true
  relevance of a simulation (the "imputation is right" case) or a fitted
  model's predictions on a small problem;
* :class:`TrainPopularity` — :meth:`ItemRate.from_train` fitted on each
  estimate's own training pairs (what a harness gives :class:`~simrec.debias.DR`
  when the training data change from replicate to replicate).

Every model has ``fitted(train)``: the model to use with these training
pairs (itself, except :class:`TrainPopularity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from simrec._sampling import row_ids
from simrec._validation import check_in_range

__all__ = ["ItemRate", "ConstantImputation", "DenseImputation", "TrainPopularity"]


def _check_unit(name: str, values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.size and not (np.isfinite(v).all() and v.min() >= 0 and v.max() <= 1):
        raise ValueError(f"`{name}` must be in [0, 1]; got range [{v.min()}, {v.max()}]")
    return v


@dataclass(frozen=True, eq=False)
class ItemRate:
    """:math:`\\hat y_{ui} = r_i`: one imputed relevance per item.

    Parameters
    ----------
    rates : ndarray of float, shape (n_items,)
        :math:`r_i \\in [0, 1]`.
    """

    rates: np.ndarray

    def __post_init__(self) -> None:
        r = _check_unit("rates", self.rates)
        if r.ndim != 1:
            raise ValueError(f"`rates` must be 1-d (one per item); got shape {r.shape}")
        object.__setattr__(self, "rates", r)

    @classmethod
    def from_train(cls, train: sp.csr_array, scale: float = 1.0) -> ItemRate:
        """The popularity model: :math:`r_i = \\min(1, s\\, |\\{u : i \\in \\mathrm{train}_u\\}| / |U|)`.

        The share of users whose training data hold the item, times ``scale``
        (default 1). Observed data hold only part of each user's relevant
        items, so the plain share under-estimates the relevance rate; ``scale``
        (e.g. the inverse of the observed fraction, when it is known) corrects
        its level, not its shape.
        """
        scale = check_in_range("scale", scale, 0, None)
        m = sp.csr_array(train)
        counts = np.bincount(m.indices, minlength=m.shape[1]).astype(np.float64)
        return cls(np.minimum(1.0, scale * counts / max(m.shape[0], 1)))

    def fitted(self, train: sp.csr_array | None) -> Any:
        """This model (it does not depend on the training pairs)."""
        return self

    def at(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        """:math:`\\hat y` of the given pairs, float64."""
        return self.rates[items]

    def candidate_sums(self, train: sp.csr_array | None, n_users: int, n_items: int) -> np.ndarray:
        """:math:`\\sum_{i \\notin \\mathrm{train}_u} \\hat y_{ui}` per user, float64 (n_users,)."""
        if len(self.rates) != n_items:
            raise ValueError(f"`rates` must have one value per item ({n_items}); got {len(self.rates)}")
        total = np.full(n_users, self.rates.sum())
        if train is None:
            return total
        return total - np.asarray(train @ self.rates, dtype=np.float64)  # one sparse product: the training rows' sums


@dataclass(frozen=True)
class ConstantImputation:
    """:math:`\\hat y_{ui} = c` for every pair (``value`` 0: the DR estimator is the IPS one)."""

    value: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check_in_range("value", self.value, 0, 1))

    def fitted(self, train: sp.csr_array | None) -> Any:
        """This model (it does not depend on the training pairs)."""
        return self

    def at(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        """:math:`c` at the pairs (``rows`` and ``items`` broadcast together), float64."""
        return np.full(np.broadcast(rows, items).shape, self.value)

    def candidate_sums(self, train: sp.csr_array | None, n_users: int, n_items: int) -> np.ndarray:
        n_cand = np.full(n_users, float(n_items))
        if train is not None:
            n_cand -= np.diff(train.indptr)
        return self.value * n_cand


@dataclass(frozen=True, eq=False)
class DenseImputation:
    """:math:`\\hat y_{ui}` from a dense table (small problems, or a simulation's true relevance).

    Parameters
    ----------
    values : ndarray of float, shape (n_users, n_items)
        :math:`\\hat y_{ui} \\in [0, 1]`.
    """

    values: np.ndarray

    def __post_init__(self) -> None:
        v = _check_unit("values", self.values)
        if v.ndim != 2:
            raise ValueError(f"`values` must be 2-d (n_users, n_items); got shape {v.shape}")
        object.__setattr__(self, "values", v)

    def fitted(self, train: sp.csr_array | None) -> Any:
        """This model (it does not depend on the training pairs)."""
        return self

    def at(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.values[rows, items]

    def candidate_sums(self, train: sp.csr_array | None, n_users: int, n_items: int) -> np.ndarray:
        if self.values.shape != (n_users, n_items):
            raise ValueError(f"`values` must have shape {(n_users, n_items)}; got {self.values.shape}")
        total = self.values.sum(axis=1)
        if train is None:
            return total
        return total - _row_sums(train, self.values[row_ids(np.diff(train.indptr)), train.indices], n_users)


def _row_sums(m: sp.csr_array, values: np.ndarray, n_rows: int) -> np.ndarray:
    """Per-row sums of ``values`` aligned with the stored pairs of ``m``."""
    return np.bincount(row_ids(np.diff(m.indptr)), weights=values, minlength=n_rows)


@dataclass(frozen=True)
class TrainPopularity:
    """The popularity imputation fitted on the estimate's training pairs: :meth:`ItemRate.from_train`.

    Parameters
    ----------
    scale : float, default 1.0
        As :meth:`ItemRate.from_train`.
    """

    scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_in_range("scale", self.scale, 0, None))

    def fitted(self, train: sp.csr_array | None) -> ItemRate:
        """:meth:`ItemRate.from_train` on ``train`` (required)."""
        if train is None:
            raise ValueError("TrainPopularity imputes from the training pairs: pass `train` to rank_test")
        return ItemRate.from_train(train, self.scale)
