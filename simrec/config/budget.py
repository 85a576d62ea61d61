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
interpreter with simrec,    160 MiB     256 MiB per worker
LensKit and torch loaded
==========================  ==========  =====================================================

Decision: the default limit is 75% of the machine's physical memory (the
rest is left to the system and other programs); ``--max-memory`` raises or
lowers it. The generator's own guard (``max_pairs``) is set from the same
limit, so a world accepted here is never refused inside a task.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from simrec._validation import format_bytes, parse_size
from simrec.config.base import ScenarioError

__all__ = [
    "Budget",
    "Need",
    "Needs",
    "BYTES_PER_PAIR",
    "default_max_memory",
    "parse_memory",
    "format_bytes",
    "max_pairs_for",
    "run_needs",
    "stress_needs",
    "sweep_needs",
    "ranks_needs",
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


# -- what a world costs ---------------------------------------------------------------------------
def _world_needs(world, population, where: str, *, n_lists: int, score_users: int) -> Need:
    """One replicate of a world (truth -> observe -> split -> lists; dense score blocks if asked)."""
    model = world.preference.build(population)
    pref = world.preference
    pairs = float(model.expected_pairs())
    items = float(model.expected_items())
    users = float(population.n_users)
    total = BYTES_PER_PAIR * pairs + BYTES_PER_ITEM * items + 8.0 * users * n_lists
    if score_users:
        total += BYTES_PER_SCORE * min(users, SCORE_BLOCK_USERS, score_users) * items
    keys = ["population.n_users"]
    if pref.model == "ibp":
        keys.append(f"{where}.preference.alpha")
    else:
        keys += [f"{where}.preference.lam", "population.n_items"]
    if pref.model == "lda":
        total += 8.0 * pref.n_topics * (items + users)
        keys.append(f"{where}.preference.n_topics")
    what = f"{where} ({world.label}): about {pairs:.2g} expected true pairs and {items:.2g} items per replicate" + (
        " with dense score blocks" if score_users else ""
    )
    return Need(what, ", ".join(keys), total)


#: What :func:`run_needs` and friends return: the kinds of task (the needs of one kind add up; a worker runs
#: one task at a time, so the largest kind sets its peak) and the parent's needs.
Needs = tuple[list[list[Need]], list[Need]]


def run_needs(sc) -> Needs:
    """Task kinds (one per world) and parent-side needs of a run scenario (:class:`~simrec.config.run.Scenario`)."""
    ev = sc.evaluation
    scores = any(m in ("auc", "pap_at_k") for m in ev.metrics)
    kinds = [
        [
            _world_needs(
                w,
                sc.population,
                f"world[{i}]",
                n_lists=ev.n * 3 * len(ev.recommenders),
                score_users=sc.population.n_users if scores else 0,
            )
        ]
        for i, w in enumerate(sc.world)
    ]
    tasks = float(sc.replicates) * len(sc.world)
    rows = tasks * len(ev.recommenders) * len(ev.metrics) * 2
    fixed = [
        Need(
            f"{sc.replicates} replicates x {len(sc.world)} worlds: {tasks:.3g} tasks and {rows:.3g} result rows",
            "replicates",
            BYTES_PER_TASK * tasks + BYTES_PER_ROW * rows,
        )
    ]
    return kinds, fixed


def stress_needs(sc, *, n_candidates: float | None = None, n_users: float | None = None) -> Needs:
    """Task kinds (ranks tasks of a simulation; stress tasks) and parent-side needs of a stress scenario.

    ``n_candidates`` / ``n_users`` (largest candidate count and evaluated
    users of a ranks file) are needed for file sources; a dataset source's
    size is only known once it is loaded and is not estimated here. A
    simulation's N is its item count under either ``source.candidates``
    (``"all"``: N_u = n_items; ``"unseen"``: fewer), and its score blocks are
    dense over all items in both readings, so the key changes no estimate.
    """
    from simrec.config.stress import SimulationSource

    src = sc.source
    kinds: list[list[Need]] = []
    if isinstance(src, SimulationSource):
        kinds.append(
            [_world_needs(src.world, src.population, "source.world", n_lists=0, score_users=src.population.n_users)]
        )
        n_candidates = float(src.world.item_count(src.population))
        n_users = float(src.population.n_users)
    n_est = len(sc.estimators.build())
    families, k_max, repeats = len(sc.metrics.names), sc.metrics.k_max, float(sc.repeats)
    fixed: list[Need] = []
    stress_task: list[Need] = []
    if n_candidates is not None:
        n = float(max(sc.sampling.sizes))
        if "adaptive" in sc.sampling.schemes:
            n = max(n, float(sc.sampling.adaptive_n_max))
        n = min(n, n_candidates)
        grid = 8.0 * 4 * n_candidates * n + 8.0 * 4 * n * n + 8.0 * 8 * (n_users or 0)
        stress_task.append(
            Need(
                f"P(r|R) and the estimators' solves for N = {n_candidates:.3g} candidates and n = {n:.3g}",
                "sampling.sizes, sampling.adaptive_n_max (or the ranks file's n_candidates)",
                grid,
            )
        )
    cells = repeats * n_est * families * k_max
    stress_task.append(
        Need(
            f"{sc.repeats} repeats x {n_est} estimators x {families} metrics x K = 1..{k_max}",
            "repeats, estimators.names, metrics.names, metrics.k_max",
            8.0 * 3 * cells,
        )
    )
    n_tasks = float(len(sc.sampling.schemes) * len(sc.sampling.sizes))
    fixed.append(
        Need(
            f"the tables of {n_tasks:.3g} tasks per recommender",
            "repeats, metrics.k_max",
            BYTES_PER_ROW * n_tasks * n_est * families * k_max * 4,
        )
    )
    return [*kinds, stress_task], fixed


def sweep_needs(spec) -> Needs:
    """Task kinds (one GP search) and parent-side needs of a sweep spec."""
    from simrec.calibration.objective import DEFAULT_CALIBRATION_MAX_PAIRS

    pairs = float(spec.max_pairs or DEFAULT_CALIBRATION_MAX_PAIRS)
    calls = float(spec.n_calls)
    search = [
        Need(f"one simulation of up to {pairs:.3g} pairs per trial", "max_pairs", BYTES_PER_PAIR * pairs),
        Need(f"the Gaussian process over {spec.n_calls} calls", "n_calls", 8.0 * 6 * calls * calls),
        Need(f"{spec.stat_pairs} sampled pairs per similarity statistic", "stat_pairs", 8.0 * 8 * spec.stat_pairs),
    ]
    cells = len(spec.dataset) * len(spec.preferences) * len(spec.observations) * len(spec.objectives)
    fixed = [Need(f"{cells} searches of {spec.n_calls} trials", "n_calls", 2048.0 * cells * calls)]
    return [search], fixed


def dataset_read_need(path: str | Path) -> Need:
    """Reading a dataset file or folder: :data:`BYTES_PER_FILE_BYTE` per byte of its files (known before reading)."""
    p = Path(path)
    try:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        size = float(sum(f.stat().st_size for f in files))
    except OSError:  # unreadable: the reader reports it with its own message
        size = 0.0
    return Need(f"reading the dataset {p} ({format_bytes(size)} of files)", "the dataset", BYTES_PER_FILE_BYTE * size)


def _model_need(spec, index: int, *, n_users: float, n_items: float, n_pairs: float) -> Need:
    """A trained recommender kept in memory by ``simrec ranks`` (all stay trained until the file is written).

    LensKit's ItemKNN keeps every item-item similarity above ``min_sim`` unless
    ``save_nbrs`` is set (float32 value + int32 index, plus the training
    matrix): 12 B x items x min(items, save_nbrs). UserKNN keeps the normalised
    rating matrix (12 B per pair) and one row of user similarities per scored
    user. simrec's ItemCF (Krichene & Rendle's item CF) keeps a sparse
    float64 similarity matrix of up to items² pairs, built from a co-occurrence
    product (with its temporaries: 24 B x items²). ImplicitMF keeps float32
    user and item factors (x4 for the solver's temporaries: 16 B per factor),
    PyTorch's workspace and the training matrix. Popular, Oracle and Random keep one
    value per item. A scorer by import path is counted as the training matrix
    only: simrec cannot know what it keeps.
    """
    where = f"--recommender[{index}]"
    name = getattr(spec, "label", None) or getattr(spec, "kind", "recommender")
    algorithm = getattr(spec, "algorithm", None)
    params = dict(getattr(spec, "params", {}) or {})
    if algorithm == "item_knn":
        keep = float(params.get("save_nbrs") or n_items)
        return Need(
            f"{where} (item_knn): up to {n_items:.3g} x {min(keep, n_items):.3g} item similarities",
            f"{where} params.save_nbrs",
            12.0 * n_items * min(keep, n_items) + 12.0 * n_pairs,
        )
    if algorithm == "item_cf":
        return Need(
            f"{where} (item_cf): up to {n_items:.3g} x {n_items:.3g} item similarities",
            where,
            24.0 * n_items * n_items + 12.0 * n_pairs,
        )
    if algorithm == "user_knn":
        return Need(f"{where} (user_knn): the normalised rating matrix", where, 12.0 * n_pairs + 8.0 * n_users)
    if algorithm == "implicit_mf":
        k = float(params.get("embedding_size") or params.get("features") or 50)
        return Need(
            f"{where} (implicit_mf): {k:.3g} factors for {n_users + n_items:.3g} users and items",
            f"{where} params.embedding_size",
            16.0 * k * (n_users + n_items) + 12.0 * n_pairs + IMPLICIT_MF_WORKSPACE,
        )
    if getattr(spec, "scorer", None) is not None:
        return Need(
            f"{where} ({spec.scorer}): the training matrix (what the scorer itself keeps is not known)",
            where,
            12.0 * n_pairs,
        )
    return Need(f"{where} ({name}): one value per item", where, 8.0 * n_items)


def ranks_needs(specs, *, n_users: int, n_items: int, n_pairs: int, read: Need | None = None) -> Needs:
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
        _model_need(s, i, n_users=float(n_users), n_items=float(n_items), n_pairs=float(n_pairs))
        for i, s in enumerate(specs)
    ]
    return [[data, block, *models, *([read] if read is not None else [])]], []


def check_memory(path: str | Path, needs: Needs, *, workers: int, max_memory: int, jobs_option: bool = True) -> float:
    """Refuse a job whose estimated peak exceeds ``max_memory``; return the estimate (bytes).

    Peak = ``workers`` x (interpreter + the largest kind of task, its needs
    summed) + the parent's needs (``needs`` as returned by :func:`run_needs`,
    :func:`stress_needs` or :func:`sweep_needs`).

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
    for need, b in parts[:3]:
        if b < 0.01 * peak:
            break
        lines.append(f"  {need.what} -> {format_bytes(b)}; change {need.keys}")
    lines.append(
        f"  lower these{' (or --jobs)' if jobs_option else ''}, or raise --max-memory (e.g. --max-memory 64G) if the machine has the "
        "memory"
    )
    raise ScenarioError("\n".join(lines))
