"""The time estimate of an assessment (``simrec assess``; :mod:`simrec.config.cost`, issue 28).

:func:`assessment_work` counts the work of an assessment's phases
(:mod:`simrec.studies.assess`) from the sub-studies' validated specs
(:meth:`simrec.config.assess.Assessment.work` passes them): the calibration's
sweep when no presets are named, the user's algorithms in the best-fitting
worlds (the run study, with ``[correction]`` its ``[debias]`` harness), the
significance step in the same worlds, the sampled evaluation on the real
data and, at a holdout protocol, the sim-to-real check's evaluation of the
user's algorithms on the real data's holdout
(:func:`real_holdout_work`; at leave-last-out the check reuses the sampled
evaluation's ranks). With ``protocol.max_users`` (the quick size's user sample,
:mod:`simrec.user_sample`) the scoring and ranking count the sampled users and
the training every user.
"""

from __future__ import annotations

from collections.abc import Sequence

from simrec.config.cost import Work
from simrec.config.recommenders import BaseRecommenderSpec
from simrec.config.run import Scenario
from simrec.config.significance import SignificanceSpec
from simrec.config.stress import StressScenario
from simrec.config.sweep import SweepSpec

__all__ = ["assessment_work", "calibrated_worlds_work", "real_holdout_work"]


def assessment_work(
    *,
    worlds: Scenario | None,
    significance: SignificanceSpec | None,
    stress: StressScenario,
    n_users: float,
    n_items: float,
    n_pairs: float,
    calibration: tuple[SweepSpec, str] | None = None,
    uncalibrated: Work | None = None,
    real_holdout: Work | None = None,
) -> Work:
    """The assessment's work: its phases' (module docstring).

    Parameters
    ----------
    worlds : Scenario or None
        The run study in the best-fitting worlds (presets named); None when the assessment calibrates first.
    significance : SignificanceSpec or None
        The significance step's section (counted in the worlds' run).
    stress : StressScenario
        The sampled evaluation on the real data, of ``n_users`` x ``n_items`` holding ``n_pairs`` ratings.
    calibration : (SweepSpec, path) or None
        The calibration's sweep and the assessment file (no presets named).
    uncalibrated : Work, optional
        With ``calibration``: the worlds' run and significance step at the dataset's size
        (:func:`calibrated_worlds_work`).
    real_holdout : Work, optional
        The sim-to-real check's real holdout evaluation (:func:`real_holdout_work`); None at leave-last-out.
    """
    sampled = stress.work(n_candidates=n_items, n_users=n_users, n_pairs=n_pairs) + (real_holdout or Work())
    if worlds is not None:
        return worlds.model_copy(update={"significance": significance}).work() + sampled
    if calibration is None:
        raise ValueError("`calibration` is required when `worlds` is None (the assessment calibrates first)")
    sweep, path = calibration
    return sweep.work(path) + (uncalibrated or Work()) + sampled


def calibrated_worlds_work(
    recommenders: Sequence[BaseRecommenderSpec],
    significance: SignificanceSpec | None,
    *,
    n_users: float,
    n_items: float,
    n_pairs: float,
    max_users: int | None,
    test_fraction: float,
    metrics: list[str],
    tasks: float,
) -> Work:
    """The worlds' run and significance step when the worlds are not known before the calibration: ``tasks``
    replicates of worlds of the dataset's size (its evaluated users, at most ``max_users``, x items scored, its
    ratings trained on; a leave-one-out replicate ranking every recommender's held-out items per task)."""
    scored = min(n_users, float(max_users or n_users))
    train = (1.0 - test_fraction) * n_pairs
    replicate = Work.total(r.work(scored, n_items, train_pairs=train) for r in recommenders)
    per_task = replicate + Work(tasks=1.0)
    if significance is not None:
        loo = Work.total(r.work(scored, n_items, train_pairs=n_pairs - n_users) for r in recommenders)
        loo = loo + Work(ranked=scored * n_items * len(recommenders))
        per_task = per_task + significance.work(
            replicate=replicate, loo=loo, n_users=scored, n_recommenders=len(recommenders), metrics=metrics
        )
    return per_task.times(tasks)


def real_holdout_work(
    recommenders: Sequence[BaseRecommenderSpec],
    *,
    n_users: float,
    n_items: float,
    n_pairs: float,
    max_users: int | None,
    test_fraction: float,
) -> Work:
    """The sim-to-real check's real holdout evaluation (:mod:`simrec.studies.assess_sim_to_real`): one task per
    algorithm, trained on the data's training part and scoring its evaluated users (at most ``max_users``)."""
    scored = min(n_users, float(max_users or n_users))
    train = (1.0 - test_fraction) * n_pairs
    return Work.total(r.work(scored, n_items, train_pairs=train) + Work(tasks=1.0) for r in recommenders)
