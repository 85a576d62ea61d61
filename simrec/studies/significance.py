"""The significance phase: paired tests between recommenders, judged against each world's truth (issue 26).

One task per (replicate r, world w), a shard ``DIR/significance/rep<r>__w<w>.parquet``
(:mod:`simrec.studies.phases`), holding one *outcome* per protocol x metric x
pair x test (:data:`simrec.significance.OUTCOME_COLUMNS`); then
``significance.csv``: :func:`simrec.significance.truth_table` over the
replicates (rates of significant-and-right, false significance where the
true difference is ~0, and wrong direction, with Wilson intervals).

The protocols (:data:`simrec.config.significance.PROTOCOLS`), each a paired
test on per-user values of A and B:

* ``full`` — every evaluated user's metric on the observed test items
  (:attr:`simrec.experiment.Replicate.per_user`; the replicate's own seed
  ``task_seed(seed, r, w)``, so its data are exactly the run's); truth: the
  metric against the true preferences (the replicate's ``truth == "true"``
  value, averaged over replicates: :func:`~simrec.significance.truth_table`);
* ``users`` — the same values on ``users`` users drawn without replacement
  (one draw per replicate, shared by A and B); same truth;
* ``sampled_naive`` / ``sampled_corrected`` — leave-one-out in the same
  world (:func:`simrec.stress.simulate_loo_data`,
  :func:`simrec.stress.score_ranks`): each user's held-out item ranked among
  ``negatives`` sampled negatives (:func:`simrec.sampling.sample_ranks_binomial`),
  the metric's rank function at K = N on the sampled rank (naive) or K&R's
  BV γ correction of it (:func:`simrec.sampling.bias_variance`, per user:
  F̂(r_u)); truth: the metric of the held-out item drawn from the user's
  true relevant candidates (:func:`simrec.stress.harness.true_metric_values`'
  "leave-one-out in the truth"); with the evaluation's ``max_users``, a
  uniform sample of the leave-one-out users (:mod:`simrec.user_sample`), as
  ``full`` evaluates the replicate's sample;
* ``full_ips`` — as ``full`` (same replicate, users and lists), each user's
  value the IPS estimate with the world's propensities
  (:func:`simrec.debias.ips_per_user`:
  :math:`\\hat M_u = \\sum_{i \\in S_u} c_u(Z_{ui}) / p_{ui} \\,/\\, g_u(n_u)`),
  observed vs MNAR-corrected: the same truth as ``full``.

Decisions: the sampled ranks of A and B are drawn independently (the
binomial model of K&R §4.3), not from one shared set of negatives; the
``users`` sample and every random test's ``rng`` are spawned from the task's
significance seed (child :data:`SEED_CHILD` of the replicate's seed, an index
no recommender reaches), in the spec's order, so serial, process and Ray runs
give the same table. Each task regenerates its replicate (the run's shards
hold means, not per-user values): the phase costs about one more run.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from simrec import sampling
from simrec._random import as_generator, spawn_seeds, task_seed
from simrec.config.significance import SignificanceSpec
from simrec.debias import ips_per_user, linear_metric
from simrec.experiment import Evaluation, World, run_replicate
from simrec.rundir import FRAMES, RunDir
from simrec.significance import PairedTest, UndefinedStatisticWarning, truth_table
from simrec.stress.harness import estimator_items
from simrec.stress.sources import RecommenderRanks, score_ranks, simulate_loo_data
from simrec.studies.phases import KeyedTask, Phase, PhaseOutcome, Phases

__all__ = ["SignificancePlan", "significance_phase", "SEED_CHILD", "SIGNIFICANCE_FOLDER", "LOO_RANK_FUNCTIONS"]

#: Child of a replicate's seed that seeds its significance task (run_replicate uses children 0 .. 2 + recommenders).
SEED_CHILD = 1_000_000
#: The phase's shard folder.
SIGNIFICANCE_FOLDER = "significance"

#: Scenario metric -> leave-one-out rank function (at K = N): with one held-out item, the list metric as a
#: function of the item's rank (also the assessment's sim-to-real check, :mod:`simrec.studies.assess_sim_to_real`).
LOO_RANK_FUNCTIONS = {
    "precision": sampling.precision,
    "recall": sampling.recall,
    "ndcg": sampling.ndcg,
    "reciprocal_rank": sampling.reciprocal_rank,
    "average_precision": sampling.average_precision,
    "hit": sampling.hit_ratio,
}
_LOO = LOO_RANK_FUNCTIONS


@dataclass(frozen=True)
class SignificancePlan:
    """What every task of the phase tests (picklable; built once from a validated spec).

    Attributes
    ----------
    tests : tuple of PairedTest
    protocols : tuple of str
    pairs : tuple of (str, str)
        Recommender names (A, B).
    metrics : tuple of str
        Scenario metric names.
    users, negatives : int
        The ``users`` protocol's sample; the ``sampled_*`` protocols' negatives.
    gamma, confidence : float
    """

    tests: tuple[PairedTest, ...]
    protocols: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    metrics: tuple[str, ...]
    users: int
    negatives: int
    gamma: float
    confidence: float

    @classmethod
    def of(cls, spec: SignificanceSpec, evaluation: Evaluation) -> SignificancePlan:
        recs = [r.name for r in evaluation.recommenders]
        return cls(
            spec.paired_tests(),
            tuple(spec.protocols),
            tuple(spec.chosen_pairs(recs)),
            tuple(spec.chosen_metrics([m.name for m in evaluation.metrics])),
            spec.users,
            spec.negatives,
            spec.gamma,
            spec.confidence,
        )


def _tests(plan: SignificancePlan, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Every test of the plan on one pair's per-user values."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for test in plan.tests:
            res = test(a, b, rng=rng, confidence=plan.confidence)
            out.append(
                {
                    "test": test.name,
                    "p_value": float(res.p_value),
                    "sign": float(res.sign),
                    "mean_difference": float(res.mean_difference),
                }
            )
    return out


def _holdout_values(
    plan: SignificancePlan, world: World, evaluation: Evaluation, seed: Any, r: int, gen: np.random.Generator
) -> list[tuple[str, str, str, str, np.ndarray, np.ndarray, float]]:
    """(protocol, metric, a, b, values of A, values of B, true difference) of the ``full`` and ``users`` protocols."""
    rep = run_replicate(world, evaluation, seed, r)
    n = rep.users.size
    sample = np.sort(gen.choice(n, size=min(plan.users, n), replace=False))
    out = []
    for m in plan.metrics:
        for a, b in plan.pairs:
            va, vb = rep.per_user[a, m, "observed"], rep.per_user[b, m, "observed"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a recommender with no defined true value
                truth = float(np.nanmean(rep.per_user[a, m, "true"]) - np.nanmean(rep.per_user[b, m, "true"]))
            if "full" in plan.protocols:
                out.append(("full", m, a, b, va, vb, truth))
            if "users" in plan.protocols:
                out.append(("users", m, a, b, va[sample], vb[sample], truth))
    return out


def _true_loo(ranks: RecommenderRanks, metric: sampling.RankMetric) -> float:
    """The metric of the held-out item drawn from each user's true relevant candidates, averaged over users
    (a cutoff metric: the domain size only bounds the ranks)."""
    vals = metric(ranks.true_ranks, int(ranks.n_candidates.max()))
    true_users = cast(np.ndarray, ranks.true_users)  # set with true_ranks
    counts = np.bincount(true_users, minlength=ranks.n_users)
    sums = np.bincount(true_users, weights=vals, minlength=ranks.n_users)
    ok = counts > 0
    return float((sums[ok] / counts[ok]).mean()) if ok.any() else float("nan")


def _sampled_values(
    plan: SignificancePlan, world: World, evaluation: Evaluation, seeds: list[np.random.SeedSequence]
) -> list[tuple[str, str, str, str, np.ndarray, np.ndarray, float]]:
    """The ``sampled_naive`` / ``sampled_corrected`` protocols' per-user values (module docstring)."""
    sampled = [p for p in plan.protocols if p.startswith("sampled")]
    if not sampled:
        return []
    data = simulate_loo_data(world, seeds[0], max_users=evaluation.max_users)
    by_name = {r.name: (j, r) for j, r in enumerate(evaluation.recommenders)}
    needed = sorted({name for pair in plan.pairs for name in pair}, key=lambda x: by_name[x][0])
    rank_seeds = spawn_seeds(seeds[1], len(evaluation.recommenders))
    draw_seeds = spawn_seeds(seeds[2], len(evaluation.recommenders))
    ranks = {name: score_ranks(by_name[name][1], data, rank_seeds[by_name[name][0]]) for name in needed}
    drawn = {
        name: sampling.sample_ranks_binomial(
            rk.ranks, rk.n_candidates, plan.negatives, rng=draw_seeds[by_name[name][0]]
        )
        for name, rk in ranks.items()
    }
    k, n = evaluation.n, plan.negatives
    out = []
    for m in plan.metrics:
        f = _LOO[m](k)
        for a, b in plan.pairs:
            truth = _true_loo(ranks[a], f) - _true_loo(ranks[b], f)
            if "sampled_naive" in plan.protocols:
                out.append(("sampled_naive", m, a, b, f(drawn[a], n), f(drawn[b], n), truth))
            if "sampled_corrected" in plan.protocols:
                scheme = sampling.SamplingScheme.cached(estimator_items(ranks[a]), n)
                fhat = sampling.bias_variance(f, scheme, plan.gamma).values
                out.append(("sampled_corrected", m, a, b, fhat[drawn[a] - 1], fhat[drawn[b] - 1], truth))
    return out


