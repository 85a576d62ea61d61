"""``simrec assess``'s sim-to-real check: do the calibrated worlds order *your* algorithms as your data does?

Per calibrated world, the user's own algorithms at the user's protocol (its
split, list length N and metrics at K = N; full ranking, the exact metric a
sampled evaluation estimates) on the real data and in the world's replicates,
compared by :func:`simrec.calibration.response.compare_to_real` (the logic of
``simrec sim-to-real``, written once): real values with 95% intervals over
users, simulated ones with t intervals over replicates, per pair of
algorithms the real order (a tie when the paired interval of the gap covers
0) and the k of R replicates that reproduce it, with a Wilson interval and a
verdict. Nothing is trained twice where it can be avoided:

* **simulated side** — the worlds' run (phase 3): each replicate's mean
  observed value per algorithm and metric (``truth == "observed"``), at the
  data's split (:mod:`simrec.config.assess`: one protocol on both sides);
* **real side, leave-last-out** (``split = "last"``) — the sampling
  sub-run's held-out ranks (phase 5: each user's latest item ranked among the
  items the user did not train on, every algorithm trained once), through the
  metrics' leave-one-out rank functions at K = N (:mod:`simrec.sampling`):
  with one held-out item a list metric is a function of its rank. The metrics
  compared are the protocol's with such a function (:data:`LOO_METRICS`);
* **real side, holdout** (``split = "holdout"``) — no sub-run evaluates the
  user's holdout on the real data (the sampled evaluation is leave-one-out),
  so this step does, once: one task per algorithm in ``sim_to_real/`` (a
  resumable :data:`~simrec.shards.ARRAYS` shard each, ``r<j>``): the data read
  and held out with ``test_fraction`` (seed ``task_seed(seed, SEED_CHILD, 0)``,
  the same split for every algorithm; with ``max_users`` the same uniform sample of the evaluated
  users as in the worlds, :mod:`simrec.user_sample`), the algorithm trained on the rest
  (seed ``task_seed(seed, SEED_CHILD, 1, j)``), its top-N lists measured
  against the held-out items by the run study's list measures
  (:func:`simrec.metrics.measure_lists_many`), per user. The metrics compared
  are the protocol's list metrics (AUC and pAp@k need every score and are
  left out). Its memory is that of the sampling sub-run's ranks tasks (the
  same data, trained models and score blocks), which validation checked.

Outputs: ``sim_to_real.csv`` (per world x metric x algorithm: real and
simulated value with intervals, relative error) and
``sim_to_real_orders.csv`` (per world x metric x pair: the real gap and order,
k of R with the Wilson interval, verdict); the report's check and its warning
are :func:`simrec.assess.sim_to_real.sim_to_real_finding`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from simrec._random import as_generator, task_seed
from simrec.calibration.response import SimToReal, compare_to_real
from simrec.config.assess import Assessment
from simrec.config.significance import LOO_METRICS
from simrec.rundir import ARRAYS, RunDir
from simrec.studies.phases import KeyedTask, Phase, Phases
from simrec.tasks import Backend

__all__ = [
    "AssessProtocol",
    "AssessSimToReal",
    "assess_sim_to_real",
    "compared_metrics",
    "real_values_from_ranks",
    "simulated_means",
    "SEED_CHILD",
    "FOLDER",
]

#: Child of the assessment's seed that seeds the real holdout evaluation (far from the run's replicates
#: ``task_seed(seed, r, w)`` and the stress study's children 0-2).
SEED_CHILD = 3_000_000
#: The shard folder of the real holdout evaluation.
FOLDER = "sim_to_real"


@dataclass(frozen=True)
class AssessProtocol:
    """The user's protocol as the comparison sees it (a :class:`~simrec.calibration.response.ComparedProtocol`)."""

    algorithms: tuple[str, ...]
    metrics: tuple[str, ...]
    n: int
    text: str

    def label(self) -> str:
        return self.text


