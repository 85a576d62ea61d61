"""Algorithm response: the observed metrics of reference algorithms on a dataset, under one protocol (issue 24).

A world that reproduces the data's key statistics can still order the
algorithms the other way round (the thesis's ML-1M worlds put LensKit's
ItemKNN ahead of ImplicitMF, the real data the reverse). This module measures
what the algorithms see: the same :class:`ResponseProtocol` (a per-user
holdout, the same algorithms, list length and metrics, the same subsample of
evaluated users) applied to real and to simulated observed data, so the two
sides are comparable by construction:

* :func:`algorithm_response` — per-user observed metric values of every
  algorithm on one dataset (:class:`AlgorithmResponse`);
* :func:`response_loss` — the calibration objective's fifth term: the mean
  relative error of the simulated metrics against the real ones, plus
  (1 − τ)/2 with τ the Kendall τ between the two orders of the algorithms,
  averaged over the metrics;
* :func:`sim_to_real` — real vs simulated, with intervals, over replicates
  (:class:`SimToReal`).

Intervals: on the real data, the mean over evaluated users ± 1.96 standard
errors (users independent; the split fixed by the protocol's seed), and for a
gap between two algorithms the paired per-user differences the same way (a gap
whose interval covers 0 is a *tie*); on the simulated side, the mean over
replicates ± t(0.975, R − 1) standard errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from simrec._random import RNGLike, as_generator
from simrec._validation import check_int
from simrec.interactions import Interactions
from simrec.metrics import ndcg, recall
from simrec.recommenders import LensKitRecommender, Popular, top_n
from simrec.split import holdout

__all__ = [
    "ResponseProtocol",
    "AlgorithmResponse",
    "algorithm_response",
    "kendall_tau",
    "response_loss",
    "SimToReal",
    "sim_to_real",
    "REFERENCE_ALGORITHMS",
]

_METRICS: dict[str, Callable] = {"recall": recall, "ndcg": ndcg}


def _popular() -> Popular:
    return Popular()


def _item_knn() -> LensKitRecommender:
    return LensKitRecommender("ItemKNNScorer", name="ItemKNN", max_nbrs=20)


def _implicit_mf() -> LensKitRecommender:
    return LensKitRecommender("ImplicitMFScorer", name="ImplicitMF", embedding_size=50, epochs=10)


#: The issue's reference algorithms: LensKit Popular, ItemKNN(20) and ImplicitMF(50) (10 epochs), by name.
REFERENCE_ALGORITHMS: dict[str, Callable] = {"Popular": _popular, "ItemKNN": _item_knn, "ImplicitMF": _implicit_mf}


@dataclass(frozen=True)
class ResponseProtocol:
    """One evaluation protocol for real and simulated data alike.

    Parameters
    ----------
    algorithms : sequence of str, default ("Popular", "ItemKNN", "ImplicitMF")
        Names in :data:`REFERENCE_ALGORITHMS`.
    metrics : sequence of str, default ("recall", "ndcg")
        Observed list metrics at ``n`` (``"recall"``, ``"ndcg"``).
    n : int, default 10
        List length.
    test_fraction : float, default 0.2
        Per-user holdout (:func:`simrec.split.holdout`; Tian 2019 §3.5.1).
    max_users : int or None, default None
        Evaluate at most this many users, a uniform subsample of those with
        a test item (every user trains the algorithms); None: all. One GP
        call stays affordable this way (ItemKNN scores users one by one).
    """

    algorithms: tuple[str, ...] = ("Popular", "ItemKNN", "ImplicitMF")
    metrics: tuple[str, ...] = ("recall", "ndcg")
    n: int = 10
    test_fraction: float = 0.2
    max_users: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "algorithms", tuple(self.algorithms))
        object.__setattr__(self, "metrics", tuple(self.metrics))
        unknown = [a for a in self.algorithms if a not in REFERENCE_ALGORITHMS]
        if unknown or len(self.algorithms) < 2 or len(set(self.algorithms)) != len(self.algorithms):
            raise ValueError(
                f"`algorithms` must be at least two distinct names of {sorted(REFERENCE_ALGORITHMS)}; "
                f"got {list(self.algorithms)}"
            )
        bad = [m for m in self.metrics if m not in _METRICS]
        if bad or not self.metrics:
            raise ValueError(f"`metrics` must be names of {sorted(_METRICS)}; got {list(self.metrics)}")
        check_int("n", self.n, low=1)
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"`test_fraction` must be in (0, 1); got {self.test_fraction!r}")
        if self.max_users is not None:
            check_int("max_users", self.max_users, low=1)

    def label(self) -> str:
        """e.g. ``"20% per-user holdout, @10, up to 1000 users"``."""
        users = "all users" if self.max_users is None else f"up to {self.max_users} users"
        return f"{self.test_fraction:.0%} per-user holdout, @{self.n}, {users}"


@dataclass(frozen=True)
class AlgorithmResponse:
    """Per-user observed metric values of every algorithm on one dataset.

    ``values[(algorithm, metric)]``: shape (n_evaluated,), the same users in
    the same order for every algorithm (paired).
    """

    protocol: ResponseProtocol
    values: dict[tuple[str, str], np.ndarray] = field(repr=False)

    def mean(self, algorithm: str, metric: str) -> float:
        return float(np.nanmean(self.values[(algorithm, metric)]))

    def means(self) -> dict[tuple[str, str], float]:
        return {k: float(np.nanmean(v)) for k, v in self.values.items()}

    def interval(self, algorithm: str, metric: str) -> tuple[float, float]:
        """Mean ± 1.96 standard errors over the evaluated users."""
        return _normal_interval(self.values[(algorithm, metric)])

    def gap_interval(self, a: str, b: str, metric: str) -> tuple[float, float]:
        """Interval of mean(a) − mean(b) from the paired per-user differences."""
        return _normal_interval(self.values[(a, metric)] - self.values[(b, metric)])

    def order(self, metric: str) -> tuple[str, ...]:
        """The algorithms best first by their mean ``metric`` (stable for equal means)."""
        m = [self.mean(a, metric) for a in self.protocol.algorithms]
        return tuple(self.protocol.algorithms[i] for i in np.argsort(-np.asarray(m), kind="stable"))


def _normal_interval(x: np.ndarray) -> tuple[float, float]:
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return (float("nan"), float("nan"))
    half = 1.959963984540054 * x.std(ddof=1) / np.sqrt(len(x))
    return (float(x.mean() - half), float(x.mean() + half))


def algorithm_response(observed: Interactions, protocol: ResponseProtocol, rng: RNGLike = None) -> AlgorithmResponse:
    """The protocol's algorithms on ``observed``: split, train, rank, measure.

    ``rng`` draws the split, the subsample of evaluated users and every
    algorithm's own randomness (child streams, in that order): the same seed
    gives the same response.
    """
    if not isinstance(observed, Interactions):
        raise TypeError(f"`observed` must be an Interactions; got {type(observed).__name__}")
    gen = as_generator(rng)
    split_rng, users_rng, *alg_rngs = gen.spawn(2 + len(protocol.algorithms))
    split = holdout(observed, protocol.test_fraction, split_rng)
    users = np.flatnonzero(split.evaluated)
    if protocol.max_users is not None and len(users) > protocol.max_users:
        users = np.sort(as_generator(users_rng).choice(users, protocol.max_users, replace=False))
    relevant = split.test.matrix[users]
    values: dict[tuple[str, str], np.ndarray] = {}
    for name, arng in zip(protocol.algorithms, alg_rngs, strict=True):
        rec = REFERENCE_ALGORITHMS[name]()
        lists = top_n(rec.score(split.train, None, arng, users), protocol.n)
        for metric in protocol.metrics:
            values[(name, metric)] = np.asarray(_METRICS[metric](lists, relevant), dtype=float)
    return AlgorithmResponse(protocol, values)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b between two score vectors (1: the same order; NaN with fewer than 2 values or no variation)."""
    from scipy import stats  # scipy.stats costs ~1 s to import: only when used

    if len(x) < 2:
        return float("nan")
    tau = stats.kendalltau(np.asarray(x, float), np.asarray(y, float)).statistic
    return float(tau)