def _ips_values(
    plan: SignificancePlan, world: World, evaluation: Evaluation, seed: Any
) -> list[tuple[str, str, str, str, np.ndarray, np.ndarray, float]]:
    """The ``full_ips`` protocol's per-user values (module docstring); truth: the per-user truths' means."""
    if "full_ips" not in plan.protocols:
        return []
    needed = list(dict.fromkeys(name for pair in plan.pairs for name in pair))
    values = ips_per_user(world, evaluation, seed, {m: linear_metric(m) for m in plan.metrics}, needed)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a recommender with no defined true value
        for m in plan.metrics:
            for a, b in plan.pairs:
                va, vb = values[a, m], values[b, m]
                truth = float(np.nanmean(va.truth) - np.nanmean(vb.truth))
                out.append(("full_ips", m, a, b, va.estimate, vb.estimate, truth))
    return out


def _significance_task(payload: tuple[World, Evaluation, Any, int, SignificancePlan]) -> pd.DataFrame:
    """One replicate of one world: every protocol x metric x pair x test's outcome."""
    world, evaluation, seed, r, plan = payload
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    seeds = spawn_seeds(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, SEED_CHILD)), 5)
    cases = []
    if {"full", "users"} & set(plan.protocols):
        cases += _holdout_values(plan, world, evaluation, seed, r, as_generator(seeds[0]))
    cases += _sampled_values(plan, world, evaluation, seeds[1:4])
    cases += _ips_values(plan, world, evaluation, seed)  # last: the other cases keep their test seeds
    test_seeds = spawn_seeds(seeds[4], len(cases))
    rows = []
    for (protocol, m, a, b, va, vb, truth), s in zip(cases, test_seeds):
        for out in _tests(plan, va, vb, as_generator(s)):
            rows.append(
                {"world": world.name, "protocol": protocol, "metric": m, "a": a, "b": b, "replicate": r}
                | out
                | {"true_difference": truth}
            )
    return pd.DataFrame(rows)


