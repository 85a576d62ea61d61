"""Calibration sweeps: datasets x preference x observation x objectives.

A sweep runs in two phases (Tian 2019, §3.4 and §4.1):

1. every cell (dataset, preference, observation) is calibrated on each single
   statistic (its KL divergence from the reference);
2. the best KL reached on each statistic by *any* trial of the family for that
   dataset (phase 1 measures all four KLs at every trial) defines the relative
   losses, and every cell is calibrated again on the average relative loss.

Cells run as independent tasks (local processes with ``n_jobs > 1``); each
cell's search has its own seed, ``task_seed(seed, dataset, preference,
observation, objective)`` (indices into simrec's fixed lists of models and
objectives, so a sweep over a subset gives each cell the same seed), and its own trial
log, so a killed sweep resumes where it stopped and reproduces the trials of an
uninterrupted one.

Outputs under ``out/<dataset>/``: ``cells/<cell>/<objective>/trials.jsonl``,
``presets/<cell>.toml`` (best average-loss parameters), ``table.csv`` (KL and
relative loss per cell x objective x statistic), ``best.csv`` (best cell per
objective), ``summary.md`` (the same as markdown tables),
``figures/<cell>.png`` (the four statistics, simulated vs reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .._io import write_csv, write_text
from .._random import task_seed
from ..parallel import run_tasks
from ..stats import STATISTICS
from .objective import AVERAGE_LOSS, CalibrationTarget, Objective
from .presets import cell_name, preset_tables, write_preset
from .search import SearchResult, Trial, gp_search, read_log
from .space import OBSERVATION_MODELS, PREFERENCE_MODELS, search_space

__all__ = ["CellResult", "SweepResult", "calibrate_cell", "run_sweep", "summary_markdown"]


@dataclass(frozen=True)
class CellResult:
    dataset: str
    preference: str
    observation: str
    objective: str
    best: Trial
    n_trials: int
    n_refused: int
    resumed_from: int

    @property
    def cell(self) -> str:
        return cell_name(self.preference, self.observation)


@dataclass(frozen=True)
class SweepResult:
    cells: tuple[CellResult, ...]
    table: pd.DataFrame
    presets: dict[str, Path]


def _digest(objective: Objective, n_initial: int, seed: int, fixed: dict[str, float]) -> str:
    import hashlib
    import json

    blob = json.dumps(
        {
            "dataset": objective.target.name,
            "shape": objective.target.shape.__dict__,
            "preference": objective.preference,
            "observation": objective.observation,
            "objective": objective.objective,
            "best_kl": objective.best_kl,
            "max_pairs": objective.max_pairs,
            "max_items_ratio": objective.max_items_ratio,
            "stat_pairs": objective.stat_pairs,
            "n_initial": n_initial,
            "seed": seed,
            "fixed": fixed,
        },
        sort_keys=True,
        default=str,
    ).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True)
class _WithFixed:
    """An objective with some parameters held at given values (picklable)."""

    objective: Objective
    fixed: dict[str, float]

    def __call__(self, params: dict[str, float], seed):
        return self.objective({**self.fixed, **params}, seed)


def calibrate_cell(objective: Objective, *, seed: int, n_calls: int = 150, n_initial: int = 25,
                   log_path: str | Path | None = None, on_trial: Callable[[Trial], None] | None = None,
                   fixed: dict[str, float] | None = None) -> SearchResult:
    """GP search of one cell and objective (see :func:`simrec.calibration.search.gp_search`).

    Parameters
    ----------
    objective : Objective
    seed : int
    n_calls, n_initial : int, default 150, 25
    log_path : path, optional
        Trial log (resumed when it exists).
    on_trial : callable, optional
    fixed : dict, optional
        Parameters held at the given values instead of searched (e.g. the
        profile-size model when it is known); trials record only the searched
        parameters, the log header records ``fixed``.

    Notes
    -----
    ``n_calls`` is not part of the log's identity: a finished 50-call search
    can be extended to 150 calls and keeps its first 50 trials.
    """
    dims = search_space(objective.preference, objective.observation, objective.target.shape)
    fixed = dict(fixed or {})
    unknown = sorted(set(fixed) - {d.name for d in dims})
    if unknown:
        raise ValueError(f"`fixed` names parameters that are not in the search space: {unknown}; "
                         f"space: {[d.name for d in dims]}")
    dims = [d for d in dims if d.name not in fixed]
    header = {
        "fixed": fixed,
        "digest": _digest(objective, n_initial, seed, fixed),
        "dataset": objective.target.name,
        "cell": cell_name(objective.preference, objective.observation),
        "objective": objective.objective,
    }
    fn = _WithFixed(objective, fixed) if fixed else objective
    return gp_search(fn, dims, seed=seed, n_calls=n_calls, n_initial=n_initial, log_path=log_path,
                     header=header, on_trial=on_trial)


def _cell_task(args: tuple) -> CellResult:
    objective, seed, n_calls, n_initial, log_path = args
    res = calibrate_cell(objective, seed=seed, n_calls=n_calls, n_initial=n_initial, log_path=log_path)
    return CellResult(objective.target.name, objective.preference, objective.observation, objective.objective,
                      res.best, len(res.trials), sum(t.status == "refused" for t in res.trials), res.resumed_from)


def _table(cells: Sequence[CellResult], family_best: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = []
    for c in cells:
        best = family_best[c.dataset]
        kls = {s: c.best.details.get(s, math.nan) for s in STATISTICS}
        rel = {s: kls[s] / best[s] if best[s] > 0 else math.nan for s in STATISTICS}
        row = {"dataset": c.dataset, "cell": c.cell, "preference": c.preference, "observation": c.observation,
               "objective": c.objective, "best_trial": c.best.index, "n_trials": c.n_trials, "n_refused": c.n_refused}
        row.update({f"kl_{s}": kls[s] for s in STATISTICS})
        row.update({f"rel_{s}": rel[s] for s in STATISTICS})
        row["average_loss"] = sum(rel.values()) / len(rel)
        row.update({f"param_{k}": v for k, v in c.best.params.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def summary_markdown(table: pd.DataFrame, dataset: str) -> str:
    """Markdown tables of a sweep's results for one dataset.

    1. Per objective, the KL each cell reached on its own objective (single
       statistics) or its average loss, best per row in bold.
    2. For the average-loss cells, the relative loss on each statistic (KL /
       the family's best KL on it): 1.00 = as good as the best model found.
    """
    lines = [f"# Calibration sweep: {dataset}", ""]
    cells = list(dict.fromkeys(table["cell"]))
    lines.append("## Best value per objective (KL for a statistic, mean relative loss for average_loss)")
    lines.append("")
    lines.append("| objective | " + " | ".join(cells) + " |")
    lines.append("|---|" + "---:|" * len(cells))
    for obj, grp in table.groupby("objective", sort=False):
        key = "average_loss" if obj == AVERAGE_LOSS else f"kl_{obj}"
        vals = grp.set_index("cell")[key]
        best = vals.min()
        fmt = [(f"**{vals[c]:.4g}**" if vals[c] == best else f"{vals[c]:.4g}") if c in vals else "" for c in cells]
        lines.append(f"| {obj} | " + " | ".join(fmt) + " |")
    avg = table[table["objective"] == AVERAGE_LOSS]
    if len(avg):
        lines += ["", "## Relative loss of the average-loss fits (KL / the family's best KL on that statistic)", ""]
        lines.append("| cell | " + " | ".join(STATISTICS) + " | average |")
        lines.append("|---|" + "---:|" * (len(STATISTICS) + 1))
        for _, row in avg.iterrows():
            lines.append(f"| {row['cell']} | " + " | ".join(f"{row[f'rel_{s}']:.2f}" for s in STATISTICS)
                         + f" | {row['average_loss']:.2f} |")
    return "\n".join(lines) + "\n"


def run_sweep(
    targets: Sequence[CalibrationTarget],
    out: str | Path,
    *,
    seed: int,
    preferences: Sequence[str] = PREFERENCE_MODELS,
    observations: Sequence[str] = OBSERVATION_MODELS,
    objectives: Sequence[str] = (*STATISTICS, AVERAGE_LOSS),
    n_calls: int = 150,
    n_initial: int = 25,
    max_pairs: int | None = None,
    stat_pairs: int = 1_000_000,
    n_jobs: int = 1,
    figures: bool = True,
    on_cell: Callable[[CellResult], None] | None = None,
) -> SweepResult:
    """Run (or resume) a sweep; write trials, presets, tables and figures under ``out``.

    ``average_loss`` cells need the single-statistic cells of their dataset
    (phase 1) for the family's best KLs: the best KL of each statistic over
    every trial logged under ``out`` for that dataset. Presets are written from
    the ``average_loss`` cells (or, in a sweep without them, from the first
    objective's cells).
    """
    out = Path(out)
    extra = {} if max_pairs is None else {"max_pairs": max_pairs}
    obj_order = (*STATISTICS, AVERAGE_LOSS)

    def cell_seed(d: int, p: str, o: str, obj: str) -> int:
        """Seed of a cell's search: fixed by the model and objective names, not the spec's list order."""
        key = (d, PREFERENCE_MODELS.index(p), OBSERVATION_MODELS.index(o), obj_order.index(obj))
        return int(task_seed(seed, *key).generate_state(1)[0])

    def log_of(t: CalibrationTarget, p: str, o: str, obj: str) -> Path:
        return out / t.name / "cells" / cell_name(p, o) / obj / "trials.jsonl"

    def tasks_for(objs: Sequence[str], best: dict[str, dict[str, float]] | None) -> list[tuple]:
        tasks = []
        for d, t in enumerate(targets):
            for p in preferences:
                for o in observations:
                    for obj in objs:
                        objective = Objective(t, p, o, obj, best_kl=None if best is None else best[t.name],
                                              stat_pairs=stat_pairs, **extra)
                        tasks.append((objective, cell_seed(d, p, o, obj), n_calls, n_initial, log_of(t, p, o, obj)))
        return tasks

    single = [o for o in objectives if o != AVERAGE_LOSS]
    cells: list[CellResult] = []
    record = (lambda _i, r: on_cell(r)) if on_cell else None
    cells += run_tasks(_cell_task, tasks_for(single, None), n_jobs=n_jobs, on_result=record)

    family_best: dict[str, dict[str, float]] = {}
    for t in targets:
        best = {s: math.inf for s in STATISTICS}
        for p in PREFERENCE_MODELS:
            for o in OBSERVATION_MODELS:
                for obj in STATISTICS:
                    log = log_of(t, p, o, obj)
                    for tr in read_log(log) if log.exists() else []:
                        if tr.status == "ok":
                            for s in STATISTICS:
                                best[s] = min(best[s], tr.details.get(s, math.inf))
        family_best[t.name] = best

    if AVERAGE_LOSS in objectives:
        missing = {t.name: [s for s, v in family_best[t.name].items() if not math.isfinite(v)] for t in targets}
        missing = {k: v for k, v in missing.items() if v}
        if missing:
            raise ValueError(f"`average_loss` needs a finished calibration of every statistic first; missing: {missing}")
        cells += run_tasks(_cell_task, tasks_for([AVERAGE_LOSS], family_best), n_jobs=n_jobs, on_result=record)

    table = _table(cells, family_best)
    presets: dict[str, Path] = {}
    for t in targets:
        sub = table[table["dataset"] == t.name]
        write_csv(out / t.name / "table.csv", sub)
        winners = []
        for obj, grp in sub.groupby("objective", sort=False):
            key = "average_loss" if obj == AVERAGE_LOSS else f"kl_{obj}"
            w = grp.loc[grp[key].idxmin()]
            winners.append({"objective": obj, "best_cell": w["cell"], "value": w[key]})
        write_csv(out / t.name / "best.csv", pd.DataFrame(winners))
        write_text(out / t.name / "summary.md", summary_markdown(sub, t.name))
        preset_objective = AVERAGE_LOSS if AVERAGE_LOSS in objectives else objectives[0]
        for c in cells:
            if c.dataset != t.name or c.objective != preset_objective:
                continue
            fit = {f"kl_{s}": float(c.best.details.get(s, math.nan)) for s in STATISTICS}
            fit["average_loss"] = float(sum(fit[f"kl_{s}"] / family_best[t.name][s] for s in STATISTICS) / len(STATISTICS))
            tables = preset_tables(c.preference, c.observation, c.best.params, t.shape, t.name, fit)
            comment = (f"simrec calibration preset {t.name}/{c.cell}: best of {c.n_trials} GP trials "
                       f"on objective {c.objective} (trial {c.best.index}).")
            path = write_preset(out / t.name / "presets" / f"{c.cell}.toml", tables, comment)
            presets[f"{t.name}/{c.cell}"] = path
            if figures:
                from .figures import plot_cell

                objective = Objective(t, c.preference, c.observation, STATISTICS[0], stat_pairs=stat_pairs, **extra)
                seed_cell = cell_seed(targets.index(t), c.preference, c.observation, c.objective)
                plot_cell(objective, c.best, seed_cell, out / t.name / "figures" / f"{c.cell}.png")
    return SweepResult(tuple(cells), table, presets)
