"""One sweep cell's calibration and the tables of a sweep (Tian 2019, §3.4 and §4.1).

:func:`calibrate_cell` runs the resumable GP search of one cell on one
objective; :func:`sweep_table` and :func:`summary_markdown` tabulate many
cells. The sweep itself (datasets x cells x objectives as tasks, in two
phases, into a run directory) is :mod:`simrec.studies.calibrate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..stats import STATISTICS
from .denoise import Denoised
from .objective import AVERAGE_LOSS, RESPONSE_OBJECTIVES, SUM_KL, Objective, objective_column
from .search import SearchResult, Trial, TrialOutcome, gp_search

if TYPE_CHECKING:
    from .response import SimToReal

__all__ = [
    "CellResult",
    "SweepResult",
    "calibrate_cell",
    "cell_result",
    "log_header",
    "sweep_table",
    "summary_markdown",
]


@dataclass(frozen=True)
class CellResult:
    """The result of one cell's search on one objective.

    ``best`` is the search's best single trial; ``denoised`` its best trials
    re-evaluated with fresh seeds (:func:`~simrec.calibration.denoise.denoise`;
    empty without de-noising), sorted by mean value; ``chosen`` is the trial
    of the de-noised best (the point a preset is made from), or ``best``.
    """

    dataset: str
    cell: str
    preference: str
    observation: str
    objective: str
    best: Trial
    n_trials: int
    n_refused: int
    resumed_from: int
    denoised: tuple[Denoised, ...] = ()
    chosen_trial: Trial | None = None

    @property
    def chosen(self) -> Trial:
        """The trial a preset is made from: the de-noised best, or the best single trial."""
        return self.chosen_trial if self.chosen_trial is not None else self.best

    def kls(self) -> dict[str, float]:
        """KL per statistic of the chosen point: the de-noised means, or the best trial's single values."""
        if self.denoised:
            return {s: self.denoised[0].details_mean.get(s, math.nan) for s in STATISTICS}
        return {s: self.best.details.get(s, math.nan) for s in STATISTICS}

    def kl_sds(self) -> dict[str, float]:
        """Standard deviation of each KL over the de-noising seeds (NaN without de-noising)."""
        if self.denoised:
            return {s: self.denoised[0].details_sd.get(s, math.nan) for s in STATISTICS}
        return {s: math.nan for s in STATISTICS}


@dataclass(frozen=True)
class SweepResult:
    """Every cell's result, the sweep table and the presets written (``dataset/cell`` -> file)."""

    cells: tuple[CellResult, ...]
    table: pd.DataFrame
    presets: dict[str, Path]