@dataclass(frozen=True)
class AssessSimToReal:
    """The check's comparisons (one per world), the two tables written, and what was left out."""

    comparisons: tuple[SimToReal, ...]
    protocol: AssessProtocol
    values: pd.DataFrame
    orders: pd.DataFrame
    #: The protocol's metrics not compared (no leave-one-out rank function, or no list metric).
    not_compared: tuple[str, ...]
    #: Where the real values come from, in words.
    source: str
    #: Users evaluated on the real data.
    real_users: int
    #: Tasks of the real holdout evaluation run now and reused (0 and 0 with leave-last-out).
    computed: int = 0
    reused: int = 0


def compared_metrics(split: str, metrics: list[str] | tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The protocol's metrics the check compares at ``split``, and the others (module docstring)."""
    from simrec.metrics import METRICS

    if split == "last":
        ok = [m for m in metrics if m in LOO_METRICS]
    else:
        ok = [m for m in metrics if not cast(Any, METRICS[m]).needs_scores]  # a class attribute
    return ok, [m for m in metrics if m not in ok]


def real_values_from_ranks(source: Any, algorithms: tuple[str, ...], metrics: list[str], n: int) -> dict:
    """Per-user leave-one-out values of ``metrics`` at K = ``n`` from a stress sub-run's held-out ranks.

    ``source`` is a :class:`simrec.stress.RankSource` whose recommenders share their users (a dataset source:
    one split for every recommender); the result maps (algorithm, metric) to shape (n_users,), users in one order.
    """
    from simrec.studies.significance import LOO_RANK_FUNCTIONS

    first = source.get(algorithms[0])
    out = {}
    for a in algorithms:
        r = source.get(a)
        if not np.array_equal(np.asarray(r.users), np.asarray(first.users)):
            raise ValueError(f"the held-out ranks of {a!r} and {algorithms[0]!r} are of different users")
        for m in metrics:  # a cutoff metric: the ranking's size only bounds the ranks
            f = LOO_RANK_FUNCTIONS[m](n)
            out[(a, m)] = np.asarray(f(r.ranks, int(r.n_candidates.max())), dtype=float)
    return out


def simulated_means(results: pd.DataFrame, world: str, algorithms: tuple[str, ...], metrics: list[str]) -> dict:
    """Per (algorithm, metric): a world's mean observed value in each replicate (replicates ascending)."""
    sub = results[(results["world"] == world) & (results["truth"] == "observed")]
    wide = sub.pivot_table(
        index="replicate", columns=["recommender", "metric"], values="value", aggfunc="first", dropna=False
    ).sort_index()
    # a key with no value in any replicate (undefined everywhere, or absent) is all NaN, not a KeyError
    return {
        (a, m): (wide[(a, m)].to_numpy(dtype=float) if (a, m) in wide.columns else np.full(len(wide), np.nan))
        for m in metrics
        for a in algorithms
    }


def _real_holdout_task(payload: tuple) -> dict[str, np.ndarray]:
    """One algorithm on the real data's holdout: per-user list metrics against the held-out items."""
    import scipy.sparse as sp

    from simrec.metrics import METRICS, ListMetric, measure_lists_many
    from simrec.recommenders import lists_of
    from simrec.split import holdout
    from simrec.user_sample import sample_evaluated

    dataset, data_path, rec_spec, j, test_fraction, n, metrics, max_users, seed = payload
    inter = dataset.read(Path(data_path))
    split_seed = task_seed(seed, SEED_CHILD, 0)
    split = holdout(inter, test_fraction, as_generator(split_seed))
    # the protocol's user sample (simrec.user_sample), as in the worlds: the same users for every algorithm
    users = sample_evaluated(np.flatnonzero(split.evaluated), max_users, split_seed)
    rec = rec_spec.build()
    lists = lists_of(rec, split.train, None, n, as_generator(task_seed(seed, SEED_CHILD, 1, j)), users)
    relevant = sp.csr_array(split.test.matrix[users])
    values = measure_lists_many([lists], relevant, [cast(ListMetric, METRICS[m]()) for m in metrics])[0]
    return {"users": users.astype(np.int64), **{m: np.asarray(values[m], dtype=float) for m in metrics}}


def _real_holdout_values(
    rd: RunDir, assessment: Assessment, metrics: list[str], backend: Backend, progress: bool
) -> tuple[dict, int, tuple[int, int]]:
    """Phase of the real holdout evaluation (module docstring): per-user values, the number of users, and the
    tasks computed and reused."""
    spec, pr = assessment.spec, assessment.spec.protocol
    phases = Phases(rd, backend, f"{spec.name} sim-to-real (your data)", progress)
    phase: Phase = Phase(_real_holdout_task, "algorithms", FOLDER, ARRAYS)
    tasks = [
        KeyedTask(
            f"r{j:03d}",
            f"algorithm {j} on the real data's holdout",
            task_seed(spec.seed, SEED_CHILD, 1, j),
            (
                spec.dataset,
                str(assessment.data_path),
                r,
                j,
                pr.test_fraction,
                pr.n,
                tuple(metrics),
                pr.max_users,
                spec.seed,
            ),
        )
        for j, r in enumerate(pr.recommenders)
    ]
    done = phases.run(phase, tasks)
    out = done.values
    names = [r.build().name for r in pr.recommenders]
    values = {(a, m): np.asarray(got[m], dtype=float) for a, got in zip(names, out) for m in metrics}
    return values, int(len(out[0]["users"])), (done.computed, done.reused)


def _tables(comparisons: tuple[SimToReal, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    values = pd.concat([c.table.assign(world=c.world) for c in comparisons], ignore_index=True)
    orders = pd.concat([c.orders.assign(world=c.world) for c in comparisons], ignore_index=True)
    first = ["world"]
    return values[first + [c for c in values.columns if c != "world"]], orders[
        first + [c for c in orders.columns if c != "world"]
    ]


def assess_sim_to_real(
    rd: RunDir, assessment: Assessment, run: Any, stress: Any, backend: Backend, progress: bool
) -> AssessSimToReal | None:
    """The check in the assessment folder ``rd``: ``sim_to_real.csv``, ``sim_to_real_orders.csv`` (module docstring).

    Parameters
    ----------
    rd : RunDir
    assessment : Assessment
    run : simrec.studies.RunOutcome
        The worlds' run (its ``results``).
    stress : simrec.studies.StressOutcome
        The sampling sub-run (its ``source``: the held-out ranks of leave-last-out).
    backend, progress
        As for the other phases (the holdout evaluation's tasks).

    Returns
    -------
    AssessSimToReal or None
        None when no metric of the protocol can be compared (nothing is written).
    """
    pr = assessment.spec.protocol
    metrics, left_out = compared_metrics(pr.split, pr.metrics)
    if not metrics:
        return None
    algorithms = tuple(dict.fromkeys(run.results["recommender"]))
    counts = (0, 0)
    if pr.split == "last":
        real = real_values_from_ranks(stress.source, algorithms, metrics, pr.n)
        n_users = int(stress.source.get(algorithms[0]).n_users)
        source = "your data's held-out latest items, ranked in the sampled evaluation's sub-run (no extra training)"
        split = "leave-last-out (in the worlds: a uniformly random consumption order)"
    else:
        real, n_users, counts = _real_holdout_values(rd, assessment, metrics, backend, progress)
        source = "your algorithms trained once more on your data's holdout (the sampled evaluation is leave-one-out)"
        split = f"holdout of {pr.test_fraction:g} of each user's items"
    protocol = AssessProtocol(algorithms, tuple(metrics), pr.n, f"{split}, lists of N = {pr.n}, every item ranked")
    worlds = tuple(dict.fromkeys(run.results["world"]))
    comparisons = tuple(
        compare_to_real(
            real,
            simulated_means(run.results, w, algorithms, metrics),
            protocol,
            w,
            confidence=assessment.spec.sampling.confidence,
        )
        for w in worlds
    )
    values, orders = _tables(comparisons)
    rd.write_csv("sim_to_real.csv", values)
    rd.write_csv("sim_to_real_orders.csv", orders)
    return AssessSimToReal(comparisons, protocol, values, orders, tuple(left_out), source, n_users, *counts)
