"""The sources of a stress scenario's global ranks (``[source]``): a simulated world, a dataset, a ranks file.

Each source answers for itself what the stress loader, the memory budget
and the stress study ask (:class:`BaseSourceSpec`): where its data is, the
rules of its keys and of its data, the sizes it knows before any data is
read, the tasks it adds, and (sources whose ranks simrec computes,
:class:`ScoredSourceSpec`) its leave-one-out data. :data:`SOURCES` is the
registry (the union of the sources, by their ``type`` tag).

Relative paths (dataset folders, ranks files) are resolved against the folder
of the scenario file *after following symlinks*; for a dataset,
``$SIMREC_DATA/<name>`` is tried first.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, NamedTuple

import numpy as np
from pydantic import Field

from simrec._validation import quote
from simrec.config.base import MaxUsers, Strict
from simrec.config.budget import Need
from simrec.config.cost import Work
from simrec.config.datasets import DatasetSpec
from simrec.config.models import PopulationSpec, WorldSpec
from simrec.config.recommenders import BaseRecommenderSpec, RecommenderSpec, recommender_problems
from simrec.config.union import SpecUnion
from simrec.datasets import DatasetError, check_dataset_files, detect_kind
from simrec.stress.sources import (
    LooData,
    RanksFileError,
    RankSource,
    check_candidates,
    loo_data,
    read_ranks_file,
    simulate_loo_data,
)
from simrec.stress.user_sampling import common_users

__all__ = [
    "CandidateSet",
    "KnownSizes",
    "SamplingPlan",
    "BaseSourceSpec",
    "ScoredSourceSpec",
    "SimulationSource",
    "DatasetSource",
    "FileSource",
    "SOURCES",
    "SourceSpec",
    "size_problems",
    "user_size_problems",
]


#: ``candidates`` of a dataset or simulation source: what the held-out item is ranked among and negatives are
#: drawn from (:data:`simrec.stress.CANDIDATE_SETS`; see :mod:`simrec.stress.sources`).
CandidateSet = Literal["unseen", "all"]


class SamplingPlan(NamedTuple):
    """What a source's data is checked against: the scenario's ``sampling.schemes``, ``sampling.sizes`` and
    ``metrics.k_max``."""

    schemes: list[str]
    sizes: list[int]
    k_max: int


class KnownSizes(NamedTuple):
    """A source's item and user counts known before its data is read (a simulation's), with their names in
    messages."""

    n_items: int
    n_users: int
    items_label: str
    users_label: str


class BaseSourceSpec(Strict):
    """Where a stress scenario's global ranks come from (a member of :data:`SOURCES`): ``type`` is its tag.

    The loader and the memory budget ask the source, never its type: its data
    (:meth:`data_path`), the rules it checks (:meth:`problems`, and with its
    data :meth:`data_problems`, :meth:`user_sample_problems`), the sizes it
    knows before any data is read (:meth:`sizes`) and the tasks it adds
    (:meth:`memory_kinds`).
    """

    if TYPE_CHECKING:  # each source declares its fields in its own order (the dump's)
        type: str

    def data_path(self, scenario_path: str | Path) -> Path | None:
        """Where the source's data is (a dataset folder or file, a ranks file; None: generated)."""
        return None

    def problems(self, base: Path) -> list[str]:
        """Rules of the source's own keys that need more than one key (``base``: the scenario file's folder)."""
        return []

    def sizes(self) -> KnownSizes | None:
        """The candidate and user counts known before any data is read (None: only the data knows)."""
        return None

    def memory_kinds(self) -> list[list[Need]]:
        """The kinds of task the source adds to a stress job (:mod:`simrec.config.budget`)."""
        return []

    def work(self, n_users: float, n_items: float, *, n_pairs: float = 0.0) -> Work:
        """The work of computing the ranks (:mod:`simrec.config.cost`) of ``n_users`` x ``n_items`` data holding
        ``n_pairs`` pairs: nothing for a ranks file."""
        return Work()

    def evaluated_users(self, n_users: float) -> float:
        """The users the stress tasks evaluate, of the data's ``n_users`` (a user sample keeps fewer)."""
        return float(n_users)

    def data_problems(self, data: Path, path: Path, sampling: SamplingPlan) -> tuple[list[str], RankSource | None]:
        """Problems of the source's data at ``data`` (``path``: the scenario file; ``sampling``: the scenario's
        schemes, sizes and largest cutoff), and a ranks file's content."""
        return [], None

    def user_sample_problems(self, sizes: list[int], path: Path, ranks: RankSource | None) -> list[str]:
        """User-sample ``sizes`` against the users the data holds (``ranks``: a ranks file's content)."""
        return []


