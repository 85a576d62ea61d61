"""``simrec calibrate``: a sweep over datasets x cells x objectives into a run directory.

A sweep runs in two phases (Tian 2019, §3.4 and §4.1):

1. every cell (dataset, preference, observation) is calibrated on each single
   statistic (its KL divergence from the reference);
2. the best KL reached on each statistic by *any* trial of the family for that
   dataset (phase 1 measures all four KLs at every trial) defines the relative
   losses, and every cell is calibrated again on the average relative loss.

Each (dataset, cell, objective) search is one task on the :mod:`simrec.tasks`
backend; its seed is ``task_seed(seed, dataset, preference, observation,
objective)`` (indices into simrec's fixed lists of models and objectives, so a
sweep over a subset gives each cell the same seed), and its trial log is its
shard: a killed sweep resumes where it stopped and reproduces the trials of an
uninterrupted one.

Outputs under ``out/<dataset>/``: ``cells/<cell>/<objective>/trials.jsonl``,
``presets/<cell>.toml`` (best average-loss parameters), ``table.csv`` (KL and
relative loss per cell x objective x statistic), ``best.csv`` (best cell per
objective), ``summary.md`` (the same as markdown tables),
``figures/<cell>.png`` (the four statistics, simulated vs reference); and
``out/manifest.json``, ``out/scenario.toml`` as for every run directory.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simrec._io import write_bytes, write_csv, write_text
from simrec._random import task_seed
from simrec.calibration import (
    AVERAGE_LOSS,
    OBJECTIVES,
    THESIS_OBJECTIVES,
    CalibrationLogError,
    CalibrationTarget,
    CellResult,
    Objective,
    SweepResult,
    calibrate_cell,
    cell_result,
    denoise,
    log_header,
    objective_column,
    read_denoise_log,
    read_log,
    summary_markdown,
    sweep_table,
)
from simrec.config.models import (
    PREFERENCE_MODELS,
    SAMPLER_MODELS,
    THESIS_PREFERENCES,
    THESIS_SAMPLERS,
    CellSpec,
    RatingsSpec,
)
from simrec.config.presets import preset_tables, write_preset
from simrec.config.run import content_digest
from simrec.config.sweep import SweepSpec
from simrec.rundir import RunDir, RunDirError, path_problem
from simrec.stats import STATISTICS
from simrec.tasks import Backend, SerialBackend, Task, run_tasks

__all__ = ["DatasetLoadError", "load_targets", "run_sweep", "calibrate_sweep", "export_presets"]


class DatasetLoadError(ValueError):
    """A dataset of a sweep spec cannot be loaded or calibrated against (the message names it)."""


def load_targets(spec: SweepSpec, spec_path: Path) -> list[CalibrationTarget]:
    """Load every dataset of ``spec`` and reduce it to a calibration target (bins and statistics).

    Raises
    ------
    DatasetLoadError
        ``<spec>: dataset[i] (name): <what went wrong>``.
    """
    from simrec.datasets import DatasetError

    targets = []
    for i, ref in enumerate(spec.dataset):
        try:
            inter = ref.read(ref.resolve(spec_path))
        except (DatasetError, TypeError) as exc:
            raise DatasetLoadError(f"{spec_path}: dataset[{i}] ({ref.name}): {exc}") from None
        try:
            target = CalibrationTarget.from_interactions(
                ref.name, inter, rng=spec.seed, max_pairs=spec.stat_pairs, statistics=spec.statistics
            )
            protocol = spec.response_protocol()
            if protocol is not None:  # the real data's response, its randomness from the sweep's seed
                from simrec.calibration.response import algorithm_response

                real = algorithm_response(inter, protocol, np.random.SeedSequence([spec.seed, i]))
                target = dataclasses.replace(target, response=real)
            targets.append(target)
        except ValueError as exc:
            raise DatasetLoadError(f"{spec_path}: dataset[{i}]: {exc}") from None
    return targets


@dataclass(frozen=True)
class _RefusedLog:
    """What a search returns when its trial or de-noising log is refused (the CalibrationLogError's message)."""

    message: str


def _cell_task(args: tuple) -> CellResult | _RefusedLog:
    """One search (and its de-noising). A log refused while the task reads it (changed since :func:`_preflight`
    checked it) is returned, not raised: the user's file is at fault, not the task, so the sweep ends with
    that one line (exit 2) once the other searches are done, instead of a failed task retried in vain."""
    objective, seed, n_calls, n_initial, log_path, top, seeds = args
    try:
        res = calibrate_cell(objective, seed=seed, n_calls=n_calls, n_initial=n_initial, log_path=log_path)
        if not seeds:
            return cell_result(objective, res)
        digest = log_header(objective, seed=seed, n_initial=n_initial)["digest"]
        points = denoise(
            objective, res, seed=seed, top=top, seeds=seeds, log_path=log_path.with_name("denoise.jsonl"), digest=digest
        )
    except CalibrationLogError as exc:
        return _RefusedLog(str(exc))
    return cell_result(objective, res, points)


def _cells(results: list) -> list[CellResult]:
    """The searches' results; :class:`CalibrationLogError` (the first refused log) if a task refused its log."""
    refused = [r.message for r in results if isinstance(r, _RefusedLog)]
    if refused:
        more = f" (and {len(refused) - 1} more log(s) refused)" if len(refused) > 1 else ""
        raise CalibrationLogError(refused[0] + more)
    return results


def run_sweep(
    targets: Sequence[CalibrationTarget],
    out: str | Path,
    *,
    seed: int,
    preferences: Sequence[str] | None = None,
    observations: Sequence[str] | None = None,
    objectives: Sequence[str] = THESIS_OBJECTIVES,
    n_calls: int = 150,
    n_initial: int = 25,
    max_pairs: int | None = None,
    stat_pairs: int = 1_000_000,
    backend: Backend | None = None,
    figures: bool = True,
    on_cell: Callable[[CellResult], None] | None = None,
    denoise_top: int = 5,
    denoise_seeds: int = 0,
    ratings: RatingsSpec | None = None,
) -> SweepResult:
    """Run (or resume) a sweep; write trials, presets, tables and figures under ``out``.

    ``ratings``: every cell rates its observed pairs (:class:`~simrec.config.models.RatingsSpec`: the
    dataset's scale and ``min_rating``; the ratings' shape and noise searched too). Default None.

    ``preferences`` / ``observations``: the cells' preference models and
    samplers by tag (default: the thesis's six cells,
    :data:`~simrec.config.models.THESIS_PREFERENCES` x
    :data:`~simrec.config.models.THESIS_SAMPLERS`).

    ``denoise_seeds > 0`` re-evaluates the ``denoise_top`` best trials of every
    search with that many fresh seeds (:func:`simrec.calibration.denoise`);
    tables then give mean ± sd, the family's best KLs (the denominators of the
    relative losses) are the lowest de-noised means of the single-statistic
    searches, and presets come from the de-noised best. Default 0 here (off);
    sweep files default to 10 seeds of the 5 best trials.

    ``average_loss`` cells need the single-statistic cells of their dataset
    (phase 1) for the family's best KLs: the best KL of each statistic over
    every trial logged under ``out`` for that dataset. Presets are written from
    the ``average_loss`` cells (or, in a sweep without them, from the first
    objective's cells). The caller holds the run directory (see :func:`calibrate_sweep`).
    """
    out = Path(out)
    backend = SerialBackend() if backend is None else backend
    extra = {} if max_pairs is None else {"max_pairs": max_pairs}
    preferences = THESIS_PREFERENCES if preferences is None else preferences
    observations = THESIS_SAMPLERS if observations is None else observations
    cells = [CellSpec(preference=p, observation=o, ratings=ratings) for p in preferences for o in observations]
    all_cells = [CellSpec(preference=p, observation=o) for p in PREFERENCE_MODELS.tags for o in SAMPLER_MODELS.tags]

    def cell_seed(d: int, cell: CellSpec, obj: str) -> int:
        """Seed of a cell's search: fixed by the model and objective names, not the spec's list order."""
        key = (
            d,
            PREFERENCE_MODELS.tags.index(cell.preference),
            SAMPLER_MODELS.tags.index(cell.observation),
            OBJECTIVES.index(obj),
        )
        return int(task_seed(seed, *key).generate_state(1)[0])

    def log_of(t: CalibrationTarget, cell: CellSpec, obj: str) -> Path:
        return out / t.name / "cells" / cell.name / obj / "trials.jsonl"

    def tasks_for(objs: Sequence[str], best: dict[str, dict[str, float]] | None) -> list[Task]:
        tasks = []
        for d, t in enumerate(targets):
            for cell in cells:
                for obj in objs:
                    objective = Objective(
                        t, cell, obj, best_kl=None if best is None else best[t.name], stat_pairs=stat_pairs, **extra
                    )
                    s = cell_seed(d, cell, obj)
                    tasks.append(
                        Task(
                            f"dataset {t.name}, cell {cell.name}, objective {obj}",
                            s,
                            (objective, s, n_calls, n_initial, log_of(t, cell, obj), denoise_top, denoise_seeds),
                        )
                    )
        return tasks

    single = [o for o in objectives if o != AVERAGE_LOSS]
    _preflight(
        targets,
        cells,
        single,
        AVERAGE_LOSS in objectives,
        log_of,
        cell_seed,
        n_calls=n_calls,
        n_initial=n_initial,
        stat_pairs=stat_pairs,
        extra=extra,
    )
    results: list[CellResult] = []
    record = (lambda _i, r: None if isinstance(r, _RefusedLog) else on_cell(r)) if on_cell else None
    results += _cells(run_tasks(_cell_task, tasks_for(single, None), backend=backend, on_result=record))

    family_best = {t.name: _family_best(t, results, all_cells, log_of, denoised=bool(denoise_seeds)) for t in targets}

    if AVERAGE_LOSS in objectives:
        missing = {t.name: [s for s, v in family_best[t.name].items() if not math.isfinite(v)] for t in targets}
        missing = {k: v for k, v in missing.items() if v}
        if missing:
            raise ValueError(
                f"`average_loss` needs a finished calibration of every statistic first; missing: {missing}"
            )
        results += _cells(
            run_tasks(_cell_task, tasks_for([AVERAGE_LOSS], family_best), backend=backend, on_result=record)
        )

    table = sweep_table(results, family_best)
    presets: dict[str, Path] = {}
    for d, t in enumerate(targets):
        sub = table[table["dataset"] == t.name]
        _write_dataset_tables(out / t.name, sub, t.name)
        preset_objective = AVERAGE_LOSS if AVERAGE_LOSS in objectives else objectives[0]
        for c in results:
            if c.dataset != t.name or c.objective != preset_objective:
                continue
            cell = CellSpec(preference=c.preference, observation=c.observation, ratings=ratings)
            fit = {f"kl_{s}": float(v) for s, v in c.kls().items()}
            best = family_best[t.name]
            fit["average_loss"] = (
                float(sum(fit[f"kl_{s}"] / best[s] for s in STATISTICS) / len(STATISTICS))
                if all(0 < best[s] < math.inf for s in STATISTICS)
                else math.nan
            )
            tables = preset_tables(cell, c.chosen.params, t.shape, t.name, fit)
            how = (
                f", de-noised: mean of {c.denoised[0].n} fresh simulations of its {len(c.denoised)} best trials"
                if c.denoised
                else ""
            )
            comment = (
                f"simrec calibration preset {t.name}/{c.cell}: best of {c.n_trials} GP trials "
                f"on objective {c.objective} (trial {c.chosen.index}{how})."
            )
            presets[f"{t.name}/{c.cell}"] = write_preset(out / t.name / "presets" / f"{c.cell}.toml", tables, comment)
            if figures:
                from simrec.calibration.figures import plot_cell

                objective = Objective(t, cell, STATISTICS[0], stat_pairs=stat_pairs, **extra)
                plot_cell(
                    objective, c.chosen, cell_seed(d, cell, c.objective), out / t.name / "figures" / f"{c.cell}.png"
                )
    return SweepResult(tuple(results), table, presets)


def _family_best(
    target: CalibrationTarget, results: Sequence[CellResult], all_cells: Sequence[CellSpec], log_of, *, denoised: bool
) -> dict[str, float]:
    """The family's best KL on each statistic: the denominators of the relative losses.

    De-noised sweeps: the lowest de-noised mean over the single-statistic
    searches of this sweep. Otherwise: the lowest single value of any trial
    logged under the output folder for the dataset (every cell, every
    single-statistic objective; each trial measures all four statistics).
    """
    if denoised:
        points = [p for c in results if c.dataset == target.name and c.objective in STATISTICS for p in c.denoised]
        return {s: min((p.details_mean.get(s, math.inf) for p in points), default=math.inf) for s in STATISTICS}
    best = {s: math.inf for s in STATISTICS}
    for cell in all_cells:
        for obj in STATISTICS:
            log = log_of(target, cell, obj)
            for tr in read_log(log) if log.exists() else []:
                if tr.status == "ok":
                    for s in STATISTICS:
                        best[s] = min(best[s], tr.details.get(s, math.inf))
    return best


def _preflight(targets, cells, single, average, log_of, cell_seed, *, n_calls, n_initial, stat_pairs, extra) -> None:
    """Check every trial log already in the folder before anything is written (issue 12).

    Refuses, with :class:`~simrec.calibration.CalibrationLogError`, a log of
    another search, a log whose lines are not trial records, and a run that would extend the single-statistic searches
    of a folder whose average-loss searches exist: extending them changes the
    family-best KLs those searches were computed with, so the folder would be
    left half-extended and then refused.
    """
    shorter = []
    for d, t in enumerate(targets):
        for cell in cells:
            for obj in single:
                log = log_of(t, cell, obj)
                if not log.exists():
                    shorter.append((log, 0))
                    continue
                header = log_header(
                    Objective(t, cell, obj, stat_pairs=stat_pairs, **extra),
                    seed=cell_seed(d, cell, obj),
                    n_initial=n_initial,
                )
                n_done = len(read_log(log, header))
                read_denoise_log(log.with_name("denoise.jsonl"), header["digest"])
                if n_done < n_calls:
                    shorter.append((log, n_done))
    for t in targets if average else ():  # their identity depends on phase 1; their records are checked now
        for cell in cells:
            log = log_of(t, cell, AVERAGE_LOSS)
            if log.exists():
                read_log(log)
                read_denoise_log(log.with_name("denoise.jsonl"), None)
    if not average or not shorter:
        return
    finished = [log_of(t, c, AVERAGE_LOSS) for t in targets for c in cells if log_of(t, c, AVERAGE_LOSS).exists()]
    if finished:
        log, n_done = shorter[0]
        raise CalibrationLogError(
            f"{finished[0].parents[2]}: this folder's average-loss searches were computed from the single-statistic "
            f"searches as they are ({log} has {n_done} trial(s)); running them to {n_calls} calls would change the "
            "family-best KLs the average-loss logs depend on. Use a new --out folder, or the n_calls the folder was "
            "made with"
        )


def _write_dataset_tables(folder: Path, sub: pd.DataFrame, dataset: str) -> None:
    write_csv(folder / "table.csv", sub)
    winners = []
    for obj, grp in sub.groupby("objective", sort=False):
        key = objective_column(obj)
        w = grp.loc[grp[key].idxmin()]
        winners.append({"objective": obj, "best_cell": w["cell"], "value": w[key]})
    write_csv(folder / "best.csv", pd.DataFrame(winners))
    write_text(folder / "summary.md", summary_markdown(sub, dataset))


def calibrate_sweep(
    spec: SweepSpec,
    spec_path: Path,
    out: str | Path,
    *,
    n_calls: int | None = None,
    backend: Backend | None = None,
    figures: bool = True,
    on_cell: Callable[[CellResult], None] | None = None,
) -> SweepResult:
    """``simrec calibrate``: load the spec's datasets, then :func:`run_sweep` in a locked run directory.

    ``n_calls`` overrides the spec's (``n_initial`` is capped at it); it is
    not part of the folder's identity, so a finished sweep can be extended.

    Raises
    ------
    DatasetLoadError, simrec.rundir.RunDirError, simrec.calibration.CalibrationLogError, simrec.tasks.TaskError
    """
    targets = load_targets(spec, spec_path)
    calls = n_calls or spec.n_calls
    digest = content_digest(spec.model_copy(update={"n_calls": 0, "description": ""}))
    with RunDir.open(
        out,
        kind="calibrate",
        name=spec.name,
        digest=digest,
        source=spec_path,
        manifest={"seed": spec.seed, "n_calls": calls},
    ) as rd:
        result = run_sweep(
            targets,
            out,
            seed=spec.seed,
            preferences=spec.preferences,
            observations=spec.observations,
            ratings=spec.ratings,
            objectives=spec.objectives,
            n_calls=calls,
            n_initial=min(spec.n_initial, calls),
            max_pairs=spec.max_pairs,
            stat_pairs=spec.stat_pairs,
            backend=backend,
            figures=figures,
            on_cell=on_cell,
            denoise_top=spec.denoise_top,
            denoise_seeds=spec.denoise_seeds,
        )
        rd.complete(
            cells=len(result.cells),
            presets=sorted(result.presets),
            timings={"backend": backend.name if backend else "serial"},
        )
    return result


def export_presets(presets: dict[str, Path], folder: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Copy a sweep's presets to ``folder/<dataset>/<cell>.toml`` (``simrec calibrate --export-presets``).

    The rules of ``--out`` (issue 22): the folder is the user's, so a preset
    file already there is replaced only when it is byte-identical to the new
    one (re-running the same sweep) or with ``overwrite``; every conflict is
    found before anything is written, and each file is written atomically
    (a crash never leaves a half-written preset).

    Parameters
    ----------
    presets : dict
        ``"<dataset>/<cell>"`` -> the preset file written by the sweep (:attr:`SweepResult.presets`).
    folder : path
        The ``--export-presets`` folder (created if missing).
    overwrite : bool, default False

    Returns
    -------
    list of Path
        The files written, in the order of ``presets``.

    Raises
    ------
    simrec.rundir.RunDirError
        ``folder`` cannot be used (a file on its path, a name too long), a
        destination is a folder, or (without ``overwrite``) a destination
        holds a different file; nothing was written.
    OSError
        Writing failed (a full or read-only disk); files written before are complete.
    """
    folder = Path(folder)
    problem = path_problem(folder, "--export-presets")
    if problem:
        raise RunDirError(problem)
    plan = [(folder / f"{name}.toml", Path(src).read_bytes()) for name, src in presets.items()]
    kept = ", ".join(sorted({str(Path(src).parent) for src in presets.values()}))
    in_the_way, differ = [], []
    for dest, data in plan:
        problem = path_problem(dest, "--export-presets", folder=False)
        if problem:
            raise RunDirError(problem)
        if dest.is_dir() or (dest.exists() and not dest.is_file()):
            in_the_way.append(dest)
        elif dest.exists() and not overwrite and dest.read_bytes() != data:
            differ.append(dest)
    if in_the_way:
        raise RunDirError(
            f"--export-presets {folder}: {in_the_way[0]} is not a file (a preset would be written there); nothing "
            f"was exported (this sweep's presets are in {kept}). Choose another --export-presets folder"
        )
    if differ:
        shown = ", ".join(str(d) for d in differ[:3]) + (", ..." if len(differ) > 3 else "")
        raise RunDirError(
            f"--export-presets {folder}: {len(differ)} preset file(s) there differ from this sweep's ({shown}); "
            f"nothing was exported (this sweep's presets are in {kept}). Re-run with --overwrite to replace them, "
            "or choose another --export-presets folder"
        )
    return [write_bytes(dest, data) for dest, data in plan]
