"""`simrec stress` with a `[user_sampling]` table: validation, the tables written, backends, CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import invoke

from simrec.config import ScenarioError
from simrec.config.stress import load_stress_scenario
from simrec.studies import run_stress_scenario
from simrec.tasks import ProcessBackend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ranks"

#: good.csv holds 60 users for each of the recommenders A, B and C.
SCENARIO = """
kind = "stress"
name = "tiny-users"
seed = 5
repeats = 3
[source]
type = "file"
path = "{path}"
[sampling]
schemes = ["binomial"]
sizes = [20]
[estimators]
names = ["naive", "MN_MES"]
[metrics]
names = ["recall", "ndcg"]
k_max = 10
curve_k = 5
curve_sizes = [10, 50]
[user_sampling]
sizes = [20, 60]
repeats = 30
"""

OUTPUTS = ("user_sampling.csv", "user_sampling_tests.csv", "user_sampling_errors.csv", "user_sampling_table.csv")


def _scenario(tmp_path: Path, old: str = "", new: str = "", name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(SCENARIO.format(path=FIXTURES / "good.csv").replace(old, new))
    return p


def _tables(out: Path, names: tuple[str, ...] = OUTPUTS) -> dict[str, pd.DataFrame]:
    return {name: pd.read_csv(out / name) for name in names}


#: The item-sampling estimators on the user samples: 3 repeats as the stress tasks, 3 bootstrap replicates.
ESTIMATORS = ("repeats = 30", 'repeats = 3\nestimators = ["naive", "MN_MES"]\nn_boot = 3')
ESTIMATOR_OUTPUTS = OUTPUTS + (
    "user_sampling_estimators.csv",
    "user_sampling_estimators_tests.csv",
    "user_sampling_estimators_errors.csv",
    "user_sampling_estimators_table.csv",
)


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory) -> tuple[Path, dict[str, pd.DataFrame]]:
    work = tmp_path_factory.mktemp("us")
    sc, path = load_stress_scenario(_scenario(work))
    run_stress_scenario(sc, path, work / "out", progress=False, figures=False)
    return work / "out", _tables(work / "out")


def test_tables_are_written(serial_run):
    out, t = serial_run
    per_k = t["user_sampling.csv"]
    assert set(per_k["size"]) == {20, 60} and set(per_k["recommender"]) == {"A", "B", "C"}
    assert (per_k["n_repeats"] == 30).all() and (per_k["n_population"] == 60).all()
    everyone = per_k[per_k["size"] == 60]  # all 60 users: the exact metric, zero width
    np.testing.assert_allclose(everyone["mean"], everyone["exact"], rtol=0, atol=1e-15)
    assert (everyone["coverage"] == 1).all() and (everyone["mean_half_width"] == 0).all()
    tests = t["user_sampling_tests.csv"]
    assert set(tests["test"]) == {"two_sample", "paired"} and (tests["n_pairs"] == 3).all()
    assert set(tests["k"]) <= {1, 5, 10}  # the summary cutoffs up to k_max
    wide = t["user_sampling_table.csv"]
    assert list(wide.columns) == ["dataset", "model", "metric", "item20", "user20", "user60"]
    assert (wide["user60"] == "0.00±0.00").all()
    errors = t["user_sampling_errors.csv"]
    assert set(errors["estimator"]) == {"MN_MES", "user_average"}
    assert (out / "user_sampling" / "m20.npz").exists()


def test_resume_reuses_the_user_sampling_shards(serial_run, tmp_path):
    out, before = serial_run
    sc, path = load_stress_scenario(_scenario(tmp_path))
    outcome = run_stress_scenario(sc, path, out, progress=False, figures=False)
    assert outcome.computed == 0
    for name, frame in _tables(out).items():
        pd.testing.assert_frame_equal(frame, before[name], check_exact=True, obj=name)


@pytest.mark.parametrize(
    "old, new, pattern",
    [
        (
            "sizes = [20, 60]",
            "sizes = [20, 61]",
            r"user_sampling.sizes: must be <= the number of users \(users common to every recommender of .*good.csv = 60\); "
            r"got \[61\]",
        ),
        ("sizes = [20, 60]", "sizes = [1]", r"user_sampling.sizes\[0\]: Input should be greater than or equal to 2"),
        ("sizes = [20, 60]", "sizes = []", r"user_sampling.sizes"),
        ("sizes = [20, 60]", "sizes = [20, 20]", r"user_sampling: `sizes` lists 20 twice"),
        ("sizes = [20, 60]", "sizes = [20.5]", r"user_sampling.sizes\[0\]"),
        ("repeats = 30", "repeats = 0", r"user_sampling.repeats"),
        ("repeats = 30", "repeats = 30\nconfidence = 1.5", r"user_sampling.confidence"),
        ("repeats = 30", "repeats = 30\ncolour = 1", r"user_sampling.colour: unknown key"),
        (
            "repeats = 30",
            'repeats = 30\nitem_estimator = "MLE"',
            r"user_sampling.item_estimator: must be one of the scenario's estimators \(naive, MN_MES\).*got 'MLE'",
        ),
        (
            "repeats = 30",
            'repeats = 30\nitem_scheme = "hypergeometric"',
            r"user_sampling.item_scheme: must be one of sampling.schemes \(binomial\); got 'hypergeometric'",
        ),
        ("repeats = 30", 'repeats = 30\nitem_scheme = "adaptive"', r"user_sampling.item_scheme"),
    ],
)
def test_invalid_user_sampling_is_reported_with_its_key(tmp_path, old, new, pattern):
    with pytest.raises(ScenarioError, match=pattern):
        load_stress_scenario(_scenario(tmp_path, old, new))


SIM_SCENARIO = """
kind = "stress"
name = "sim-users"
seed = 1
[source]
type = "simulation"
population = { n_users = 50, n_items = 80 }
world = { name = "u", preference = { model = "uniform", lam = 10.0 }, observation = { sampler = "uniform", profile = { model = "pareto", m_low = 3, alpha = 1.0, m_high = 10 } } }
recommenders = [{ kind = "popular" }]
[sampling]
schemes = ["binomial"]
sizes = [20]
[metrics]
k_max = 10
curve_k = 5
curve_sizes = [10]
[user_sampling]
sizes = [10, 51]
"""


def test_simulation_sizes_are_checked_against_the_population(tmp_path):
    p = tmp_path / "sim.toml"
    p.write_text(SIM_SCENARIO)
    with pytest.raises(
        ScenarioError,
        match=r"user_sampling.sizes: must be <= the number of users "
        r"\(population.n_users = 50\); got \[51\]",
    ):
        load_stress_scenario(p)


def test_cli_refuses_a_size_above_the_population_in_one_line(tmp_path):
    bad = _scenario(tmp_path, "sizes = [20, 60]", "sizes = [100]")
    code, out, err = invoke(["stress", str(bad), "--out", str(tmp_path / "o")])
    assert code == 2
    assert "user_sampling.sizes" in out + err and "Traceback" not in out + err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_simulation_with_fewer_evaluated_users_fails_in_one_line(tmp_path):
    """Validation knows population.n_users; users with too few items are not evaluated, found at run time."""
    text = SIM_SCENARIO.replace("sizes = [10, 51]", "sizes = [50]").replace(
        'recommenders = [{ kind = "popular" }]', 'recommenders = [{ kind = "popular" }]\nmin_items = 6'
    )
    p = tmp_path / "sim.toml"
    p.write_text(text)
    code, out, err = invoke(["stress", str(p), "--out", str(tmp_path / "o"), "--no-figures", "--quiet"])
    assert code != 0 and "Traceback" not in out + err
    assert "user_sampling.sizes: must be <= the number of users evaluated by every recommender" in out + err


@pytest.fixture(scope="module")
def estimator_run(tmp_path_factory) -> tuple[Path, dict[str, pd.DataFrame]]:
    work = tmp_path_factory.mktemp("us-est")
    sc, path = load_stress_scenario(_scenario(work, *ESTIMATORS))
    run_stress_scenario(sc, path, work / "out", progress=False, figures=False)
    return work / "out", _tables(work / "out", ESTIMATOR_OUTPUTS)


@pytest.mark.slow
def test_estimators_on_all_users_are_the_stress_tasks_estimates(estimator_run):
    """m = M = 60: the item-sampling estimates on the user sample replay the stress tasks' draws exactly."""
    out, t = estimator_run
    with np.load(out / "user_sampling" / "m60.npz") as z:
        est, names, recs = z["item_estimates"], [str(e) for e in z["estimators"]], [str(r) for r in z["recommenders"]]
    assert est.shape[:4] == (3, 1, 3, 2)  # repeats, n, recommenders, estimators
    for j, rec in enumerate(recs):
        with np.load(out / "tasks" / f"{j}__binomial__n20.npz") as z:
            assert str(z["recommender"]) == rec
            harness, hnames, cut = z["estimates"], [str(e) for e in z["estimators"]], z["ks"] > 0
        for e, name in enumerate(names):
            np.testing.assert_array_equal(est[:, 0, j, e], harness[:, hnames.index(name)][:, cut])
    wide = t["user_sampling_estimators_table.csv"]
    assert list(wide.columns) == [
        "dataset",
        "model",
        "metric",
        "estimator",
        "scheme",
        "item20",
        "item20+user20",
        "item20+user60",
    ]
    assert len(wide) == 3 * 2 * 2  # models x metrics x estimators
    errors = t["user_sampling_estimators_errors.csv"]
    every = errors[errors["label"] == "item20+user60"].set_index(["recommender", "metric", "estimator"])
    harness = errors[errors["label"] == "item20"].set_index(["recommender", "metric", "estimator"])
    np.testing.assert_allclose(every["rel_error_pct"], harness.loc[every.index, "rel_error_pct"], rtol=1e-12)
    per_k = t["user_sampling_estimators.csv"]
    assert set(per_k["size"]) == {20, 60} and (per_k["n_boot"] == 3).all() and per_k["coverage"].between(0, 1).all()
    tests = t["user_sampling_estimators_tests.csv"]
    assert set(tests["test"]) == {"two_sample", "paired"} and set(tests["k"]) <= {1, 5, 10}


