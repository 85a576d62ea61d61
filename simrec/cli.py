"""The ``simrec`` command: the only place that parses options and prints.

``simrec run SCENARIO --out DIR``      run a missing-data scenario (resumable)
``simrec stress SCENARIO --out DIR``   stress-test sampled-metric estimators (resumable)
``simrec calibrate SPEC --out DIR``    calibrate the simulators to reference datasets (resumable)
``simrec assess FILE --out DIR``       assess an evaluation protocol on a dataset (HTML report; resumable)
``simrec ranks DATASET -r REC --out F`` a ranks file (rank, n_candidates, popularity_share) for ``simrec stress``
``simrec scenarios``                   list the scenarios shipped with the package
``simrec datasets describe PATH``      summarise a reference dataset

The three jobs share ``--jobs N``, ``--backend serial|processes|ray``
(``--address ADDR`` to connect to a Ray cluster; without it a local one is
started) and ``--max-memory SIZE`` (a job whose estimated peak is larger is
refused before anything is created; default 75% of the machine's memory).
A job expected to take over a minute says so on stderr before it starts,
also with ``--quiet`` (``simrec: this job should take about 12 min on 1 of
2 cores; --jobs 2 about halves it``; :mod:`simrec.config.cost`).

The boundary (issue 12): errors in the user's input (scenario, dataset,
output folder, options) are printed as one clear message on stderr with exit
code 2 and nothing is written; a full or read-only disk, a missing permission
or running out of memory is one line (what, where, what to do) with exit
code 1; failed tasks exit 1 after every other task's result was kept (one
line per failed task, the advice on the last); Ctrl-C
exits 130 after saying how to resume. No traceback reaches the user unless
``--debug`` is given (an unexpected error says to re-run with it).

``run.log`` (issue 28): the four jobs append to their ``--out`` folder's
``run.log`` what the command printed — warnings (simrec's and Python's), the
phase lines, the summary tables and lines, the error that stopped it — under
a header with the command line, the start and end times, simrec's version and
commit, and the exit code. Progress bars are not logged (they are redrawn, not
printed), and with ``--quiet`` only warnings and errors are. A refused job
(exit code 2) writes nothing, so neither a folder it did not open as its run
folder nor one it refused after opening (a shard that cannot be used) gets a
log; ``simrec ranks`` writes one file, not a folder, and keeps no log.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from .calibration.sweep import CellResult
    from .interactions import Interactions

from ._cli_summaries import _print_run_summary, _print_stress_summary
from ._cli_summaries import _search_note as _search_note
from ._cli_summaries import _stress_summary_frame as _stress_summary_frame
from ._cli_summaries import _stress_summary_notes as _stress_summary_notes
from ._cli_support import (
    _ARGV,
    _DEBUG,
    _LOG,
    _Address,
    _announce,
    _Backend,
    _backend,
    _budget,
    _fail,
    _figures_failed,
    _job,
    _Jobs,
    _MaxMemory,
    _NoFigures,
    _Out,
    _out_folder,
    _print_warnings,
    _Quiet,
    _ranks_failed,
    _ranks_progress,
    _say,
    _trial_progress,
    _version,
)

# importable from simrec.cli as before the split (tests and `python -c "import simrec.cli; simrec.cli._input_errors()"`)
from ._cli_support import _input_errors as _input_errors
from ._cli_support import count_trials as count_trials
from ._cli_support import os_error_message as os_error_message

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="simrec: how wrong are offline recommender evaluations? Simulate, calibrate, measure.",
)
datasets_app = typer.Typer(no_args_is_help=True, help="Reference datasets.")
app.add_typer(datasets_app, name="datasets")

__all__ = ["app", "main"]


@app.callback()
def _main(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, metavar="", help="Print the version and exit."),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", metavar="", help="Show tracebacks instead of one-line error messages.")
    ] = False,
) -> None:
    """simrec: how wrong are offline recommender evaluations? Simulate, calibrate, measure."""
    from . import provenance

    _DEBUG["on"] = debug
    _LOG.update(lines=[], started=time.time(), ctx=ctx)
    provenance.begin_command(_ARGV["args"] if _ARGV["args"] is not None else [str(ctx.invoked_subcommand), "..."])
    shown = warnings.showwarning

    def show_and_log(  # Python's warnings, for run.log
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        _LOG["lines"].append(f"{category.__name__}: {message}")
        shown(message, category, filename, lineno, file, line)

    def close() -> None:
        warnings.showwarning = shown
        _LOG["ctx"] = None
        provenance.end_command()

    warnings.showwarning = show_and_log
    ctx.call_on_close(close)  # runs last: the callbacks a job adds (its run.log) run first


@app.command()
def run(
    scenario: Annotated[
        str, typer.Argument(help="Scenario TOML file, or the name of a shipped scenario (e.g. quickstart).")
    ],
    out: _Out = None,
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
    out = _out_folder(out, sc.name)
    with _backend(backend, jobs, address, sc.work()) as b, _job(out):
        outcome = run_scenario(
            sc, path, out, backend=b, progress=not quiet, figures=not no_figures, max_pairs=budget.max_pairs
        )
    _print_warnings(outcome.warnings)
    if not quiet:
        _print_run_summary(outcome, sc.evaluation.n)
    _figures_failed(outcome)


@app.command()
def stress(
    scenario: Annotated[
        str, typer.Argument(help="Stress scenario TOML file, or the name of a shipped one (e.g. sampled-ml100k).")
    ],
    out: _Out = None,
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
    out = _out_folder(out, sc.name)
    with _backend(backend, jobs, address, sc.estimated_work(path)) as b, _job(out):
        try:
            outcome = run_stress_scenario(
                sc, path, out, backend=b, progress=not quiet, figures=not no_figures, max_pairs=budget.max_pairs
            )
        except ValueError as exc:  # e.g. a size impossible for the candidate sets found
            _fail(f"{path}: {exc}")
    _print_warnings(outcome.warnings)
    if not quiet:
        _print_stress_summary(outcome)
    _figures_failed(outcome)


@app.command()
def ranks(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset file or folder (MovieLens, Amazon 5-core, Steam, CSV/Parquet).")
    ],
    recommender: Annotated[
        list[str],
        typer.Option(
            "--recommender",
            "-r",
            metavar="SPEC",
            help="A recommender (repeat for several): item_knn | user_knn | implicit_mf | popular | item_cf, a "
            "'package.module:Class' LensKit scorer (imported from the current folder or the installed packages), "
            'or a TOML inline table as in a scenario, e.g. \'{ kind = "lenskit", algorithm = "item_knn", '
            "params = { max_nbrs = 20 } }'.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Ranks file to write (.csv, or .parquet/.pq).")],
    split: Annotated[
        str,
        typer.Option(
            "--split",
            help="last: hold out each user's latest item by timestamp "
            "(leave-last-out); random: one random item per user.",
        ),
    ] = "random",
    candidates: Annotated[
        str,
        typer.Option(
            "--candidates",
            help="What the held-out item is ranked among (n_candidates): unseen: the items the user "
            "did not train on (n_items - training items; Krichene & Rendle, Li & Jin's 'actual'); "
            "all: every item, the user's training items scored too (n_items; Li & Jin's "
            "'binom'/'hyper'). As a stress scenario's source.candidates.",
        ),
    ] = "unseen",
    min_items: Annotated[int, typer.Option("--min-items", min=1, help="Users with fewer items are not evaluated.")] = 2,
    seed: Annotated[
        int,
        typer.Option(
            "--seed", min=0, help="Seed of the split, training and tie-breaking (as a stress scenario's seed)."
        ),
    ] = 0,
    overwrite: Annotated[bool, typer.Option("--overwrite", metavar="", help="Replace an existing ranks file.")] = False,
    kind: _Kind = None,
    user_col: _UserCol = None,
    item_col: _ItemCol = None,
    rating_col: _RatingCol = None,
    sep: _Sep = None,
    min_rating: _MinRating = None,
    k_core: _KCore = None,
    quiet: _Quiet = False,
    max_memory: _MaxMemory = None,
) -> None:
    """Train recommenders on a leave-one-out split of a dataset and write their ranks file for `simrec stress`."""
    import time

    from ._validation import quote
    from .config import ScenarioError
    from .config.budget import ranks_needs
    from .config.recommenders import parse_recommender_option, recommender_problems
    from .rundir import path_problem
    from .stress import CANDIDATE_SETS
    from .studies.ranks import RANKS_SUFFIXES, dataset_ranks, write_ranks_file

    problems: list[str] = []
    if split not in ("last", "random"):
        problems.append(f"--split: must be 'last' or 'random'; got {quote(split)}")
    if candidates not in CANDIDATE_SETS:
        problems.append(f"--candidates: must be {' or '.join(map(repr, CANDIDATE_SETS))}; got {quote(candidates)}")
    if out.suffix.lower() not in RANKS_SUFFIXES:
        problems.append(f"--out: must end in {', '.join(RANKS_SUFFIXES)}; got {quote(str(out))}")
    elif problem := path_problem(out, folder=False):
        problems.append(problem)
    elif out.is_dir():
        problems.append(f"--out: {out} is a folder; give a file name such as {out / 'ranks.csv'}")
    elif out.exists() and not overwrite:
        problems.append(f"--out: {out} exists; use --overwrite to replace it")
    specs = []
    for value in recommender:
        try:
            specs.append(parse_recommender_option(value))
        except ScenarioError as exc:
            problems.append(str(exc))
    if len(specs) == len(recommender):
        problems += [
            p.replace("recommenders[", "--recommender[", 1)
            for p in recommender_problems(specs, "recommenders", truth=False, base=Path.cwd())
        ]
    if problems:
        _fail("\n".join(problems))
    # memory: reading the files is estimated from their size before reading; the models and the score blocks
    # from the dataset's size once read, before any training
    budget, reading = _reading_budget(max_memory, dataset)
    inter, times = _read_dataset(
        dataset,
        kind,
        split == "last",
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        sep=sep,
        min_rating=min_rating,
        k_core=k_core,
    )
    try:
        budget.check(
            dataset,
            ranks_needs(specs, n_users=inter.n_users, n_items=inter.n_items, n_pairs=inter.n_pairs, read=reading),
            jobs_option=False,
        )
    except ScenarioError as exc:
        _fail(str(exc))
    from .config.cost import Work

    _announce(
        Work.total(s.work(inter.n_users, inter.n_items, train_pairs=inter.n_pairs) for s in specs), 1, parallel=False
    )
    recs = [r.build() for r in specs]
    current = {"name": ""}
    notes: list[str] = []
    t0 = time.perf_counter()
    with _ranks_progress(not quiet) as show:

        def on_progress(name: str, done: int, total: int) -> None:
            current["name"] = name
            show(name, done, total)

        try:
            frame = dataset_ranks(
                inter,
                recs,
                seed,
                timestamps=times,
                min_items=min_items,
                candidates=candidates,
                on_progress=on_progress,
                on_warning=notes.append,
            )
        except ValueError as exc:  # before any recommender started: the split (e.g. no user with min_items items)
            if current["name"]:
                _ranks_failed(current["name"], exc)
            _fail(f"{dataset}: {exc}")
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as exc:  # the user's scorer (or LensKit) failed while training or scoring
            _ranks_failed(current["name"], exc)
    try:
        write_ranks_file(out, frame)
    except OSError as exc:
        if _DEBUG["on"]:
            raise
        from .rundir import os_error_line

        _fail(os_error_line(exc, out), code=1)
    _print_warnings(tuple(notes))
    if not quiet:
        n_users = frame["user"].nunique()
        typer.echo(
            f"{len(frame)} ranks ({n_users} users x {len(recs)} recommender(s)), "
            f"{time.perf_counter() - t0:.1f} s -> {out}"
        )


@app.command()
def calibrate(
    spec: Annotated[Path, typer.Argument(help="Sweep spec TOML (e.g. calibration/ml-100k.toml).")],
    out: _Out = None,
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    n_calls: Annotated[Optional[int], typer.Option("--n-calls", min=1, help="Override the spec's n_calls.")] = None,
    export_presets: Annotated[
        Optional[Path],
        typer.Option("--export-presets", help="Also copy the presets into this folder (<dir>/<dataset>/<cell>.toml)."),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", metavar="", help="Let --export-presets replace preset files that differ from this sweep's."
        ),
    ] = False,
    no_figures: _NoFigures = False,
    quiet: _Quiet = False,
    max_memory: _MaxMemory = None,
) -> None:
    """Calibrate every preference x observation model to reference datasets (GP search on KL divergences)."""
    from .calibration import CalibrationLogError
    from .config import ScenarioError
    from .config.sweep import load_sweep_spec
    from .rundir import os_error_line, path_problem
    from .studies import calibrate_sweep
    from .studies import export_presets as export

    budget = _budget(max_memory, jobs, backend, address)
    if export_presets is not None and (problem := path_problem(export_presets, "--export-presets")):
        _fail(problem)  # before the sweep, not after hours of it
    try:
        sweep = load_sweep_spec(spec, budget=budget)
        if n_calls is not None:  # the override counts too (the GP grows with the number of calls)
            budget.check(
                f"{spec} with --n-calls {n_calls}", sweep.model_copy(update={"n_calls": n_calls}).memory_needs()
            )
    except ScenarioError as exc:
        _fail(str(exc))
    out = _out_folder(out, sweep.name)
    work = sweep.work(spec, n_calls)
    done = {"n": 0}

    def on_cell(cell: CellResult) -> None:
        done["n"] += 1
        if not quiet:
            searched = _search_note(cell)
            if cell.denoised:
                p = cell.denoised[0]
                _say(
                    f"[{done['n']}] {cell.dataset} {cell.cell} {cell.objective}: de-noised best {p.mean:.4g} ± "
                    f"{p.sd:.2g} over {p.n} fresh simulations (trial {p.trial}); best single value "
                    f"{cell.best.value:.4g}, {searched}"
                )
            else:
                _say(
                    f"[{done['n']}] {cell.dataset} {cell.cell} {cell.objective}: best {cell.best.value:.4g} {searched}"
                )

    total = len(sweep.dataset) * len(sweep.cells()) * len(sweep.objectives) * (n_calls or sweep.n_calls)
    with _backend(backend, jobs, address, work) as b, _job(out), _trial_progress(out, total, not quiet):
        try:
            result = calibrate_sweep(
                sweep, spec, out, n_calls=n_calls, backend=b, figures=not no_figures, on_cell=on_cell
            )
        except CalibrationLogError as exc:
            _fail(str(exc))
        if export_presets is not None:
            try:
                export(result.presets, export_presets, overwrite=overwrite)
            except OSError as exc:
                if _DEBUG["on"]:
                    raise
                _fail(f"{os_error_line(exc, export_presets, '--export-presets')}; the presets are in {out}", code=1)
    if not quiet:
        cols = ["dataset", "cell", "objective", "average_loss"]
        _say(result.table[cols].to_string(index=False))
        _say(f"presets: {', '.join(sorted(result.presets))} -> {out}")
        for d in sweep.dataset:  # the algorithm_response searches' sim-to-real check (issue 24)
            if (out / d.name / "sim_to_real.csv").is_file():
                _say(
                    f"sim to real ({d.name}): the reference algorithms on the data vs at each algorithm_response "
                    f"search's chosen point -> {out / d.name / 'summary.md'}, sim_to_real.csv"
                )


@app.command()
def assess(
    assessment: Annotated[
        str, typer.Argument(help="Assessment TOML file, or the name of a shipped one (e.g. ml100k-assess).")
    ],
    out: _Out = None,
    jobs: _Jobs = 1,
    backend: _Backend = None,
    address: _Address = None,
    quiet: _Quiet = False,
    no_figures: Annotated[
        bool,
        typer.Option(
            "--no-figures", metavar="", help="Skip the sub-runs' own figures (the report's are always drawn)."
        ),
    ] = False,
    max_memory: _MaxMemory = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            metavar="",
            help="The file's quick size, a first look: the best-fitting world, 2 replicates, 5 repeats at the "
            "protocol's sample size, at most 1,000 evaluated users (every user trains); wide intervals; results in "
            "<name>-quick without --out (measured with --jobs 2 on 2 cores at load 3: ml100k-assess 51 s, "
            "ml1m-assess 137 s of wall; docs/howto/assess.md).",
        ),
    ] = False,
) -> None:
    """Assess an evaluation: dataset + algorithms + protocol -> expected missing-data and sampling error (HTML report).

    \f
    (Below the form feed: not shown by ``--help``.) ``--quick`` runs the file's quick size
    (:meth:`simrec.config.assess.AssessmentSpec.quick`, whose docstring has the measured costs): a first look
    with wide intervals.
    """
    from .assess.cli_text import print_assessment
    from .config import ScenarioError
    from .config.assess import load_assessment

    budget = _budget(max_memory, jobs, backend, address)
    try:
        spec = load_assessment(assessment, budget=budget, quick=quick)
    except ScenarioError as exc:
        _fail(str(exc))
    out = _out_folder(out, spec.spec.name)
    work = spec.work()
    from .studies import PHASES, run_assessment

    def on_phase(phase: str, message: str) -> None:
        if not quiet:
            _say(f"[{PHASES.index(phase) + 1}/{len(PHASES)}] {phase}: {message}", err=True)

    from .calibration import CalibrationLogError
    from .studies import DatasetLoadError

    with _backend(backend, jobs, address, work) as b, _job(out):
        try:
            outcome = run_assessment(
                spec, out, backend=b, progress=not quiet, figures=not no_figures, budget=budget, on_phase=on_phase
            )
        except (CalibrationLogError, ScenarioError, DatasetLoadError) as exc:  # ScenarioError: a calibrated world
            _fail(str(exc))  # too large for the budget
        except ValueError as exc:  # e.g. a sample size impossible for some user's candidate set
            _fail(f"{spec.path}: {exc}")
    _print_warnings(outcome.warnings)
    if not quiet:
        print_assessment(outcome, _say)
    _figures_failed(outcome)


@app.command()
def scenarios() -> None:
    """List the scenarios and assessments shipped with the package (run them by name with the command shown)."""
    import tomllib

    from .config.assess import shipped_assessments
    from .config.files import shipped_scenarios

    shipped = [(name, path, False) for name, path in sorted(shipped_scenarios().items())]
    shipped += [(name, path, True) for name, path in sorted(shipped_assessments().items())]
    for name, path, assessment in shipped:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
        command = "simrec assess" if assessment else "simrec stress" if raw.get("kind") == "stress" else "simrec run"
        typer.echo(f"{command:14s} {name:24s} {raw.get('description', '')}")


#: Options of a dataset named on the command line (``datasets describe``, ``ranks``).
_Kind = Annotated[Optional[str], typer.Option("--kind", help="Force the layout: movielens | amazon | steam | pairs.")]
_UserCol = Annotated[
    Optional[str], typer.Option("--user-col", help="User column of a CSV/Parquet table (default: user).")
]
_ItemCol = Annotated[
    Optional[str], typer.Option("--item-col", help="Item column of a CSV/Parquet table (default: item).")
]
_RatingCol = Annotated[
    Optional[str], typer.Option("--rating-col", help="Rating column of a CSV/Parquet table (needed by --min-rating).")
]
_Sep = Annotated[
    Optional[str], typer.Option("--sep", help="Field separator of a CSV table (default: detected; use '\\t' for tabs).")
]
_MinRating = Annotated[
    Optional[float],
    typer.Option("--min-rating", help="Keep ratings >= this (MovieLens, Amazon, CSV with a rating column)."),
]
_KCore = Annotated[
    Optional[int], typer.Option("--k-core", min=1, help="Reduce to the k-core (every user and item with >= k pairs).")
]


@datasets_app.command("describe")
def datasets_describe(
    path: Annotated[
        Path, typer.Argument(help="Dataset file or folder (MovieLens, Amazon 5-core, Steam, CSV/Parquet).")
    ],
    kind: _Kind = None,
    user_col: _UserCol = None,
    item_col: _ItemCol = None,
    rating_col: _RatingCol = None,
    sep: _Sep = None,
    min_rating: _MinRating = None,
    k_core: _KCore = None,
) -> None:
    """Print users, items, pairs, density, activity and popularity summaries."""
    from .datasets import describe

    inter, _ = _read_dataset(
        path,
        kind,
        False,
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        sep=sep,
        min_rating=min_rating,
        k_core=k_core,
    )
    typer.echo(describe(inter).to_text())


def _read_dataset(path: Path, kind: str | None, timestamps: bool, **options: Any) -> tuple[Interactions, Any]:
    """A dataset named on the command line, and its pairs' timestamps (None unless asked); exit 2 if unreadable."""
    from .config import ScenarioError
    from .config.datasets import DatasetSpec
    from .datasets import DatasetError

    try:
        spec = DatasetSpec.from_options(path, kind, **options)
        return spec.read_timestamped(path) if timestamps else (spec.read(path), None)
    except (DatasetError, ScenarioError, ValueError, TypeError) as exc:
        _fail(str(exc))


