"""Estimators of a metric's value on the true preferences from the observed test pairs.

Notation (:mod:`simrec.debias.metrics`): the target is the mean over users
of :math:`M_u = A_u / g_u(n_u)`, :math:`A_u = \\sum_{i \\in
\\mathrm{Rel}_u} y_{ui} c_u(Z_{ui})`, :math:`n_u = |\\mathrm{Rel}_u|`, with
:math:`\\mathrm{Rel}_u` the user's true relevance set (in simrec: true likes
minus training items). Observed are the test pairs :math:`S_u`, each relevant
pair in them with probability (propensity) :math:`p_{ui} = P(i \\in S_u \\mid
i \\in \\mathrm{Rel}_u)`; :math:`O_{ui} = 1[i \\in S_u]`.

* :class:`Naive` — the average over all observed (Yang et al.'s "AOA"):
  :math:`\\hat M_u = \\sum_{S_u} y\\, c / g_u(\\sum_{S_u} y)`, today's number
  (equal to :mod:`simrec.metrics` on the same inputs);
* :class:`IPS` — inverse propensity scoring, unbiased:
  :math:`\\hat M_u = \\sum_{S_u} y\\, c / p \\;/\\; g_u(n_u)`;
* :class:`SNIPS` — self-normalised IPS, :math:`n_u` replaced by its IPS
  estimate :math:`\\hat n_u = \\sum_{S_u} y / p`: consistent, not unbiased;
* :class:`DR` and :class:`SNDR` — doubly robust (Saito 2020): an imputation
  :math:`\\hat y_{ui}` for every candidate, corrected on the observed pairs.

Sources. Yang, Cui, Xuan, Wang, Belongie & Estrin, "Unbiased offline
recommender evaluation for missing-not-at-random implicit feedback", RecSys
2018 (§3: the AOA, IPS and SNIPS estimators of a metric
:math:`\\frac{1}{|U|}\\sum_u \\frac{1}{|S^*_u|}\\sum_{i \\in S^*_u} c(\\hat
Z_{u,i})`); Schnabel, Swaminathan, Singh, Chandak & Joachims,
"Recommendations as treatments: debiasing learning and evaluation", ICML 2016
(§3.2-3.3: IPS and SNIPS for DCG@K and Precision@K, normalised by the known
number of pairs); Saito, "Doubly robust estimator for ranking metrics with
post-click conversions", RecSys 2020. The papers' text was not available in
simrec's build environment; the formulas are restated from their
definitions (Saito's public ``dcg_at_k`` and ``recall_at_k`` compute the
same, and their differences from the formulas are named variants here: :class:`SNDR` ``clip``,
:class:`~simrec.debias.MeanDCG` ``discount="lenskit07"``). Tests
(tests/debias): exact expectations by enumerating every observation outcome
of small worlds (test_unbiased.py), the naive estimator against
:mod:`simrec.metrics` (test_estimators.py), and the estimators against the
truth in simulated worlds with exact propensities (test_harness.py), and
:class:`SNDR` (``clip=True``) against Saito's ``recall_at_k`` and
``dcg_at_k`` user for user on shared inputs (test_authors_code.py: equal to
rounding where the DR estimate of :math:`n_u` is positive; their IPS/DR DCG
denominator reads an aliased array and departs from the formula). Yang's
code is not yet compared.

Every estimator has one call: ``estimator.estimate(ranked, metric,
propensity)`` with a :class:`~simrec.debias.RankedTest` (the test pairs and
their positions, :func:`~simrec.debias.rank_test`), a
:class:`~simrec.debias.LinearMetric` and the test pairs' propensities
(aligned with ``ranked.test``'s pairs, in (0, 1]; NaN leaves a pair out, as
Yang's code leaves out items without training interactions), returning an
:class:`~simrec.debias.Estimation`. Cost: O(test pairs) per call after
:func:`~simrec.debias.rank_test` (DR: plus O(users x K) for the imputation
of the list entries).

Supported metrics: every :class:`~simrec.debias.LinearMetric` (hits,
precision, recall, recall_truncated, DCG, nDCG, mean DCG; per-item AUC with
full rankings); not reciprocal rank, average precision, the hit indicator or
exact AUC (not linear in the relevance; :func:`~simrec.debias.linear_metric`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, cast

import numpy as np
import scipy.sparse as sp

from simrec.debias._checks import check_metric, check_ranked, checked_inputs, inverse_weights
from simrec.debias.metrics import LinearMetric
from simrec.debias.ranked import RankedTest
from simrec.debias.result import Estimation, finish

__all__ = ["Imputation", "FittedImputation", "Naive", "IPS", "SNIPS", "DR", "SNDR", "naive_on", "stratum_values"]

_NO_TEST = "no observed relevant test pair"


class Imputation(Protocol):
    """An imputation model (:mod:`simrec.debias.imputation`): fitted on the test pairs' training data.

    ``fitted(train)`` gives the model the estimators read (a
    :class:`FittedImputation`): :class:`~simrec.debias.ItemRate`,
    :class:`~simrec.debias.ConstantImputation` and
    :class:`~simrec.debias.DenseImputation` give themselves,
    :class:`~simrec.debias.TrainPopularity` an :class:`~simrec.debias.ItemRate`.
    """

    def fitted(self, train: sp.csr_array | None) -> FittedImputation: ...


class FittedImputation(Protocol):
    """An imputation model as the DR estimators read it (the result of :meth:`Imputation.fitted`).

    ``at(rows, items)`` broadcasts its two index arrays together (the DR
    estimator asks for a block of lists at once: rows of shape (n, 1), items
    (n, K)).
    """

    def at(self, rows: np.ndarray, items: np.ndarray) -> np.ndarray: ...

    def candidate_sums(self, train: sp.csr_array | None, n_users: int, n_items: int) -> np.ndarray: ...


def _gains(ranked: RankedTest, metric: LinearMetric) -> tuple[np.ndarray, int]:
    K = metric.cutoff(ranked.width)
    return metric.gain(ranked.position, ranked.length[ranked.rows], K), K


def _per_user(ranked: RankedTest, values: np.ndarray) -> np.ndarray:
    """Per-user sums of per-pair ``values`` (pairs row by row): one ``np.add.reduceat`` over the CSR rows.

    A third of ``np.bincount``'s time at ML-1M size; the values are padded
    with a 0 so every row start is a valid index, and empty rows are set to 0.
    """
    ptr = ranked.test.indptr
    out = np.add.reduceat(np.append(np.asarray(values, dtype=np.float64), 0.0), ptr[:-1])
    out[ptr[1:] == ptr[:-1]] = 0.0
    return out


def _known_n(ranked: RankedTest, metric: LinearMetric, estimator: str) -> np.ndarray | None:
    if ranked.n_relevant is None and metric.needs_n:
        raise ValueError(
            f"{estimator} of {metric.label} needs each user's |Rel_u| (`n_relevant` of rank_test): its normaliser "
            f"depends on it; SNIPS/SNDR estimate it instead"
        )
    return ranked.n_relevant


def _with_known_n(
    name: str, ranked: RankedTest, metric: LinearMetric, numerator: np.ndarray, K: int, n: np.ndarray | None
) -> Estimation:
    g = metric.normaliser(np.zeros(ranked.n_users) if n is None else n, ranked.length, K)
    undefined = g <= 0
    why = "empty list" if n is None else "empty true relevance set or empty list"
    if n is not None:
        undefined |= n <= 0
    return finish(name, metric.label, numerator, np.where(undefined, 1.0, g), undefined, why=why)


def _with_estimated_n(
    name: str, ranked: RankedTest, metric: LinearMetric, numerator: np.ndarray, K: int, n_hat: np.ndarray
) -> Estimation:
    g = metric.normaliser(n_hat, ranked.length, K)
    undefined = (g <= 0) | (n_hat <= 0)
    return finish(name, metric.label, numerator, np.where(undefined, 1.0, g), undefined, why=_NO_TEST)


def _ips_parts(
    ranked: object, metric: object, propensity: object
) -> tuple[RankedTest, LinearMetric, np.ndarray, np.ndarray, int]:
    """Checked inputs, the IPS numerator :math:`\\sum_{S_u} y c / p` per user, the pairs' :math:`y/p`, and K."""
    ranked, metric, p = checked_inputs(ranked, metric, propensity)
    gain, K = _gains(ranked, metric)
    w = inverse_weights(p, ranked.label_values())
    return ranked, metric, _per_user(ranked, gain * w), w, K