@pytest.mark.slow
def test_estimator_tables_resume_and_processes_equal_serial(estimator_run, tmp_path):
    """Every user-sampling table (the dissertation's and the estimators') on 2 processes, and after a resume."""
    out, serial = estimator_run
    sc, path = load_stress_scenario(_scenario(tmp_path, *ESTIMATORS))
    assert run_stress_scenario(sc, path, out, progress=False, figures=False).computed == 0
    with ProcessBackend(2) as backend:
        run_stress_scenario(sc, path, tmp_path / "out", backend=backend, progress=False, figures=False)
    for folder in (out, tmp_path / "out"):
        for name, frame in _tables(folder, ESTIMATOR_OUTPUTS).items():
            pd.testing.assert_frame_equal(frame, serial[name], check_exact=True, obj=name)


@pytest.mark.parametrize(
    "new, pattern",
    [
        (
            'estimators = ["naive", "MLE"]',
            r"user_sampling.estimators: must be among the scenario's estimators \(naive, MN_MES\); got \['MLE'\]",
        ),
        ('estimators = ["naive", "naive"]', r"user_sampling: `estimators` lists naive twice"),
        ('estimators = ["naive"]\nn_boot = 1', r"user_sampling.n_boot: .*must be 0 \(no intervals\) or >= 2.*got 1"),
        ('estimators = ["naive"]\nn_boot = -2', r"user_sampling.n_boot: Input should be greater than or equal to 0"),
        (
            'estimators = ["naive"]\nitem_estimator = ""\nitem_scheme = "popularity"',
            r"user_sampling.item_scheme: must be one of sampling.schemes \(binomial\); got 'popularity'",
        ),
        ('estimators = "naive"', r"user_sampling.estimators: Input should be a valid list"),
    ],
)
def test_invalid_estimator_keys_are_reported_with_their_key(tmp_path, new, pattern):
    with pytest.raises(ScenarioError, match=pattern):
        load_stress_scenario(_scenario(tmp_path, "repeats = 30", f"repeats = 30\n{new}"))
