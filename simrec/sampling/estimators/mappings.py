"""Li & Jin's mappings (KDD 2020) as an estimator of Recall/HR@K: the sampled hit ratio read off at f(k) = K."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simrec._validation import check_choice, check_in_range
from simrec.sampling._results import IntervalKind
from simrec.sampling.fitted import Estimator
from simrec.sampling.histograms import FitLimits, FitRecord, Histograms
from simrec.sampling.mapping import (
    _BETA_MAX_ITER,
    _BETA_TOL,
    Mapping,
    _fit_beta_counts,
    beta_mapping,
    bound_mapping,
    linear_mapping,
)

__all__ = ["MappingEstimator", "MAPPINGS", "BETA_A_VALUES"]

#: Kinds of :class:`MappingEstimator` (Li & Jin 2020: linear eq. 9, bound eq. 13, beta@a eqs. 16-18
#: with a given, beta@P eq. 19 with a fitted).
MAPPINGS: tuple[str, ...] = ("linear", "bound", "beta", "beta@P")
#: Li & Jin's fixed beta@a mappings (their Table 7 columns beta@1, beta@0.5, beta@0.2).
BETA_A_VALUES: tuple[float, ...] = (1.0, 0.5, 0.2)

#: Metric names the mappings estimate (Li & Jin: hit ratio = recall with one held-out item).
_MAPPABLE = ("Recall", "HR")


def _beta(n_items: int, n: int, a: float | None) -> Mapping:
    if a is None:  # MappingEstimator("beta") requires a; kept for the type
        raise ValueError("`a` must be given for the 'beta' mapping; got None")
    return beta_mapping(n_items, n, a)


#: The mappings that do not depend on the data, by kind: f(k) from (N, n, a).
_CURVES: dict[str, Callable[[int, int, float | None], Mapping]] = {
    "linear": lambda n_items, n, a: linear_mapping(n_items, n),
    "bound": lambda n_items, n, a: bound_mapping(n_items, n),
    "beta": _beta,
}


@dataclass(frozen=True)
class MappingEstimator(Estimator):
    r"""Li & Jin's mapping estimate of Recall/HR@K: the sampled hit ratio read off at f(k) = K.

    .. math:: \widehat{HR}@K = SHR@k \text{ at } f(k) = K \text{ (interpolated between cutoffs)}

    Li & Jin 2020 (KDD; Li's dissertation §2.3): ``"linear"`` f(k) =
    (k - 1)(N - 1)/(n - 1) + 1 (eq. 9), ``"bound"`` (eq. 13), ``"beta"``
    with a given a (beta@a, eqs. 16-18; they report a = 1, 0.5, 0.2) and
    ``"beta@P"`` with a fitted to the data (eq. 19). Defined for Recall only;
    see :class:`~simrec.sampling.mapping.Mapping` (not to be confused with this estimator).

    Parameters
    ----------
    kind : {"linear", "bound", "beta", "beta@P"}
    a : float > 0, optional
        Required for ``"beta"``, not allowed otherwise.

    Notes
    -----
    Name: ``"mapping:<kind>"``, ``"mapping:beta@<a>"`` for ``"beta"``.
    """

    kind: str
    a: float | None = None

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, MAPPINGS)
        if self.kind == "beta":
            if self.a is None:
                raise ValueError("`a` must be given for the 'beta' mapping (e.g. 0.5); got None")
            object.__setattr__(self, "a", check_in_range("a", self.a, 0, None, low_open=True))
        elif self.a is not None:
            raise ValueError(f"`a` applies to the 'beta' mapping only; got a = {self.a} with kind {self.kind!r}")

    @property
    def name(self) -> str:
        return f"mapping:beta@{self.a:g}" if self.kind == "beta" else f"mapping:{self.kind}"

    @property
    def interval_kind(self) -> IntervalKind:
        """``SAMPLING_BIASED`` for every kind, ``bound`` included.

        A mapping reads HR@K off the sampled curve at f(k) = K; Li & Jin
        (2020, §3-5) show SHR@k ≈ HR@f(k) as an approximation whose error
        depends on the rank distribution and on n, not on M (they find
        ``bound`` and beta@0.5 the most accurate alignments, their Table 5),
        and below f(1) the estimate interpolates between 0 and SHR@1.
        Harness (:mod:`simrec.sampling.estimators`), share of Recall cells with coverage below
        0.5 at M = 943 / 5,658: linear 97% / 100%, bound 27% / 67%,
        beta@1 70% / 100%, beta@0.5 23% / 65%, beta@0.2 15% / 29%,
        beta@P 18% / 34% (every kind misses at K <= 5; ``bound`` also at
        Recall@10 for ItemKNN and ImplicitMF: coverage 0.00-0.16).
        """
        return IntervalKind.SAMPLING_BIASED

    def fit_limits(self, max_iter: int) -> FitLimits | None:
        """beta@P's fixed point: ``("beta@P fixed-point iteration", 100, 1e-6)``; None for the fixed mappings."""
        return ("beta@P fixed-point iteration", _BETA_MAX_ITER, _BETA_TOL) if self.kind == "beta@P" else None

    def curve(self, counts: np.ndarray, n_items: int, n: int) -> FitRecord:
        """f(k) for k = 1..n (``value``, None where beta@P is undefined) from the histogram ``counts``.

        beta@P fits a to the sampled ranks (eq. 19, :func:`~simrec.sampling.fit_beta_mapping`'s defaults);
        every sampled rank at n leaves a undefined (it diverges) and the estimate NaN.
        """
        if self.kind != "beta@P":
            return FitRecord(_CURVES[self.kind](n_items, n, self.a).values, 0, True)
        try:
            m = _fit_beta_counts(counts, n_items, n, 1.0, _BETA_TOL, _BETA_MAX_ITER)
        except ValueError:  # every sampled rank is n: a diverges, the estimate is undefined
            return FitRecord(None, 0, True)
        return FitRecord(m.values, m.n_iter, m.converged)

    def estimate_counts(self, rows: Histograms, record: Callable[[int, FitRecord], None]) -> np.ndarray:
        """HR@K = SHR@k at f(k) = K, interpolated between the cutoffs; NaN for other metrics than Recall/HR@K."""
        tables = rows.tables
        out = np.full((rows.counts.shape[0], len(tables.metrics)), np.nan)
        cols = [j for j, m in enumerate(tables.metrics) if m.name in _MAPPABLE and m.k is not None]
        if not cols:
            return out
        ks = np.array([tables.metrics[j].k for j in cols], dtype=np.float64)
        for b, counts in enumerate(rows.counts):
            fit = self.curve(counts, rows.scheme.n_items, rows.scheme.n)
            if fit.value is not None:
                shr = np.cumsum(counts) / rows.n_users
                out[b, cols] = np.interp(ks, np.r_[0.0, fit.value], np.r_[0.0, shr])
            record(b, fit)
        return out