def naive_on(ranked: RankedTest, metric: LinearMetric, name: str, evaluated: np.ndarray | None = None) -> Estimation:
    """The naive estimate on ``ranked``'s test pairs (the users outside ``evaluated`` NaN, silently)."""
    gain, K = _gains(ranked, metric)
    y = ranked.label_values()
    n = _per_user(ranked, y)
    g = metric.normaliser(n, ranked.length, K)
    undefined = (g <= 0) | (n <= 0)
    return finish(
        name, metric.label, _per_user(ranked, gain * y), np.where(undefined, 1.0, g), undefined, evaluated, _NO_TEST
    )


def stratum_values(ranked: RankedTest, metric: LinearMetric, stratum: np.ndarray, n_strata: int) -> np.ndarray:
    """The naive estimate on each stratum's test pairs alone, in one pass over the pairs.

    Each stratum is a test set of its own: per (stratum, user) the naive
    value, averaged over the users with a relevant pair in the stratum (NaN
    for a stratum without any). ``stratum`` is each pair's 0-based stratum,
    -1 to leave a pair out. Equal to :func:`naive_on` on
    ``ranked.subset(stratum == s)`` (tested), without building the subsets.
    """
    gain, K = _gains(ranked, metric)
    U = ranked.n_users
    on = stratum >= 0
    every = bool(on.all())
    key = stratum * U + ranked.rows if every else stratum[on] * U + ranked.rows[on]
    if ranked.labels is None:  # implicit feedback: y = 1, no products
        num = np.bincount(key, weights=gain if every else gain[on], minlength=n_strata * U)
        n: np.ndarray = np.bincount(key, minlength=n_strata * U).astype(np.float64)
    else:
        y = ranked.labels
        num = np.bincount(key, weights=(gain * y) if every else (gain * y)[on], minlength=n_strata * U)
        n = np.bincount(key, weights=y if every else y[on], minlength=n_strata * U)
    g = metric.normaliser(n, np.tile(ranked.length, n_strata), K)
    ok = (n > 0) & (g > 0)
    value = np.divide(num, g, out=np.zeros(len(num)), where=ok)
    users = np.bincount(np.repeat(np.arange(n_strata), U)[ok], minlength=n_strata)
    sums = np.bincount(np.repeat(np.arange(n_strata), U)[ok], weights=value[ok], minlength=n_strata)
    return np.divide(sums, users, out=np.full(n_strata, np.nan), where=users > 0)


