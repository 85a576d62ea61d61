"""The ``simrec`` command: the only place that parses options and prints.

``simrec run SCENARIO --out DIR``      run a missing-data scenario (resumable)
``simrec stress SCENARIO --out DIR``   stress-test sampled-metric estimators (resumable)
``simrec calibrate SPEC --out DIR``    calibrate the simulators to reference datasets (resumable)
``simrec assess FILE --out DIR``       assess an evaluation protocol on a dataset (HTML report; resumable)
``simrec scenarios``                   list the scenarios shipped with the package
``simrec datasets describe PATH``      summarise a reference dataset

The three jobs share ``--jobs N``, ``--backend serial|processes|ray``
(``--address ADDR`` to connect to a Ray cluster; without it a local one is
started) and ``--max-memory SIZE`` (a job whose estimated peak is larger is
refused before anything is created; default 75% of the machine's memory).

The boundary (issue 12): errors in the user's input (scenario, dataset,
output folder, options) are printed as one clear message on stderr with exit
code 2 and nothing is written; a full or read-only disk, a missing permission
or running out of memory is one line (what, where, what to do) with exit
code 1; failed tasks exit 1 after every other task's result was kept; Ctrl-C
exits 130 after saying how to resume. No traceback reaches the user unless
``--debug`` is given (an unexpected error says to re-run with it).
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
#: Boolean flags get an empty metavar: typer would otherwise show them as taking a <bool> value.
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", metavar="", help="No progress bar or summary.")]
_MaxMemory = Annotated[Optional[str], typer.Option(
    "--max-memory", metavar="SIZE",
    help="Refuse the job if its estimated peak memory exceeds SIZE (e.g. 8G, 512M; default: 75% of this machine's "
         "memory).")]
_NoFigures = Annotated[bool, typer.Option("--no-figures", metavar="", help="Skip the figures.")]


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"simrec: error: {message}", err=True)
    raise typer.Exit(code=code)


def _version(value: bool) -> None:
    if value:
        import simrec

        typer.echo(f"simrec {simrec.__version__}")
        raise typer.Exit()


#: Set by ``--debug``: tracebacks instead of one-line messages.
_DEBUG = {"on": False}


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, metavar="",
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", metavar="", help="Show tracebacks instead of one-line error messages.")] = False,
) -> None:
    """simrec: how wrong are offline recommender evaluations? Simulate, calibrate, measure."""
    _DEBUG["on"] = debug


def _budget(max_memory: str | None, jobs: int, backend: str | None, address: str | None):
    """The memory budget of a job from its options (exit 2 for a bad ``--max-memory``).

    Workers on this machine: ``--jobs`` for local processes or a local Ray
    cluster, 1 for serial runs and for a remote cluster (each of its nodes runs
    its own share).
    """
    from .config.budget import Budget, default_max_memory, parse_memory

    try:
        limit = default_max_memory() if max_memory is None else parse_memory(max_memory)
    except ValueError as exc:
        _fail(str(exc))
    local_workers = 1 if address is not None or backend == "serial" else jobs
    return Budget(limit, local_workers)


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
        if _DEBUG["on"]:
            raise
        _fail(str(exc))
    except TaskError as exc:
        if _DEBUG["on"]:
            raise
        _fail(f"{exc}\nfinished tasks are kept in {out}; re-run the same command to retry the failed ones", code=1)
    except KeyboardInterrupt:
        _fail(f"interrupted; finished tasks are kept in {out}; re-run the same command to resume", code=130)
    except MemoryError:
        if _DEBUG["on"]:
            raise
        _fail(f"ran out of memory; finished tasks are kept in {out}. Use fewer --jobs or smaller sizes, or lower "
              "--max-memory so that such a job is refused before it starts", code=1)
    except OSError as exc:
        if _DEBUG["on"]:
            raise
        _fail(os_error_message(exc, out), code=1)


def os_error_message(exc: OSError, out: Path) -> str:
    """One line for an operating-system error while a job writes into ``out``: what, where, what to do."""
    from .rundir import os_error_line

    finished = f"; finished tasks are kept in {out}" if Path(out).is_dir() else ""
    return os_error_line(exc, out) + finished


@app.command()
def run(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file, or the name of a shipped scenario (e.g. quickstart).")],
    out: _Out = Path("runs/out"),
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    quiet: _Quiet = False,
    no_figures: _NoFigures = False,
    max_memory: _MaxMemory = None,
) -> None:
    """Run a scenario: generate, observe, split, recommend, measure vs observed and true relevance."""
    from .config import ScenarioError
    from .config.run import load_scenario
    from .studies import run_scenario

    budget = _budget(max_memory, jobs, backend, address)
    try:
        sc, path = load_scenario(scenario, budget=budget)
    except ScenarioError as exc:
        _fail(str(exc))
    with _backend(backend, jobs, address) as b, _job(out):
        outcome = run_scenario(sc, path, out, backend=b, progress=not quiet, figures=not no_figures,
                               max_pairs=budget.max_pairs)
    _print_warnings(outcome.warnings)
    if not quiet:
        _print_run_summary(outcome)


def _print_warnings(warnings: tuple[str, ...]) -> None:
    """Warnings about what the results can mean (also in the tables), on stderr, even with --quiet."""
    for w in warnings:
        typer.echo(f"simrec: warning: {w}", err=True)


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
    max_memory: _MaxMemory = None,
) -> None:
    """Stress-test sampled-metric estimators against exact metrics (and, in simulations, the truth)."""
    from .config import ScenarioError
    from .config.stress import load_stress_scenario
    from .studies import run_stress_scenario

    budget = _budget(max_memory, jobs, backend, address)
    try:
        sc, path = load_stress_scenario(scenario, budget=budget)
    except ScenarioError as exc:
        _fail(str(exc))
    with _backend(backend, jobs, address) as b, _job(out):
        try:
            outcome = run_stress_scenario(sc, path, out, backend=b, progress=not quiet, figures=not no_figures,
                                          max_pairs=budget.max_pairs)
        except ValueError as exc:  # e.g. a size impossible for the candidate sets found
            _fail(f"{path}: {exc}")
    _print_warnings(outcome.warnings)
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
    max_memory: _MaxMemory = None,
) -> None:
    """Calibrate every preference x observation model to reference datasets (GP search on KL divergences)."""
    import shutil

    from .calibration import CalibrationLogError
    from .config import ScenarioError
    from .config.budget import sweep_needs
    from .config.sweep import load_sweep_spec
    from .studies import calibrate_sweep

    budget = _budget(max_memory, jobs, backend, address)
    try:
        sweep = load_sweep_spec(spec, budget=budget)
        if n_calls is not None:  # the override counts too (the GP grows with the number of calls)
            budget.check(f"{spec} with --n-calls {n_calls}", sweep_needs(sweep.model_copy(update={"n_calls": n_calls})))
    except ScenarioError as exc:
        _fail(str(exc))
    done = {"n": 0}

    def on_cell(cell) -> None:
        done["n"] += 1
        if not quiet:
            searched = (f"trial {cell.best.index} of {cell.n_trials}; {cell.n_refused} refused as too large or "
                        f"undefined; the search resumed after trial {cell.resumed_from}")
            if cell.denoised:
                p = cell.denoised[0]
                typer.echo(f"[{done['n']}] {cell.dataset} {cell.cell} {cell.objective}: de-noised best {p.mean:.4g} ± "
                           f"{p.sd:.2g} over {p.n} fresh simulations (trial {p.trial}); best single value "
                           f"{cell.best.value:.4g} ({searched})")
            else:
                typer.echo(f"[{done['n']}] {cell.dataset} {cell.cell} {cell.objective}: best {cell.best.value:.4g} "
                           f"({searched})")

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
def assess(
    assessment: Annotated[str, typer.Argument(help="Assessment TOML file, or the name of a shipped one "
                                                   "(e.g. ml100k-assess).")],
    out: _Out = Path("runs/assess"),
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    quiet: _Quiet = False,
    no_figures: Annotated[bool, typer.Option("--no-figures", metavar="", help="Skip the sub-runs' own figures (the "
                                                                              "report's are always drawn).")] = False,
    max_memory: _MaxMemory = None,
) -> None:
    """Assess an evaluation: dataset + algorithms + protocol -> expected missing-data and sampling error (HTML report)."""
    from .assess.cli_text import print_assessment
    from .config import ScenarioError
    from .config.assess import load_assessment

    budget = _budget(max_memory, jobs, backend, address)
    try:
        spec = load_assessment(assessment, budget=budget)
    except ScenarioError as exc:
        _fail(str(exc))
    from .studies import PHASES, run_assessment

    def on_phase(phase: str, message: str) -> None:
        if not quiet:
            typer.echo(f"[{PHASES.index(phase) + 1}/{len(PHASES)}] {phase}: {message}", err=True)

    from .calibration import CalibrationLogError
    from .studies import DatasetLoadError

    with _backend(backend, jobs, address) as b, _job(out):
        try:
            outcome = run_assessment(spec, out, backend=b, progress=not quiet, figures=not no_figures, budget=budget,
                                     on_phase=on_phase)
        except (CalibrationLogError, ScenarioError, DatasetLoadError) as exc:  # ScenarioError: a calibrated world
            _fail(str(exc))                                                   # too large for the budget
        except ValueError as exc:  # e.g. a sample size impossible for some user's candidate set
            _fail(f"{spec.path}: {exc}")
    _print_warnings(outcome.warnings)
    if not quiet:
        print_assessment(outcome, typer.echo)


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
    user_col: Annotated[Optional[str], typer.Option("--user-col", help="User column of a CSV/Parquet table "
                                                                       "(default: user).")] = None,
    item_col: Annotated[Optional[str], typer.Option("--item-col", help="Item column of a CSV/Parquet table "
                                                                       "(default: item).")] = None,
    rating_col: Annotated[Optional[str], typer.Option("--rating-col", help="Rating column of a CSV/Parquet table "
                                                                           "(needed by --min-rating).")] = None,
    sep: Annotated[Optional[str], typer.Option("--sep", help="Field separator of a CSV table (default: detected; "
                                                             "use '\\t' for tabs).")] = None,
    min_rating: Annotated[Optional[float], typer.Option("--min-rating", help="Keep ratings >= this (MovieLens, "
                                                                              "Amazon, CSV with a rating column).")] = None,
    k_core: Annotated[Optional[int], typer.Option("--k-core", min=1, help="Reduce to the k-core (every user and item "
                                                                          "with >= k pairs).")] = None,
) -> None:
    """Print users, items, pairs, density, activity and popularity summaries."""
    from .config import ScenarioError
    from .config.datasets import DatasetSpec
    from .datasets import DatasetError, describe

    options = {"user_col": user_col, "item_col": item_col, "rating_col": rating_col, "sep": sep,
               "min_rating": min_rating, "k_core": k_core}
    try:
        spec = DatasetSpec.from_options(path, kind, **options)
        inter = spec.read(path)
    except (DatasetError, ScenarioError, ValueError, TypeError) as exc:
        _fail(str(exc))
    typer.echo(describe(inter).to_text())


def main(argv: list[str] | None = None) -> None:
    """The console entry point: no traceback reaches the user unless ``--debug`` is given.

    Usage errors exit 2 (click's own messages); Ctrl-C anywhere exits 130
    with one line; an unexpected error is one line naming its type, asking to
    re-run with ``--debug`` and report it, exit 1.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    try:
        code = app(args=args, prog_name="simrec", standalone_mode=False)
    except typer.Abort:
        typer.echo("simrec: interrupted", err=True)
        code = 130
    except typer.TyperException as exc:  # usage errors (typer vendors click: its ClickException is one of these)
        if not hasattr(exc, "show"):
            raise
        exc.show()
        code = getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:
        typer.echo("simrec: interrupted", err=True)
        code = 130
    except Exception as exc:  # an unexpected error: a bug, or a boundary case not handled yet
        if debug:
            raise
        typer.echo(f"simrec: internal error: {type(exc).__name__}: {exc}\n"
                   "re-run with --debug for the traceback, and please report it", err=True)
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
