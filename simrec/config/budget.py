"""Memory estimates of run, stress and sweep files, refused during validation (issue 12).

Every job's peak memory is estimated from its validated spec *before* any
folder or array is created, and a job over the limit is refused with the
estimate, what it comes from and the keys to change, e.g.::

    demo.toml: too large for the memory limit of 17.7 GiB (--max-memory):
      about 533.6 TiB at peak with 1 worker; the largest parts:
      world[0] (ibp-pop): about 6e+12 expected true pairs and 1.1e+11 items per replicate -> 533.6 TiB;
        change population.n_users, world[0].preference.alpha
      lower these (or --jobs), or raise --max-memory (e.g. --max-memory 64G) if the machine has the memory

Peak = workers x (interpreter + the largest task) + what the parent holds
(task bookkeeping and the tidy results). The constants were measured on the
reference machine with one replicate per process (``ru_maxrss``, Python 3.11,
numpy 2.4), then rounded up:

==========================  ==========  =====================================================
what                        measured    budgeted
==========================  ==========  =====================================================
expected true (user, item)  58-80 B     96 B per pair (generate, observe, split, relevance,
pair of a replicate                     lists; Uniform, IBP, LDA, popularity observation)
item of a replicate         63 B        64 B per item (per-item counts, popularity, masks)
dense score cell (AUC,      15.7 B      24 B per cell of a block of min(users, 2048) x items
pAp@k, global ranks)
LDA topic matrices          8 B         8 B per cell of φ (topics x items) and θ (users x topics)
significance task           (derived)   the world's replicate (regenerated) + 8 B per user per held
                                        per-user array + 32 MiB of the tests' resampling chunks
interpreter with simrec,    160 MiB     256 MiB per worker
LensKit and torch loaded
==========================  ==========  =====================================================

Each spec estimates its own part with these costs (a world's replicate:
:meth:`WorldSpec.memory_need <simrec.config.models.WorldSpec.memory_need>`, with
its preference model's own keys and extra bytes; a trained recommender:
``memory_need`` of its spec; a whole job: ``memory_needs()`` of the run,
stress or sweep spec); this module holds the costs, the limit and the check,
and imports no spec.

Decision: the default limit is 75% of the machine's physical memory (the
rest is left to the system and other programs); ``--max-memory`` raises or
lowers it. The generator's own guard (``max_pairs``) is set from the same
limit, so a world accepted here is never refused inside a task.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from simrec._validation import format_bytes, parse_size
from simrec.config.base import ScenarioError

__all__ = [
    "Budget",
    "Need",
    "Needs",
    "BYTES_PER_PAIR",
    "BYTES_PER_ITEM",
    "BYTES_PER_SCORE",
    "SCORE_BLOCK_USERS",
    "BYTES_PER_TASK",
    "BYTES_PER_ROW",
    "SIGNIFICANCE_TEST_BYTES",
    "IMPLICIT_MF_WORKSPACE",
    "default_max_memory",
    "parse_memory",
    "format_bytes",
    "max_pairs_for",
    "ranks_needs",
    "sim_to_real_needs",
    "dataset_read_need",
    "check_memory",
]

BYTES_PER_PAIR = 96
BYTES_PER_ITEM = 64
BYTES_PER_SCORE = 24
SCORE_BLOCK_USERS = 2048
WORKER_BASE = 256 * 2**20
#: Parent-side bookkeeping per task (Task object, future, shard path, progress).
BYTES_PER_TASK = 4096
#: One tidy result row (replicate, world, recommender, metric, truth, value, n, ...).
BYTES_PER_ROW = 200
#: A significance task's paired tests: one chunk of resampled indices or signs (16 MiB,
#: :mod:`simrec.significance.bootstrap` and ``.permutation``) and the values it gathers (as much again).
SIGNIFICANCE_TEST_BYTES = 32 * 2**20
#: Reading a dataset file: peak bytes per byte of the file (ML-1M's 24.6 MB ratings.dat: 180 MiB above the
#: interpreter, i.e. 7.5 B per byte, rounded up with the margin ``simrec ranks``'s measurements needed).
BYTES_PER_FILE_BYTE = 10
#: PyTorch's workspace while LensKit's ImplicitMF trains (measured at ML-1M: about 140 MiB beyond its factors).
IMPLICIT_MF_WORKSPACE = 160 * 2**20
#: A score block of ``simrec ranks``/``simrec stress`` (2**21 scores: the scores, the candidate mask, the
#: tie-breaking keys and the comparisons; measured 31 B per score, rounded up).
RANKS_BLOCK_BYTES = 40 * 2**21


@dataclass(frozen=True)
class Need:
    """One part of a job's memory: ``bytes`` for ``what``; ``keys`` are the file keys that change it."""

    what: str
    keys: str
    bytes: float


