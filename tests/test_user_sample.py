"""The user sample of an evaluation (``max_users``, :mod:`simrec.user_sample`; issue 28).

What is proven here: the sample is a uniform draw without replacement (each
user's inclusion frequency against its exact m / U with a binomial
tolerance), a function of the seed only (the same users serially and in
worker processes), the full evaluation's values for the users it keeps (the
recommenders still train on every user), and the same rule in the worlds, in
the leave-one-out data of the real dataset and the significance step; the
key is validated with one clear message in the library and in each file.
"""

from __future__ import annotations

import numpy as np
import pytest

from simrec._random import task_seed
from simrec.config import ScenarioError
from simrec.experiment import Evaluation, World, run_replicate
from simrec.observation import TruncatedPareto, UniformSampler
from simrec.preference import Uniform
from simrec.recommenders import Popular, RandomRecommender, lists_of
from simrec.tasks import ProcessBackend, SerialBackend, Task, run_tasks
from simrec.user_sample import MIN_MAX_USERS, USER_SAMPLE_STREAM, sample_evaluated, user_sample_generator
from tests.cli_helpers import RUN_TOML


def _world() -> World:
    # 400 users, 80 items, about 15 true likes each, 3-10 observed
    return World(
        "unif-unif",
        Uniform(n_users=400, n_items=80, lam=15.0),
        TruncatedPareto(m_low=3, alpha=1.0, m_high=10),
        UniformSampler(),
    )


def _evaluation(max_users: int | None) -> Evaluation:
    return Evaluation(recommenders=(Popular(), RandomRecommender()), n=5, max_users=max_users)


def test_the_sample_is_uniform_without_replacement():
    # each of U = 500 users is kept with probability m / U = 0.2 exactly; over 2,000 seeds its count is
    # Binomial(2000, 0.2): sd 17.9, so every count within 5 sd of 400 (a false alarm for one of 500 users
    # has probability about 3e-4); the sample never repeats a user and is ascending
    users = np.arange(1000, 1500)
    counts = np.zeros(users.size)
    for s in range(2000):
        kept = sample_evaluated(users, 100, s)
        assert kept.size == 100 and (np.diff(kept) > 0).all()
        counts[kept - 1000] += 1
    assert np.abs(counts - 400).max() < 5 * np.sqrt(2000 * 0.2 * 0.8)


def test_the_sample_depends_on_the_seed_only_and_on_its_own_stream():
    users = np.arange(3000)
    a, b = sample_evaluated(users, 300, task_seed(9, 2, 1)), sample_evaluated(users, 300, task_seed(9, 2, 1))
    assert (a == b).all()
    assert not np.array_equal(a, sample_evaluated(users, 300, task_seed(9, 2, 0)))
    # its stream: child USER_SAMPLE_STREAM of the seed, not the seed's own (which the split or truth draws)
    own = np.random.default_rng(task_seed(9, 2, 1)).random(5)
    assert not np.array_equal(own, user_sample_generator(task_seed(9, 2, 1)).random(5))
    assert (
        user_sample_generator(task_seed(9, 2, 1)).random(5)
        == np.random.default_rng(task_seed(9, 2, 1, USER_SAMPLE_STREAM)).random(5)
    ).all()


def test_no_sample_when_the_users_fit():
    users = np.arange(150)
    assert sample_evaluated(users, None, 1) is users
    assert sample_evaluated(users, 150, 1) is users


@pytest.mark.parametrize("bad", [5, MIN_MAX_USERS - 1, 0, -3])
def test_the_library_refuses_a_sample_too_small_to_read(bad):
    with pytest.raises(ValueError, match=rf"`max_users` must be at least {MIN_MAX_USERS} .*; got {bad}"):
        Evaluation(recommenders=(Popular(),), max_users=bad)
    with pytest.raises(ValueError, match="`max_users` must be at least"):
        sample_evaluated(np.arange(500), bad, 1)


@pytest.mark.parametrize("bad", [150.0, True, "200"])
def test_the_library_refuses_a_max_users_that_is_not_an_integer(bad):
    with pytest.raises(TypeError, match="`max_users` must be an integer"):
        Evaluation(recommenders=(Popular(),), max_users=bad)


