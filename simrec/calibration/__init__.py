"""Calibration of the simulators to reference datasets (Tian 2019, §3.4, §4.1).

Dimensions and the cell protocol (:mod:`.space`; each model's search space is
known by its spec in :mod:`simrec.config.models`), objectives on the KL
divergence of the four key statistics (:mod:`.objective`), a resumable
Gaussian-process search (:mod:`.search`, scikit-optimize behind
:mod:`._skopt`), one cell's calibration and sweep tables (:mod:`.sweep`) and
figures (:mod:`.figures`). Sweeps run with ``simrec calibrate``
(:mod:`simrec.studies.calibrate`).
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

# eager: ``denoise`` is both a function and its submodule's name; importing the submodule on first use would
# leave the package attribute bound to the module (numpy and .search only: cheap)
from .denoise import DENOISE_KEY, Denoised, denoise, read_denoise_log

if TYPE_CHECKING:
    from .objective import (
        ALGORITHM_RESPONSE,
        AVERAGE_LOSS,
        OBJECTIVES,
        RESPONSE_LOSS,
        RESPONSE_OBJECTIVES,
        SUM_KL,
        THESIS_OBJECTIVES,
        CalibrationTarget,
        Objective,
        objective_column,
    )
    from .response import (
        ORDER_VERDICTS,
        REFERENCE_ALGORITHMS,
        AlgorithmResponse,
        ComparedProtocol,
        ResponseProtocol,
        SimToReal,
        algorithm_response,
        chosen_point_sim_to_real,
        compare_to_real,
        kendall_tau,
        response_loss,
        sim_to_real,
    )
    from .search import CalibrationLogError, SearchResult, Trial, TrialOutcome, gp_search, read_log
    from .space import Cell, Dim, ReferenceShape, sample_points
    from .sweep import CellResult, SweepResult, calibrate_cell, cell_result, log_header, summary_markdown, sweep_table

#: Public name -> submodule, imported on first use (issue 29): a command that needs only :mod:`.space` (every
#: scenario's model specs, e.g. ``simrec stress``) does not import the objectives, the search and their
#: dependencies (observation, statistics, recommenders): about 0.4 s of CPU at start-up.
_LAZY = {
    "ALGORITHM_RESPONSE": "objective",
    "RESPONSE_LOSS": "objective",
    "RESPONSE_OBJECTIVES": "objective",
    "AVERAGE_LOSS": "objective",
    "OBJECTIVES": "objective",
    "SUM_KL": "objective",
    "THESIS_OBJECTIVES": "objective",
    "CalibrationTarget": "objective",
    "Objective": "objective",
    "objective_column": "objective",
    "REFERENCE_ALGORITHMS": "response",
    "AlgorithmResponse": "response",
    "ResponseProtocol": "response",
    "SimToReal": "response",
    "algorithm_response": "response",
    "kendall_tau": "response",
    "response_loss": "response",
    "sim_to_real": "response",
    "compare_to_real": "response",
    "ComparedProtocol": "response",
    "ORDER_VERDICTS": "response",
    "chosen_point_sim_to_real": "response",
    "CalibrationLogError": "search",
    "SearchResult": "search",
    "Trial": "search",
    "TrialOutcome": "search",
    "gp_search": "search",
    "read_log": "search",
    "Cell": "space",
    "Dim": "space",
    "ReferenceShape": "space",
    "sample_points": "space",
    "CellResult": "sweep",
    "SweepResult": "sweep",
    "calibrate_cell": "sweep",
    "cell_result": "sweep",
    "log_header": "sweep",
    "summary_markdown": "sweep",
    "sweep_table": "sweep",
}

__all__ = [
    "DENOISE_KEY",
    "Denoised",
    "denoise",
    "read_denoise_log",
    "ALGORITHM_RESPONSE",
    "RESPONSE_LOSS",
    "RESPONSE_OBJECTIVES",
    "AVERAGE_LOSS",
    "OBJECTIVES",
    "SUM_KL",
    "THESIS_OBJECTIVES",
    "objective_column",
    "CalibrationTarget",
    "Objective",
    "REFERENCE_ALGORITHMS",
    "AlgorithmResponse",
    "ResponseProtocol",
    "SimToReal",
    "algorithm_response",
    "kendall_tau",
    "response_loss",
    "sim_to_real",
    "compare_to_real",
    "ComparedProtocol",
    "ORDER_VERDICTS",
    "chosen_point_sim_to_real",
    "CalibrationLogError",
    "SearchResult",
    "Trial",
    "TrialOutcome",
    "gp_search",
    "read_log",
    "Cell",
    "Dim",
    "ReferenceShape",
    "sample_points",
    "CellResult",
    "SweepResult",
    "calibrate_cell",
    "cell_result",
    "log_header",
    "summary_markdown",
    "sweep_table",
]


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'simrec.calibration' has no attribute {name!r}")
    value = getattr(_import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
