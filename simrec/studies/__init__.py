"""The studies behind the command line, on one config layer, run directory and task layer.

* :mod:`.run` — ``simrec run``: missing-data error of recommenders in simulated worlds;
* :mod:`.stress` — ``simrec stress``: sampled-metric estimators against exact metrics (and the truth);
* :mod:`.calibrate` — ``simrec calibrate``: fit the simulators to reference datasets;
* :mod:`.assess` — ``simrec assess``: the three above on one user's dataset, algorithms and protocol;
* :mod:`.ranks` — ``simrec ranks``: a ranks file from a dataset and trained recommenders.

Each takes a validated spec (:mod:`simrec.config`), an output folder
(:class:`simrec.rundir.RunDir`) and a task backend (:mod:`simrec.tasks`), runs
a short sequence of sharded phases over the spec (:mod:`.phases`: keyed
tasks, resume from verified shards, progress, results in key order; the one
place that runs tasks), and returns a typed outcome; :mod:`simrec.cli` is the
only place that prints.

The names below are re-exported lazily (PEP 562): ``from simrec.studies import
run_scenario`` imports :mod:`.run` only, not the assessment's statistics
(``scipy.stats``) or the stress harness, which ``simrec run`` never uses
(issue 13: 1.3 s CPU of the quickstart's start-up).
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simrec.studies.assess import PHASES, AssessOutcome, run_assessment
    from simrec.studies.calibrate import DatasetLoadError, calibrate_sweep, export_presets, load_targets, run_sweep
    from simrec.studies.ranks import dataset_ranks, write_ranks_file
    from simrec.studies.run import RunOutcome, run_scenario
    from simrec.studies.stress import StressOutcome, build_source_data, run_stress_scenario

__all__ = [
    "RunOutcome",
    "run_scenario",
    "StressOutcome",
    "run_stress_scenario",
    "build_source_data",
    "DatasetLoadError",
    "load_targets",
    "run_sweep",
    "calibrate_sweep",
    "export_presets",
    "PHASES",
    "AssessOutcome",
    "run_assessment",
    "dataset_ranks",
    "write_ranks_file",
]

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "RunOutcome": "simrec.studies.run",
    "run_scenario": "simrec.studies.run",
    "StressOutcome": "simrec.studies.stress",
    "run_stress_scenario": "simrec.studies.stress",
    "build_source_data": "simrec.studies.stress",
    "DatasetLoadError": "simrec.studies.calibrate",
    "load_targets": "simrec.studies.calibrate",
    "run_sweep": "simrec.studies.calibrate",
    "calibrate_sweep": "simrec.studies.calibrate",
    "export_presets": "simrec.studies.calibrate",
    "PHASES": "simrec.studies.assess",
    "AssessOutcome": "simrec.studies.assess",
    "run_assessment": "simrec.studies.assess",
    "dataset_ranks": "simrec.studies.ranks",
    "write_ranks_file": "simrec.studies.ranks",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'simrec.studies' has no attribute {name!r}")
    value = getattr(_import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