def response_loss(real: dict[tuple[str, str], float], sim: dict[tuple[str, str], float]) -> dict[str, float]:
    """The algorithm-response objective and its parts.

    .. math::

        L = \\frac{1}{|A||M|} \\sum_{a, m} \\frac{|\\hat\\mu_{am} - \\mu_{am}|}{\\mu_{am}}
            + \\frac{1}{|M|} \\sum_m \\frac{1 - \\tau_m}{2}

    with :math:`\\mu` the real and :math:`\\hat\\mu` the simulated mean
    metric of algorithm :math:`a` on metric :math:`m`, and :math:`\\tau_m`
    Kendall's τ-b between the algorithms' real and simulated values (a
    tie counts as τ = 0 when one side has no variation). Returns
    ``{"response_loss", "response_rel_error", "response_tau"}``.
    """
    keys = list(real)
    rel = [abs(sim[k] - real[k]) / real[k] if real[k] > 0 else abs(sim[k]) for k in keys]
    metrics = sorted({m for _, m in keys})
    taus = []
    for m in metrics:
        algs = [a for a, mm in keys if mm == m]
        t = kendall_tau([real[(a, m)] for a in algs], [sim[(a, m)] for a in algs])
        taus.append(0.0 if not np.isfinite(t) else t)
    rel_error = float(np.mean(rel))
    tau = float(np.mean(taus))
    return {"response_loss": rel_error + (1 - tau) / 2, "response_rel_error": rel_error, "response_tau": tau}