@dataclass(frozen=True)
class Naive:
    """The average over all observed test pairs: today's number (Yang et al. 2018's "AOA" evaluator).

    .. math:: \\hat M_u^{\\mathrm{naive}} = \\frac{\\sum_{i \\in S_u} y_{ui}\\, c_u(Z_{ui})}
                                              {g_u\\big(\\sum_{i \\in S_u} y_{ui}\\big)}

    Every observed test pair is taken as relevant and the observed test set
    as the relevance set; with binary labels this is exactly
    :mod:`simrec.metrics`' value of the metric against the observed test
    items (tested). ``propensity`` is not used. NaN (with a warning) where
    the user has no relevant test pair or the normaliser is 0 (precision of
    an empty list).
    """

    name: ClassVar[str] = "naive"
    #: Whether the estimate reads the propensities (a harness crosses only those with the propensity kinds).
    uses_propensity: ClassVar[bool] = False

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: object = None
    ) -> Estimation:
        ranked = check_ranked(ranked)
        return naive_on(ranked, check_metric(metric, ranked), self.name)


@dataclass(frozen=True)
class IPS:
    """Inverse propensity scoring: unbiased given the true propensities and :math:`n_u`.

    .. math:: \\hat M_u^{\\mathrm{IPS}} = \\frac{1}{g_u(n_u)}
              \\sum_{i \\in S_u} \\frac{y_{ui}\\, c_u(Z_{ui})}{p_{ui}}

    Yang et al. 2018's unbiased estimator (:math:`g_u(n) = n = |S^*_u|`,
    their :math:`\\hat R_{\\mathrm{IPS}}(\\hat Z \\mid P) = \\frac{1}{|U|}
    \\sum_u \\frac{1}{|S^*_u|} \\sum_{i \\in S_u} \\frac{c(\\hat Z_{u,i})}
    {P_{u,i}}`) and Schnabel et al. 2016's IPS for DCG@K and Precision@K
    (:math:`g_u` known). Unbiasedness: each relevant pair is in :math:`S_u`
    with probability :math:`p_{ui}`, so :math:`E\\big[\\sum_{S_u} y c/p\\big]
    = \\sum_{\\mathrm{Rel}_u} y c = A_u` exactly (checked by enumerating
    every observation outcome of a small world, tests/debias).

    :math:`n_u = |\\mathrm{Rel}_u|` is unknown on real data; for a metric
    whose normaliser depends on it (recall, recall_truncated, nDCG, mean
    DCG, per-item AUC) this estimator needs ``ranked.n_relevant`` (a
    simulation knows it) and refuses otherwise: :class:`SNIPS` is the
    estimator that replaces it. For hits, precision and DCG it needs
    nothing unknown. A user with no test pair gets 0 (the unbiased value);
    averaged only over users *with* a test pair (simrec's evaluated users),
    the mean is biased by the factor :math:`1/P(S_u \\neq \\emptyset)`,
    negligible when every user expects several test pairs. NaN where
    :math:`n_u = 0` (given) or :math:`g_u = 0`.
    """

    name: ClassVar[str] = "IPS"
    uses_propensity: ClassVar[bool] = True

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: object = None
    ) -> Estimation:
        ranked, metric, numerator, w, K = _ips_parts(ranked, metric, propensity)
        return _with_known_n(self.name, ranked, metric, numerator, K, _known_n(ranked, metric, self.name))


