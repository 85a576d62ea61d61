"""The ``simrec`` command: the only place that parses options and prints.

``simrec run SCENARIO --out DIR``      run a missing-data scenario (resumable)
``simrec stress SCENARIO --out DIR``   stress-test sampled-metric estimators (resumable)
``simrec calibrate SPEC --out DIR``    calibrate the simulators to reference datasets (resumable)
``simrec scenarios``                   list the scenarios shipped with the package
``simrec datasets describe PATH``      summarise a reference dataset

The three jobs share ``--jobs N`` and ``--backend serial|processes|ray``
(``--address ADDR`` to connect to a Ray cluster; without it a local one is
started). Errors in the user's input (scenario, dataset, output folder) are
printed as one clear message on stderr with exit code 2 and nothing is
written; failed tasks exit 1 after every other task's result was kept;
Ctrl-C exits 130 after saying how to resume.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
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

_Out = Annotated[Path, typer.Option("--out", "-o", help="Output folder (re-running resumes).")]
_Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Workers (processes, or Ray CPUs of a local cluster).")]
_Backend = Annotated[Optional[str], typer.Option("--backend", help="serial | processes | ray (default: serial for 1 job, "
                                                                   "else processes).")]
_Address = Annotated[Optional[str], typer.Option("--address", help="Ray cluster to connect to (with --backend ray); "
                                                                   "default: start a local one.")]
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or summary.")]
_NoFigures = Annotated[bool, typer.Option("--no-figures", help="Skip the figures.")]


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"simrec: error: {message}", err=True)
    raise typer.Exit(code=code)


def _version(value: bool) -> None:
    if value:
        import simrec

        typer.echo(f"simrec {simrec.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """simrec: how wrong are offline recommender evaluations? Simulate, calibrate, measure."""


@contextmanager
def _backend(name: str | None, jobs: int, address: str | None) -> Iterator[object]:
    """The task backend the options ask for (closed after the job); bad options fail with exit 2."""
    from .tasks import BackendError, make_backend

    try:
        backend = make_backend(name, jobs, address)
    except (ValueError, BackendError) as exc:
        _fail(str(exc))
    with backend:
        yield backend


@contextmanager
def _job(out: Path) -> Iterator[None]:
    """Turn what can go wrong while a job runs into one line (no traceback reaches the user)."""
    from .config import ScenarioError
    from .rundir import RunDirError
    from .stress.sources import RanksFileError
    from .studies import DatasetLoadError
    from .tasks import BackendError, TaskError

    try:
        yield
    except (ScenarioError, RunDirError, RanksFileError, DatasetLoadError, BackendError) as exc:
        _fail(str(exc))
    except TaskError as exc:
        _fail(f"{exc}\nfinished tasks are kept in {out}; re-run the same command to retry the failed ones", code=1)
    except KeyboardInterrupt:
        _fail(f"interrupted; finished tasks are kept in {out}; re-run the same command to resume", code=130)
    except OSError as exc:
        where = exc.filename or out
        _fail(f"cannot write {where}: {exc.strerror or exc}; free space or choose another --out folder", code=1)


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file, or the name of a shipped scenario (e.g. quickstart).")],
    out: _Out = Path("runs/out"),
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    quiet: _Quiet = False,
    no_figures: _NoFigures = False,
) -> None:
    """Run a scenario: generate, observe, split, recommend, measure vs observed and true relevance."""
    from .config import ScenarioError
    from .config.run import load_scenario
    from .studies import run_scenario

    try:
        sc, path = load_scenario(scenario)
    except ScenarioError as exc:
        _fail(str(exc))
    with _backend(backend, jobs, address) as b, _job(out):
        outcome = run_scenario(sc, path, out, backend=b, progress=not quiet, figures=not no_figures)
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
def stress(
    scenario: Annotated[str, typer.Argument(help="Stress scenario TOML file, or the name of a shipped one (e.g. sampled-ml100k).")],
    out: _Out = Path("runs/stress"),
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    quiet: _Quiet = False,
    no_figures: _NoFigures = False,
) -> None:
    """Stress-test sampled-metric estimators against exact metrics (and, in simulations, the truth)."""
    from .config import ScenarioError
    from .config.stress import load_stress_scenario
    from .studies import run_stress_scenario

    try:
        sc, path = load_stress_scenario(scenario)
    except ScenarioError as exc:
        _fail(str(exc))
    with _backend(backend, jobs, address) as b, _job(out):
        try:
            outcome = run_stress_scenario(sc, path, out, backend=b, progress=not quiet, figures=not no_figures)
        except ValueError as exc:  # e.g. a size impossible for the candidate sets found
            _fail(f"{path}: {exc}")
    if not quiet:
        _print_stress_summary(outcome)


def _stress_summary_frame(outcome):
    """Mean |relative error| at K = 10 per (scheme, n, estimator, metric), with the winner share."""
    import pandas as pd

    est = outcome.estimates
    k = 10 if (est["k"] == 10).any() else int(est["k"].max())
    e = est[est["k"] == k].assign(abs_rel=lambda f: f["rel_error"].abs())
    table = e.pivot_table(index=["scheme", "n", "estimator"], columns="metric", values="abs_rel", aggfunc="mean",
                          sort=False)
    if len(outcome.winners):
        w = outcome.winners[outcome.winners["k"] == k]
        win = w.groupby(["scheme", "n", "estimator"], sort=False)["share_correct"].mean().rename("winner_share")
        table = table.join(win)
    return pd.DataFrame(table), k


def _print_stress_summary(outcome) -> None:
    from rich.console import Console
    from rich.table import Table

    frame, k = _stress_summary_frame(outcome)
    console = Console(width=max(110, Console().width))
    table = Table(title=f"Mean |relative error| at K = {k} over recommenders, and share of repeats picking the "
                        "exact winner", title_justify="left")
    for col in ("scheme", "n", "estimator", *frame.columns):
        table.add_column(str(col), justify="left" if col in ("scheme", "estimator") else "right")
    for (scheme, n, est), row in frame.iterrows():
        table.add_row(str(scheme), str(n), str(est), *[f"{v:.3f}" for v in row.to_numpy(dtype=float)])
    console.print(table)
    console.print(f"{outcome.computed} task(s) computed, {outcome.reused} reused, {outcome.seconds:.1f} s -> "
                  f"{outcome.out}")


@app.command()
def calibrate(
    spec: Annotated[Path, typer.Argument(help="Sweep spec TOML (e.g. calibration/ml-100k.toml).")],
    out: _Out = Path("runs/calibration"),
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    n_calls: Annotated[Optional[int], typer.Option("--n-calls", min=1, help="Override the spec's n_calls.")] = None,
    export_presets: Annotated[Optional[Path], typer.Option("--export-presets", help="Also copy the presets into this "
                                                           "folder (<dir>/<dataset>/<cell>.toml).")] = None,
    no_figures: _NoFigures = False,
    quiet: _Quiet = False,
) -> None:
    """Calibrate every preference x observation model to reference datasets (GP search on KL divergences)."""
    import shutil

    from .calibration import CalibrationLogError
    from .config import ScenarioError
    from .config.sweep import load_sweep_spec
    from .studies import calibrate_sweep

    try:
        sweep = load_sweep_spec(spec)
    except ScenarioError as exc:
        _fail(str(exc))
    done = {"n": 0}

    def on_cell(cell) -> None:
        done["n"] += 1
        if not quiet:
            typer.echo(f"[{done['n']}] {cell.dataset} {cell.cell} {cell.objective}: best {cell.best.value:.4g} "
                       f"(trial {cell.best.index} of {cell.n_trials}, {cell.n_refused} refused, resumed at {cell.resumed_from})")

    with _backend(backend, jobs, address) as b, _job(out):
        try:
            result = calibrate_sweep(sweep, spec, out, n_calls=n_calls, backend=b, figures=not no_figures,
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

    from .config.files import shipped_scenarios

    for name, path in sorted(shipped_scenarios().items()):
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
        command = "simrec stress" if raw.get("kind") == "stress" else "simrec run"
        typer.echo(f"{command:14s} {name:24s} {raw.get('description', '')}")


@datasets_app.command("describe")
def datasets_describe(
    path: Annotated[Path, typer.Argument(help="Dataset file or folder (MovieLens, Amazon 5-core, Steam, CSV/Parquet).")],
    kind: Annotated[Optional[str], typer.Option("--kind", help="Force the layout: movielens | amazon | steam | pairs.")] = None,
) -> None:
    """Print users, items, pairs, density, activity and popularity summaries."""
    from .datasets import DatasetError, describe, load_dataset

    try:
        inter = load_dataset(path, kind=kind)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(describe(inter).to_text())


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="simrec")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
