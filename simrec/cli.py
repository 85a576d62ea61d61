"""The ``simrec`` command.

``simrec run SCENARIO --out DIR``      run a missing-data scenario (resumable)
``simrec stress SCENARIO --out DIR``   stress-test sampled-metric estimators (resumable)
``simrec calibrate SPEC --out DIR``    calibrate the simulators to reference datasets (resumable)
``simrec scenarios``                   list the scenarios shipped with the package
``simrec datasets describe PATH``      summarise a reference dataset

Errors in the user's input (scenario, dataset, output folder) are printed as
one clear message on stderr with exit code 2; nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="simrec: how wrong are offline recommender evaluations? Simulate, calibrate, measure.",
)
datasets_app = typer.Typer(no_args_is_help=True, help="Reference datasets.")
app.add_typer(datasets_app, name="datasets")

__all__ = ["app", "main"]


def _fail(message: str) -> None:
    typer.echo(f"simrec: error: {message}", err=True)
    raise typer.Exit(code=2)


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file, or the name of a shipped scenario (e.g. quickstart).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (re-running resumes).")] = Path("runs/out"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes.")] = 1,
    backend: Annotated[Optional[str], typer.Option(help="serial | processes (default: serial for 1 job).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
    no_figures: Annotated[bool, typer.Option("--no-figures", help="Skip the figures.")] = False,
) -> None:
    """Run a scenario: generate, observe, split, recommend, measure vs observed and true relevance."""
    from .parallel import BACKENDS
    from .runner import OutputDirError, run_scenario
    from .scenario import ScenarioError, load_scenario

    if backend is not None and backend not in BACKENDS:
        _fail(f"`--backend` must be one of {', '.join(BACKENDS)}; got {backend!r}")
    try:
        sc, path = load_scenario(scenario)
    except ScenarioError as exc:
        _fail(str(exc))
    try:
        outcome = run_scenario(sc, path, out, n_jobs=jobs, backend=backend, progress=not quiet, figures=not no_figures)
    except OutputDirError as exc:
        _fail(str(exc))
    if not quiet:
        _print_run_summary(outcome)


_SHORT = {"precision": "P@N", "recall": "R@N", "recall_truncated": "Rt@N", "reciprocal_rank": "RR", "ndcg": "nDCG",
          "average_precision": "AP", "auc": "AUC", "pap_at_k": "pAp@k", "hits": "hits", "hit": "HR"}


def _print_run_summary(outcome) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(100, Console().width))
    s = outcome.summary
    err = s[s["kind"] == "error"]
    metrics = list(dict.fromkeys(outcome.results["metric"]))
    table = Table(title="Mean missing-data error (observed − true) over replicates", title_justify="left")
    table.add_column("world")
    table.add_column("recommender")
    for m in metrics:
        table.add_column(_SHORT.get(m, m), justify="right")
    means = err.set_index(["world", "recommender", "metric"])["mean"]
    for world in dict.fromkeys(outcome.results["world"]):
        for rec in dict.fromkeys(outcome.results["recommender"]):
            table.add_row(world, rec, *[f"{means.get((world, rec, m), float('nan')):+.3f}" for m in metrics])
    console.print(table)
    console.print(
        f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s -> {outcome.out}"
    )


@app.command()
def calibrate(
    spec: Annotated[Path, typer.Argument(help="Sweep spec TOML (e.g. calibration/ml-100k.toml).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (re-running resumes).")] = Path("runs/calibration"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (one sweep cell each).")] = 1,
    n_calls: Annotated[Optional[int], typer.Option("--n-calls", min=1, help="Override the spec's n_calls.")] = None,
    export_presets: Annotated[Optional[Path], typer.Option(help="Also copy the presets into this folder (<dir>/<dataset>/<cell>.toml).")] = None,
    no_figures: Annotated[bool, typer.Option("--no-figures", help="Skip the figures.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Calibrate every preference x observation model to reference datasets (GP search on KL divergences)."""
    import shutil

    from .calibration import CalibrationLogError, CalibrationTarget, run_sweep
    from .calibration.spec import load_sweep_spec
    from .datasets import DatasetError, k_core, load_dataset
    from .scenario import ScenarioError

    try:
        sweep = load_sweep_spec(spec)
    except ScenarioError as exc:
        _fail(str(exc))
    targets = []
    for i, ref in enumerate(sweep.dataset):
        options = {} if ref.min_rating is None else {"min_rating": ref.min_rating}
        try:
            inter = load_dataset(sweep.dataset_path(ref, spec), kind=ref.kind, **options)
        except (DatasetError, TypeError) as exc:
            _fail(f"{spec}: dataset[{i}] ({ref.name}): {exc}")
        if ref.k_core:
            inter = k_core(inter, ref.k_core)
        try:
            targets.append(CalibrationTarget.from_interactions(ref.name, inter, rng=sweep.seed, max_pairs=sweep.stat_pairs))
        except ValueError as exc:
            _fail(f"{spec}: dataset[{i}]: {exc}")
    done = {"n": 0}

    def on_cell(cell) -> None:
        done["n"] += 1
        if not quiet:
            typer.echo(f"[{done['n']}] {cell.dataset} {cell.cell} {cell.objective}: best {cell.best.value:.4g} "
                       f"(trial {cell.best.index} of {cell.n_trials}, {cell.n_refused} refused, resumed at {cell.resumed_from})")

    try:
        result = run_sweep(targets, out, seed=sweep.seed, preferences=sweep.preferences, observations=sweep.observations,
                           objectives=sweep.objectives, n_calls=n_calls or sweep.n_calls, n_initial=min(sweep.n_initial, n_calls or sweep.n_calls),
                           max_pairs=sweep.max_pairs, stat_pairs=sweep.stat_pairs, n_jobs=jobs, figures=not no_figures,
                           on_cell=on_cell)
    except CalibrationLogError as exc:
        _fail(str(exc))
    if export_presets is not None:
        for name, path in result.presets.items():
            dest = export_presets / f"{name}.toml"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    if not quiet:
        cols = ["dataset", "cell", "objective", "average_loss"]
        typer.echo(result.table[cols].to_string(index=False))
        typer.echo(f"presets: {', '.join(sorted(result.presets))} -> {out}")


