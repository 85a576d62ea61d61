"""``simrec calibrate``: a sweep over datasets x cells x objectives into a run directory.

A sweep runs in two phases (Tian 2019, §3.4 and §4.1):

1. every cell (dataset, preference, observation) is calibrated on each single
   statistic (its KL divergence from the reference);
2. the best KL reached on each statistic by *any* trial of the family for that
   dataset (phase 1 measures all four KLs at every trial) defines the relative
   losses, and every cell is calibrated again on the average relative loss.

Each (dataset, cell, objective) search is one task of a phase
(:mod:`simrec.studies.phases`) on the :mod:`simrec.tasks` backend; its seed is ``task_seed(seed, dataset, preference, observation,
objective)`` (indices into simrec's fixed lists of models and objectives, so a
sweep over a subset gives each cell the same seed), and its trial log is its
shard: a killed sweep resumes where it stopped and reproduces the trials of an
uninterrupted one.

Outputs under ``out/<dataset>/``: ``cells/<cell>/<objective>/trials.jsonl``,
``presets/<cell>.toml`` (best average-loss parameters), ``table.csv`` (KL and
relative loss per cell x objective x statistic), ``best.csv`` (best cell per
objective), ``summary.md`` (the same as markdown tables),
``figures/<cell>.png`` (the four statistics, simulated vs reference), and with the
``algorithm_response`` or ``response_loss`` objective ``sim_to_real.csv`` / ``sim_to_real_orders.csv`` (the reference algorithms
on the data vs at each search's chosen point, also in ``summary.md``); and
``out/manifest.json``, ``out/scenario.toml`` as for every run directory.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simrec._io import write_bytes, write_csv, write_text
from simrec._random import task_seed
from simrec.calibration import (
    AVERAGE_LOSS,
    OBJECTIVES,
    RESPONSE_OBJECTIVES,
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
from simrec.config.models import PREFERENCE_MODELS, SAMPLER_MODELS, CellSpec
from simrec.config.presets import preset_tables, write_preset
from simrec.config.run import content_digest
from simrec.config.sweep import SweepSpec
from simrec.interactions import Interactions
from simrec.rundir import RunDir, RunDirError, path_problem
from simrec.stats import STATISTICS
from simrec.studies.phases import KeyedTask, Phase, run_phase
from simrec.tasks import Backend, SerialBackend

if TYPE_CHECKING:
    from simrec.calibration.response import SimToReal

__all__ = ["DatasetLoadError", "load_targets", "run_sweep", "calibrate_sweep", "export_presets"]


class DatasetLoadError(ValueError):
    """A dataset of a sweep spec cannot be loaded or calibrated against (the message names it)."""


def load_targets(
    spec: SweepSpec, spec_path: Path, data: Sequence[Interactions] | None = None
) -> list[CalibrationTarget]:
    """Load every dataset of ``spec`` and reduce it to a calibration target (bins and statistics).

    ``data``: the datasets' interactions, already read (in the order of
    ``spec.dataset``; ``simrec assess`` reads its dataset once); default:
    read here.

    Raises
    ------
    DatasetLoadError
        ``<spec>: dataset[i] (name): <what went wrong>``.
    """
    from simrec.datasets import DatasetError

    targets = []
    for i, ref in enumerate(spec.dataset):
        try:
            inter = ref.read(ref.resolve(spec_path)) if data is None else data[i]
        except (DatasetError, TypeError) as exc:
            raise DatasetLoadError(f"{spec_path}: dataset[{i}] ({ref.name}): {exc}") from None
        try:
            target = CalibrationTarget.from_interactions(
                ref.name, inter, rng=spec.seed, max_pairs=spec.stat_pairs, statistics=spec.statistics
            )
            if spec.ratings is not None and ref.min_rating is not None:
                # rated cells: the users' profiles before the binarisation (a rated world's profile sizes)
                try:
                    unfiltered = ref.model_copy(update={"min_rating": None}).read(ref.resolve(spec_path))
                except (DatasetError, TypeError) as exc:
                    raise DatasetLoadError(f"{spec_path}: dataset[{i}] ({ref.name}): {exc}") from None
                target = dataclasses.replace(target, shape=target.shape.with_consumed(inter, unfiltered))
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


@dataclass(frozen=True)
class _Sweep:
    """A sweep's searches: the spec's datasets (as ``targets``), cells and objectives, under ``out``."""

    targets: Sequence[CalibrationTarget]
    out: Path
    spec: SweepSpec

    @property
    def cells(self) -> list[CellSpec]:
        return self.spec.cells()

    def objective(
        self, t: CalibrationTarget, cell: CellSpec, obj: str, best: dict[str, float] | None = None
    ) -> Objective:
        extra = {} if self.spec.max_pairs is None else {"max_pairs": self.spec.max_pairs}
        return Objective(t, cell, obj, best_kl=best, stat_pairs=self.spec.stat_pairs, **extra)

    def seed(self, d: int, cell: CellSpec, obj: str) -> int:
        """Seed of a cell's search: fixed by the model and objective names, not the spec's list order."""
        key = (
            d,
            PREFERENCE_MODELS.tags.index(cell.preference),
            SAMPLER_MODELS.tags.index(cell.observation),
            OBJECTIVES.index(obj),
        )
        return int(task_seed(self.spec.seed, *key).generate_state(1)[0])

    def log(self, t: CalibrationTarget, cell: CellSpec, obj: str) -> Path:
        return self.out / t.name / "cells" / cell.name / obj / "trials.jsonl"

    def tasks(self, objectives: Sequence[str], best: dict[str, dict[str, float]] | None) -> list[KeyedTask]:
        """One search per dataset x cell x objective (``best``: the family-best KLs of ``average_loss``)."""
        return [
            self._task(d, t, cell, obj, None if best is None else best[t.name])
            for d, t in enumerate(self.targets)
            for cell in self.cells
            for obj in objectives
        ]

    def _task(self, d: int, t: CalibrationTarget, cell: CellSpec, obj: str, best: dict[str, float] | None) -> KeyedTask:
        sp, seed, log = self.spec, self.seed(d, cell, obj), self.log(t, cell, obj)
        payload = (
            self.objective(t, cell, obj, best),
            seed,
            sp.n_calls,
            sp.n_initial,
            log,
            sp.denoise_top,
            sp.denoise_seeds,
        )
        return KeyedTask(
            f"{d}__{cell.name}__{obj}", f"dataset {t.name}, cell {cell.name}, objective {obj}", seed, payload
        )

    def family_best(self, target: CalibrationTarget, results: Sequence[CellResult]) -> dict[str, float]:
        """The family's best KL on each statistic: the denominators of the relative losses.

        De-noised sweeps: the lowest de-noised mean over the single-statistic
        searches of this sweep. Otherwise: the lowest single value of any trial
        logged under the output folder for the dataset (every cell, every
        single-statistic objective; each trial measures all four statistics).
        """
        if self.spec.denoise_seeds:
            points = [p for c in results if c.dataset == target.name and c.objective in STATISTICS for p in c.denoised]
            return {s: min((p.details_mean.get(s, math.inf) for p in points), default=math.inf) for s in STATISTICS}
        best = {s: math.inf for s in STATISTICS}
        for cell in (
            CellSpec(preference=p, observation=o) for p in PREFERENCE_MODELS.tags for o in SAMPLER_MODELS.tags
        ):
            for obj in STATISTICS:
                log = self.log(target, cell, obj)
                for tr in read_log(log) if log.exists() else []:
                    if tr.status == "ok":
                        for s in STATISTICS:
                            best[s] = min(best[s], tr.details.get(s, math.inf))
        return best


def run_sweep(
    targets: Sequence[CalibrationTarget],
    out: str | Path,
    spec: SweepSpec,
    *,
    backend: Backend | None = None,
    figures: bool = True,
    on_cell: Callable[[CellResult], None] | None = None,
) -> SweepResult:
    """Run (or resume) the sweep ``spec`` on ``targets`` (its datasets, loaded: :func:`load_targets`) under ``out``.

    Writes trials, presets, tables and figures. The searches run in two phases
    over :func:`simrec.studies.phases.run_phase` (without shards: each search
    resumes from its trial log): the single-statistic searches, then the
    ``average_loss`` searches, which need the family's best KLs: the best KL
    of each statistic over every trial logged under ``out`` for that dataset.
    ``spec.denoise_seeds > 0`` re-evaluates the ``spec.denoise_top`` best
    trials of every search with that many fresh seeds
    (:func:`simrec.calibration.denoise`); tables then give mean ± sd, the
    family's best KLs are the lowest de-noised means of the single-statistic
    searches, and presets come from the de-noised best. Presets are written
    from the ``average_loss`` cells (or, in a sweep without them, from the
    first objective's cells). The caller holds the run directory (see
    :func:`calibrate_sweep`); ``on_cell`` is called as each search finishes.
    """
    sweep = _Sweep(tuple(targets), Path(out), spec)
    backend = SerialBackend() if backend is None else backend
    single = [o for o in spec.objectives if o != AVERAGE_LOSS]
    _preflight(sweep, single, AVERAGE_LOSS in spec.objectives)
    phase: Phase[CellResult | _RefusedLog, CellResult | _RefusedLog] = Phase(_cell_task, "searches")

    def search(objectives: Sequence[str], best: dict[str, dict[str, float]] | None) -> list[CellResult]:
        tasks = sweep.tasks(objectives, best)
        record = (lambda _task, r: None if isinstance(r, _RefusedLog) else on_cell(r)) if on_cell else None
        return _cells(
            run_phase(phase, tasks, rd=None, backend=backend, title=spec.name, progress=False, on_result=record).values
        )

    results = search(single, None)
    family_best = {t.name: sweep.family_best(t, results) for t in sweep.targets}
    if AVERAGE_LOSS in spec.objectives:
        missing = {t.name: [s for s, v in family_best[t.name].items() if not math.isfinite(v)] for t in sweep.targets}
        missing = {k: v for k, v in missing.items() if v}
        if missing:
            raise ValueError(
                f"`average_loss` needs a finished calibration of every statistic first; missing: {missing}"
            )
        results += search([AVERAGE_LOSS], family_best)
    table = sweep_table(results, family_best)
    presets = {}
    for d, t in enumerate(sweep.targets):
        checks = _response_checks(sweep, t, results)
        _write_dataset_tables(sweep.out / t.name, table[table["dataset"] == t.name], t.name, checks)
        presets.update(_write_presets(sweep, d, results, family_best[t.name], figures))
    return SweepResult(tuple(results), table, presets)


def _write_presets(
    sweep: _Sweep, d: int, results: Sequence[CellResult], best: dict[str, float], figures: bool
) -> dict[str, Path]:
    """Dataset ``d``'s presets (``average_loss`` cells, else the first objective's) and, with ``figures``, their
    figures; ``"<dataset>/<cell>"`` -> preset file."""
    t, objectives = sweep.targets[d], sweep.spec.objectives
    preset_objective = AVERAGE_LOSS if AVERAGE_LOSS in objectives else objectives[0]
    presets = {}
    for c in results:
        if c.dataset != t.name or c.objective != preset_objective:
            continue
        cell = CellSpec(preference=c.preference, observation=c.observation, ratings=sweep.spec.ratings)
        fit = {f"kl_{s}": float(v) for s, v in c.kls().items()}
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
        presets[f"{t.name}/{c.cell}"] = write_preset(sweep.out / t.name / "presets" / f"{c.cell}.toml", tables, comment)
        if figures:
            from simrec.calibration.figures import plot_cell

            objective = sweep.objective(t, cell, STATISTICS[0])
            plot_cell(
                objective, c.chosen, sweep.seed(d, cell, c.objective), sweep.out / t.name / "figures" / f"{c.cell}.png"
            )
    return presets


def _preflight(sweep: _Sweep, single: Sequence[str], average: bool) -> None:
    """Check every trial log already in the folder before anything is written (issue 12).

    Refuses, with :class:`~simrec.calibration.CalibrationLogError`, a log of
    another search, a log whose lines are not trial records, and a run that would extend the single-statistic searches
    of a folder whose average-loss searches exist: extending them changes the
    family-best KLs those searches were computed with, so the folder would be
    left half-extended and then refused.
    """
    n_calls = sweep.spec.n_calls
    shorter = [(log, n_done) for log, n_done in _checked_single_logs(sweep, single) if n_done < n_calls]
    averages = [sweep.log(t, c, AVERAGE_LOSS) for t in sweep.targets for c in sweep.cells] if average else []
    finished = [log for log in averages if log.exists()]
    for log in finished:  # their identity depends on phase 1; their records are checked now
        read_log(log)
        read_denoise_log(log.with_name("denoise.jsonl"), None)
    if finished and shorter:
        log, n_done = shorter[0]
        raise CalibrationLogError(
            f"{finished[0].parents[2]}: this folder's average-loss searches were computed from the single-statistic "
            f"searches as they are ({log} has {n_done} trial(s)); running them to {n_calls} calls would change the "
            "family-best KLs the average-loss logs depend on. Use a new --out folder, or the n_calls the folder was "
            "made with"
        )


def _checked_single_logs(sweep: _Sweep, single: Sequence[str]) -> list[tuple[Path, int]]:
    """Every single-statistic search's log and its number of trials (0 when missing), each checked against its search."""
    logs = []
    for d, t in enumerate(sweep.targets):
        for cell in sweep.cells:
            for obj in single:
                log = sweep.log(t, cell, obj)
                if not log.exists():
                    logs.append((log, 0))
                    continue
                header = log_header(
                    sweep.objective(t, cell, obj), seed=sweep.seed(d, cell, obj), n_initial=sweep.spec.n_initial
                )
                logs.append((log, len(read_log(log, header))))
                read_denoise_log(log.with_name("denoise.jsonl"), header["digest"])
    return logs


