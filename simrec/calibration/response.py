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
  (:class:`SimToReal`), for these reference algorithms;
* :func:`compare_to_real` — the same comparison for any algorithms and
  metrics, from per-user real values and per-replicate simulated means (what
  ``simrec assess`` has for the user's own algorithms; :func:`sim_to_real`
  calls it).

Intervals (at :func:`compare_to_real`'s ``confidence``, default 0.95): on the
real data, the mean over evaluated users ± z standard errors (z = 1.96 at
0.95; users independent; the split fixed by the protocol's seed), and for a
gap between two algorithms the mean of the paired per-user differences (users
with both values) the same way (a gap whose interval covers 0 is a *tie*); on
the simulated side, the mean over replicates ± t(·, R − 1) standard errors. Order agreement: per pair, the
k of R replicates whose simulated gap has the real gap's sign, with a Wilson
interval (:func:`simrec.report.wilson_interval`).

Decision (the verdict of a pair, :data:`ORDER_VERDICTS`): ``"real tie"`` when
the real gap's interval covers 0 (or cannot be computed: fewer than 2 users
with both values, which warns); ``"not measured"`` when no replicate has both
algorithms' values (nothing to compare: neither an agreement nor a
disagreement); ``"disagrees"`` when at most half of the
replicates reproduce the real order (k / R ≤ 1/2: the worlds do not support
it, the rule of :meth:`SimToReal.disagrees` and of the assessment's warning);
``"reproduced"`` when the Wilson interval's lower end is above 1/2 (more
than half, with confidence); else ``"uncertain"`` (e.g. 2 of 3: more than half,
but a coin flip is inside the interval).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Protocol

import numpy as np
import pandas as pd

from simrec._random import RNGLike, as_generator
from simrec._validation import check_in_range, check_int
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
    "ComparedProtocol",
    "compare_to_real",
    "ORDER_VERDICTS",
    "NOT_MEASURED_TEXT",
    "REFERENCE_TABLES",
    "chosen_point_sim_to_real",
]

#: A pair's verdict in :attr:`SimToReal.orders` (module docstring).
ORDER_VERDICTS: tuple[str, ...] = ("reproduced", "uncertain", "disagrees", "real tie", "not measured")
#: How every table says a pair's verdict is ``"not measured"``.
NOT_MEASURED_TEXT = "not measured (no replicate has both values)"

_METRICS: dict[str, Callable] = {"recall": recall, "ndcg": ndcg}


def _popular() -> Popular:
    return Popular()


def _item_knn() -> LensKitRecommender:
    return LensKitRecommender("ItemKNNScorer", name="ItemKNN", max_nbrs=20)


def _implicit_mf() -> LensKitRecommender:
    return LensKitRecommender("ImplicitMFScorer", name="ImplicitMF", embedding_size=50, epochs=10)


#: The issue's reference algorithms: LensKit Popular, ItemKNN(20) and ImplicitMF(50) (10 epochs), by name.
REFERENCE_ALGORITHMS: dict[str, Callable] = {"Popular": _popular, "ItemKNN": _item_knn, "ImplicitMF": _implicit_mf}

#: The reference algorithms as a scenario's recommender tables (:mod:`simrec.config.recommenders`), by name: what
#: ``simrec sim-to-real``'s memory check counts (a test checks each builds its :data:`REFERENCE_ALGORITHMS` entry).
REFERENCE_TABLES: dict[str, dict] = {
    "Popular": {"kind": "popular"},
    "ItemKNN": {"kind": "lenskit", "algorithm": "item_knn", "name": "ItemKNN", "params": {"max_nbrs": 20}},
    "ImplicitMF": {
        "kind": "lenskit",
        "algorithm": "implicit_mf",
        "name": "ImplicitMF",
        "params": {"embedding_size": 50, "epochs": 10},
    },
}


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
        call stays affordable this way. At least 1 (also for ``simrec
        sim-to-real --max-users`` and a calibration's ``[response]``: a
        check of a few dozen users is a cheap smoke test); the rule of at
        least :data:`simrec.user_sample.MIN_MAX_USERS` (100) is the
        assessment's and the run scenarios' ``max_users``, whose sample
        backs reported intervals.
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


