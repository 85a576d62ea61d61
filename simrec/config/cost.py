"""Time estimates of run, stress, calibrate, assess and ranks jobs, known during validation (issue 28).

Like the memory budget (:mod:`simrec.config.budget`), every job's work is
counted from its validated spec *before* any folder or array exists, in units
whose cost per unit was measured (``bench/bench_cost_model.py``):

==================  ==========================================================  ==========================
unit                what counts                                                 cost (CPU s per unit)
==================  ==========================================================  ==========================
``pairs``           expected true (user, item) pairs generated: a world's       :data:`SECONDS_PER_PAIR`
                    replicate, a calibration trial's simulation
``scores``          users x items scored and ranked by a recommender that is    :data:`SECONDS_PER_SCORE`
                    not trained (Oracle, Popular, Random)
``model_scores``    users x items scored by a trained model (LensKit: its        :data:`SECONDS_PER_MODEL_SCORE`
                    training included, per scored cell)
``draws``           sampled negatives drawn and ranked by the stress harness    :data:`SECONDS_PER_DRAW`
                    (users x n x repeats per scheme, size and recommender)
``fits``            estimator fits (one per repeat, estimator, scheme, size     :data:`SECONDS_PER_FIT`
                    and recommender)
``boots``           bootstrap replicates of those fits (``n_boot`` per fit)     :data:`SECONDS_PER_BOOT`
``tasks``           tasks of the job (each: a shard written, progress, a        :data:`SECONDS_PER_TASK`
                    worker's start-up share)
==================  ==========================================================  ==========================

:meth:`Work.seconds` is the CPU time on the reference machine
(:data:`MEASURED_ON`); :func:`estimate_line` turns it into wall time on the
job's workers (the work divides over ``min(jobs, cores)`` workers) and the
line the CLI prints before a job expected to take over a minute
(:data:`ANNOUNCE_SECONDS`), e.g.
``simrec: this job should take about 12 min on 1 of 2 cores; --jobs 2 about halves it``.

A counted quantity the spec does not know before the data is read (a dataset's
users and items) is taken from the dataset as validation loads it, or, for a
calibration, from the size of its ratings file (:data:`BYTES_PER_RATING`).
The estimate is a guide (within a factor of 2 on the shipped scenarios the bench
runs, on a quiet machine); on a machine shared with other jobs it is optimistic
by the load.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

__all__ = [
    "Work",
    "MEASURED_ON",
    "SECONDS_PER_PAIR",
    "SECONDS_PER_SCORE",
    "SECONDS_PER_MODEL_SCORE",
    "SECONDS_PER_DRAW",
    "SECONDS_PER_FIT",
    "SECONDS_PER_BOOT",
    "SECONDS_PER_TASK",
    "SECONDS_START",
    "ANNOUNCE_SECONDS",
    "BYTES_PER_RATING",
    "ASSUMED_DENSITY",
    "TRUE_PAIRS_PER_OBSERVED",
    "BYTES_PER_RANKS_ROW",
    "file_bytes",
    "sizes_from_file",
    "cores",
    "wall_seconds",
    "format_duration",
    "estimate_line",
]

#: Where the costs below were measured (``bench/bench_cost_model.py``: CPU time of the job's processes, so a
#: loaded machine's wall time does not inflate them).
MEASURED_ON = (
    "the project's 2-core build machine shared with other jobs (load 17-20), CPU seconds of serial runs "
    "(Python 3.11, numpy 2.4, LensKit, torch CPU), 26 November 2026; to be re-measured on a quiet machine"
)

#: CPU seconds per expected true pair of a world replicate (generate, observe, split, relevance, lists); not
#: separable from the scores in the bench's jobs: set so that it is a small share of quickstart's 12.8 s.
SECONDS_PER_PAIR = 2.0e-7
#: CPU seconds per user x item cell scored and ranked by an untrained recommender (incl. dense AUC ranks).
#: quickstart (146M cells, 6.6M pairs, 30 tasks, 14 figures): 12.8 s CPU measured.
SECONDS_PER_SCORE = 4.0e-8
#: CPU seconds per user x item cell of a trained LensKit model (training, scoring and ranking).
#: lenskit-cf (two LensKit models x 5 replicates x 2 worlds: 33.8M cells, as many untrained): 70.0 s CPU.
SECONDS_PER_MODEL_SCORE = 1.9e-6
#: CPU seconds per sampled negative drawn and ranked by the stress harness.
#: Not separable from the fits in the bench's jobs (a small share of sampled-sim-ibp-pop's).
SECONDS_PER_DRAW = 1.0e-8
#: CPU seconds per estimator fit (one repeat's histogram, one estimator, K = 1..k_max).
#: sampled-sim-ibp-pop (58,000 fits, 564M draws, 5 recommenders' ranks): 191.3 s CPU.
SECONDS_PER_FIT = 3.0e-3
#: CPU seconds per bootstrap replicate of an estimator fit (intervals, ``n_boot``).
#: ml100k-assess's sampled evaluation (2,520 fits, n_boot = 10): 2.8 min CPU (its file's header, before this
#: module), less its ranks and fits.
SECONDS_PER_BOOT = 6.0e-3
#: CPU seconds of a task's fixed cost (shard written, result tables, the figures' share).
SECONDS_PER_TASK = 0.1
#: CPU seconds of a job's start (imports of simrec, LensKit and PyTorch; a worker's start per job).
SECONDS_START = 3.0
#: Jobs estimated to take longer than this (wall seconds) are announced before they start.
ANNOUNCE_SECONDS = 60.0
#: Bytes of a ratings file per rating (MovieLens 100K: 19.7, 1M: 23.4), for a dataset not read during validation.
BYTES_PER_RATING = 20.0
#: Density (ratings / (users x items)) assumed for a dataset not read during validation (MovieLens 100K: 6.3%,
#: 1M: 4.5%).
ASSUMED_DENSITY = 0.05
#: True pairs simulated per observed rating by a calibration trial (the truth is larger than what is observed).
TRUE_PAIRS_PER_OBSERVED = 4.0
#: Bytes of a ranks file per row (``user,recommender,rank,n_candidates,popularity_share`` as CSV).
BYTES_PER_RANKS_ROW = 40.0


@dataclass(frozen=True)
class Work:
    """Units of a job's work counted from its validated spec (see the module docstring for each unit).

    Work adds up (``a + b``, :meth:`total`); :meth:`seconds` is its CPU time
    on the reference machine, ``serial`` the part that cannot run in parallel
    (the job's start, the parent's tables).
    """

    pairs: float = 0.0
    scores: float = 0.0
    model_scores: float = 0.0
    draws: float = 0.0
    fits: float = 0.0
    boots: float = 0.0
    tasks: float = 0.0

    def __add__(self, other: Work) -> Work:
        return Work(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def times(self, k: float) -> Work:
        """The work done ``k`` times (e.g. per replicate)."""
        return Work(**{f.name: getattr(self, f.name) * k for f in fields(self)})

    @staticmethod
    def total(parts: Iterable[Work]) -> Work:
        out = Work()
        for p in parts:
            out = out + p
        return out

    def seconds(self) -> float:
        """CPU seconds on the reference machine (:data:`MEASURED_ON`), the job's start excluded.

        .. math:: t = \\sum_u c_u \\, w_u

        over the units :math:`u` with counts :math:`w_u` and measured costs :math:`c_u`.
        """
        return (
            SECONDS_PER_PAIR * self.pairs
            + SECONDS_PER_SCORE * self.scores
            + SECONDS_PER_MODEL_SCORE * self.model_scores
            + SECONDS_PER_DRAW * self.draws
            + SECONDS_PER_FIT * self.fits
            + SECONDS_PER_BOOT * self.boots
            + SECONDS_PER_TASK * self.tasks
        )


def file_bytes(path: str | Path) -> float:
    """The size of a file, or of the largest MovieLens ratings file in a folder (0 when unreadable).

    Known before reading, from a few ``stat`` calls: a folder (only MovieLens is read from a folder,
    :func:`simrec.datasets.detect_kind`) counts the largest of its ratings files (``u.data``, ``ratings.dat``,
    ``ratings.csv``); it is never walked (issue 22). Also :func:`simrec.config.budget.dataset_read_need`'s.
    """
    from simrec.datasets.movielens import MOVIELENS_RATING_FILES

    p = Path(path)
    try:
        files = [p / name for name in MOVIELENS_RATING_FILES] if p.is_dir() else [p]
        return float(max((f.stat().st_size for f in files if f.is_file()), default=0))
    except OSError:
        return 0.0


def sizes_from_file(path: str | Path) -> tuple[float, float]:
    """(n_users, n_items) of a dataset estimated from its ratings file's size, before reading it.

    .. math:: P = B / b, \\quad U = I = \\sqrt{P / d}

    with :math:`B` the file's bytes, :math:`b` = :data:`BYTES_PER_RATING` and
    :math:`d` = :data:`ASSUMED_DENSITY` (MovieLens 100K: 1,407 x 1,407 for the
    true 943 x 1,682; within a factor of 2 of users x items for MovieLens).
    """
    pairs = file_bytes(path) / BYTES_PER_RATING
    side = math.sqrt(pairs / ASSUMED_DENSITY)
    return side, side


def cores() -> int:
    """The CPUs this process may use (``os.sched_getaffinity``, else ``os.cpu_count()``, else 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def wall_seconds(work: Work, jobs: int, n_cores: int | None = None) -> float:
    """Estimated wall seconds of ``work`` on ``jobs`` workers of a quiet machine with ``n_cores`` CPUs.

    .. math:: T = s_0 + t / \\min(\\mathrm{jobs}, \\mathrm{cores}, \\mathrm{tasks})

    with :math:`s_0` = :data:`SECONDS_START` and :math:`t` = :meth:`Work.seconds`
    (tasks spread over the workers; a job of one task runs on one).
    """
    n_cores = cores() if n_cores is None else n_cores
    workers = max(1, min(jobs, n_cores, max(1, math.ceil(work.tasks))))
    return SECONDS_START + work.seconds() / workers


def format_duration(seconds: float) -> str:
    """``"45 s"``, ``"12 min"``, ``"2.5 h"`` (two significant digits at most).

    Examples
    --------
    >>> format_duration(44.6), format_duration(725), format_duration(9000)
    ('45 s', '12 min', '2.5 h')
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.2g} h"


def estimate_line(work: Work, jobs: int, *, n_cores: int | None = None, parallel: bool = True) -> str | None:
    """The line announcing a job expected to take over :data:`ANNOUNCE_SECONDS`, else None.

    ``parallel``: whether the job's ``--jobs`` spreads its tasks (False for
    ``simrec ranks``, one process). With one worker on a machine of several
    cores, the line says what ``--jobs`` would gain.

    Examples
    --------
    >>> work = Work(tasks=(725 - SECONDS_START) / SECONDS_PER_TASK)  # 12 min of tasks
    >>> estimate_line(work, 1, n_cores=2)
    'simrec: this job should take about 12 min on 1 of 2 cores; --jobs 2 about halves it'
    >>> estimate_line(work, 2, n_cores=2)
    'simrec: this job should take about 6 min on 2 cores (--jobs 2)'
    >>> estimate_line(Work(tasks=1), 1, n_cores=2) is None
    True
    """
    n_cores = cores() if n_cores is None else n_cores
    wall = wall_seconds(work, jobs if parallel else 1, n_cores)
    if wall <= ANNOUNCE_SECONDS:
        return None
    head = f"simrec: this job should take about {format_duration(wall)}"
    workers = min(jobs, n_cores) if parallel else 1
    if not parallel or n_cores == 1:
        return f"{head} on one core"
    if workers == 1:
        gain = (
            "about halves it"
            if n_cores == 2
            else f"would take about {format_duration(wall_seconds(work, n_cores, n_cores))}"
        )
        return f"{head} on 1 of {n_cores} cores; --jobs {n_cores} {gain}"
    return f"{head} on {workers} cores (--jobs {jobs})"