def significance_phase(
    phases: Phases,
    spec: SignificanceSpec,
    worlds: list[World],
    evaluation: Evaluation,
    seed: int,
    replicates: int,
    rd: RunDir,
) -> pd.DataFrame:
    """Run the phase in ``phases`` (resuming from its shards); write and return ``significance.csv``.

    Parameters
    ----------
    phases : Phases
        The job's phases (its run directory, backend and progress).
    spec : SignificanceSpec
        Validated (with the scenario: :func:`simrec.config.run.load_scenario`).
    worlds, evaluation
        The scenario's, built.
    seed, replicates : int
        The scenario's: replicate r of world w has seed ``task_seed(seed, r, w)``, as in ``simrec run``.
    rd : RunDir
        Where ``significance.csv`` is written (atomically).

    Returns
    -------
    DataFrame
        ``significance.csv``: :func:`simrec.significance.truth_table` per world x protocol x metric x pair x test.
    """
    plan = SignificancePlan.of(spec, evaluation)
    tasks = []
    for r in range(replicates):
        for w, world in enumerate(worlds):
            s = task_seed(seed, r, w)
            tasks.append(
                KeyedTask(
                    f"rep{r:05d}__w{w:03d}",
                    f"significance, replicate {r}, world {world.name}",
                    s,
                    (world, evaluation, s, r, plan),
                )
            )
    out: PhaseOutcome[pd.DataFrame] = phases.run(
        Phase(_significance_task, "significance replicates", SIGNIFICANCE_FOLDER, FRAMES), tasks
    )
    outcomes = pd.concat(out.values, ignore_index=True)
    table = truth_table(outcomes, alpha=spec.alpha, tolerance=spec.tolerance, confidence=spec.confidence)
    rd.write_csv("significance.csv", table)
    return table