def _normal_interval(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Mean ± z SE of the finite values of ``x`` (z the normal quantile of ``confidence``); NaN for fewer than 2."""
    from scipy import stats

    x = x[np.isfinite(x)]
    if len(x) < 2:
        return (float("nan"), float("nan"))
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * x.std(ddof=1) / np.sqrt(len(x))
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


class ComparedProtocol(Protocol):
    """What a sim-to-real comparison needs of its protocol (:class:`ResponseProtocol` is one; so is the
    assessment's, :mod:`simrec.assess.sim_to_real`)."""

    @property
    def algorithms(self) -> tuple[str, ...]: ...

    @property
    def metrics(self) -> tuple[str, ...]: ...

    @property
    def n(self) -> int: ...

    def label(self) -> str: ...


@dataclass(frozen=True)
class SimToReal:
    """Real vs simulated observed metrics of one world (:func:`sim_to_real`, :func:`compare_to_real`).

    ``table``: one row per (metric, algorithm): ``real``, ``real_low``,
    ``real_high`` (users' interval), ``sim``, ``sim_low``, ``sim_high``
    (replicates' interval), ``rel_error`` ((sim − real)/real) and
    ``replicates``. ``orders``: one row per (metric, pair of algorithms a, b
    in protocol order): the real gap mean(a) − mean(b) with its paired
    interval, ``real_order`` (``"a > b"``, ``"a < b"`` or ``"tie"`` when the
    interval covers 0), ``sim_gap`` (its mean over replicates),
    ``agreement``, the share of replicates whose simulated gap has the sign
    of the real one (NaN for a real tie), as ``reproduced`` of
    ``replicates`` with its Wilson interval ``agreement_low``,
    ``agreement_high``, and the pair's ``verdict`` (:data:`ORDER_VERDICTS`).
    ``full_order_agreement``: per metric, the share of replicates that order
    every algorithm as the real means do; ``full_order_counts``: the same as
    (k, R).
    """

    world: str
    protocol: ComparedProtocol
    table: pd.DataFrame
    orders: pd.DataFrame
    full_order_agreement: dict[str, float]
    full_order_counts: dict[str, tuple[int, int]] = field(default_factory=dict)

    def disagrees(self, threshold: float = 0.5) -> list[str]:
        """The real order gaps (not ties) that at most ``threshold`` of the replicates reproduce, as text
        (at the default 1/2: the pairs whose verdict is ``"disagrees"``)."""
        bad = self.orders[(self.orders["real_order"] != "tie") & (self.orders["agreement"] <= threshold)]
        return [
            f"{r.metric}: real {r.real_order}, reproduced in {r.agreement:.0%} of replicates "
            f"({int(r.reproduced)} of {int(r.replicates)}, Wilson [{r.agreement_low:.2f}, {r.agreement_high:.2f}])"
            for r in bad.itertuples()
        ]


def _t_interval(x: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Mean ± t(·, R − 1) SE of the finite values of ``x`` at ``confidence``; NaN for fewer than 2."""
    from scipy import stats

    x = x[np.isfinite(x)]
    if len(x) < 2:
        return (float("nan"), float("nan"))
    half = stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
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
    means = {key: np.array([s.mean(*key) for s in simulated]) for key in real.values}
    return compare_to_real(real.values, means, real.protocol, world)


def _verdict(order: str, k: int, r: int, low: float) -> str:
    """A pair's verdict (:data:`ORDER_VERDICTS`; the module docstring's rule)."""
    if order == "tie":
        return "real tie"
    if not r:
        return "not measured"
    if k / r <= 0.5:
        return "disagrees"
    return "reproduced" if low > 0.5 else "uncertain"


def compare_to_real(
    real: Mapping[tuple[str, str], np.ndarray],
    simulated: Mapping[tuple[str, str], np.ndarray],
    protocol: ComparedProtocol,
    world: str = "world",
    *,
    confidence: float = 0.95,
) -> SimToReal:
    """Real vs simulated observed metrics of one world, for any algorithms and metrics.

    Parameters
    ----------
    real : mapping (algorithm, metric) -> ndarray of shape (n_users,)
        Per-user values on the real data; for each metric the same users in
        the same order for every algorithm (paired). NaN: undefined, left out.
    simulated : mapping (algorithm, metric) -> ndarray of shape (R,)
        The world's mean value in each of its R replicates, the replicates in
        one order for every key. NaN: undefined in that replicate, left out.
    protocol : ComparedProtocol
        Its ``algorithms`` and ``metrics`` are the comparison's, in order.
    world : str, default "world"
    confidence : float, default 0.95
        Level of every interval: the real values' and the real gaps' normal
        intervals, the simulated values' t intervals and the agreements'
        Wilson intervals (so also of the tie rule).

    Returns
    -------
    SimToReal
        (See its attributes; the module docstring gives the intervals and the verdict rule.)
    """
    from simrec.report import wilson_interval

    confidence = check_in_range("confidence", confidence, 0, 1, low_open=True, high_open=True)
    algorithms, metrics = tuple(protocol.algorithms), tuple(protocol.metrics)
    missing = [k for k in ((a, m) for m in metrics for a in algorithms) if k not in real or k not in simulated]
    if missing:
        raise ValueError(f"`real` and `simulated` need every (algorithm, metric) of the protocol; missing {missing}")
    sims = {k: np.asarray(simulated[k], dtype=float) for k in simulated}
    reps = {len(v) for v in sims.values()}
    if len(reps) != 1 or 0 in reps:
        raise ValueError(
            f"`simulated` must hold one non-empty array of replicates per key, all of one length; got {reps}"
        )

    def real_mean(a: str, m: str) -> float:
        v = np.asarray(real[(a, m)], dtype=float)
        return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")

    rows = []
    for m in metrics:
        for a in algorithms:
            r = real_mean(a, m)
            lo, hi = _normal_interval(np.asarray(real[(a, m)], dtype=float), confidence)
            x = sims[(a, m)]
            slo, shi = _t_interval(x, confidence)
            sm = float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")
            rel = (sm - r) / r if r > 0 else float("nan")
            rows.append((m, a, r, lo, hi, sm, slo, shi, rel, int(np.isfinite(x).sum())))
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
    full, counts = {}, {}
    for m in metrics:
        for a, b in combinations(algorithms, 2):
            # the gap and its interval from the same paired differences (users with both values)
            diff = np.asarray(real[(a, m)], dtype=float) - np.asarray(real[(b, m)], dtype=float)
            paired = np.isfinite(diff)
            gap = float(diff[paired].mean()) if paired.any() else float("nan")
            lo, hi = _normal_interval(diff, confidence)
            if int(paired.sum()) < 2:
                warnings.warn(
                    f"sim to real, {m}: {int(paired.sum())} user(s) with values of both {a!r} and {b!r} (at "
                    "least 2 give the gap an interval); their real order is reported as a tie",
                    RuntimeWarning,
                    stacklevel=2,
                )
            tie = not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 <= hi
            order = "tie" if tie else (f"{a} > {b}" if gap > 0 else f"{a} < {b}")
            sim_gaps = sims[(a, m)] - sims[(b, m)]
            ok = np.isfinite(sim_gaps)
            r_ok = int(ok.sum())
            k = int((np.sign(sim_gaps[ok]) == np.sign(gap)).sum())
            if order == "tie" or not r_ok:
                agree, k_col, low, high = float("nan"), float("nan"), float("nan"), float("nan")
            else:
                wl, wh = wilson_interval(np.array([k]), np.array([r_ok]), confidence)
                agree, k_col, low, high = k / r_ok, float(k), float(wl[0]), float(wh[0])
            sim_gap = float(np.mean(sim_gaps[ok])) if r_ok else float("nan")
            verdict = _verdict(order, k, r_ok, low)
            orows.append((m, a, b, gap, lo, hi, order, sim_gap, agree, k_col, r_ok, low, high, verdict))
        real_order = _order(np.array([real_mean(a, m) for a in algorithms]))
        stack = np.stack([sims[(a, m)] for a in algorithms], axis=1)  # (R, algorithms)
        ok = np.isfinite(stack).all(axis=1)
        same = [_order(row) == real_order for row in stack[ok]]
        counts[m] = (int(sum(same)), int(ok.sum()))
        full[m] = counts[m][0] / counts[m][1] if counts[m][1] else float("nan")
    orders = pd.DataFrame(
        orows,
        columns=[
            "metric",
            "a",
            "b",
            "real_gap",
            "real_gap_low",
            "real_gap_high",
            "real_order",
            "sim_gap",
            "agreement",
            "reproduced",
            "replicates",
            "agreement_low",
            "agreement_high",
            "verdict",
        ],
    )
    orders["reproduced"] = orders["reproduced"].astype("Int64")  # a count; missing (NA) for a real tie
    return SimToReal(world, protocol, table, orders, full, counts)


def _order(means: np.ndarray) -> tuple[int, ...]:
    """Positions best first by mean (stable for equal means, as :meth:`AlgorithmResponse.order`)."""
    return tuple(int(i) for i in np.argsort(-means, kind="stable"))


def chosen_point_sim_to_real(
    real: AlgorithmResponse, details: Sequence[Mapping[str, float]], world: str = "world"
) -> SimToReal:
    """Real vs simulated at a calibration's chosen point, from its evaluations' details (no new simulation).

    ``details``: one mapping per evaluation of the point (its de-noising
    re-evaluations, or the chosen trial alone), each holding the simulated
    means as the ``"algorithm_response"`` objective logs them,
    ``sim_<algorithm>_<metric>`` (a missing key: NaN). Each evaluation is a
    replicate of :func:`compare_to_real`; the real side is ``real``, the
    response the search compared with.
    """
    p = real.protocol
    sims = {
        (a, m): np.array([float(d.get(f"sim_{a}_{m}", np.nan)) for d in details], dtype=float)
        for m in p.metrics
        for a in p.algorithms
    }
    return compare_to_real(real.values, sims, p, world)
