"""Gaussian-process search with a trial log that survives crashes.

Each step ``i`` of a search of seed ``s`` uses only ``task_seed(s, i)`` and the
trials before it:

* steps ``i < n_initial`` draw a random point of the space;
* later steps fit a GP to every finished trial and take its expected-improvement
  proposal (:func:`simrec.calibration._skopt.gp_propose`, scikit-optimize's
  machinery, as ``skopt.gp_minimize`` uses it, rebuilt at every step);
* the objective is evaluated with the step's own seed.

Every trial is appended to a JSON-lines log (and flushed to disk) as it
finishes. Re-running with the same log resumes after the last complete trial,
so an interrupted search ends with exactly the trials of an uninterrupted one.
A torn last line (a crash mid-write) is discarded.

Points the objective refuses (e.g. data too large for the memory guard) are
logged with their reason and shown to the GP at 1.5 x the worst finished value,
so it learns to avoid that region without a made-up constant. When every value
is positive (KL divergences, losses) the GP models log(value).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .._random import as_generator, task_seed
from .._validation import check_int
from ._skopt import gp_propose
from .space import Dim, sample_points

__all__ = ["Trial", "TrialOutcome", "SearchResult", "CalibrationLogError", "gp_search", "read_log"]

_LOG_KIND = "simrec-calibration-log"


class CalibrationLogError(RuntimeError):
    """The trial log belongs to another search or is unreadable."""


@dataclass(frozen=True)
class TrialOutcome:
    """What an objective returns for one point.

    ``value`` is minimised; ``details`` are extra measurements (e.g. the KL of
    each statistic); ``refused`` is the reason a point was not evaluated (then
    ``value`` is ignored).
    """

    value: float
    details: dict[str, float] = field(default_factory=dict)
    refused: str | None = None


@dataclass(frozen=True)
class Trial:
    index: int
    params: dict[str, float]
    value: float | None
    details: dict[str, float]
    status: str  # "ok" | "refused"
    reason: str | None
    seconds: float


@dataclass(frozen=True)
class SearchResult:
    trials: tuple[Trial, ...]
    resumed_from: int

    @property
    def best(self) -> Trial:
        ok = [t for t in self.trials if t.status == "ok" and t.value is not None and math.isfinite(t.value)]
        if not ok:
            raise RuntimeError("no trial was evaluated successfully")
        return min(ok, key=lambda t: (t.value, t.index))


def read_log(path: Path, header: dict | None = None) -> list[Trial]:
    """Trials of a log; checks its header against ``header`` when given.

    A torn last line is dropped (and cut from the file, so appends stay valid).
    """
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    good_bytes = 0
    records: list[dict] = []
    for i, line in enumerate(lines):
        if not line.strip():
            good_bytes += len(line) + (1 if i < len(lines) - 1 else 0)
            continue
        complete = i < len(lines) - 1  # has its newline
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if complete:
                raise CalibrationLogError(f"{path}: line {i + 1} is not valid JSON") from None
            break
        if not complete:
            break
        records.append(rec)
        good_bytes += len(line) + 1
    if good_bytes < len(raw):
        with open(path, "r+b") as fh:
            fh.truncate(good_bytes)
    if not records:
        return []
    head, body = records[0], records[1:]
    if not isinstance(head, dict) or head.get("kind") != _LOG_KIND:
        raise CalibrationLogError(f"{path}: not a simrec calibration log (first line has no kind={_LOG_KIND!r})")
    if header is not None and head.get("digest") != header.get("digest"):
        raise CalibrationLogError(
            f"{path}: log of a different calibration (one with other settings than this sweep's); use another "
            "output folder"
        )
    dims = head.get("dims")
    names = {d.get("name") for d in dims if isinstance(d, dict)} if isinstance(dims, list) else None
    trials = []
    for j, rec in enumerate(body):
        problem = _trial_problem(rec, names)
        if problem:
            raise CalibrationLogError(
                f"{path}: line {j + 2} is not a trial record ({problem}); delete the file and re-run the same "
                "command to recompute its search"
            )
        trials.append(Trial(**{k: rec[k] for k in Trial.__dataclass_fields__}))
    for j, t in enumerate(trials):
        if t.index != j:
            raise CalibrationLogError(f"{path}: trial {j} is recorded with index {t.index}")
    return trials


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _trial_problem(rec: object, names: set | None) -> str | None:
    """What makes a logged record unusable as a :class:`Trial` (None if it is one).

    ``names`` are the searched parameters (from the log's header), when known.
    """
    if not isinstance(rec, dict):
        return f"a JSON object expected; got {type(rec).__name__}"
    missing = [k for k in Trial.__dataclass_fields__ if k not in rec]
    if missing:
        return f"no {', '.join(missing)}"
    params, details = rec["params"], rec["details"]
    checks = {
        "index": isinstance(rec["index"], int) and not isinstance(rec["index"], bool),
        "params": isinstance(params, dict) and all(_is_number(v) for v in params.values()),
        "value": rec["value"] is None or _is_number(rec["value"]),
        "details": isinstance(details, dict) and all(_is_number(v) for v in details.values()),
        "status": rec["status"] in ("ok", "refused"),
        "reason": rec["reason"] is None or isinstance(rec["reason"], str),
        "seconds": _is_number(rec["seconds"]),
    }
    wrong = [k for k, ok in checks.items() if not ok]
    if wrong:
        return f"{', '.join(wrong)} of the wrong type"
    if names is not None and set(params) != names:
        return f"params {sorted(params)[:10]}, the log's header searches {sorted(map(str, names))}"
    return None


def _append(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, allow_nan=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _gp_inputs(dims: list[Dim], trials: list[Trial]) -> tuple[list[list[float]], list[float]]:
    ok = [t.value for t in trials if t.status == "ok" and t.value is not None and math.isfinite(t.value)]
    if not ok:
        return [], []
    worst = max(ok)
    stand_in = worst + 0.5 * abs(worst) if worst != 0 else 1.0
    xs = [[t.params[d.name] for d in dims] for t in trials]
    ys = [
        t.value if (t.status == "ok" and t.value is not None and math.isfinite(t.value)) else stand_in for t in trials
    ]
    if min(ys) > 0:
        # KL divergences and losses span orders of magnitude; the GP models
        # their logarithm, which keeps a narrow deep valley from being
        # smoothed away by a plateau of large values.
        ys = [math.log(y) for y in ys]
    return xs, ys


def gp_search(
    objective: Callable[[dict[str, float], np.random.SeedSequence], TrialOutcome],
    dims: list[Dim],
    *,
    seed: int,
    n_calls: int = 150,
    n_initial: int = 25,
    log_path: str | Path | None = None,
    header: dict | None = None,
    on_trial: Callable[[Trial], None] | None = None,
) -> SearchResult:
    """Minimise ``objective`` over ``dims`` by GP search, logging every trial.

    Parameters
    ----------
    objective : callable
        ``objective(params, seed_sequence) -> TrialOutcome``.
    dims : list of Dim
    seed : int
        Root seed; step ``i`` uses ``task_seed(seed, i)`` (child 0 for the
        proposal, child 1 for the objective).
    n_calls : int, default 150
        Total trials (thesis §4.1: 150 iterations).
    n_initial : int, default 25
        Random trials before the GP takes over (``gp_minimize``'s ``n_initial_points``).
    log_path : path, optional
        JSON-lines trial log; resumed when it exists.
    header : dict, optional
        Identifies the search (must hold a ``digest``); a log with another
        digest is refused.
    on_trial : callable, optional
        Called with each new trial (e.g. a progress bar).
    """
    n_calls = check_int("n_calls", n_calls, low=1)
    n_initial = check_int("n_initial", n_initial, low=1)
    trials: list[Trial] = []
    path = Path(log_path) if log_path is not None else None
    head = {"kind": _LOG_KIND, "dims": [asdict(d) for d in dims], "seed": seed, **(header or {})}
    head.setdefault("digest", "")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        trials = read_log(path, head)
        if not path.exists() or path.stat().st_size == 0:
            _append(path, head)
    resumed_from = len(trials)
    for i in range(len(trials), n_calls):
        proposal_seed, objective_seed = task_seed(seed, i).spawn(2)
        xs, ys = _gp_inputs(dims, trials)
        if i < n_initial or not xs:
            x = sample_points(dims, 1, as_generator(proposal_seed))[0]
        else:
            x = gp_propose(dims, xs, ys, random_state=int(proposal_seed.generate_state(1)[0]))
        params = {d.name: v for d, v in zip(dims, x)}
        t0 = time.perf_counter()
        out = objective(params, objective_seed)
        secs = round(time.perf_counter() - t0, 4)
        if out.refused is not None:
            trial = Trial(i, params, None, dict(out.details), "refused", out.refused, secs)
        else:
            trial = Trial(i, params, float(out.value), dict(out.details), "ok", None, secs)
        trials.append(trial)
        if path is not None:
            _append(path, asdict(trial))
        if on_trial is not None:
            on_trial(trial)
    return SearchResult(tuple(trials[:n_calls]), resumed_from)
