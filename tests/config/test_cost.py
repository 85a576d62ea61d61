"""The time estimate printed before a long job (issue 28): counting, formatting, and through ``simrec.cli.main``.

The per-unit costs are monkeypatched so that the tiny jobs here are predicted
long (or short) without running long; whether the measured costs predict real
jobs within a factor of 2 is ``bench/bench_cost_model.py``'s table (not a
timed test).
"""

from __future__ import annotations

import doctest

import pytest

import simrec.config.cost as cost
from simrec.config.cost import Work, estimate_line, format_duration, wall_seconds
from simrec.config.run import load_scenario
from tests.cli_helpers import RUN_TOML, invoke


def test_the_docstring_examples_run():
    assert doctest.testmod(cost).failed == 0


def test_work_adds_up_and_costs_each_unit_once(monkeypatch):
    for name, value in [
        ("SECONDS_PER_PAIR", 1.0),
        ("SECONDS_PER_SCORE", 10.0),
        ("SECONDS_PER_MODEL_SCORE", 100.0),
        ("SECONDS_PER_DRAW", 1e3),
        ("SECONDS_PER_FIT", 1e4),
        ("SECONDS_PER_BOOT", 1e5),
        ("SECONDS_PER_TASK", 1e6),
    ]:
        monkeypatch.setattr(cost, name, value)
    w = Work(pairs=1, scores=2, model_scores=3) + Work(draws=4, fits=5, boots=6, tasks=7)
    assert w.seconds() == 1 + 20 + 300 + 4e3 + 5e4 + 6e5 + 7e6
    assert w.times(2).seconds() == 2 * w.seconds()
    assert Work.total([w, w, Work()]) == w.times(2)


def test_wall_time_divides_over_the_workers_the_cores_and_the_tasks_allow(monkeypatch):
    monkeypatch.setattr(cost, "SECONDS_START", 0.0)
    monkeypatch.setattr(cost, "SECONDS_PER_TASK", 10.0)
    w = Work(tasks=6)
    assert wall_seconds(w, 1, 2) == 60.0
    assert wall_seconds(w, 2, 2) == 30.0
    assert wall_seconds(w, 4, 2) == 30.0  # more workers than cores gain nothing
    assert wall_seconds(Work(tasks=1), 2, 2) == 10.0  # one task runs on one worker


def test_durations_are_said_in_the_unit_a_person_plans_with():
    assert [format_duration(s) for s in (5, 89, 90, 725, 5399, 5400, 36000)] == [
        "5 s",
        "89 s",
        "2 min",
        "12 min",
        "90 min",
        "1.5 h",
        "10 h",
    ]


def test_the_line_says_what_jobs_gain_only_when_there_are_cores_to_gain(monkeypatch):
    monkeypatch.setattr(cost, "SECONDS_START", 0.0)
    monkeypatch.setattr(cost, "SECONDS_PER_TASK", 60.0)
    w = Work(tasks=12)
    assert estimate_line(w, 1, n_cores=2).endswith("about 12 min on 1 of 2 cores; --jobs 2 about halves it")
    assert estimate_line(w, 1, n_cores=4).endswith("on 1 of 4 cores; --jobs 4 would take about 3 min")
    assert estimate_line(w, 2, n_cores=2).endswith("about 6 min on 2 cores (--jobs 2)")
    assert estimate_line(w, 1, n_cores=1).endswith("about 12 min on one core")
    assert estimate_line(w, 2, n_cores=2, parallel=False).endswith("about 12 min on one core")
    assert estimate_line(Work(tasks=1), 1, n_cores=2) is None  # 60 s: not over a minute


def test_a_run_counts_pairs_scores_and_tasks_per_world_and_replicate(tmp_path):
    (tmp_path / "s.toml").write_text(RUN_TOML.replace("replicates = 1", "replicates = 3"))
    sc, _ = load_scenario(tmp_path / "s.toml")
    w = sc.work()
    assert w.tasks == 3  # 3 replicates x 1 world
    # uniform preference: about lam = 12 relevant items per user (its expected_pairs, 12.00007 per user)
    assert w.pairs == pytest.approx(3 * 40 * 12.0, rel=1e-4)
    assert w.scores == pytest.approx(3 * 2 * 40 * 60)  # Oracle and Popular score 40 users x 60 items
    assert w.model_scores == 0 and w.fits == 0


@pytest.mark.parametrize("long", [True, False])
def test_the_estimate_is_printed_before_a_long_job_only(tmp_path, monkeypatch, long):
    # the tiny run's counted work (80 pairs, 4,800 scores, 1 task) made to cost 10 min, or under a minute
    monkeypatch.setattr(cost, "SECONDS_START", 0.0)
    monkeypatch.setattr(cost, "SECONDS_PER_TASK", 600.0 if long else 30.0)
    (tmp_path / "s.toml").write_text(RUN_TOML)
    for quiet in (["--quiet"], []):
        out = tmp_path / f"o{len(quiet)}"
        code, _, err = invoke(["run", str(tmp_path / "s.toml"), "--out", str(out), "--no-figures", *quiet])
        assert code == 0, err
        if long:  # on stderr, also with --quiet, before the job (its first line here)
            assert err.splitlines()[0].startswith("simrec: this job should take about 10 min on "), err
        else:
            assert "should take" not in err, err


