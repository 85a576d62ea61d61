"""The three studies give identical results on every backend (issue 9).

Small ``run``, ``stress`` (simulation and dataset sources) and ``calibrate``
jobs (the golden cases of ``tests/test_golden.py``) run serially and on a local
Ray cluster (2 CPUs, no dashboard) started inside the test, and on 2 local
processes; every output table, trial log and preset must be *exactly* equal
(same machine, so no tolerance: any difference would come from the backend).
Retries and failure reports on Ray are tested with the task layer itself in
``tests/test_tasks.py``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_golden import CASES, snapshot

from simrec.config.run import load_scenario
from simrec.config.stress import load_stress_scenario
from simrec.config.sweep import load_sweep_spec
from simrec.studies import calibrate_sweep, run_scenario, run_stress_scenario
from simrec.tasks import Backend, ProcessBackend, RayBackend, SerialBackend


def _run_case(case: str, work: Path, backend: Backend) -> dict[str, object]:
    """Run a golden case through the study API on ``backend``; its outputs in comparable form."""
    command, text = CASES[case]
    spec = work / f"{case}.toml"
    spec.write_text(text)
    out = work / "out"
    if command == "run":
        sc, path = load_scenario(spec)
        run_scenario(sc, path, out, backend=backend, progress=False, figures=False)
    elif command == "stress":
        st, path = load_stress_scenario(spec)
        run_stress_scenario(st, path, out, backend=backend, progress=False, figures=False)
    else:
        calibrate_sweep(load_sweep_spec(spec), spec, out, backend=backend, figures=False)
    return snapshot(out)


def _assert_identical(a: dict[str, object], b: dict[str, object]) -> None:
    assert sorted(a) == sorted(b)
    for name, x in a.items():
        if isinstance(x, pd.DataFrame):
            pd.testing.assert_frame_equal(x, b[name], check_exact=True, obj=name)  # type: ignore[arg-type]
        else:
            assert x == b[name], name


@pytest.fixture(scope="module")
def serial_outputs(tmp_path_factory) -> dict[str, dict[str, object]]:
    return {case: _run_case(case, tmp_path_factory.mktemp(f"serial-{case}"), SerialBackend()) for case in CASES}


@pytest.fixture(scope="module")
def ray_cluster():
    pytest.importorskip("ray")
    backend = RayBackend(n_cpus=2)
    backend.start()
    yield backend
    backend.close()


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_ray_equals_serial(case, ray_cluster, serial_outputs, tmp_path):
    _assert_identical(_run_case(case, tmp_path, ray_cluster), serial_outputs[case])


@pytest.mark.slow
@pytest.mark.parametrize("case", ["run", "stress-data", "calibrate"])
def test_processes_equal_serial(case, serial_outputs, tmp_path):
    with ProcessBackend(2) as backend:
        _assert_identical(_run_case(case, tmp_path, backend), serial_outputs[case])


@pytest.mark.slow
def test_user_sampling_on_ray_equals_serial(ray_cluster, tmp_path):
    """The [user_sampling] tasks (seeds spawned per size; the estimators' item draws replayed from the stress
    tasks' seeds) give the serial tables on Ray."""
    from studies.test_stress_user_sampling import ESTIMATOR_OUTPUTS, ESTIMATORS, _scenario

    tables = []
    for i, backend in enumerate((SerialBackend(), ray_cluster)):
        sc, path = load_stress_scenario(_scenario(tmp_path, *ESTIMATORS, name=f"s{i}.toml"))
        run_stress_scenario(sc, path, tmp_path / f"out{i}", backend=backend, progress=False, figures=False)
        tables.append({name: pd.read_csv(tmp_path / f"out{i}" / name) for name in ESTIMATOR_OUTPUTS})
    for name in ESTIMATOR_OUTPUTS:
        pd.testing.assert_frame_equal(tables[1][name], tables[0][name], check_exact=True, obj=name)


@pytest.mark.slow
def test_significance_on_ray_equals_serial(ray_cluster, tmp_path):
    """The [significance] phase (its random tests seeded from each task's seed; every protocol, full_ips too)
    gives the serial table on Ray, exactly."""
    import textwrap

    from studies.test_significance import SCENARIO

    section = """
    tests = ["paired_t", "bootstrap_percentile", "permutation"]
    protocols = ["full", "users", "sampled_naive", "sampled_corrected", "full_ips"]
    metrics = ["ndcg"]
    users = 60
    negatives = 40
    resamples = 200
    """
    text = textwrap.dedent(SCENARIO.format(section=textwrap.dedent(section))).replace(
        "replicates = 6", "replicates = 3"
    )
    tables = []
    for i, backend in enumerate((SerialBackend(), ray_cluster)):
        spec = tmp_path / f"s{i}.toml"
        spec.write_text(text)
        sc, path = load_scenario(spec)
        run_scenario(sc, path, tmp_path / f"out{i}", backend=backend, progress=False, figures=False)
        tables.append(pd.read_csv(tmp_path / f"out{i}" / "significance.csv"))
    assert set(tables[0]["protocol"]) == {"full", "users", "sampled_naive", "sampled_corrected", "full_ips"}
    assert (tables[0]["n_replicates"] == 3).all()
    pd.testing.assert_frame_equal(tables[1], tables[0], check_exact=True)
