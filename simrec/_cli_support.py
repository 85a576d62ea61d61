"""Helpers shared by the ``simrec`` commands (:mod:`simrec.cli`; split from it, issue 23).

The option types every job shares, the output folder, the logged printing of
``run.log`` (:func:`_say`, :func:`_fail`), the memory budget and the
"this job should take about ..." announcement, the backend context, the job
context that turns input errors, faults and Ctrl-C into one line and an exit
code (the boundary, issue 12), the progress bars of ``simrec ranks`` and
``simrec calibrate``. Part of the CLI layer: the library never imports it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer

if TYPE_CHECKING:
    from rich.progress import TaskID

    from .config.budget import Budget
    from .studies.assess import AssessOutcome
    from .studies.run import RunOutcome
    from .studies.stress import StressOutcome
    from .tasks import Backend

_Out = Annotated[
    Optional[Path],
    typer.Option("--out", "-o", help="Output folder (default: runs/<the file's name>; re-running resumes)."),
]


def _out_folder(out: Path | None, name: str) -> Path:
    """``--out``, or ``runs/<name>`` (the scenario's, sweep's or assessment's validated safe name), said on stderr.

    Decision (issue 28): a fixed default (``runs/out``) was written to
    silently and made a second scenario collide with the first's results;
    the job's own name keeps jobs apart, and the line (printed even with
    ``--quiet``, like warnings) says where the results go.
    """
    if out is not None:
        return out
    chosen = Path("runs") / name
    typer.echo(f"simrec: no --out given: writing to {chosen} (re-running the same command resumes there)", err=True)
    return chosen


_Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Workers (processes, or Ray CPUs of a local cluster).")]
_Backend = Annotated[
    Optional[str],
    typer.Option("--backend", help="serial | processes | ray (default: serial for 1 job, else processes)."),
]
_Address = Annotated[
    Optional[str],
    typer.Option("--address", help="Ray cluster to connect to (with --backend ray); default: start a local one."),
]
#: Boolean flags get an empty metavar: typer would otherwise show them as taking a <bool> value.
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", metavar="", help="No progress bar or summary.")]
_MaxMemory = Annotated[
    Optional[str],
    typer.Option(
        "--max-memory",
        metavar="SIZE",
        help="Refuse the job if its estimated peak memory exceeds SIZE (e.g. 8G, 512M; default: 75% of this machine's "
        "memory).",
    ),
]
_NoFigures = Annotated[bool, typer.Option("--no-figures", metavar="", help="Skip the figures.")]


#: What the running command printed (for its run folder's ``run.log``), when it started, and its context.
_LOG: dict = {"lines": [], "started": None, "ctx": None}


def _say(message: str = "", err: bool = False) -> None:
    """Print a line (as ``typer.echo``) and keep it for ``run.log``."""
    typer.echo(message, err=err)
    _LOG["lines"].append(message)


def _fail(message: str, code: int = 2) -> NoReturn:
    _say(f"simrec: error: {message}", err=True)
    raise typer.Exit(code=code)


def _version(value: bool) -> None:
    if value:
        from .provenance import version_text

        typer.echo(version_text())
        raise typer.Exit()


#: Set by ``--debug``: tracebacks instead of one-line messages.
_DEBUG = {"on": False}
#: The arguments :func:`main` was given (None when the app is called otherwise, e.g. by a test runner).
_ARGV: dict[str, list[str] | None] = {"args": None}


def _budget(max_memory: str | None, jobs: int, backend: str | None, address: str | None) -> Budget:
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


def _announce(work: Any, jobs: int, *, parallel: bool = True, cluster_cpus: int | None = None) -> None:
    """Say on stderr how long a job expected to take over a minute should take (:mod:`simrec.config.cost`).

    Decision (issue 28): printed before any work starts, also with ``--quiet``
    (like the output folder's line and the warnings: one line, only for a
    job over a minute, and the one thing someone who scripted a long job
    needs to plan around); the estimate is the quiet machine's, from the work
    counted during validation, so it comes before the first task runs.
    ``cluster_cpus``: a Ray cluster's CPUs (``--address``), over which the
    work divides instead of this machine's cores.
    """
    from .config.cost import estimate_line

    if line := estimate_line(work, jobs, parallel=parallel, cluster_cpus=cluster_cpus):
        typer.echo(line, err=True)


@contextmanager
def _backend(name: str | None, jobs: int, address: str | None, work: Any = None) -> Iterator[Backend]:
    """The task backend the options ask for (closed after the job); bad options fail with exit 2.

    With ``work`` (:class:`simrec.config.cost.Work`), the job's time estimate is announced before it starts
    (:func:`_announce`): on this machine's cores for its workers, or, for a Ray cluster at ``address``, on the
    cluster's CPUs, which are known once connected (so the cluster is connected to first; a cluster that cannot
    be reached fails here, exit 2, before any task).
    """
    from .tasks import BackendError, make_backend

    try:
        backend = make_backend(name, jobs, address)
    except (ValueError, BackendError) as exc:
        _fail(str(exc))
    with backend:
        if work is not None and address is not None:
            try:
                backend.start()
            except BackendError as exc:
                _fail(str(exc))
            _announce(work, backend.n_workers, cluster_cpus=backend.n_workers)
        elif work is not None:
            _announce(work, backend.n_workers)
        yield backend


@contextmanager
def _job(out: Path) -> Iterator[None]:
    """Turn what can go wrong while a job runs into one line (no traceback reaches the user).

    ``out`` is checked first (a name too long for the file system, a file on its path: exit 2, nothing created).
    """
    from .rundir import path_problem
    from .tasks import BackendFault, TaskError

    if problem := path_problem(out):
        _fail(problem)
    if _LOG["ctx"] is not None:  # after the command's last line, however it ends
        _LOG["ctx"].call_on_close(lambda: _write_run_log(out))
    try:
        yield
    except _input_errors() as exc:
        if _DEBUG["on"]:
            raise
        _fail(str(exc))
    except TaskError as exc:
        if _DEBUG["on"]:
            raise
        _fail(f"{exc}; finished tasks are kept in {out}; re-run the same command to retry the failed ones", code=1)
    except BackendFault as exc:
        if _DEBUG["on"]:
            raise
        _fail(f"{exc}; finished tasks are kept in {out}; re-run the same command to resume", code=1)
    except KeyboardInterrupt:
        _fail(f"interrupted; finished tasks are kept in {out}; re-run the same command to resume", code=130)
    except MemoryError:
        if _DEBUG["on"]:
            raise
        _fail(
            f"ran out of memory; finished tasks are kept in {out}. Use fewer --jobs or smaller sizes, or lower "
            "--max-memory so that such a job is refused before it starts",
            code=1,
        )
    except OSError as exc:
        if _DEBUG["on"]:
            raise
        _fail(os_error_message(exc, out), code=1)


def _write_run_log(out: Path) -> None:
    """Append what this command printed to ``out/run.log`` if the job opened ``out`` as its run folder.

    Called as the command's context closes, so the exception that ends it (if
    any) is the one being handled: its exit code is logged. A job refused
    with exit code 2 (bad input found after the folder was opened, e.g. a
    shard that cannot be used) logs nothing: a refused job leaves the folder
    as it was. Best effort: a disk that cannot take the log does not change
    the command's outcome.
    """
    from . import provenance

    try:
        folder = Path(out).resolve()
    except OSError:
        return
    if folder not in provenance.run_folders():
        return
    exc = sys.exc_info()[1]
    lines = list(_LOG["lines"])
    code = 0 if exc is None else getattr(exc, "exit_code", None)
    if code == 2:  # the job was refused (bad input, a shard that cannot be used): the folder stays as it was
        return
    if code is None:  # not an exit: what main() reports as an internal error or an interruption
        code = 130 if isinstance(exc, KeyboardInterrupt) else 1
        lines.append(f"simrec: internal error: {type(exc).__name__}: {exc}")
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    commit = provenance.git_commit()
    versions = provenance.package_versions()
    head = [
        f"== {provenance.command_line()}",
        f"started {time.strftime(stamp, time.gmtime(_LOG['started'] or time.time()))}, "
        f"ended {time.strftime(stamp, time.gmtime())}, exit code {code}",
        f"simrec {versions['simrec']}"
        + (f", commit {commit.sha}{' (modified)' if commit.modified else ''}" if commit else ""),
    ]
    try:
        with open(folder / "run.log", "a", encoding="utf-8") as fh:
            fh.write("\n".join(head + lines) + "\n\n")
    except OSError:
        pass


#: The errors about the user's input that a job reports in one line (exit 2), by module and name.
_INPUT_ERRORS = (
    ("simrec.config.base", "ScenarioError"),
    ("simrec.rundir", "RunDirError"),
    ("simrec.shards", "ShardError"),
    ("simrec.stress.sources", "RanksFileError"),
    ("simrec.studies.calibrate", "DatasetLoadError"),
    ("simrec.tasks", "BackendError"),
)


def _input_errors() -> tuple[type[BaseException], ...]:
    """:data:`_INPUT_ERRORS` whose modules are loaded, looked up when an error is being handled.

    Decision (issue 13): an exception of a class whose module was never
    imported cannot be raised, so the handler need not import it; importing
    ``simrec.stress.sources`` up front only to name ``RanksFileError`` cost
    ``simrec run`` 1.2 s CPU (the stress harness and ``scipy.stats``).
    """
    return tuple(getattr(sys.modules[mod], name) for mod, name in _INPUT_ERRORS if mod in sys.modules)


def os_error_message(exc: OSError, out: Path) -> str:
    """One line for an operating-system error while a job writes into ``out``: what, where, what to do."""
    from .rundir import os_error_line

    finished = f"; finished tasks are kept in {out}" if Path(out).is_dir() else ""
    return os_error_line(exc, out) + finished


def _figures_failed(outcome: RunOutcome | StressOutcome | AssessOutcome) -> None:
    """Exit 1 (a fault) when figures could not be drawn: the job is complete and its tables written (simrec._figures)."""
    if outcome.figure_failures:
        _fail(
            f"{outcome.out}: the job is complete and every table written, but drawing figures failed: "
            f"{'; '.join(outcome.figure_failures)} (re-run with --no-figures to skip them)",
            code=1,
        )


def _print_warnings(warnings: tuple[str, ...]) -> None:
    """Warnings about what the results can mean (also in the tables), on stderr, even with --quiet."""
    for w in warnings:
        _say(f"simrec: warning: {w}", err=True)


def _ranks_failed(name: str, exc: Exception) -> None:
    """A recommender failed while training or scoring (its code, or LensKit's): one line, exit 1."""
    from ._usercode import UserCodeError, describe
    from ._validation import quote

    if _DEBUG["on"]:
        raise exc
    what = str(exc) if isinstance(exc, UserCodeError) else f"recommender {quote(name)} failed: {describe(exc)}"
    _fail(f"{what} (nothing was written; re-run with --debug for the traceback)", code=1)


@contextmanager
def _ranks_progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """``show(name, done, total)``: one progress bar per recommender (users scored)."""
    if not enabled:
        yield lambda name, done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("[bold]ranks[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("users"),
        TimeElapsedColumn(),
    )
    tasks: dict[str, TaskID] = {}
    bar.start()
    try:

        def show(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(f"{name} (training, then scoring)", total=total)
            bar.update(tasks[name], completed=done)

        yield show
    finally:
        bar.stop()


def count_trials(out: Path) -> int:
    """GP trials logged so far under a calibration folder (``<dataset>/cells/<cell>/<objective>/trials.jsonl``,
    one header line then one line per trial; resumed trials included)."""
    n = 0
    try:
        logs = list(Path(out).glob("*/cells/*/*/trials.jsonl"))
    except OSError:  # a folder that cannot be listed (the job reports it)
        return 0
    for log in logs:
        try:
            with open(log, "rb") as fh:
                n += max(0, sum(1 for _ in fh) - 1)
        except OSError:  # being replaced or removed: counted at the next poll
            continue
    return n


@contextmanager
def _trial_progress(out: Path, total: int, enabled: bool, every: float = 1.0) -> Iterator[None]:
    """A progress bar of the GP trials of a sweep (every call of every cell), polled from the trial logs.

    Cells run as tasks (in other processes or on Ray workers), so the bar
    counts the lines of their trial logs every ``every`` seconds; it works
    with every backend whose workers write into ``out`` (local ones, or a
    cluster with a shared file system). The de-noising re-evaluations that
    follow a search are not counted.
    """
    if not enabled or total <= 0:
        yield
        return
    import threading

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("[bold]calibrate[/bold] GP trials"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    )
    task = bar.add_task("trials", total=total)
    stop = threading.Event()

    def poll() -> None:
        while True:
            bar.update(task, completed=min(total, count_trials(out)))
            if stop.wait(every):
                return

    bar.start()
    thread = threading.Thread(target=poll, name="simrec-trial-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.update(task, completed=min(total, count_trials(out)))
        bar.stop()
