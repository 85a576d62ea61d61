"""The MNAR-correction harness: every estimator x propensity kind against the truth, replicate by replicate.

One replicate (:func:`debias_replicate`) generates, observes and splits a
world's data exactly as :func:`simrec.experiment.run_replicate` does from the
same seed (:func:`simrec.experiment.replicate_data`: same truth, same test
pairs, same lists), then, per recommender x metric, computes

* the truth: the metric on the true relevance sets (true likes minus
  training pairs) of the evaluated users, the ``"true"`` value of
  ``simrec run`` (:class:`~simrec.debias.Naive` on them; binary relevance);
* every estimator that reads no propensity once (propensity ``"none"``), and
  every other one once per propensity kind: the estimate, and a normal
  interval over users
  :math:`\\hat M \\pm z_{1-\\alpha/2}\\, s / \\sqrt{n}` with :math:`s` the
  standard deviation of the per-user estimates (users are independent given
  the world's truth; the interval is for the estimator's expectation, so its
  coverage of the truth measures bias and variance together). The
  stratified estimator is not a mean over users: no interval (NaN).

:func:`summarize_debias` turns the rows of many replicates into the table of
the issue: bias (with its Monte Carlo standard error), RMSE and interval
coverage per world x recommender x metric x estimator x propensity, and
:func:`order_accuracy` the share of replicates in which an estimator orders
the recommenders as the truth does.

What "unbiased" means here. IPS with the world's propensities is exactly
unbiased for each user's numerator :math:`\\sum_{\\mathrm{Rel}_u} c`
(tests/debias/test_unbiased.py), but the harness's target divides by the
realised :math:`|\\mathrm{Rel}_u|` (true likes minus the *realised* training
pairs) and averages over the users with a test item, the test-set propensity
uses the user's realised test share, and the popularity sampler's
propensities are Monte Carlo estimates; in the whole design IPS is therefore
nearly, not exactly, unbiased, and the harness measures by how much (e.g.
+0.0054 on a recall of 0.28 where the naive estimate is off by +0.26, in the
small popularity world of tests/debias/test_harness.py).

Propensity kinds by name (:data:`PROPENSITY_KINDS`), each built for a world:
``"world"`` (:class:`~simrec.debias.WorldPropensity` of the world's sampler),
``"fitted"`` (:class:`~simrec.debias.PopularityPowerLaw`, the exponent fitted
on every recommender's lists of the replicate, pooled), ``"popularity_only"``
(:meth:`~simrec.debias.MisspecifiedPropensity.popularity_only`: needs a
preference-driven world) and ``"uniform"`` (missing at random assumed:
:class:`~simrec.observation.UniformSampler`'s propensities).

Randomness beyond the replicate's data (the resampled test sets, the popularity
sampler's Monte Carlo propensities) comes from the seed's child
:data:`DEBIAS_STREAM`, so adding a recommender or an estimator changes
neither the data nor the other rows' draws of the data.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from simrec._random import as_generator
from simrec.debias.combined import SampledDesign, pair_global_ranks, sampled_rows
from simrec.debias.estimators import DR, IPS, SNDR, SNIPS, Naive
from simrec.debias.imputation import TrainPopularity
from simrec.debias.metrics import DCG, NDCG, Hits, LinearMetric, MeanDCG, Precision, Recall, RecallTruncated
from simrec.debias.propensity import (
    MisspecifiedPropensity,
    ObservationContext,
    PopularityPowerLaw,
    WorldPropensity,
)
from simrec.debias.ranked import rank_test
from simrec.debias.resampling import InversePropensityWeights, SkewWeights, WeightedResampling, WTDWeights
from simrec.debias.stratified import Stratified
from simrec.experiment import Evaluation, ReplicateData, World, replicate_data
from simrec.metrics import UndefinedMetricWarning
from simrec.observation import UniformSampler
from simrec.recommenders import lists_of

__all__ = [
    "DEBIAS_COLUMNS",
    "DEBIAS_STREAM",
    "PROPENSITY_KINDS",
    "ESTIMATORS",
    "LINEAR_METRICS",
    "DebiasDesign",
    "ObservedReplicate",
    "observed_replicate",
    "debias_replicate",
    "summarize_debias",
    "order_accuracy",
]

#: Columns of the harness's tidy rows, in order.
DEBIAS_COLUMNS = [
    "replicate",
    "world",
    "recommender",
    "metric",
    "estimator",
    "propensity",
    "value",
    "lower",
    "upper",
    "truth",
    "n_users",
]

#: The seed child (of a replicate's seed) that the harness's own draws come from.
DEBIAS_STREAM = 1 << 20
#: The seed child of the combined rows' draws (scores' tie-breaks, sampled ranks): the other rows' draws stay as they were.
SAMPLED_STREAM = DEBIAS_STREAM + 1


def _misspecified_uniform(world: World) -> MisspecifiedPropensity:
    return MisspecifiedPropensity(UniformSampler())


#: Propensity kind name -> builder from the world (raises TypeError where the kind does not apply).
PROPENSITY_KINDS: dict[str, Callable[[World], Any]] = {
    "world": lambda world: WorldPropensity(world.sampler),
    "fitted": lambda world: PopularityPowerLaw(),
    "popularity_only": lambda world: MisspecifiedPropensity.popularity_only(world.sampler),
    "uniform": _misspecified_uniform,
}


@dataclass(frozen=True)
class DebiasDesign:
    """What the harness crosses.

    Parameters
    ----------
    metrics : tuple of LinearMetric
        The metrics (e.g. ``(Recall(), NDCG())``; ``k`` None: the list length N).
    estimators : tuple of estimators
        Objects with ``name``, ``uses_propensity`` and ``estimate(ranked,
        metric, propensity, rng=...)`` (:mod:`simrec.debias`).
    propensities : tuple of str, default ("world", "fitted")
        Names of :data:`PROPENSITY_KINDS`.
    level : float, default 0.95
        The intervals' nominal coverage.
    sampled : SampledDesign, optional
        Also the MNAR corrections on sampled ranks (:mod:`simrec.debias.combined`); None: not run.
    """

    metrics: tuple[LinearMetric, ...]
    estimators: tuple[Any, ...]
    propensities: tuple[str, ...] = ("world", "fitted")
    level: float = 0.95
    sampled: SampledDesign | None = None

    def __post_init__(self) -> None:
        if not self.metrics or not all(isinstance(m, LinearMetric) for m in self.metrics):
            raise TypeError("`metrics` must be one or more simrec.debias LinearMetric objects (e.g. Recall())")
        bad = [e for e in self.estimators if not callable(getattr(e, "estimate", None))]
        if not self.estimators or bad:
            raise TypeError(f"`estimators` must be one or more simrec.debias estimators; got {bad or 'none'}")
        unknown = [k for k in self.propensities if k not in PROPENSITY_KINDS]
        if unknown:
            raise ValueError(f"`propensities` must be among {', '.join(PROPENSITY_KINDS)}; got {unknown}")
        if not 0 < self.level < 1:
            raise ValueError(f"`level` must be in (0, 1); got {self.level}")
        if self.sampled is not None and not isinstance(self.sampled, SampledDesign):
            raise TypeError(f"`sampled` must be a SampledDesign or None; got {type(self.sampled).__name__}")

    def kinds_for(self, world: World) -> dict[str, Any]:
        """The propensity kind objects for ``world`` (TypeError naming the kind where one does not apply)."""
        out = {}
        for name in self.propensities:
            try:
                out[name] = PROPENSITY_KINDS[name](world)
            except TypeError as exc:
                raise TypeError(f"propensity kind {name!r} does not apply to world {world.name!r}: {exc}") from None
        return out


def _interval(est: Any, z: float) -> tuple[float, float]:
    if est.per_user is None:
        return float("nan"), float("nan")
    v = est.per_user[~np.isnan(est.per_user)]
    if len(v) < 2:
        return float("nan"), float("nan")
    half = z * float(v.std(ddof=1)) / np.sqrt(len(v))
    return est.value - half, est.value + half


@dataclass(frozen=True, eq=False)
class ObservedReplicate:
    """One replicate's evaluated users as the estimators see them (:func:`observed_replicate`).

    Attributes
    ----------
    data : ReplicateData
        :func:`simrec.experiment.replicate_data` of the seed.
    train, test, true_rel : csr_array, shape (n_evaluated, n_items)
        The evaluated users' training pairs, test pairs and true relevance (true likes minus training pairs).
    n_relevant : ndarray of float64, shape (n_evaluated,)
        :math:`n_u = |\\mathrm{Rel}_u|`.
    lists : tuple of ndarray of int64, shape (n_evaluated, N)
        Every recommender's lists, in the evaluation's order (the run's own lists).
    propensities : dict of str to ndarray
        Per propensity kind, the test pairs' :math:`p_{ui}` (aligned with ``test``'s pairs).
    rng : Generator
        The harness's stream (:data:`DEBIAS_STREAM`) after the propensities' draws.
    """

    data: ReplicateData
    train: sp.csr_array
    test: sp.csr_array
    true_rel: sp.csr_array
    n_relevant: np.ndarray
    lists: tuple[np.ndarray, ...]
    propensities: dict[str, np.ndarray]
    rng: np.random.Generator


def observed_replicate(
    world: World, evaluation: Evaluation, kinds: dict[str, Any], seed: np.random.SeedSequence | int
) -> ObservedReplicate:
    """The replicate of ``seed`` (the data and lists of ``simrec run``'s replicate) with each kind's propensities.

    ``kinds``: propensity kind objects by name (:meth:`DebiasDesign.kinds_for`);
    their draws come from the seed's child :data:`DEBIAS_STREAM`, in the order given.
    """
    data = replicate_data(world, evaluation, seed)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    gen = as_generator(np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (DEBIAS_STREAM,)))
    ev = data.evaluated
    train = sp.csr_array(data.split.train.matrix[ev])
    test = sp.csr_array(data.split.test.matrix[ev])
    true_rel = sp.csr_array(data.true_rel[ev])
    n_rel = np.diff(true_rel.indptr).astype(np.float64)
    lists = tuple(
        lists_of(rec, data.split.train, data.true_rel, evaluation.n, rng, ev)
        for rec, rng in zip(evaluation.recommenders, data.recommender_rngs)
    )
    context = ObservationContext(test, train, data.truth, data.observed.truth_rows[ev], data.observed.sizes, lists)
    props = {name: kind.propensities(context, gen).values for name, kind in kinds.items()}
    return ObservedReplicate(data, train, test, true_rel, n_rel, lists, props, gen)


def debias_replicate(
    world: World, evaluation: Evaluation, design: DebiasDesign, seed: np.random.SeedSequence | int, replicate: int = 0
) -> pd.DataFrame:
    """One replicate of the harness: the tidy rows :data:`DEBIAS_COLUMNS` (module docstring).

    Parameters
    ----------
    world, evaluation : as :func:`simrec.experiment.run_replicate` (its metrics are not read).
    design : DebiasDesign
    seed : SeedSequence or int
        The replicate's seed (the same as ``simrec run``'s for the same data).
    replicate : int, default 0

    Returns
    -------
    DataFrame
        One row per recommender x metric x (estimator, propensity).
    """
    kinds = design.kinds_for(world)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    o = observed_replicate(world, evaluation, kinds, root)
    data, train, test, true_rel, n_rel, lists, props, gen = (
        o.data, o.train, o.test, o.true_rel, o.n_relevant, o.lists, o.propensities, o.rng
    )  # fmt: skip
    z = NormalDist().inv_cdf(0.5 + design.level / 2)
    rows: list[tuple] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for rec, rec_lists in zip(evaluation.recommenders, lists):
            ranked = rank_test(rec_lists, test, train=train, n_relevant=n_rel)
            truth_ranked = rank_test(rec_lists, true_rel, train=train)
            for metric in design.metrics:
                truth = Naive().estimate(truth_ranked, metric).value
                for est in design.estimators:
                    runs = props.items() if est.uses_propensity else [("none", None)]
                    for kind, p in runs:
                        e = est.estimate(ranked, metric, p, rng=gen)
                        lo, hi = _interval(e, z)
                        rows.append(
                            (replicate, world.name, rec.name, metric.label, e.estimator, kind)
                            + (e.value, lo, hi, truth, e.n_users)
                        )
        if design.sampled is not None:
            rows += _combined(world, evaluation, design.sampled, data, root, train, test, true_rel, props, z, replicate)
    return pd.DataFrame(rows, columns=DEBIAS_COLUMNS)


def _combined(
    world: World,
    evaluation: Evaluation,
    sampled: SampledDesign,
    data: ReplicateData,
    root: np.random.SeedSequence,
    train: sp.csr_array,
    test: sp.csr_array,
    true_rel: sp.csr_array,
    props: dict[str, np.ndarray],
    z: float,
    replicate: int,
) -> list[tuple]:
    """The rows of the MNAR corrections on sampled ranks (:mod:`simrec.debias.combined`), one stream of draws."""
    gen = as_generator(np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (SAMPLED_STREAM,)))
    ev = data.evaluated
    k = evaluation.n if sampled.k is None else sampled.k
    out = []
    for rec in evaluation.recommenders:

        def scores(rows: np.ndarray, rec: Any = rec) -> np.ndarray:
            return rec.score(data.split.train, data.true_rel, gen, users=ev[rows])

        test_ranks = pair_global_ranks(scores, train, test, gen)
        true_ranks = pair_global_ranks(scores, train, true_rel, gen)
        for r in sampled_rows(sampled, k, test, true_rel, train, test_ranks, true_ranks, props, gen, z):
            out.append((replicate, world.name, rec.name) + r)
    return out


_CELL = ["world", "recommender", "metric", "estimator", "propensity"]


def summarize_debias(rows: pd.DataFrame) -> pd.DataFrame:
    """Bias, its standard error, RMSE and interval coverage per cell, over the replicates.

    Columns: the cell (world, recommender, metric, estimator, propensity),
    ``n_replicates``, ``truth`` (mean), ``value`` (mean), ``bias`` (mean of
    value - truth), ``bias_se`` (its standard deviation over the replicates
    / sqrt(R); NaN for one replicate), ``rmse``, ``coverage`` (share of
    replicates whose interval holds the truth; NaN without intervals) and
    ``coverage_se`` (binomial, :math:`\\sqrt{c(1-c)/R}`).
    """
    d = rows.assign(
        err=rows["value"] - rows["truth"],
        covered=np.where(
            rows["lower"].isna(), np.nan, ((rows["lower"] <= rows["truth"]) & (rows["truth"] <= rows["upper"])) * 1.0
        ),
    )
    g = d.groupby(_CELL, sort=False)
    out = g.agg(
        n_replicates=("err", "size"),
        truth=("truth", "mean"),
        value=("value", "mean"),
        bias=("err", "mean"),
        bias_sd=("err", "std"),
        mse=("err", lambda e: float(np.mean(np.square(e)))),
        coverage=("covered", "mean"),
    ).reset_index()
    out["bias_se"] = out.pop("bias_sd") / np.sqrt(out["n_replicates"])
    out["rmse"] = np.sqrt(out.pop("mse"))
    out["coverage_se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["n_replicates"])
    return out[[*_CELL, "n_replicates", "truth", "value", "bias", "bias_se", "rmse", "coverage", "coverage_se"]]


def order_accuracy(rows: pd.DataFrame, recommenders: Sequence[str] | None = None) -> pd.DataFrame:
    """Share of replicates in which an estimator orders the recommenders as the truth does.

    Per replicate x world x metric x estimator x propensity, the recommenders
    sorted by estimate and by truth (descending, ties by name) must agree
    entirely. Columns: world, metric, estimator, propensity,
    ``n_replicates``, ``p_true_order`` and its binomial standard error
    ``p_se``. Needs at least two recommenders (else an empty frame).
    """
    d = rows if recommenders is None else rows[rows["recommender"].isin(list(recommenders))]
    keys = ["replicate", "world", "metric", "estimator", "propensity"]

    def same(group: pd.DataFrame) -> float:
        if len(group) < 2 or group["value"].isna().any():
            return np.nan
        by_value = group.sort_values(["value", "recommender"], ascending=[False, True])["recommender"].tolist()
        by_truth = group.sort_values(["truth", "recommender"], ascending=[False, True])["recommender"].tolist()
        return float(by_value == by_truth)

    per = d.groupby(keys, sort=False)[["recommender", "value", "truth"]].apply(same).rename("right").reset_index()
    g = per.groupby(keys[1:], sort=False)["right"]
    out = g.agg(n_replicates="count", p_true_order="mean").reset_index()
    out["p_se"] = np.sqrt(out["p_true_order"] * (1 - out["p_true_order"]) / out["n_replicates"])
    return out


#: Estimator name (in scenario files) -> the estimator at simrec's stated defaults.
ESTIMATORS: dict[str, Callable[[], Any]] = {
    "naive": Naive,
    "ips": IPS,
    "snips": SNIPS,
    "dr": lambda: DR(TrainPopularity()),
    "sndr": lambda: SNDR(TrainPopularity()),
    "resampled_skew": lambda: WeightedResampling(SkewWeights()),
    "resampled_wtd_h": lambda: WeightedResampling(WTDWeights()),
    "resampled_ipw": lambda: WeightedResampling(InversePropensityWeights()),
    "stratified": Stratified,
    "stratified_ipw": lambda: Stratified(weighting="inverse_propensity"),
}

#: Metric name (in scenario files) -> the linear metric class (top-N lists; per-item AUC needs full rankings).
LINEAR_METRICS: dict[str, type[LinearMetric]] = {
    cls.name: cls for cls in (Hits, Precision, Recall, RecallTruncated, DCG, NDCG, MeanDCG)
}