def _reading_budget(max_memory: Optional[str], dataset: Path) -> tuple[Any, Any]:
    """A one-process command's memory budget and the need of reading ``dataset``, checked before it is read
    (exit 2 if over the limit)."""
    from .config import ScenarioError
    from .config.budget import dataset_read_need

    budget = _budget(max_memory, 1, "serial", None)
    reading = dataset_read_need(dataset)
    try:
        budget.check(dataset, ([[reading]], []), jobs_option=False)
    except ScenarioError as exc:
        _fail(str(exc))
    return budget, reading


@app.command("sim-to-real")
def sim_to_real_cmd(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset file or folder (MovieLens, Amazon 5-core, Steam, CSV/Parquet).")
    ],
    preset: Annotated[
        list[str],
        typer.Option(
            "--preset",
            "-p",
            metavar="NAME",
            help="A calibrated world (repeat for several): a shipped preset '<dataset>/<cell>' "
            "(e.g. ml-1m/lda-pop) or a preset file ending in .toml.",
        ),
    ],
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Folder for metrics.csv and orders.csv (optional).")
    ] = None,
    replicates: Annotated[int, typer.Option("--replicates", "-r", min=1, help="Simulations per world.")] = 20,
    max_users: Annotated[
        int, typer.Option("--max-users", min=1, help="Evaluated users per dataset (a subsample; all users train).")
    ] = 500,
    test_fraction: Annotated[
        float, typer.Option("--test-fraction", min=0.01, max=0.99, help="Per-user holdout, on both sides.")
    ] = 0.2,
    n: Annotated[int, typer.Option("--n", min=1, help="List length.")] = 10,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the splits, simulations and fits.")] = 0,
    kind: _Kind = None,
    user_col: _UserCol = None,
    item_col: _ItemCol = None,
    rating_col: _RatingCol = None,
    sep: _Sep = None,
    min_rating: _MinRating = None,
    k_core: _KCore = None,
    quiet: _Quiet = False,
    max_memory: _MaxMemory = None,
) -> None:
    """Do the worlds order LensKit's Popular, ItemKNN and ImplicitMF as the real data does? (one protocol on both
    sides: a per-user holdout; real vs simulated observed Recall and nDCG with intervals, order agreement)."""
    from .calibration import ResponseProtocol
    from .config import ScenarioError
    from .config.models import WorldSpec
    from .rundir import os_error_line, path_problem
    from .studies.sim_to_real import run_sim_to_real, sim_to_real_needs, sim_to_real_text, sim_to_real_work

    problems = []
    if out is not None and (problem := path_problem(out)):
        problems.append(problem)
    worlds = []
    for i, name in enumerate(preset):
        try:  # a shipped name or a .toml path relative to the current folder; its tables validated as a world's
            spec = WorldSpec.from_preset(name, Path.cwd())
        except (KeyError, ValueError) as exc:
            problems.append(f"--preset[{i}]: {exc.args[0] if isinstance(exc, KeyError) else exc}")
            continue
        worlds.append((spec.label, spec))
    if problems:
        _fail("\n".join(problems))
    # memory (as simrec ranks): the files' size before reading; the models, scores and worlds once it is read,
    # before anything is trained or simulated or --out exists
    budget, reading = _reading_budget(max_memory, dataset)
    inter, _ = _read_dataset(
        dataset,
        kind,
        False,
        user_col=user_col,
        item_col=item_col,
        rating_col=rating_col,
        sep=sep,
        min_rating=min_rating,
        k_core=k_core,
    )
    bad = [f"--preset {label}: {p}" for label, w in worlds for p in w.problems(inter, "world")]
    if bad:
        _fail("\n".join(bad))
    protocol = ResponseProtocol(n=n, test_fraction=test_fraction, max_users=max_users)
    try:
        budget.check(
            dataset, sim_to_real_needs(inter, [w for _, w in worlds], protocol, read=reading), jobs_option=False
        )
    except ScenarioError as exc:
        _fail(str(exc))
    _announce(sim_to_real_work(inter, [w for _, w in worlds], protocol, replicates=replicates), 1, parallel=False)

    def progress(world: str, done: int, total: int) -> None:
        if not quiet:
            typer.echo(f"{world}: replicate {done}/{total}", err=True)

    study = run_sim_to_real(
        inter, worlds, protocol, replicates=replicates, seed=seed, on_progress=progress, max_pairs=budget.max_pairs
    )
    if out is not None:
        from ._io import write_csv

        try:
            out.mkdir(parents=True, exist_ok=True)
            write_csv(out / "metrics.csv", study.metrics_frame())
            write_csv(out / "orders.csv", study.orders_frame())
        except OSError as exc:
            if _DEBUG["on"]:
                raise
            _fail(os_error_line(exc, out), code=1)
    typer.echo(sim_to_real_text(study))


def main(argv: list[str] | None = None) -> None:
    """The console entry point: no traceback reaches the user unless ``--debug`` is given.

    Usage errors exit 2 (click's own messages); Ctrl-C anywhere exits 130
    with one line; an unexpected error is one line naming its type (its
    message on one line, cut to 300 characters with its length said), asking
    to re-run with ``--debug`` and report it, exit 1.
    """
    from ._cache import configure_matplotlib

    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    configure_matplotlib()  # matplotlib's cache and config in simrec's cache folder, not among HOME's dotfiles
    _ARGV["args"] = args
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
        from ._usercode import describe

        typer.echo(
            f"simrec: internal error: {describe(exc)} (re-run with --debug for the traceback, and please report it)",
            err=True,
        )
        code = 1
    finally:
        _ARGV["args"] = None
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
