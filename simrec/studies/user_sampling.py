"""``[user_sampling]`` of ``simrec stress``: the user-sampling experiment as a phase of the stress run.

One task per user-sample size m_i with seed ``task_seed(seed, 3, i)`` (all
recommenders share its samples of users; :func:`~simrec.stress.user_sampling.run_user_sampling`),
written to ``DIR/user_sampling/m<size>.npz``; then ``user_sampling.csv``
(per K: estimates, intervals, coverage), ``user_sampling_tests.csv``
(pairwise tests at the summary cutoffs), ``user_sampling_errors.csv``
(dissertation Tables 6-7, tidy), ``user_sampling_table.csv`` (Tables 6-7 as
printed) and ``figures/user_sampling.png``. With ``user_sampling.estimators``,
the item-sampling estimators on each user sample replay the stress tasks'
draws (the seeds ``task_seed(seed, 2, j, s, i)`` of ``item_scheme`` s) and
write ``user_sampling_estimators.csv``, ``user_sampling_estimators_tests.csv``,
``user_sampling_estimators_errors.csv`` and ``user_sampling_estimators_table.csv``.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from simrec._figures import drawing
from simrec._random import task_seed
from simrec.config.stress import StressScenario
from simrec.rundir import ARRAYS
from simrec.stress.harness import StressResult
from simrec.stress.sources import RankSource, RecommenderRanks
from simrec.stress.tables import SUMMARY_KS
from simrec.stress.user_sampling import (
    UserSamplingConfig,
    UserSamplingResult,
    common_users,
    run_user_sampling,
    user_sampling_errors,
    user_sampling_estimator_errors,
    user_sampling_estimator_table,
    user_sampling_estimator_tests,
    user_sampling_estimator_wide,
    user_sampling_table,
    user_sampling_tests,
    user_sampling_wide,
)
from simrec.studies.phases import KeyedTask, Phase, Phases

__all__ = ["user_sampling_phase"]


def _user_sampling_task(
    task: tuple[tuple[RecommenderRanks, ...], int, UserSamplingConfig, np.random.SeedSequence, list | None],
) -> UserSamplingResult:
    recommenders, size, config, seed, item_seeds = task
    return run_user_sampling(recommenders, size, config, rng=seed, item_rngs=item_seeds)


def _tasks(sc: StressScenario, config: UserSamplingConfig, source: RankSource) -> list[KeyedTask]:
    """One task per size, seed ``task_seed(seed, 3, i)``; with estimators, the stress tasks' seeds to replay."""
    item_seeds = None
    if config.estimators:  # the stress tasks' seeds of item_scheme: replay their sampled ranks
        s = sc.sampling.schemes.index(config.item_scheme)
        item_seeds = [
            [task_seed(sc.seed, 2, j, s, i) for i in range(len(sc.sampling.sizes))]
            for j in range(len(source.recommenders))
        ]
    return [
        KeyedTask(
            f"m{m}",
            f"user sampling, m = {m}",
            task_seed(sc.seed, 3, i),
            (source.recommenders, m, config, task_seed(sc.seed, 3, i), item_seeds),
        )
        for i, m in enumerate(config.sizes)
    ]


def user_sampling_phase(
    phases: Phases,
    sc: StressScenario,
    source: RankSource,
    results: list[StressResult],
    *,
    figures: bool = True,
    figure_failures: list[str] | None = None,
) -> list[UserSamplingResult]:
    """Run the ``[user_sampling]`` experiment of ``sc`` (if any) into ``phases.rd``; its results by size.

    ``results`` are the stress cells (the item columns of Tables 6-7). A figure
    that fails is appended to ``figure_failures`` (raised when it is None;
    :func:`simrec._figures.drawing`).

    Raises
    ------
    ValueError
        A size above the users evaluated by every recommender (simulations:
        known only once the ranks exist; validation knows ``population.n_users``).
    """
    us, config = sc.user_sampling, sc.user_sampling_config()
    if us is None or config is None:
        return []
    n_users = common_users(source.recommenders).shape[0]
    big = [m for m in config.sizes if m > n_users]
    if big:
        raise ValueError(
            f"user_sampling.sizes: must be <= the number of users evaluated by every recommender ({n_users}); got {big}"
        )
    phase = Phase(
        _user_sampling_task,
        "users",
        "user_sampling",
        ARRAYS,
        encode=UserSamplingResult.to_arrays,
        decode=UserSamplingResult.from_arrays,
    )
    loaded = phases.run(phase, _tasks(sc, config, source)).values
    rd = phases.rd
    errors = user_sampling_errors(loaded, results, item_estimator=us.item_estimator or None, item_scheme=us.item_scheme)
    table = user_sampling_table(loaded)
    rd.write_csv("user_sampling.csv", table)
    rd.write_csv("user_sampling_tests.csv", user_sampling_tests(loaded, ks=SUMMARY_KS))
    rd.write_csv("user_sampling_errors.csv", errors)
    rd.write_csv("user_sampling_table.csv", user_sampling_wide(errors, source.name))
    est_table = user_sampling_estimator_table(loaded)  # empty without [user_sampling] estimators
    if config.estimators:
        est_errors = user_sampling_estimator_errors(loaded, results)
        rd.write_csv("user_sampling_estimators.csv", est_table)
        rd.write_csv("user_sampling_estimators_tests.csv", user_sampling_estimator_tests(loaded, ks=SUMMARY_KS))
        rd.write_csv("user_sampling_estimators_errors.csv", est_errors)
        rd.write_csv("user_sampling_estimators_table.csv", user_sampling_estimator_wide(est_errors, source.name))
    if figures:
        from simrec.stress.figures import plot_user_sampling, plot_user_sampling_estimators

        with nullcontext() if figure_failures is None else drawing(figure_failures, "user-sampling figures"):
            plot_user_sampling(rd.path("figures"), table)
            plot_user_sampling_estimators(rd.path("figures"), est_table)  # nothing when empty
    return loaded