def default_max_memory() -> int:
    """75% of the machine's physical memory (8 GiB if it cannot be read)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30
    return int(0.75 * total)


@dataclass(frozen=True)
class Budget:
    """The memory a job may use: ``max_memory`` bytes (default :func:`default_max_memory`) over ``workers``
    concurrent tasks (``--jobs``; 1 for a remote Ray cluster, whose nodes each run their own tasks)."""

    max_memory: int = field(default_factory=lambda: default_max_memory())
    workers: int = 1

    @property
    def max_pairs(self) -> int:
        """The generator guard matching this budget (see :func:`max_pairs_for`)."""
        return max_pairs_for(self.max_memory, self.workers)

    def check(self, path: str | Path, needs: Needs, *, jobs_option: bool = True) -> float:
        """:func:`check_memory` with this budget."""
        return check_memory(path, needs, workers=self.workers, max_memory=self.max_memory, jobs_option=jobs_option)


def parse_memory(text: str) -> int:
    """``"8G"``, ``"512M"``, ``"1.5T"``, ``"1000000"`` (bytes) -> bytes; ValueError naming the option."""
    return parse_size("--max-memory", text)


def max_pairs_for(max_memory: int, workers: int) -> int:
    """The generator guard matching the limit: the pairs one worker's share of ``max_memory`` can hold."""
    return max(1, int((max_memory / max(workers, 1) - WORKER_BASE) // BYTES_PER_PAIR))


#: What a spec's ``memory_needs()`` returns (:meth:`simrec.config.run.Scenario.memory_needs`, ...): the kinds of
#: task (the needs of one kind add up; a worker runs one task at a time, so the largest kind sets its peak) and the
#: parent's needs.
Needs = tuple[list[list[Need]], list[Need]]


def dataset_read_need(path: str | Path) -> Need:
    """Reading a dataset file or folder: :data:`BYTES_PER_FILE_BYTE` per byte of the file a loader reads.

    Known before reading, from a few ``stat`` calls: a file counts itself; a
    folder (only MovieLens is read from a folder, :func:`simrec.datasets.detect_kind`)
    counts the largest of its ratings files (``u.data``, ``ratings.dat``,
    ``ratings.csv``), the one LensKit's detection reads. The folder is never
    walked (issue 22: ``simrec ranks /`` walked the whole disk); a folder
    without a ratings file counts 0 and the loader refuses it.
    """
    from simrec.config.cost import file_bytes

    p = Path(path)
    size = file_bytes(p)  # unreadable: 0, and the reader reports it with its own message
    return Need(f"reading the dataset {p} ({format_bytes(size)} of files)", "the dataset", BYTES_PER_FILE_BYTE * size)


class TrainedModel(Protocol):
    """What :func:`ranks_needs` asks of a recommender's spec."""

    def memory_need(self, where: str, *, n_users: float, n_items: float, n_pairs: float) -> Need:
        """The memory of the trained recommender (``where``: its option, e.g. ``--recommender[0]``)."""
        ...


def ranks_needs(
    specs: Sequence[TrainedModel],
    *,
    n_users: int,
    n_items: int,
    n_pairs: int,
    read: Need | None = None,
    option: str = "--recommender",
) -> Needs:
    """The needs of ``simrec ranks`` once its dataset is read: one process holding the data, every trained model
    and one score block (``specs`` are the parsed ``--recommender`` options; ``read``, the reading's
    :func:`dataset_read_need`, is counted too: the process does not return that memory to the system).

    Checked against ``ru_maxrss`` of ``simrec ranks`` on MovieLens 1M (6,040 users, 3,706 items, 1M pairs,
    leave-last-out), estimate / measured: popular 666 / 608 MiB, item_knn 834 / 753 MiB, implicit_mf
    845 / 551 MiB, all three 1013 / 895 MiB.
    """
    data = Need(
        f"the dataset and its split: {n_pairs:.3g} pairs, {n_users:.3g} users, {n_items:.3g} items",
        "the dataset (or --k-core, --min-rating)",
        BYTES_PER_PAIR * float(n_pairs) + BYTES_PER_ITEM * float(n_items) + 64.0 * float(n_users),
    )
    block = Need("one block of scores being ranked (2M scores)", "nothing (fixed)", float(RANKS_BLOCK_BYTES))
    models = [
        s.memory_need(f"{option}[{i}]", n_users=float(n_users), n_items=float(n_items), n_pairs=float(n_pairs))
        for i, s in enumerate(specs)
    ]
    return [[data, block, *models, *([read] if read is not None else [])]], []


def sim_to_real_needs(
    specs: Sequence[TrainedModel],
    worlds: Sequence[Need],
    *,
    n_users: int,
    n_items: int,
    n_pairs: int,
    max_users: int,
    read: Need | None = None,
) -> Needs:
    """The needs of ``simrec sim-to-real`` once its dataset is read (one process): the real data and every
    reference algorithm trained on it (:func:`ranks_needs`; ``specs`` their recommender specs), the dense scores
    of the evaluated users of one algorithm at a time (up to ``max_users`` users x ``n_items``, scored at once,
    :data:`BYTES_PER_SCORE` each), and the largest of the ``worlds``' replicates (each world's
    :meth:`~simrec.config.models.WorldSpec.memory_need` at the data's size), all held together (the study keeps
    the real data while it simulates).
    """
    (kind,), fixed = ranks_needs(
        specs, n_users=n_users, n_items=n_items, n_pairs=n_pairs, read=read, option="reference algorithm"
    )
    users = float(min(max_users, n_users))
    scores = Need(
        f"the scores of {users:.3g} evaluated users x {n_items:.3g} items (one algorithm at a time)",
        "--max-users",
        BYTES_PER_SCORE * users * float(n_items),
    )
    largest = [max(worlds, key=lambda n: n.bytes)] if worlds else []
    return [[*kind, scores, *largest]], fixed


def check_memory(path: str | Path, needs: Needs, *, workers: int, max_memory: int, jobs_option: bool = True) -> float:
    """Refuse a job whose estimated peak exceeds ``max_memory``; return the estimate (bytes).

    Peak = ``workers`` x (interpreter + the largest kind of task, its needs
    summed) + the parent's needs (``needs`` as returned by a spec's
    ``memory_needs()``: :meth:`Scenario.memory_needs <simrec.config.run.Scenario.memory_needs>`,
    :meth:`StressScenario.memory_needs <simrec.config.stress.StressScenario.memory_needs>`,
    :meth:`SweepSpec.memory_needs <simrec.config.sweep.SweepSpec.memory_needs>`, or :func:`ranks_needs`).

    Raises
    ------
    ScenarioError
        ``<path>: too large for the memory limit ...`` with the largest parts,
        the keys that change them, and ``--max-memory``.
    """
    kinds, fixed = needs
    task = max((sum(n.bytes for n in kind) for kind in kinds), default=0.0)
    peak = workers * (WORKER_BASE + task) + sum(n.bytes for n in fixed)
    if math.isfinite(peak) and peak <= max_memory:
        return peak
    base = Need("the interpreter with simrec, LensKit and PyTorch loaded, per worker", "--jobs", WORKER_BASE)
    if not jobs_option:  # a one-process command (``simrec ranks``)
        base = Need("the interpreter with simrec, LensKit and PyTorch loaded", "nothing (fixed)", WORKER_BASE)
    parts = sorted(
        [(n, n.bytes * workers) for kind in [*kinds, [base]] for n in kind] + [(n, n.bytes) for n in fixed],
        key=lambda p: -p[1],
    )
    lines = [
        f"{path}: too large for the memory limit of {format_bytes(max_memory)} (--max-memory):",
        f"  about {format_bytes(peak)} at peak with {workers} worker{'s' if workers > 1 else ''}; the largest parts:",
    ]
    listed: list[str] = []  # a need shared by several kinds of task (a world's replicate: run and significance) once
    for need, b in parts:
        if need.what in listed:
            continue
        if len(listed) == 3 or b < 0.01 * peak:
            break
        listed.append(need.what)
        lines.append(f"  {need.what} -> {format_bytes(b)}; change {need.keys}")
    lines.append(
        f"  lower these{' (or --jobs)' if jobs_option else ''}, or raise --max-memory (e.g. --max-memory 64G) if the machine has the "
        "memory"
    )
    raise ScenarioError("\n".join(lines))