class ScoredSourceSpec(BaseSourceSpec):
    """A source whose ranks simrec computes: interactions split leave-one-out, its ``recommenders`` scoring the
    ``candidates`` (subclasses declare both, ``min_items`` and :attr:`has_truth`)."""

    #: Whether the source has true preferences (oracles can run).
    has_truth: ClassVar[bool]
    if TYPE_CHECKING:  # each source declares its fields in its own order (the dump's)
        candidates: CandidateSet
        min_items: int
        recommenders: list[BaseRecommenderSpec]

    @property
    @abstractmethod
    def label(self) -> str:
        """The source's name in results."""

    def problems(self, base: Path) -> list[str]:
        """The recommenders' problems (:func:`~simrec.config.recommenders.recommender_problems`: oracles need a
        truth), else those of recommenders that cannot rank among ``candidates``."""
        more = recommender_problems(self.recommenders, "source.recommenders", truth=self.has_truth, base=base)
        return more or _candidate_problems(self)

    def work(self, n_users: float, n_items: float, *, n_pairs: float = 0.0) -> Work:
        """Every recommender fitted to the leave-one-out training pairs (``n_pairs`` less one per user), scoring
        the evaluated users x ``n_items`` and ranking each one's held-out item (one task each;
        :mod:`simrec.config.cost`)."""
        users = self.evaluated_users(n_users)
        train = max(0.0, float(n_pairs) - float(n_users))
        ranked = Work(ranked=users * float(n_items), tasks=1.0)
        return Work.total(r.work(users, n_items, train_pairs=train) + ranked for r in self.recommenders)

    @abstractmethod
    def loo_data(self, data_path: Path | None, seed: np.random.SeedSequence, max_pairs: int | None) -> LooData:
        """The leave-one-out data at ``data_path`` (the same in every task); ``max_pairs``: a simulation's
        generator guard."""


class SimulationSource(ScoredSourceSpec):
    """Truth from a world (preference × observation), leave-one-out, recommenders over all candidates.

    ``candidates``: as a dataset source's (:class:`DatasetSource`):
    ``"unseen"`` (default) the items the user has not trained on, ``"all"``
    every item, the user's training items scored by the recommender (which
    the oracles cannot do: they are refused with ``"all"``); the truly
    relevant candidates of the true metric are ranked among the same items.
    """

    type: Literal["simulation"]
    population: PopulationSpec
    world: WorldSpec
    candidates: CandidateSet = "unseen"
    min_items: int = Field(default=2, ge=1, description="users with fewer observed items are not evaluated")
    recommenders: list[RecommenderSpec] = Field(min_length=1)
    has_truth: ClassVar[bool] = True

    @property
    def label(self) -> str:
        return self.world.name or "simulation"

    def problems(self, base: Path) -> list[str]:
        return self.world.problems(self.population, "source.world") + super().problems(base)

    def sizes(self) -> KnownSizes:
        return KnownSizes(
            self.world.item_count(self.population),
            self.population.n_users,
            "the number of items of source.world",
            "population.n_users",
        )

    def memory_kinds(self) -> list[list[Need]]:
        """One kind: a ranks task (a replicate of the world, dense score blocks over every user)."""
        need = self.world.memory_need(self.population, "source.world", n_lists=0, score_users=self.population.n_users)
        return [[need]]

    def work(self, n_users: float, n_items: float, *, n_pairs: float = 0.0) -> Work:
        """A leave-one-out replicate of the world in every ranks task (one per recommender), its recommender
        fitted, scoring and ranking the held-out and truly relevant items (:meth:`WorldSpec.loo_work
        <simrec.config.models.WorldSpec.loo_work>`)."""
        return Work.total(self.world.loo_work(self.population, [r]) + Work(tasks=1.0) for r in self.recommenders)

    def loo_data(self, data_path: Path | None, seed: np.random.SeedSequence, max_pairs: int | None) -> LooData:
        world = self.world.build(self.population, name=self.world.name or "world", max_pairs=max_pairs)
        return simulate_loo_data(world, seed, min_items=self.min_items)


