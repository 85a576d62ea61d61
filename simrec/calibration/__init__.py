"""Calibration of the simulators to reference datasets (Tian 2019, §3.4, §4.1).

Search spaces derived from the reference (:mod:`.space`), objectives on the KL
divergence of the four key statistics (:mod:`.objective`), a resumable
Gaussian-process search (:mod:`.search`, scikit-optimize behind
:mod:`._skopt`), sweeps over datasets x models x objectives (:mod:`.sweep`),
presets (:mod:`.presets`) and figures (:mod:`.figures`).
"""

from .objective import AVERAGE_LOSS, OBJECTIVES, CalibrationTarget, Objective, build_cell_models
from .presets import cell_name, preset_tables, write_preset
from .search import CalibrationLogError, SearchResult, Trial, TrialOutcome, gp_search, read_log
from .space import OBSERVATION_MODELS, PREFERENCE_MODELS, Dim, ReferenceShape, sample_points, search_space
from .sweep import CellResult, SweepResult, calibrate_cell, run_sweep

__all__ = [
    "AVERAGE_LOSS",
    "OBJECTIVES",
    "CalibrationTarget",
    "Objective",
    "build_cell_models",
    "cell_name",
    "preset_tables",
    "write_preset",
    "CalibrationLogError",
    "SearchResult",
    "Trial",
    "TrialOutcome",
    "gp_search",
    "read_log",
    "OBSERVATION_MODELS",
    "PREFERENCE_MODELS",
    "Dim",
    "ReferenceShape",
    "sample_points",
    "search_space",
    "CellResult",
    "SweepResult",
    "calibrate_cell",
    "run_sweep",
]