@dataclass(frozen=True)
class SimToReal:
    """Real vs simulated observed metrics of one world (:func:`sim_to_real`).

    ``table``: one row per (metric, algorithm): ``real``, ``real_low``,
    ``real_high`` (users' interval), ``sim``, ``sim_low``, ``sim_high``
    (replicates' interval), ``rel_error`` ((sim − real)/real) and
    ``replicates``. ``orders``: one row per (metric, pair of algorithms a, b
    in protocol order): the real gap mean(a) − mean(b) with its paired
    interval, ``real_order`` (``"a > b"``, ``"a < b"`` or ``"tie"`` when the
    interval covers 0) and ``agreement``, the share of replicates whose
    simulated gap has the sign of the real one (NaN for a real tie).
    ``full_order_agreement``: per metric, the share of replicates that order
    every algorithm as the real means do.
    """

    world: str
    protocol: ResponseProtocol
    table: pd.DataFrame
    orders: pd.DataFrame
    full_order_agreement: dict[str, float]

    def disagrees(self, threshold: float = 0.5) -> list[str]:
        """The real order gaps (not ties) that at most ``threshold`` of the replicates reproduce, as text."""
        bad = self.orders[(self.orders["real_order"] != "tie") & (self.orders["agreement"] <= threshold)]
        return [
            f"{r.metric}: real {r.real_order}, reproduced in {r.agreement:.0%} of replicates" for r in bad.itertuples()
        ]


def _t_interval(x: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    x = x[np.isfinite(x)]
    if len(x) < 2:
        return (float("nan"), float("nan"))
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return (float(x.mean() - half), float(x.mean() + half))


def sim_to_real(real: AlgorithmResponse, simulated: Sequence[AlgorithmResponse], world: str = "world") -> SimToReal:
    """Compare the real response with the responses of ``simulated`` replicates of one world.

    All must share one :class:`ResponseProtocol` (ValueError otherwise): the
    same split, algorithms, list length, metrics and user budget.
    """
    if not simulated:
        raise ValueError("`simulated` must hold at least one replicate's response")
    for s in simulated:
        if s.protocol != real.protocol:
            raise ValueError(
                f"one protocol on both sides: the real data used {real.protocol}, a replicate {s.protocol}"
            )
    p = real.protocol
    rows = []
    for m in p.metrics:
        for a in p.algorithms:
            r = real.mean(a, m)
            lo, hi = real.interval(a, m)
            reps = np.array([s.mean(a, m) for s in simulated])
            slo, shi = _t_interval(reps)
            sm = float(np.nanmean(reps))
            rel = (sm - r) / r if r > 0 else float("nan")
            rows.append((m, a, r, lo, hi, sm, slo, shi, rel, len(reps)))
    table = pd.DataFrame(
        rows,
        columns=[
            "metric",
            "algorithm",
            "real",
            "real_low",
            "real_high",
            "sim",
            "sim_low",
            "sim_high",
            "rel_error",
            "replicates",
        ],
    )
    orows = []
    full = {}
    for m in p.metrics:
        for a, b in combinations(p.algorithms, 2):
            gap = real.mean(a, m) - real.mean(b, m)
            lo, hi = real.gap_interval(a, b, m)
            order = "tie" if lo <= 0 <= hi else (f"{a} > {b}" if gap > 0 else f"{a} < {b}")
            sim_gaps = np.array([s.mean(a, m) - s.mean(b, m) for s in simulated])
            agree = float("nan") if order == "tie" else float(np.mean(np.sign(sim_gaps) == np.sign(gap)))
            orows.append((m, a, b, gap, lo, hi, order, float(np.mean(sim_gaps)), agree))
        real_order = real.order(m)
        full[m] = float(np.mean([s.order(m) == real_order for s in simulated]))
    orders = pd.DataFrame(
        orows,
        columns=["metric", "a", "b", "real_gap", "real_gap_low", "real_gap_high", "real_order", "sim_gap", "agreement"],
    )
    return SimToReal(world, p, table, orders, full)