def _response_checks(sweep: _Sweep, t: CalibrationTarget, results: Sequence[CellResult]) -> list[SimToReal]:
    """The sim-to-real check at the chosen point of each ``algorithm_response`` or ``response_loss`` search of
    dataset ``t``.

    Cheap (issue 24): no new simulation. The chosen point's evaluations are
    its de-noising seeds' (read back from ``denoise.jsonl``), or, without
    de-noising, the chosen trial alone; each logs the reference algorithms'
    simulated means (``sim_<algorithm>_<metric>``), compared with the real
    response the search used (:func:`~simrec.calibration.response.chosen_point_sim_to_real`).
    """
    if t.response is None:
        return []
    from simrec.calibration.response import chosen_point_sim_to_real

    checks = []
    for c in results:
        if c.dataset != t.name or c.objective not in RESPONSE_OBJECTIVES:
            continue
        if c.denoised:
            log = sweep.out / t.name / "cells" / c.cell / c.objective / "denoise.jsonl"
            records = read_denoise_log(log, None)  # verified by the search that wrote it
            trial = c.denoised[0].trial
            details = [r["details"] for (i, _), r in sorted(records.items()) if i == trial and not r.get("refused")]
        else:
            details = [c.chosen.details]
        checks.append(chosen_point_sim_to_real(t.response, details, c.cell))
    return checks


