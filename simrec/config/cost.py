"""Time estimates of run, stress, calibrate, assess and ranks jobs, known during validation (issue 28).

Like the memory budget (:mod:`simrec.config.budget`), every job's work is
counted from its validated spec *before* any folder or array exists, in units
whose cost per unit was measured (``bench/bench_cost_model.py``):

==================  ==========================================================  ==============================
unit                what counts                                                 cost (CPU s per unit)
==================  ==========================================================  ==============================
``pairs``           expected true (user, item) pairs generated: a world's       :data:`SECONDS_PER_PAIR`
                    replicate, a calibration trial's simulation
``scores``          users x items scored and ranked by a recommender that is    :data:`SECONDS_PER_SCORE`
                    not trained (Oracle, Popular, Random)
``model_scores``    users x items scored by a trained model (LensKit), lists    :data:`SECONDS_PER_MODEL_SCORE`
                    or score rows of the evaluated users
``train_pairs``     training pairs a trained model is fitted to (one fit per    :data:`SECONDS_PER_TRAIN_PAIR`
                    recommender and replicate or split)
``model_fits``      those fits (each: its data converted, its pipeline built)   :data:`SECONDS_PER_MODEL_FIT`
``ranked``          candidates x ranked items of a leave-one-out ranking (the   :data:`SECONDS_PER_RANKED`
                    held-out item and, in a world, every truly relevant one)
``draws``           sampled negatives drawn and ranked by the stress harness    :data:`SECONDS_PER_DRAW`
                    (users x n x repeats per scheme, size and recommender)
``fits``            estimator fits (one per repeat, estimator, scheme, size     :data:`SECONDS_PER_FIT`
                    and recommender)
``boots``           bootstrap replicates of those fits (``n_boot`` per fit)     :data:`SECONDS_PER_BOOT`
``estimates``       evaluated users x MNAR estimates of ``[debias]`` (per       :data:`SECONDS_PER_ESTIMATE`
                    recommender, metric, estimator and propensity kind)
``test_draws``      per-user values x resamples read by the paired tests of     :data:`SECONDS_PER_TEST_DRAW`
                    ``[significance]`` (a closed-form test: one resample)
``gp_steps``        Gaussian-process proposals of a calibration search          :data:`SECONDS_PER_GP_STEP`
``gp_cubes``        the cube of the trials each proposal's GP is fitted to      :data:`SECONDS_PER_GP_CUBE`
                    (:func:`gp_work`: the fit grows as n³)
``figures``         panels of the figures a run draws (a figure per metric      :data:`SECONDS_PER_PANEL`
                    and kind, a panel per world; matplotlib's import once)      (+ :data:`SECONDS_MATPLOTLIB`)
``imports``         whether the job's recommenders need LensKit and PyTorch     :data:`SECONDS_LENSKIT_IMPORT`
                    (> 0: imported once by every process that runs them)        per process
``tasks``           tasks of the job (each: a shard written, progress, the      :data:`SECONDS_PER_TASK`
                    tables' share)
==================  ==========================================================  ==============================

:meth:`Work.seconds` is the CPU time of the work on the reference machine
(:data:`MEASURED_ON`); :func:`cpu_seconds` adds the job's start and the
imports of its processes; :func:`estimate_line` turns the work into wall
time on the job's workers (:func:`wall_seconds`: the tasks divide over
``min(jobs, cores)`` workers, the start, the imports and the figures do not) and the
line the CLI prints before a job expected to take over a minute
(:data:`ANNOUNCE_SECONDS`), e.g.
``simrec: this job should take about 12 min on 1 of 2 cores; --jobs 2 about halves it``.
On a Ray cluster at an ``--address`` the work divides over the cluster's
CPUs (known once connected), each assumed as fast as the reference machine's
(the line says so).

A counted quantity the spec does not know before the data is read (a dataset's
users and items) is taken from the dataset as validation loads it, or, for a
calibration, from the size of its ratings file (:data:`BYTES_PER_RATING`).
The estimate is a guide (the bench's jobs: within a factor of about 1.5 on a
quiet machine); on a machine shared with other jobs it is optimistic by the
load.
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
    "SECONDS_PER_TRAIN_PAIR",
    "SECONDS_PER_MODEL_FIT",
    "SECONDS_PER_RANKED",
    "SECONDS_PER_ESTIMATE",
    "SECONDS_PER_TEST_DRAW",
    "SECONDS_PER_GP_STEP",
    "SECONDS_PER_GP_CUBE",
    "SECONDS_PER_PANEL",
    "SECONDS_MATPLOTLIB",
    "SECONDS_LENSKIT_IMPORT",
    "SECONDS_PER_TASK",
    "SECONDS_START",
    "ANNOUNCE_SECONDS",
    "BYTES_PER_RATING",
    "ASSUMED_DENSITY",
    "TRUE_PAIRS_PER_OBSERVED",
    "STAT_PAIR_SHARE",
    "BYTES_PER_RANKS_ROW",
    "file_bytes",
    "sizes_from_file",
    "cores",
    "cpu_seconds",
    "wall_seconds",
    "format_duration",
    "gp_work",
    "estimate_line",
]

#: Where the costs below were measured (``bench/bench_cost_model.py``: CPU time of the job's processes, workers
#: included, so a loaded machine's wall time does not inflate them; its ``--units`` section for the units no whole
#: job isolates).
MEASURED_ON = (
    "the project's 2-core build machine shared with other jobs (load 2.4-5), CPU seconds of the jobs' processes "
    "(Python 3.11, numpy 2.4, LensKit, torch CPU), 1 December 2026; to be re-measured on a quiet machine"
)

#: CPU seconds per expected true pair of a world replicate (generate, observe, split, relevance, lists) or of a
#: calibration trial's simulation. quickstart (6.6M pairs, 30 tasks, 84 figure panels): 11.0 s CPU measured;
#: bench/cost-calibrate.toml (84M pairs, 50 GP proposals): 22.2 s.
SECONDS_PER_PAIR = 2.0e-7
#: CPU seconds per user x item cell scored and ranked by an untrained recommender (their lists are built from the
#: sparse data, not a dense block). debias-pop without [debias] (135M cells, 1.9M pairs, 20 tasks): 4.1 s CPU.
SECONDS_PER_SCORE = 4.0e-9
#: CPU seconds per user x item cell of a trained LensKit model's lists or score rows (its fit apart): ItemKNN and
#: ImplicitMF, ``--units``: 1.35 and 1.04e-6 at ML-100K size, 2.81 and 0.44e-6 at ML-1M size (means 1.2 and
#: 1.6e-6); lenskit-cf (33.8M cells) 45.5 s CPU.
SECONDS_PER_MODEL_SCORE = 1.2e-6
#: CPU seconds per sampled negative drawn and ranked by the stress harness.
#: Not separable from the fits in the bench's jobs (a small share of sampled-sim-ibp-pop's).
SECONDS_PER_DRAW = 1.0e-8
#: CPU seconds per estimator fit (one repeat's histogram, one estimator, K = 1..k_max).
#: sampled-sim-ibp-pop (58,000 fits, 564M draws, 5 recommenders' truth rankings): 209-266 s CPU (load 2.4-4.4).
SECONDS_PER_FIT = 3.5e-3
#: CPU seconds per bootstrap replicate of an estimator fit (intervals, ``n_boot``).
#: ml100k-assess's sampled evaluation (2,520 fits, n_boot = 10): 2.8 min CPU (its file's header, before this
#: module), less its ranks and fits.
SECONDS_PER_BOOT = 6.0e-3
#: CPU seconds per training pair of a trained model's fit (LensKit), ``--units``: ItemKNN 1.5e-6 and ImplicitMF
#: (50 factors) 4.8e-6 per pair at ML-1M size, less the fixed part below.
SECONDS_PER_TRAIN_PAIR = 3.0e-6
#: CPU seconds of a trained model's fit besides its pairs (the data converted for LensKit, the pipeline built):
#: the intercept of the ML-100K and ML-1M fits of ``--units``.
SECONDS_PER_MODEL_FIT = 0.2
#: CPU seconds per candidate x ranked item of a leave-one-out ranking (:func:`simrec.stress.score_ranks`: the
#: held-out item's and, in a world, every truly relevant item's global rank, ties broken at random). ``--units``:
#: Popular in quickstart's IBP-Pop world (96M, 56 truly relevant items per user), 3.5-3.7e-9;
#: bench/cost-significance.toml (9.3G with Oracle, Popular and Random): 35.8 s CPU in all.
SECONDS_PER_RANKED = 3.0e-9
#: CPU seconds per evaluated user of one MNAR estimate (:mod:`simrec.debias.harness`: ranks of the test items,
#: the estimator and its interval). debias-pop with and without its [debias] section (5.4M user-estimates):
#: 11.7-13.8 and 3.3-4.1 s CPU (load 2.4-5), less the replicate regenerated.
SECONDS_PER_ESTIMATE = 1.4e-6
#: CPU seconds per per-user value x resample of a paired test (:mod:`simrec.significance`). ``--units``, 943
#: users, 1,000 resamples: permutation 2.2-2.4e-9, bootstrap 8.4-10.3e-9 (the default tests: two bootstraps, one
#: permutation).
SECONDS_PER_TEST_DRAW = 7.0e-9
#: CPU seconds of a Gaussian-process proposal's fixed part (:func:`gp_work`; ``--units``: 0.106-0.122, the
#: intercept of a least-squares fit over 20-200 points).
SECONDS_PER_GP_STEP = 0.12
#: CPU seconds per cubed trial of a Gaussian-process proposal (:func:`gp_work`; ``--units``: 1.63-1.76e-7; a
#: proposal on 200 points takes 1.4 s).
SECONDS_PER_GP_CUBE = 1.76e-7
#: CPU seconds per panel of a run's figures (``values_<metric>.png`` and ``error_<metric>.png``, a panel per world):
#: quickstart with and without figures (84 panels), 9.6 and 4.7 s CPU.
SECONDS_PER_PANEL = 0.05
#: CPU seconds of matplotlib's import (once, by a job that draws).
SECONDS_MATPLOTLIB = 0.7
#: CPU seconds of importing LensKit and PyTorch (once per process that runs a LensKit recommender): 3.1 s measured.
SECONDS_LENSKIT_IMPORT = 3.1
#: CPU seconds of a task's fixed cost (shard written, result tables, progress).
SECONDS_PER_TASK = 0.05
#: CPU seconds of a job's start (Python, simrec and its numerical libraries imported, the file validated): a tiny
#: run without figures, 1.4-1.5 s CPU.
SECONDS_START = 1.5
#: Jobs estimated to take longer than this (wall seconds) are announced before they start.
ANNOUNCE_SECONDS = 60.0
#: Bytes of a ratings file per rating (MovieLens 100K: 19.7, 1M: 23.4), for a dataset not read during validation.
BYTES_PER_RATING = 20.0
#: Density (ratings / (users x items)) assumed for a dataset not read during validation (MovieLens 100K: 6.3%,
#: 1M: 4.5%).
ASSUMED_DENSITY = 0.05
#: True pairs simulated per observed rating by a calibration trial (the truth is larger than what is observed).
TRUE_PAIRS_PER_OBSERVED = 4.0
#: The cost of a similarity statistic's sampled pair (a calibration trial's ``stat_pairs``) in generated pairs:
#: bench/cost-calibrate.toml (IBP x popularity on ML-100K, 60 trials of 0.4M true and 1M sampled pairs, 50 GP
#: proposals) took 17.7 s CPU, 9.7 s of it the trials.
STAT_PAIR_SHARE = 0.4
#: Bytes of a ranks file per row (``user,recommender,rank,n_candidates,popularity_share`` as CSV).
BYTES_PER_RANKS_ROW = 40.0


@dataclass(frozen=True)
class Work:
    """Units of a job's work counted from its validated spec (see the module docstring for each unit).

    Work adds up (``a + b``, :meth:`total`); :meth:`seconds` is its CPU time
    on the reference machine; the part that cannot run in parallel (the
    job's start, its imports and the figures its own process draws) is added
    by :func:`wall_seconds`.
    """

    pairs: float = 0.0
    scores: float = 0.0
    model_scores: float = 0.0
    draws: float = 0.0
    fits: float = 0.0
    boots: float = 0.0
    train_pairs: float = 0.0
    model_fits: float = 0.0
    ranked: float = 0.0
    estimates: float = 0.0
    test_draws: float = 0.0
    gp_steps: float = 0.0
    gp_cubes: float = 0.0
    figures: float = 0.0
    imports: float = 0.0
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
        """CPU seconds on the reference machine (:data:`MEASURED_ON`), the job's start and imports excluded.

        .. math:: t = \\sum_u c_u \\, w_u

        over the units :math:`u` with counts :math:`w_u` and measured costs :math:`c_u` (``imports`` is
        counted by :func:`cpu_seconds`; matplotlib's import with the first figure panel).
        """
        return (
            SECONDS_PER_PAIR * self.pairs
            + SECONDS_PER_SCORE * self.scores
            + SECONDS_PER_MODEL_SCORE * self.model_scores
            + SECONDS_PER_DRAW * self.draws
            + SECONDS_PER_FIT * self.fits
            + SECONDS_PER_BOOT * self.boots
            + SECONDS_PER_TRAIN_PAIR * self.train_pairs
            + SECONDS_PER_MODEL_FIT * self.model_fits
            + SECONDS_PER_RANKED * self.ranked
            + SECONDS_PER_ESTIMATE * self.estimates
            + SECONDS_PER_TEST_DRAW * self.test_draws
            + SECONDS_PER_GP_STEP * self.gp_steps
            + SECONDS_PER_GP_CUBE * self.gp_cubes
            + self.figure_seconds()
            + SECONDS_PER_TASK * self.tasks
        )

    def figure_seconds(self) -> float:
        """CPU seconds of the figures (drawn by the job's own process, after its tasks)."""
        return (SECONDS_MATPLOTLIB + SECONDS_PER_PANEL * self.figures) if self.figures > 0 else 0.0


def gp_work(n_calls: int, n_initial: int) -> Work:
    """The Gaussian-process proposals of one calibration search (:func:`simrec.calibration.search`).

    Trial :math:`k \\ge n_0` (``n_initial``) is proposed by a GP fitted to
    the :math:`k` trials before it (scikit-optimize's ``Optimizer``, rebuilt
    at every step), whose fit grows as :math:`k^3`:

    .. math:: t_{GP} = \\sum_{k=n_0}^{n-1} \\bigl(c_{step} + c_{cube} k^3\\bigr)

    Examples
    --------
    >>> w = gp_work(10, 8)  # trials 8 and 9: GPs of 8 and 9 points
    >>> w.gp_steps, w.gp_cubes
    (2.0, 1241.0)
    """
    ks = range(min(n_initial, n_calls), n_calls)
    return Work(gp_steps=float(len(ks)), gp_cubes=float(sum(k**3 for k in ks)))


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


def _workers(work: Work, jobs: int, n_cores: int | None) -> int:
    """The workers the tasks run on: ``min(jobs, cores, tasks)``, at least 1."""
    n_cores = cores() if n_cores is None else n_cores
    return max(1, min(jobs, n_cores, max(1, math.ceil(work.tasks))))


def _imports(work: Work, workers: int) -> float:
    """CPU seconds of the LensKit imports: the job's process (its validation builds the recommenders) and, with
    several workers, each worker process."""
    if work.imports <= 0:
        return 0.0
    return SECONDS_LENSKIT_IMPORT * (1 + (workers if workers > 1 else 0))


def cpu_seconds(work: Work, jobs: int = 1, n_cores: int | None = None) -> float:
    """Estimated CPU seconds of the whole job on ``jobs`` workers: its start, its imports and its work.

    .. math:: C = s_0 + i \\, (1 + w [w > 1]) + t

    with :math:`s_0` = :data:`SECONDS_START`, :math:`i` =
    :data:`SECONDS_LENSKIT_IMPORT` when the job runs LensKit, :math:`w` the
    workers (:func:`wall_seconds`) and :math:`t` = :meth:`Work.seconds`.
    """
    return SECONDS_START + _imports(work, _workers(work, jobs, n_cores)) + work.seconds()


def wall_seconds(work: Work, jobs: int, n_cores: int | None = None) -> float:
    """Estimated wall seconds of ``work`` on ``jobs`` workers of a quiet machine with ``n_cores`` CPUs.

    .. math:: T = s_0 + i \\, (1 + [w > 1]) + f + (t - f) / w, \\quad w = \\min(\\mathrm{jobs}, \\mathrm{cores},
              \\mathrm{tasks})

    with :math:`s_0` = :data:`SECONDS_START`, :math:`i` the LensKit import
    (the job's process, then the workers' at once), :math:`f` the figures
    (:meth:`Work.figure_seconds`, drawn by the job's process) and :math:`t` =
    :meth:`Work.seconds` (tasks spread over the workers; a job of one task
    runs on one).
    """
    workers = _workers(work, jobs, n_cores)
    imports = SECONDS_LENSKIT_IMPORT * (2 if workers > 1 else 1) if work.imports > 0 else 0.0
    figures = work.figure_seconds()
    return SECONDS_START + imports + figures + (work.seconds() - figures) / workers


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


def estimate_line(
    work: Work,
    jobs: int,
    *,
    n_cores: int | None = None,
    parallel: bool = True,
    cluster_cpus: int | None = None,
) -> str | None:
    """The line announcing a job expected to take over :data:`ANNOUNCE_SECONDS`, else None.

    ``parallel``: whether the job's ``--jobs`` spreads its tasks (False for
    ``simrec ranks``, one process). With one worker on a machine of several
    cores, the line says what ``--jobs`` would gain. ``cluster_cpus``: the
    CPUs of the Ray cluster the job runs on (``--address``, known once
    connected): the work divides over them instead of this machine's cores,
    each assumed as fast as the reference machine's, which the line says.

    Examples
    --------
    >>> work = Work(tasks=(725 - SECONDS_START) / SECONDS_PER_TASK)  # 12 min of tasks
    >>> estimate_line(work, 1, n_cores=2)
    'simrec: this job should take about 12 min on 1 of 2 cores; --jobs 2 about halves it'
    >>> estimate_line(work, 2, n_cores=2)
    'simrec: this job should take about 6 min on 2 cores (--jobs 2)'
    >>> estimate_line(Work(tasks=1), 1, n_cores=2) is None
    True
    >>> estimate_line(work, 1, cluster_cpus=4)
    "simrec: this job should take about 3 min on the Ray cluster's 4 CPUs (if each is as fast as this machine's)"
    """
    if cluster_cpus is not None:
        wall = wall_seconds(work, cluster_cpus, cluster_cpus) if parallel else wall_seconds(work, 1, 1)
        if wall <= ANNOUNCE_SECONDS:
            return None
        where = f"the Ray cluster's {cluster_cpus} CPUs" if parallel else "one CPU of the Ray cluster"
        return f"simrec: this job should take about {format_duration(wall)} on {where} (if each is as fast as this machine's)"
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
