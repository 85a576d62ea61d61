"""The studies behind the command line, on one config layer, run directory and task layer.

* :mod:`.run` — ``simrec run``: missing-data error of recommenders in simulated worlds;
* :mod:`.stress` — ``simrec stress``: sampled-metric estimators against exact metrics (and the truth);
* :mod:`.calibrate` — ``simrec calibrate``: fit the simulators to reference datasets;
* :mod:`.assess` — ``simrec assess``: the three above on one user's dataset, algorithms and protocol;
* :mod:`.ranks` — ``simrec ranks``: a ranks file from a dataset and trained recommenders.

Each takes a validated spec (:mod:`simrec.config`), an output folder
(:class:`simrec.rundir.RunDir`) and a task backend (:mod:`simrec.tasks`), and
returns a typed outcome; :mod:`simrec.cli` is the only place that prints.
"""

from simrec.studies.assess import PHASES, AssessOutcome, run_assessment
from simrec.studies.calibrate import DatasetLoadError, calibrate_sweep, load_targets, run_sweep
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
    "PHASES",
    "AssessOutcome",
    "run_assessment",
    "dataset_ranks",
    "write_ranks_file",
]