def _write_dataset_tables(folder: Path, sub: pd.DataFrame, dataset: str, checks: Sequence[SimToReal] = ()) -> None:
    write_csv(folder / "table.csv", sub)
    winners = []
    for obj, grp in sub.groupby("objective", sort=False):
        key = objective_column(obj)
        w = grp.loc[grp[key].idxmin()]
        winners.append({"objective": obj, "best_cell": w["cell"], "value": w[key]})
    write_csv(folder / "best.csv", pd.DataFrame(winners))
    if checks:  # the algorithm_response searches' sim-to-real check (issue 24), one row per cell x ...
        for name, part in (("sim_to_real.csv", "table"), ("sim_to_real_orders.csv", "orders")):
            frame = pd.concat([getattr(c, part).assign(cell=c.world) for c in checks], ignore_index=True)
            write_csv(folder / name, frame[["cell", *[k for k in frame.columns if k != "cell"]]])
    write_text(folder / "summary.md", summary_markdown(sub, dataset, checks))


def calibrate_sweep(
    spec: SweepSpec,
    spec_path: Path,
    out: str | Path,
    *,
    n_calls: int | None = None,
    backend: Backend | None = None,
    figures: bool = True,
    on_cell: Callable[[CellResult], None] | None = None,
    data: Sequence[Interactions] | None = None,
) -> SweepResult:
    """``simrec calibrate``: load the spec's datasets, then :func:`run_sweep` in a locked run directory.

    ``n_calls`` overrides the spec's (``n_initial`` is capped at it); it is
    not part of the folder's identity, so a finished sweep can be extended.
    ``data``: the datasets, already read (see :func:`load_targets`).

    Raises
    ------
    DatasetLoadError, simrec.rundir.RunDirError, simrec.calibration.CalibrationLogError, simrec.tasks.TaskError
    """
    targets = load_targets(spec, spec_path, data)
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
        swept = spec.model_copy(update={"n_calls": calls, "n_initial": min(spec.n_initial, calls)})
        result = run_sweep(targets, out, swept, backend=backend, figures=figures, on_cell=on_cell)
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