def test_a_replicate_evaluates_the_sample_with_the_full_evaluations_values():
    seed = task_seed(4, 0, 0)
    full = run_replicate(_world(), _evaluation(None), seed)
    part = run_replicate(_world(), _evaluation(150), seed)
    assert full.users.size > 300 and part.users.size == 150
    assert np.isin(part.users, full.users).all()
    where = np.searchsorted(full.users, part.users)
    for key, values in part.per_user.items():  # same data, same training, same lists for the kept users
        np.testing.assert_array_equal(values, full.per_user[key][where])
    assert (part.results["n_evaluated"] <= 150).all()
    assert part.info["evaluated_users"] == 150


def _users_of(payload: tuple[int, int]) -> np.ndarray:
    """The evaluated users of replicate r of the test world (a task payload, run in a worker)."""
    r, max_users = payload
    return run_replicate(_world(), _evaluation(max_users), task_seed(7, r, 0), r).users


def test_the_same_users_on_every_backend():
    tasks = [Task(f"rep {r}", r, (r, 120)) for r in range(3)]
    serial = run_tasks(_users_of, tasks, backend=SerialBackend())
    with ProcessBackend(2) as backend:
        workers = run_tasks(_users_of, tasks, backend=backend)
    for a, b in zip(serial, workers):
        assert a is not None and b is not None and a.size == 120 and (a == b).all()
    assert not np.array_equal(serial[0], serial[1])  # each replicate its own sample


def test_lists_of_takes_the_rows_of_a_recommender_without_recommend_users():
    from simrec.experiment import replicate_data

    data = replicate_data(_world(), _evaluation(None), 3)
    users = np.array([2, 5, 40, 41, 200])
    rows = lists_of(Popular(), data.split.train, None, 5, 11, users)
    np.testing.assert_array_equal(rows, Popular().recommend(data.split.train, None, 5, 11)[users])


def test_the_leave_one_out_sample_keeps_the_training_data_and_aligns_the_targets():
    from simrec.stress import loo_data
    from simrec.stress.sources import simulate_loo_data

    full = simulate_loo_data(_world(), 21)
    part = simulate_loo_data(_world(), 21, max_users=100)
    assert part.train is not None and part.train.n_pairs == full.train.n_pairs
    assert part.users.size == 100 and np.isin(part.users, full.users).all()
    np.testing.assert_array_equal(part.targets, full.targets[np.searchsorted(full.users, part.users)])
    assert part.info["evaluated_users"] == 100 and part.info["sampled_from_users"] == full.users.size
    assert full.with_user_sample(None, 21) is full
    # the same rule on a dataset's leave-one-out split (the real data's side of an assessment)
    data = loo_data(full.train, 5)
    assert data.with_user_sample(100, 5).users.size == 100


#: The tiny run scenario at 400 users x 80 items, Popular and Random, ``max_users = MAX``.
RUN_WITH_MAX_USERS = (
    RUN_TOML.replace("n_users = 40", "n_users = 400")
    .replace("n_items = 60", "n_items = 80")
    .replace("lam = 12.0", "lam = 15.0")
    .replace('[{ kind = "oracle" }, { kind = "popular" }]', '[{ kind = "popular" }, { kind = "random" }]')
    + "max_users = MAX\n"
)


def test_a_run_scenario_takes_max_users_and_says_what_is_wrong_with_it(tmp_path):
    from simrec.config.run import load_scenario

    path = tmp_path / "s.toml"
    path.write_text(RUN_WITH_MAX_USERS.replace("MAX", "150"))
    sc, _ = load_scenario(path)
    assert sc.evaluation.build().max_users == 150
    assert sc.work().model_scores == 0 and sc.work().scores == pytest.approx(2 * 150 * 80, rel=0.01)
    for bad, rule in [("20", "must be at least 100"), ("150.0", "integer"), ('"all"', "integer")]:
        path.write_text(RUN_WITH_MAX_USERS.replace("MAX", bad))
        with pytest.raises(ScenarioError) as err:
            load_scenario(path)
        assert "evaluation.max_users:" in str(err.value) and rule in str(err.value), str(err.value)


def test_without_max_users_a_scenarios_digest_is_unchanged(tmp_path):
    from simrec.config.run import load_scenario

    path = tmp_path / "s.toml"
    path.write_text(RUN_WITH_MAX_USERS.replace("max_users = MAX\n", ""))
    sc, _ = load_scenario(path)
    # the digest of a file without the key is the one before the key existed (defaults are left out)
    assert "max_users" not in sc.model_dump(mode="json", exclude_defaults=True)["evaluation"]