class DatasetSource(DatasetSpec, ScoredSourceSpec):
    """A reference dataset (e.g. ML-100K), leave-one-out, recommenders over all candidates.

    ``split``: ``"random"`` (default) holds out a uniformly random item per
    user; ``"last"`` each user's latest item by timestamp (Krichene &
    Rendle's protocol; MovieLens, or a table with a ``timestamp`` column).

    ``candidates``: what the held-out item is ranked among and negatives are
    drawn from: ``"unseen"`` (default) the items the user has not trained on
    (with ``hypergeometric``: Li & Jin's "actual" block), ``"all"`` every
    item, the user's training items scored by the recommender (Li & Jin's
    "binom" / "hyper" blocks); see :mod:`simrec.stress.sources`.
    """

    type: Literal["dataset"]
    split: Literal["random", "last"] = "random"
    candidates: CandidateSet = "unseen"
    min_items: int = Field(default=2, ge=1)
    recommenders: list[RecommenderSpec] = Field(min_length=1)
    #: Rank a uniform sample of at most this many of the evaluated users (:mod:`simrec.user_sample`, drawn from
    #: the split's seed); the recommenders train on every user. None: every user.
    max_users: MaxUsers | None = None
    has_truth: ClassVar[bool] = False

    @property
    def label(self) -> str:
        return self.name

    def data_path(self, scenario_path: str | Path) -> Path:
        return self.resolve(scenario_path)

    def evaluated_users(self, n_users: float) -> float:
        return min(float(n_users), float(self.max_users or n_users))

    def data_problems(self, data: Path, path: Path, sampling: SamplingPlan) -> tuple[list[str], RankSource | None]:
        """The dataset's files (a FIFO, a device or a file over the size limit: refused now, not in a task), its
        timestamps for ``split = "last"``, and that it exists."""
        if data.exists():
            try:
                check_dataset_files(data)
            except DatasetError as exc:
                return [f"source.path: {exc}"], None
        if data.exists() and self.split == "last":
            try:
                kind = self.format or detect_kind(
                    data, **{k: v for k, v in (("user_col", self.user_col), ("item_col", self.item_col)) if v}
                )
            except DatasetError as exc:
                return [f"source.path: {exc}"], None
            if kind not in ("movielens", "pairs"):
                return [
                    f"source.split: 'last' needs timestamps, which simrec reads from MovieLens and from tables "
                    f"with a timestamp column; {data} is a {kind} dataset"
                ], None
        if not data.exists():
            return [
                f"source.path: dataset {self.name!r} not found at {data}. Download it (e.g. MovieLens 100K from "
                f"https://grouplens.org/datasets/movielens/100k/), then set SIMREC_DATA to the folder holding "
                f"{self.name}/ or edit source.path (relative to {path.resolve().parent})"
            ], None
        return [], None

    def user_sample_problems(self, sizes: list[int], path: Path, ranks: RankSource | None) -> list[str]:
        """Sizes against the dataset's users with at least ``min_items`` items (those leave-one-out evaluates)."""
        data = self.data_path(path)
        try:
            inter = self.read(data)
        except (DatasetError, OSError, TypeError, ValueError) as exc:
            return [f"source.path: cannot read {data}: {exc}"]
        n_users = int((inter.user_counts() >= self.min_items).sum())
        return user_size_problems(
            sizes, n_users, f"users of {self.name} with >= source.min_items = {self.min_items} items"
        )

    def loo_data(self, data_path: Path | None, seed: np.random.SeedSequence, max_pairs: int | None) -> LooData:
        if data_path is None:
            raise TypeError("a dataset source's data is read from its data_path (StressScenario.data_path)")
        if self.split == "last":
            inter, times = self.read_timestamped(data_path)
            data = loo_data(inter, seed, min_items=self.min_items, timestamps=times)
        else:
            data = loo_data(self.read(data_path), seed, min_items=self.min_items)
        return data.with_user_sample(self.max_users, seed)