def _digest(objective: Objective, n_initial: int, seed: int, fixed: dict[str, float]) -> str:
    import hashlib
    import json

    ratings = getattr(objective.cell, "ratings", None)  # a CellSpec's (not part of the Cell protocol)
    blob = json.dumps(
        {
            "dataset": objective.target.name,
            "shape": objective.target.shape.key(),
            "preference": objective.cell.preference,
            "observation": objective.cell.observation,
            "objective": objective.objective,
            "best_kl": objective.best_kl,
            "max_pairs": objective.max_pairs,
            "max_items_ratio": objective.max_items_ratio,
            "stat_pairs": objective.stat_pairs,
            "n_initial": n_initial,
            "seed": seed,
            "fixed": fixed,
            # only when not the default, so logs written before the variant existed keep their identity
            **({} if objective.target.statistics == "thesis" else {"statistics": objective.target.statistics}),
            **({} if objective.target.response is None else {"response": repr(objective.target.response.protocol)}),
            **({} if ratings is None else {"ratings": repr(ratings)}),
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

    def __call__(self, params: dict[str, float], seed: np.random.SeedSequence) -> TrialOutcome:
        return self.objective({**self.fixed, **params}, seed)


def log_header(objective: Objective, *, seed: int, n_initial: int, fixed: dict[str, float] | None = None) -> dict:
    """The identity of a cell's trial log (its ``digest`` covers everything but ``n_calls``).

    :func:`simrec.calibration.read_log` with this header refuses the log of
    another search, so a caller can check a folder before it writes anything.
    """
    fixed = dict(fixed or {})
    return {
        "fixed": fixed,
        "digest": _digest(objective, n_initial, seed, fixed),
        "dataset": objective.target.name,
        "cell": objective.cell.name,
        "objective": objective.objective,
    }


def calibrate_cell(
    objective: Objective,
    *,
    seed: int,
    n_calls: int = 150,
    n_initial: int = 25,
    log_path: str | Path | None = None,
    on_trial: Callable[[Trial], None] | None = None,
    fixed: dict[str, float] | None = None,
) -> SearchResult:
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
    dims = objective.cell.search_space(objective.target.shape)
    fixed = dict(fixed or {})
    unknown = sorted(set(fixed) - {d.name for d in dims})
    if unknown:
        raise ValueError(
            f"`fixed` names parameters that are not in the search space: {unknown}; space: {[d.name for d in dims]}"
        )
    dims = [d for d in dims if d.name not in fixed]
    header = log_header(objective, seed=seed, n_initial=n_initial, fixed=fixed)
    fn = _WithFixed(objective, fixed) if fixed else objective
    return gp_search(
        fn, dims, seed=seed, n_calls=n_calls, n_initial=n_initial, log_path=log_path, header=header, on_trial=on_trial
    )


def cell_result(objective: Objective, res: SearchResult, denoised: tuple[Denoised, ...] = ()) -> CellResult:
    """The :class:`CellResult` of a finished search (and its de-noised best points, if any)."""
    c = objective.cell
    usable = tuple(p for p in denoised if p.n > 0)
    chosen = next((t for t in res.trials if usable and t.index == usable[0].trial), None)
    return CellResult(
        objective.target.name,
        c.name,
        c.preference,
        c.observation,
        objective.objective,
        res.best,
        len(res.trials),
        sum(t.status == "refused" for t in res.trials),
        res.resumed_from,
        usable,
        chosen,
    )


def sweep_table(cells: Sequence[CellResult], family_best: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per cell x objective: the chosen point's KL per statistic, its relative losses
    (KL / the family's best KL on that statistic) and parameters.

    With de-noising (any cell has ``denoised`` points) the KLs are the means
    over the de-noising seeds, with their standard deviations (``sd_kl_*``),
    the number of evaluations (``n_denoise``) and the search's best single
    value (``single_best_value``) beside them. A ``sum_kl`` column (the sum of
    the four KLs) is added when a cell was searched on that objective, and
    ``algorithm_response`` and ``response_loss`` with the response's parts
    (``response_rel_error``, ``response_tau``) likewise.
    """
    rows = []
    denoised = any(c.denoised for c in cells)
    for c in cells:
        best = family_best[c.dataset]
        kls = c.kls()
        # no finite family best (e.g. a sweep of sum_kl only: no single-statistic searches): undefined, not 0
        rel = {s: kls[s] / best[s] if 0 < best[s] < math.inf else math.nan for s in STATISTICS}
        row = {
            "dataset": c.dataset,
            "cell": c.cell,
            "preference": c.preference,
            "observation": c.observation,
            "objective": c.objective,
            "best_trial": c.chosen.index,
            "n_trials": c.n_trials,
            "n_refused": c.n_refused,
        }
        row.update({f"kl_{s}": kls[s] for s in STATISTICS})
        if denoised:
            row.update({f"sd_kl_{s}": v for s, v in c.kl_sds().items()})
        row.update({f"rel_{s}": rel[s] for s in STATISTICS})
        row["average_loss"] = sum(rel.values()) / len(rel)
        if any(x.objective == SUM_KL for x in cells):
            row[SUM_KL] = sum(kls[s] for s in STATISTICS)
        if any(x.objective in RESPONSE_OBJECTIVES for x in cells):
            # its value and parts at the chosen point (de-noised means when de-noised); NaN for other objectives
            got = c.denoised[0].details_mean if c.denoised else c.best.details
            for key in (*RESPONSE_OBJECTIVES, "response_rel_error", "response_tau"):
                row[key] = got.get(key, math.nan) if c.objective in RESPONSE_OBJECTIVES else math.nan
        if denoised:
            row["n_denoise"] = c.denoised[0].n if c.denoised else 0
            row["single_best_value"] = c.best.value
        row.update({f"param_{k}": v for k, v in c.chosen.params.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(x: float, lo: float, hi: float) -> str:
    return f"{x:.4g}" if not (math.isfinite(lo) and math.isfinite(hi)) else f"{x:.4g} [{lo:.4g}, {hi:.4g}]"


def _sim_to_real_markdown(checks: Sequence[SimToReal]) -> list[str]:
    """The summary's sim-to-real section (:func:`summary_markdown`)."""
    from .response import NOT_MEASURED_TEXT

    reps = sorted({int(r) for c in checks for r in c.table["replicates"]})
    lines = [
        "",
        "## Sim to real at the chosen point of each algorithm-response search",
        "",
        f"Protocol: {checks[0].protocol.label()}. Real: the reference algorithms on the dataset, the mean over its "
        "evaluated users with a 95% interval. Simulated: the chosen point's evaluations "
        f"({' or '.join(map(str, reps))}: its de-noising seeds, with a 95% t interval; without de-noising the chosen "
        "trial alone, no interval, and the search's best, so flattered by the choice). Order: each pair's order on "
        "the data (a tie when its paired interval covers 0) and the evaluations that reproduce it, k of R with a "
        "Wilson interval.",
        "",
        "| cell | metric | algorithm | real | simulated | relative error |",
        "|---|---|---|---:|---:|---:|",
    ]
    for c in checks:
        for r in c.table.itertuples():
            rel = f"{100 * r.rel_error:+.0f}%" if math.isfinite(r.rel_error) else "n/a"
            lines.append(
                f"| {c.world} | {r.metric} | {r.algorithm} | {_interval(r.real, r.real_low, r.real_high)} | "
                f"{_interval(r.sim, r.sim_low, r.sim_high)} | {rel} |"
            )
    lines += ["", "| cell | metric | order on the data | reproduced |", "|---|---|---|---|"]
    for c in checks:
        for o in c.orders.itertuples():
            gap = _interval(o.real_gap, o.real_gap_low, o.real_gap_high)
            if o.real_order == "tie":
                order, rep = f"{o.a} ~ {o.b}: tie (gap {gap})", "real tie"
            elif o.verdict == "not measured":
                order, rep = f"{o.real_order} (gap {gap})", NOT_MEASURED_TEXT
            else:
                order = f"{o.real_order} (gap {gap})"
                rep = f"{int(o.reproduced)} of {o.replicates} [{o.agreement_low:.2f}, {o.agreement_high:.2f}]: {o.verdict}"
            lines.append(f"| {c.world} | {o.metric} | {order} | {rep} |")
    return lines


def summary_markdown(table: pd.DataFrame, dataset: str, sim_to_real: Sequence[SimToReal] = ()) -> str:
    """Markdown tables of a sweep's results for one dataset.

    1. Per objective, the KL each cell reached on its own objective (single
       statistics) or its average loss, best per row in bold.
    2. For the average-loss cells, the relative loss on each statistic (KL /
       the family's best KL on it): 1.00 = as good as the best model found.
    3. With ``sim_to_real`` (one :class:`~simrec.calibration.response.SimToReal` per
       ``algorithm_response`` or ``response_loss`` search, at its chosen point:
       :func:`~simrec.calibration.response.chosen_point_sim_to_real`), the real vs simulated
       metric of each reference algorithm and the order agreement (issue 24).
    """
    lines = [f"# Calibration sweep: {dataset}", ""]
    cells = list(dict.fromkeys(table["cell"]))
    sum_kl = ", sum of the four KLs for sum_kl" if (table["objective"] == SUM_KL).any() else ""
    lines.append(f"## Best value per objective (KL for a statistic, mean relative loss for average_loss{sum_kl})")
    lines.append("")
    lines.append("| objective | " + " | ".join(cells) + " |")
    lines.append("|---|" + "---:|" * len(cells))
    for obj, grp in table.groupby("objective", sort=False):
        key = objective_column(obj)
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
            lines.append(
                f"| {row['cell']} | "
                + " | ".join(f"{row[f'rel_{s}']:.2f}" for s in STATISTICS)
                + f" | {row['average_loss']:.2f} |"
            )
    if sim_to_real:
        lines += _sim_to_real_markdown(sim_to_real)
    return "\n".join(lines) + "\n"