@app.command()
def scenarios() -> None:
    """List the scenarios shipped with the package (run them by name with `simrec run` or `simrec stress`)."""
    import tomllib

    from .scenario import shipped_scenarios

    for name, path in sorted(shipped_scenarios().items()):
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
        command = "simrec stress" if raw.get("kind") == "stress" else "simrec run"
        typer.echo(f"{command:14s} {name:24s} {raw.get('description', '')}")


@datasets_app.command("describe")
def datasets_describe(
    path: Annotated[Path, typer.Argument(help="Dataset file or folder (MovieLens, Amazon 5-core, Steam, CSV/Parquet).")],
    kind: Annotated[Optional[str], typer.Option(help="Force the layout: movielens | amazon | steam | pairs.")] = None,
) -> None:
    """Print users, items, pairs, density, activity and popularity summaries."""
    from .datasets import DatasetError, describe, load_dataset

    try:
        inter = load_dataset(path, kind=kind)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(describe(inter).to_text())


@app.command()
def stress(
    scenario: Annotated[str, typer.Argument(help="Stress scenario TOML file, or the name of a shipped one (e.g. sampled-ml100k).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (re-running resumes).")] = Path("runs/stress"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes.")] = 1,
    backend: Annotated[Optional[str], typer.Option(help="serial | processes (default: serial for 1 job).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")] = False,
    no_figures: Annotated[bool, typer.Option("--no-figures", help="Skip the figures.")] = False,
) -> None:
    """Stress-test sampled-metric estimators against exact metrics (and, in simulations, the truth)."""
    from .stress.command import stress_command

    stress_command(scenario, out, jobs=jobs, backend=backend, quiet=quiet, figures=not no_figures, fail=_fail)


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="simrec")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
