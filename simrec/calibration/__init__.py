"""Calibration of the simulators to reference datasets (Tian 2019, §3.4, §4.1).

Dimensions and the cell protocol (:mod:`.space`; each model's search space is
known by its spec in :mod:`simrec.config.models`), objectives on the KL
divergence of the four key statistics (:mod:`.objective`), a resumable
Gaussian-process search (:mod:`.search`, scikit-optimize behind
:mod:`._skopt`), one cell's calibration and sweep tables (:mod:`.sweep`) and
figures (:mod:`.figures`). Sweeps run with ``simrec calibrate``
(:mod:`simrec.studies.calibrate`).
"""

from .denoise import DENOISE_KEY, Denoised, denoise, read_denoise_log
from .objective import (
    ALGORITHM_RESPONSE,
    AVERAGE_LOSS,
    OBJECTIVES,
    SUM_KL,
    THESIS_OBJECTIVES,
    CalibrationTarget,
    Objective,
    objective_column,
)
from .response import (
    REFERENCE_ALGORITHMS,
    AlgorithmResponse,
    ResponseProtocol,
    SimToReal,
    algorithm_response,
    kendall_tau,
    response_loss,
    sim_to_real,
)
from .search import CalibrationLogError, SearchResult, Trial, TrialOutcome, gp_search, read_log
from .space import Cell, Dim, ReferenceShape, sample_points
from .sweep import CellResult, SweepResult, calibrate_cell, cell_result, log_header, summary_markdown, sweep_table

__all__ = [
    "DENOISE_KEY",
    "Denoised",
    "denoise",
    "read_denoise_log",
    "ALGORITHM_RESPONSE",
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