@dataclass(frozen=True)
class SNIPS:
    """Self-normalised IPS: :math:`n_u` replaced by its IPS estimate (Yang et al. 2018's SNIPS).

    .. math:: \\hat M_u^{\\mathrm{SNIPS}} = \\frac{\\sum_{i \\in S_u} y_{ui}\\, c_u(Z_{ui}) / p_{ui}}
              {g_u(\\hat n_u)}, \\qquad \\hat n_u = \\sum_{i \\in S_u} \\frac{y_{ui}}{p_{ui}}

    For :math:`g = n` (recall, mean DCG, per-item AUC) this is Yang et
    al.'s :math:`\\hat R_{\\mathrm{SNIPS}}(\\hat Z \\mid P) = \\frac{1}{|U|}
    \\sum_u \\frac{\\sum_{i \\in S_u} c(\\hat Z_{u,i})/P_{u,i}}{\\sum_{i \\in
    S_u} 1/P_{u,i}}` (:math:`E[\\hat n_u] = |S^*_u|`; per user, then
    averaged over users; their public code was not compared here); for
    recall_truncated and nDCG the plug-in :math:`g_u(\\hat n_u)` generalises
    it (the ideal DCG at a non-integer :math:`\\hat n_u` interpolated,
    :class:`~simrec.debias.NDCG`). A metric whose normaliser does not depend
    on :math:`n_u` (hits, precision, DCG) has nothing to normalise: SNIPS is
    :class:`IPS` there.

    Properties (tests/debias): for a normaliser linear in :math:`n` (recall,
    mean DCG, per-item AUC) invariant to a common scale of the propensities,
    so with propensities constant within each user it is the naive
    estimator, and then exactly unbiased given :math:`S_u \\neq \\emptyset`
    (the observed pairs are a uniform subset); not so for a capped
    normaliser (recall_truncated, nDCG: :math:`\\min(\\hat n_u, K)`), whose
    IPS numerator scales with :math:`1/p` while the cap does not, so there
    the propensities' level matters as for IPS;
    biased but consistent otherwise (a ratio estimator); equal to IPS
    whenever :math:`\\hat n_u = n_u`. NaN where :math:`\\hat n_u = 0`.
    """

    name: ClassVar[str] = "SNIPS"
    uses_propensity: ClassVar[bool] = True

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: object = None
    ) -> Estimation:
        ranked, metric, numerator, w, K = _ips_parts(ranked, metric, propensity)
        if not metric.needs_n:
            return _with_known_n(self.name, ranked, metric, numerator, K, ranked.n_relevant)
        return _with_estimated_n(self.name, ranked, metric, numerator, K, _per_user(ranked, w))