def test_a_stress_job_counts_draws_fits_and_bootstrap_replicates_per_task(tmp_path):
    from simrec.config.stress import load_stress_scenario
    from tests.cli_helpers import STRESS_FILE_TOML

    (tmp_path / "s.toml").write_text(
        STRESS_FILE_TOML.replace('names = ["naive", "MLE"]', 'names = ["naive", "MLE"]\nn_boot = 4')
    )
    sc, _ = load_stress_scenario(tmp_path / "s.toml", check_data=False)
    w = sc.work(n_candidates=50.0, n_users=20.0, n_recommenders=2)
    # 2 recommenders x 1 scheme x 1 size: 2 tasks of 3 repeats x 20 users x 10 negatives, 3 x 2 estimator fits
    assert w.tasks == 2 and w.draws == 2 * 3 * 20 * 10 and w.fits == 2 * 3 * 2 and w.boots == 4 * w.fits
    assert w.scores == w.model_scores == w.pairs == 0  # a ranks file: nothing to score


# -- the harnesses, the calibration's Gaussian process, the user sample and remote clusters (issue 28) -----------

SIGNIFICANCE = (
    '\n[significance]\ntests = ["paired_t", "permutation"]\nprotocols = ["full", "sampled_naive"]\nnegatives = 20\n'
)
DEBIAS = '\n[debias]\nmetrics = ["recall", "precision"]\nestimators = ["naive", "ips", "snips"]\n'


def _run_work(tmp_path, extra: str = "", replicates: int = 2) -> Work:
    path = tmp_path / f"s{abs(hash(extra))}.toml"
    path.write_text(RUN_TOML.replace("replicates = 1", f"replicates = {replicates}") + extra)
    return load_scenario(path)[0].work()


def test_the_debias_section_adds_a_replicate_and_its_estimates(tmp_path):
    plain, debias = _run_work(tmp_path), _run_work(tmp_path, DEBIAS)
    assert debias.seconds() > plain.seconds()
    # per replicate: the replicate regenerated with its lists, and 40 users x 2 recommenders x 2 metrics x
    # (naive + ips and snips with the default two propensity kinds)
    assert debias.pairs == pytest.approx(2 * plain.pairs) and debias.scores == pytest.approx(2 * plain.scores)
    assert debias.estimates == pytest.approx(2 * 40 * 2 * 2 * (1 + 2 + 2))
    assert debias.tasks == plain.tasks  # the harness runs inside the replicate's task


def test_the_significance_section_adds_a_task_per_replicate_its_rankings_and_its_tests(tmp_path):
    plain, sig = _run_work(tmp_path), _run_work(tmp_path, SIGNIFICANCE)
    assert sig.seconds() > plain.seconds() and sig.tasks == 2 * plain.tasks
    # full: the replicate again; sampled_naive: a leave-one-out replicate ranking the held-out and truly
    # relevant items of 40 users among the 60 items, and 20 negatives per user and recommender
    assert sig.pairs == pytest.approx(3 * plain.pairs) and sig.ranked > 2 * 2 * 40 * 60
    assert sig.draws == pytest.approx(2 * 40 * 20 * 2)
    # tests: 2 protocols x 2 metrics x 1 pair x 40 users x (1 paired t + 1000 permutations), per replicate
    assert sig.test_draws == pytest.approx(2 * 2 * 2 * 1 * 40 * 1001)
    more = _run_work(tmp_path, SIGNIFICANCE.replace('"permutation"]', '"permutation"]\nresamples = 5000'))
    assert more.test_draws > 4 * sig.test_draws


def test_a_calibrations_gaussian_process_grows_as_the_cube_of_its_calls(tmp_path):
    from simrec.config.cost import SECONDS_PER_GP_CUBE, SECONDS_PER_GP_STEP, gp_work
    from simrec.config.sweep import load_sweep_spec
    from tests.cli_helpers import SWEEP_TOML

    (tmp_path / "sweep.toml").write_text(SWEEP_TOML)
    sweep = load_sweep_spec(tmp_path / "sweep.toml")
    searches = len(sweep.cells()) * len(sweep.objectives)
    w50, w150 = sweep.work(tmp_path / "sweep.toml", 50), sweep.work(tmp_path / "sweep.toml", 150)
    assert w150.gp_steps == searches * (150 - 2) and w150.gp_cubes == searches * sum(k**3 for k in range(2, 150))
    gp = [SECONDS_PER_GP_STEP * w.gp_steps + SECONDS_PER_GP_CUBE * w.gp_cubes for w in (w50, w150)]
    assert w150.gp_cubes > 27 * w50.gp_cubes and gp[1] > 4 * gp[0]  # three times the calls: over 4x the GP's time
    assert gp_work(10, 10).gp_steps == 0 and gp_work(5, 10).gp_steps == 0  # random trials only: no GP