class FileSource(BaseSourceSpec):
    """A ranks file (CSV/Parquet: user, recommender, rank, n_candidates[, popularity_share])."""

    type: Literal["file"]
    path: str

    def data_path(self, scenario_path: str | Path) -> Path:
        p = Path(self.path).expanduser()
        return p if p.is_absolute() else (Path(scenario_path).resolve().parent / p).resolve()

    def data_problems(self, data: Path, path: Path, sampling: SamplingPlan) -> tuple[list[str], RankSource | None]:
        """The ranks file: it reads, has the popularity shares the ``popularity`` scheme needs, and its candidate
        counts hold the sampling sizes and ``metrics.k_max``."""
        if not data.exists():
            return [f"source.path: ranks file not found at {data}"], None
        try:
            source = read_ranks_file(data)
        except RanksFileError as exc:
            return [f"source.path: {exc}"], None
        problems: list[str] = []
        if "popularity" in sampling.schemes:
            lacking = [r.name for r in source.recommenders if r.popularity_shares is None]
            if lacking:
                problems.append(
                    "sampling.schemes: 'popularity' needs the ranks file's optional `popularity_share` column; "
                    f"{data} has none"
                )
        smallest = min(int(r.n_candidates.min()) for r in source.recommenders)
        n_est = min(int(round(r.n_candidates.mean())) for r in source.recommenders)
        problems += size_problems(sampling, n_est, "mean n_candidates")
        if "hypergeometric" in sampling.schemes and max(sampling.sizes) > smallest:
            problems.append(
                f"sampling.sizes: sampling without replacement ('hypergeometric') needs every size <= the "
                f"smallest n_candidates ({smallest}); got {max(sampling.sizes)}"
            )
        return problems, source

    def user_sample_problems(self, sizes: list[int], path: Path, ranks: RankSource | None) -> list[str]:
        """Sizes against the users common to every recommender of the file."""
        if ranks is None:
            return []
        try:
            n_users = common_users(ranks.recommenders).shape[0]
        except ValueError as exc:
            return [f"user_sampling: {exc}"]
        return user_size_problems(sizes, n_users, f"users common to every recommender of {self.data_path(path)}")


#: The sources of a stress scenario, by their ``type`` tag: the registry.
SOURCES: SpecUnion[BaseSourceSpec] = SpecUnion("type", SimulationSource, DatasetSource, FileSource)
#: A ``[source]`` table.
SourceSpec = Annotated[BaseSourceSpec, SOURCES]


def _candidate_problems(src: ScoredSourceSpec) -> list[str]:
    """Recommenders that cannot rank among ``source.candidates`` (with ``"all"``, those that cannot score the
    user's training items: the oracles), by the rule :func:`simrec.stress.check_candidates` applies when ranking."""
    if src.candidates == "unseen":
        return []
    problems = []
    for j, spec in enumerate(src.recommenders):
        try:
            check_candidates(spec.build(), src.candidates)
        except ValueError:
            problems.append(
                f'source.recommenders[{j}]: with source.candidates = "all" every recommender must '
                f"score the user's training items, which {spec.kind} cannot (set "
                f'candidates = "unseen", or remove this recommender); got kind {spec.kind!r}'
            )
    return problems


def size_problems(sampling: SamplingPlan, n_items: int, what: str) -> list[str]:
    """Sampling sizes and ``metrics.k_max`` above the number of items (``what`` names where it comes from)."""
    problems = []
    big = [n for n in sampling.sizes if n > n_items]
    if big:
        problems.append(f"sampling.sizes: must be <= the number of items ({what} = {n_items}); got {quote(big)}")
    if sampling.k_max > n_items:
        problems.append(f"metrics.k_max: must be <= the number of items ({what} = {n_items}); got {sampling.k_max}")
    return problems


def user_size_problems(sizes: list[int], n_users: int, what: str) -> list[str]:
    """User-sample sizes above the number of users (``what`` names where it comes from)."""
    big = [m for m in sizes if m > n_users]
    if big:
        return [f"user_sampling.sizes: must be <= the number of users ({what} = {n_users}); got {quote(big)}"]
    return []