#: List cells per block of the DR's imputed list gains (bounds the (users x K) temporaries).
_DR_BLOCK = 1 << 20


def _dr_parts(
    ranked: object, metric: object, propensity: object, imputation: Imputation
) -> tuple[RankedTest, LinearMetric, np.ndarray, np.ndarray, int]:
    """Checked inputs, the DR numerator :math:`\\hat A_u^{DR}` and estimate :math:`\\hat n_u^{DR}` per user, and K."""
    ranked, metric, p = checked_inputs(ranked, metric, propensity)
    if not callable(getattr(imputation, "fitted", None)):
        raise TypeError(
            f"`imputation` must be an imputation model (fitted, at, candidate_sums; simrec.debias.ItemRate); "
            f"got {type(imputation).__name__}"
        )
    fitted: FittedImputation
    fitted, candidate_sums = ranked.imputed(imputation)  # fitted once per recommender's test pairs
    gain, K = _gains(ranked, metric)
    y_hat = np.asarray(fitted.at(ranked.rows, ranked.items), dtype=np.float64)
    y = 1.0 if ranked.labels is None else ranked.labels  # implicit feedback: the scalar, not an array of ones
    resid = inverse_weights(p, y - y_hat)  # (y - y_hat)/p; 0 for a left-out pair (imputed like an unobserved one)
    numerator = _per_user(ranked, gain * resid)
    # the imputed gains of the list entries: sum_j c_u(j) y_hat(u, L_uj), by blocks of users
    lists = ranked.lists[:, :K]
    step = max(1, _DR_BLOCK // max(K, 1))
    positions = np.arange(1, K + 1)[None, :]  # gains broadcast over a block: (1, K) positions x (n, 1) lengths
    for u0 in range(0, ranked.n_users, step):
        blk = lists[u0 : u0 + step]
        length = ranked.length[u0 : u0 + len(blk), None]
        c = metric.gain(positions, length, K)
        rows = np.arange(u0, u0 + len(blk))[:, None]
        if bool((length >= K).all()):  # no padding in the first K columns (it is trailing): no mask
            v = np.asarray(fitted.at(rows, blk), dtype=np.float64)
        else:  # padding: imputed at item 0, then masked (no nonzero over the block)
            real = blk >= 0
            v = np.asarray(fitted.at(rows, np.where(real, blk, 0)), dtype=np.float64) * real
        numerator[u0 : u0 + len(blk)] += np.einsum("ij,ij->i", np.broadcast_to(c, blk.shape), v)
    n_hat = candidate_sums + _per_user(ranked, resid)
    return ranked, metric, numerator, n_hat, K


@dataclass(frozen=True)
class DR:
    """Doubly robust: an imputed relevance for every candidate, corrected by IPS on the observed pairs.

    .. math::
        \\hat M_u^{\\mathrm{DR}} = \\frac{1}{g_u(n_u)} \\sum_{i \\in C_u} c_u(Z_{ui})
        \\Big[\\hat y_{ui} + O_{ui}\\, \\frac{y_{ui} - \\hat y_{ui}}{p_{ui}}\\Big]

    over the user's candidates :math:`C_u` (every item not in ``ranked.train``;
    only list entries have :math:`c \\ne 0`). Saito, RecSys 2020, the DR
    estimator of a ranking metric with post-click conversions: there
    :math:`O` is the click, :math:`y` the conversion (observed when clicked),
    :math:`p` the click propensity and :math:`\\hat y` an imputed conversion
    rate; here :math:`O` is "the pair is an observed test pair",
    :math:`p = P(O = 1)`, :math:`y` the observed pair's relevance label.
    Unbiased when the propensities are right (any :math:`\\hat y`) or the
    imputation is right (:math:`\\hat y = y` on every candidate, any
    :math:`p > 0`), given the pair labels are revealed when observed
    (checked both ways by enumeration, tests/debias). With
    ``imputation = ConstantImputation(0)`` it is :class:`IPS` exactly.

    Implicit feedback (no labels: every observed pair counts as relevant)
    breaks the first of the two: a pair that is not relevant is never
    observed, so its term stays :math:`\\hat y_{ui}` and the estimate is
    biased by :math:`\\sum_{i \\notin \\mathrm{Rel}_u} c\\, \\hat y / g`
    even with the right propensities. No estimator linear in the observed
    indicators can be unbiased both when the propensities are right and
    when the imputation is right in that setting: unbiasedness under right
    propensities for every imputation forces the IPS weights, and under a
    right imputation for every propensity forces weight 0 on the
    observations (so DR equals IPS at :math:`\\hat y = 0` and is the
    imputation alone at :math:`\\hat y = y`). Labels (e.g. ratings >= 4 of
    :class:`simrec.observation.Rated`, with consumed dislikes observed and
    labelled 0) restore double robustness.

    Parameters
    ----------
    imputation : imputation model
        :class:`~simrec.debias.ItemRate` (stated default choice: the
        training popularity rate, :meth:`~simrec.debias.ItemRate.from_train`),
        :class:`~simrec.debias.ConstantImputation` or
        :class:`~simrec.debias.DenseImputation`.

    Like :class:`IPS`, a metric normalised by :math:`n_u` needs
    ``ranked.n_relevant``; :class:`SNDR` estimates it.
    """

    imputation: Imputation
    name: ClassVar[str] = "DR"
    uses_propensity: ClassVar[bool] = True

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: object = None
    ) -> Estimation:
        ranked, metric, numerator, _, K = _dr_parts(ranked, metric, propensity, self.imputation)
        return _with_known_n(self.name, ranked, metric, numerator, K, _known_n(ranked, metric, self.name))