def test_a_response_calibration_counts_the_algorithms_each_trial_trains(tmp_path):
    """A search of a response objective trains the protocol's algorithms on every trial's simulation (and on
    the real data once per dataset); a search of a statistic trains nothing."""
    from simrec.config.sweep import load_sweep_spec
    from tests.cli_helpers import SWEEP_TOML

    def spec(objectives: str, response: str = "") -> str:  # top-level keys before the dataset table
        return (
            SWEEP_TOML.replace("[[dataset]]", f"denoise_seeds = 0\nobjectives = {objectives}\n[[dataset]]") + response
        )

    kl = spec('["item_popularity"]')
    both = spec('["item_popularity", "response_loss"]')
    response = spec('["item_popularity", "response_loss"]', '[response]\nalgorithms = ["Popular", "ItemKNN"]\n')
    works = []
    for i, text in enumerate((kl, both, response)):
        (tmp_path / f"s{i}.toml").write_text(text)
        works.append(load_sweep_spec(tmp_path / f"s{i}.toml").work(tmp_path / f"s{i}.toml"))
    kl_work, both_work, one_algorithm = works
    assert kl_work.model_fits == 0 and kl_work.imports == 0
    trials = 2  # n_calls, no de-noising; one cell, one response search
    assert both_work.model_fits == 2 * (trials + 1)  # ItemKNN and ImplicitMF (Popular is not trained)
    assert one_algorithm.model_fits == trials + 1 and one_algorithm.imports > 0
    assert both_work.pairs == pytest.approx(2 * kl_work.pairs)  # the second search simulates as much
    assert both_work.seconds() > 2 * kl_work.seconds()


def test_a_user_sample_scores_fewer_users_and_trains_on_every_user(tmp_path):
    text = RUN_TOML.replace("n_users = 40", "n_users = 400").replace(
        'recommenders = [{ kind = "oracle" }, { kind = "popular" }]',
        'recommenders = [{ kind = "popular" }, { kind = "lenskit", algorithm = "item_knn" }]',
    )
    (tmp_path / "a.toml").write_text(text)
    (tmp_path / "b.toml").write_text(text.replace("[evaluation]", "[evaluation]\nmax_users = 100"))
    full, part = load_scenario(tmp_path / "a.toml")[0].work(), load_scenario(tmp_path / "b.toml")[0].work()
    assert part.scores == pytest.approx(full.scores / 4) and part.model_scores == pytest.approx(full.model_scores / 4)
    assert part.train_pairs == full.train_pairs > 0 and part.pairs == full.pairs


def test_on_a_ray_cluster_the_work_divides_over_its_cpus_not_this_machines_cores(monkeypatch):
    monkeypatch.setattr(cost, "SECONDS_START", 0.0)
    monkeypatch.setattr(cost, "SECONDS_PER_TASK", 60.0)
    w = Work(tasks=64)  # 64 min of tasks
    line = estimate_line(w, 1, n_cores=2, cluster_cpus=16)
    assert line == (
        "simrec: this job should take about 4 min on the Ray cluster's 16 CPUs (if each is as fast as this machine's)"
    )
    assert estimate_line(Work(tasks=16), 1, n_cores=2, cluster_cpus=16) is None  # a minute on 16 CPUs


@pytest.mark.parametrize("section, unit", [(DEBIAS, "SECONDS_PER_ESTIMATE"), (SIGNIFICANCE, "SECONDS_PER_TEST_DRAW")])
def test_a_section_alone_can_make_a_job_long_enough_to_announce(tmp_path, monkeypatch, section, unit):
    # the section's unit made expensive: the same tiny run is announced with the section and not without it
    monkeypatch.setattr(cost, unit, 1.0)
    for extra, announced in (("", False), (section, True)):
        (tmp_path / "s.toml").write_text(RUN_TOML + extra)
        out = tmp_path / f"o{announced}"
        code, _, err = invoke(["run", str(tmp_path / "s.toml"), "--out", str(out), "--no-figures", "-q"])
        assert code == 0, err
        assert ("simrec: this job should take about" in err) == announced, err


def test_a_calibration_is_announced_from_its_gaussian_process_alone(tmp_path, monkeypatch):
    from tests.cli_helpers import SWEEP_TOML

    monkeypatch.setattr(cost, "SECONDS_PER_GP_STEP", 100.0)
    monkeypatch.setattr(cost, "SECONDS_PER_PAIR", 0.0)
    (tmp_path / "sweep.toml").write_text(SWEEP_TOML.replace("n_calls = 2\n", "n_calls = 3\n"))
    code, _, err = invoke(
        ["calibrate", str(tmp_path / "sweep.toml"), "--out", str(tmp_path / "o"), "-q", "--no-figures"]
    )
    assert code == 0, err
    assert err.splitlines()[0].startswith("simrec: this job should take about"), err  # one GP step: 100 s