@dataclass(frozen=True)
class SNDR:
    """Self-normalised DR: :math:`n_u` replaced by its DR estimate (the form of Saito's public code).

    .. math::
        \\hat M_u^{\\mathrm{SNDR}} = \\frac{\\sum_{i \\in C_u} c_u(Z_{ui})\\, \\hat\\delta_{ui}}
                                          {g_u\\big(\\sum_{i \\in C_u} \\hat\\delta_{ui}\\big)},
        \\qquad \\hat\\delta_{ui} = \\hat y_{ui} + O_{ui}\\, \\frac{y_{ui} - \\hat y_{ui}}{p_{ui}}

    Saito's ``dcg_at_k`` and ``recall_at_k`` (usaito/dr-ranking-metric,
    src/evaluator.py) compute exactly this per user, with :math:`g = n`, then
    clip the ratio to [0, 1] (``clip=True`` here) and average over users;
    their DCG discount is :math:`1/\\max(1, \\log_2 Z)`
    (:class:`~simrec.debias.MeanDCG` with ``discount="lenskit07"``), and
    their "IPS" is this estimator with :math:`\\hat y = 0`, i.e.
    :class:`SNIPS`. With the imputation right the DR estimate of :math:`n_u`
    is exact, so SNDR is then exact too; with the propensities right it is
    consistent, not unbiased. For a metric whose normaliser does not depend
    on :math:`n_u`, SNDR is :class:`DR`.

    Parameters
    ----------
    imputation : imputation model
        As :class:`DR`.
    clip : bool, default False
        Clip each user's value to [0, 1] (Saito's code; a named variant).
    """

    imputation: Imputation
    clip: bool = False
    name: ClassVar[str] = "SNDR"
    uses_propensity: ClassVar[bool] = True

    def estimate(
        self, ranked: RankedTest, metric: LinearMetric, propensity: np.ndarray | None = None, *, rng: object = None
    ) -> Estimation:
        ranked, metric, numerator, n_hat, K = _dr_parts(ranked, metric, propensity, self.imputation)
        name = "SNDR_clipped" if self.clip else self.name
        if not metric.needs_n:
            est = _with_known_n(name, ranked, metric, numerator, K, ranked.n_relevant)
        else:
            est = _with_estimated_n(name, ranked, metric, numerator, K, n_hat)
        if not self.clip:
            return est
        per_user = np.clip(cast(np.ndarray, est.per_user), 0.0, 1.0)  # a mean over users: per_user is set
        ok = ~np.isnan(per_user)
        value = float(per_user[ok].mean()) if ok.any() else float("nan")
        return Estimation(name, est.metric, value, per_user, est.n_users, est.n_undefined)
