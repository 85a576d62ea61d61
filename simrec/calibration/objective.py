"""Calibration objectives: simulate with candidate parameters, compare key statistics.

One evaluation = build a cell's (preference, observation) models from a point
of its search space (the cell is a typed object, e.g.
:class:`simrec.config.models.CellSpec`: it knows its models' parameters),
generate the truth, observe it, compute the four key statistics
on the reference's bins and their KL divergences from the reference
(:mod:`simrec.stats`). The objective is one statistic's KL, the
average relative loss over the four (Tian 2019, §3.4: relative loss = KL / the
best KL the family reached on that statistic for that dataset), or the sum of
the four KLs (``"sum_kl"``: the thesis authors' code's ``'all'`` objective,
"Linear Combined" in their notebooks), or that sum plus the algorithm-response
loss (``"algorithm_response"``, issue 24: the reference algorithms' observed
metrics on the simulated data against the real data's, under one protocol,
:mod:`simrec.calibration.response`).

Memory guard: a point whose expected number of true pairs exceeds
``max_pairs`` is refused before anything is generated; the search logs the
reason and shows the GP a penalty (:mod:`simrec.calibration.search`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._random import RNGLike, as_generator
from .._validation import SizeLimitError, check_choice, check_int
from ..interactions import Interactions
from ..observation import observe
from ..stats import (
    STATISTICS,
    AuthorsCodeStatistics,
    KeyStatistics,
    StatisticBins,
    authors_code_statistics,
    average_loss,
    key_statistics,
    kl_by_statistic,
    kl_by_statistic_authors_code,
)
from .search import TrialOutcome
from .space import Cell, ReferenceShape

if TYPE_CHECKING:
    from .response import AlgorithmResponse

__all__ = [
    "CalibrationTarget",
    "Objective",
    "AVERAGE_LOSS",
    "SUM_KL",
    "ALGORITHM_RESPONSE",
    "RESPONSE_LOSS",
    "RESPONSE_OBJECTIVES",
    "OBJECTIVES",
    "THESIS_OBJECTIVES",
    "STATISTICS_VARIANTS",
    "DEFAULT_CALIBRATION_MAX_PAIRS",
    "objective_column",
]

#: Name of the thesis's combined objective (mean relative loss over the four statistics, Tian 2019 §3.4).
AVERAGE_LOSS = "average_loss"
#: Name of the authors' code's combined objective: the plain sum of the four KLs
#: (``score('all')`` in BoiseState/chiir2020-est-error, ``simulation_utils/calibration.py``;
#: "Linear Combined" in their notebooks). It needs no single-statistic searches first,
#: but weighs the statistics by their KLs' scales (item popularity's KL is typically
#: 10-100x the similarity KLs), which the thesis's relative loss avoids.
SUM_KL = "sum_kl"
#: Name of the algorithm-response objective (issue 24): :data:`SUM_KL` plus
#: :func:`simrec.calibration.response.response_loss` (mean relative error of the reference algorithms'
#: observed metrics + (1 - Kendall tau)/2), so the search sees the strength of the personal signal,
#: which the four key statistics barely pin down; the KLs keep the statistics in view.
ALGORITHM_RESPONSE = "algorithm_response"
#: Name of the algorithm-response objective alone (issue 24's "optional fifth objective" beside the four
#: statistics, as each statistic's KL is an objective of its own): the response loss without the KLs, for a
#: search that must reproduce what the algorithms see and may trade the statistics for it (the trials still
#: log every KL, and the calibration report shows them).
RESPONSE_LOSS = "response_loss"
#: The objectives that evaluate the reference algorithms (they need the target's real response).
RESPONSE_OBJECTIVES: tuple[str, ...] = (ALGORITHM_RESPONSE, RESPONSE_LOSS)
#: The objectives of the thesis (Tian 2019, §3.4 and Table 2): the four statistics, then the average loss.
#: The default of a sweep file.
THESIS_OBJECTIVES: tuple[str, ...] = (*STATISTICS, AVERAGE_LOSS)
#: Every objective name. Its order fixes each search's seed (``OBJECTIVES.index``): new names go at the end.
OBJECTIVES: tuple[str, ...] = (*THESIS_OBJECTIVES, SUM_KL, ALGORITHM_RESPONSE, RESPONSE_LOSS)
#: How the key statistics and their KLs are computed: as the thesis text says (default, :mod:`simrec.stats`) or as
#: the thesis authors' code does (:mod:`simrec.stats.authors_code`).
STATISTICS_VARIANTS: tuple[str, ...] = ("thesis", "authors_code")
#: Default memory guard of a calibration trial, in expected true pairs. Trials
#: must stay cheap (a 150-call search evaluates 150 of them), so this is far
#: below the generators' own limit: 3e7 pairs take a few seconds to generate.
DEFAULT_CALIBRATION_MAX_PAIRS = 30_000_000


def objective_column(objective: str) -> str:
    """The column of a sweep table holding ``objective``'s value: ``kl_<statistic>``, ``average_loss`` or ``sum_kl``."""
    return objective if objective in (AVERAGE_LOSS, SUM_KL, *RESPONSE_OBJECTIVES) else f"kl_{objective}"


@dataclass(frozen=True)
class CalibrationTarget:
    """A reference dataset reduced to what calibration needs.

    Parameters
    ----------
    name : str
        Dataset name (e.g. ``"ml-100k"``), used for presets.
    shape : ReferenceShape
        Users, items and profile-size range (the search spaces and the models' sizes).
    bins : StatisticBins
        Bins shared by the reference and every simulation.
    reference : KeyStatistics
        The reference's four statistics on ``bins`` (the thesis text's reading;
        also drawn in the calibration figures).
    code_reference : AuthorsCodeStatistics, optional
        The reference's statistics as the authors' code computes them: when
        given, objectives measure the KLs that way (``statistics =
        "authors_code"`` in a sweep file). Default None: the thesis text's.
    response : AlgorithmResponse, optional
        The reference algorithms on the reference data
        (:func:`simrec.calibration.response.algorithm_response`): required
        by the ``"algorithm_response"`` objective, whose simulations are
        evaluated under the same protocol.
    """

    name: str
    shape: ReferenceShape
    bins: StatisticBins
    reference: KeyStatistics
    code_reference: AuthorsCodeStatistics | None = None
    response: AlgorithmResponse | None = None

    @property
    def statistics(self) -> str:
        """``"thesis"`` or ``"authors_code"`` (see :data:`STATISTICS_VARIANTS`)."""
        return "thesis" if self.code_reference is None else "authors_code"

    @classmethod
    def from_interactions(
        cls, name: str, inter: Interactions, rng: RNGLike = 0, *, max_pairs: int = 1_000_000, statistics: str = "thesis"
    ) -> CalibrationTarget:
        """Bins and statistics of a reference dataset (``statistics``: one of :data:`STATISTICS_VARIANTS`).

        Raises
        ------
        ValueError
            When a statistic is undefined on the reference (e.g. fewer than two
            items or users with the 5 observations the similarity statistics
            need): no simulation could be compared with it.
        """
        bins = StatisticBins.from_reference(inter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            stats = key_statistics(inter, bins, as_generator(rng), max_pairs=max_pairs)
        undefined = [s for s in STATISTICS if not np.isfinite(stats[s]).all()]
        if undefined:
            raise ValueError(
                f"reference {name!r} ({inter.n_users} users, {inter.n_items} items, {inter.n_pairs} pairs): "
                f"{', '.join(undefined)} undefined (similarities need at least two items and two users with "
                f">= {bins.min_observations} observations); it cannot be calibrated against"
            )
        check_choice("statistics", statistics, STATISTICS_VARIANTS)
        code = None
        if statistics == "authors_code":  # its own pair sample, from a child stream of ``rng``
            code = authors_code_statistics(inter, as_generator(rng).spawn(1)[0])
        return cls(name, ReferenceShape.of(inter), bins, stats, code)


@dataclass(frozen=True)
class Objective:
    """The calibration objective of one sweep cell (picklable).

    Parameters
    ----------
    target : CalibrationTarget
    cell : Cell
        The cell's models: ``cell.models(point, shape)`` builds them at a
        point of ``cell.search_space(shape)``; e.g. a
        :class:`simrec.config.models.CellSpec`.
    objective : str
        A statistic name (minimise its KL), ``"average_loss"`` (the thesis's mean
        relative loss), ``"sum_kl"`` (the authors' code's sum of the four KLs,
        :data:`SUM_KL`), ``"algorithm_response"`` (the sum of the KLs plus the
        reference algorithms' response loss, :data:`ALGORITHM_RESPONSE`) or
        ``"response_loss"`` (that loss alone, :data:`RESPONSE_LOSS`).
    best_kl : dict, optional
        Best KL per statistic over the family (required for ``"average_loss"``).
    max_pairs : int, default 30_000_000
        Memory guard on the expected number of true pairs.
    stat_pairs : int, default 1_000_000
        Pairs sampled for each similarity statistic (thesis: 1M).
    max_items_ratio : float, default 10
        Refuse points whose expected number of items exceeds this multiple of
        the reference's (only IBP's item count is random): such a simulation
        cannot fit and is slow to measure.
    """

    target: CalibrationTarget
    cell: Cell
    objective: str
    best_kl: dict[str, float] | None = None
    max_pairs: int = DEFAULT_CALIBRATION_MAX_PAIRS
    stat_pairs: int = 1_000_000
    max_items_ratio: float = 10.0

    def __post_init__(self) -> None:
        if not all(hasattr(self.cell, a) for a in ("name", "search_space", "models")):
            raise TypeError(
                f"`cell` must have `name`, `search_space` and `models` (e.g. a CellSpec); "
                f"got {type(self.cell).__name__}"
            )
        check_choice("objective", self.objective, OBJECTIVES)
        check_int("max_pairs", self.max_pairs, low=1)
        check_int("stat_pairs", self.stat_pairs, low=1)
        if self.objective == AVERAGE_LOSS:
            missing = [s for s in STATISTICS if not self.best_kl or s not in self.best_kl]
            if missing:
                raise ValueError(
                    f"`best_kl` must give the family's best KL for {missing} with objective 'average_loss'"
                )
        if self.objective in RESPONSE_OBJECTIVES and self.target.response is None:
            raise ValueError(f"objective {self.objective!r} needs the target's `response` (the real data's)")

    def simulate(self, params: dict[str, float], rng: RNGLike) -> Interactions:
        """The observed data of one simulation at ``params``."""
        gen = as_generator(rng)
        pref, profile, sampler = self.cell.models(params, self.target.shape)
        truth = pref.generate(gen, max_pairs=self.max_pairs)
        return observe(truth, profile, sampler, gen).observed

    def statistics_at(
        self, params: dict[str, float], seed: np.random.SeedSequence
    ) -> tuple[Interactions, KeyStatistics]:
        """Observed data and key statistics of the simulation a trial with ``seed`` ran.

        Deterministic in ``(params, seed)``: a logged trial is reproduced exactly
        (used for the calibration figures).
        """
        gen = as_generator(seed)
        observed = self.simulate(params, gen)
        return observed, key_statistics(observed, self.target.bins, gen, max_pairs=self.stat_pairs)

    def _kls_at(self, params: dict[str, float], seed: np.random.SeedSequence) -> tuple[Interactions, dict[str, float]]:
        """Observed data of the trial and its KL per statistic, by the target's statistics variant."""
        if self.target.code_reference is None:
            observed, stats = self.statistics_at(params, seed)
            return observed, kl_by_statistic(self.target.reference, stats)
        gen = as_generator(seed)
        observed = self.simulate(params, gen)
        code_stats = authors_code_statistics(observed, gen, reference=self.target.code_reference)
        return observed, kl_by_statistic_authors_code(self.target.code_reference, code_stats)

    def __call__(self, params: dict[str, float], seed: np.random.SeedSequence) -> TrialOutcome:
        try:
            pref, _, _ = self.cell.models(params, self.target.shape)
        except ValueError as exc:
            return TrialOutcome(float("nan"), refused=f"invalid parameters: {exc}")
        expected = pref.expected_pairs()
        if not np.isfinite(expected) or expected > self.max_pairs:
            return TrialOutcome(
                float("nan"),
                {"expected_pairs": float(expected)},
                refused=f"expected {expected:.3g} true pairs > max_pairs {self.max_pairs:.3g}",
            )
        items = pref.expected_items()
        if items > self.max_items_ratio * self.target.shape.n_items:
            return TrialOutcome(
                float("nan"),
                {"expected_items": float(items)},
                refused=f"expected {items:.3g} items > {self.max_items_ratio:g} x the reference's "
                f"{self.target.shape.n_items}",
            )
        try:
            with warnings.catch_warnings():
                # undefined statistics are reported in the trial's reason below
                warnings.simplefilter("ignore", RuntimeWarning)
                observed, kls = self._kls_at(params, seed)
        except SizeLimitError as exc:
            return TrialOutcome(float("nan"), {"expected_pairs": float(expected)}, refused=str(exc))
        if observed.n_pairs == 0:
            return TrialOutcome(float("nan"), refused="the simulation observed no pair")
        details = {
            **kls,
            "observed_pairs": float(observed.n_pairs),
            "observed_items": float((observed.item_counts() > 0).sum()),
        }
        undefined = [k for k, v in kls.items() if not math.isfinite(v)]
        if undefined and (self.objective in (AVERAGE_LOSS, SUM_KL, ALGORITHM_RESPONSE) or self.objective in undefined):
            return TrialOutcome(
                float("nan"), details, refused=f"statistics undefined on the simulated data: {', '.join(undefined)}"
            )
        if self.objective == AVERAGE_LOSS:
            value = average_loss(kls, self.best_kl)  # type: ignore[arg-type]
            details[AVERAGE_LOSS] = value
        elif self.objective == SUM_KL:
            value = sum(kls[s] for s in STATISTICS)
            details[SUM_KL] = value
        elif self.objective in RESPONSE_OBJECTIVES:
            value = self._response(observed, kls, seed, details)
        else:
            value = kls[self.objective]
        return TrialOutcome(float(value), details)

    def _response(
        self, observed: Interactions, kls: dict[str, float], seed: np.random.SeedSequence, details: dict[str, float]
    ) -> float:
        """The objective's value: the sum of the KLs plus the response loss, or the response loss alone
        (:data:`RESPONSE_LOSS`); the simulated metrics go to ``details`` (``sim_<alg>_<metric>``), both values too.

        The algorithms' randomness (split, users, fits) comes from a child of
        the trial's seed that the simulation does not use, so the value is
        deterministic in ``(params, seed)``.
        """
        from .response import algorithm_response, response_loss

        real = self.target.response
        child = np.random.SeedSequence(entropy=seed.entropy, spawn_key=(*seed.spawn_key, 2**31 - 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sim = algorithm_response(observed, real.protocol, child)  # type: ignore[union-attr]
        parts = response_loss(real.means(), sim.means())  # type: ignore[union-attr]
        details.update({f"sim_{a}_{m}": v for (a, m), v in sim.means().items()})
        details.update(parts)
        total = sum(kls[s] for s in STATISTICS)
        details[SUM_KL] = total
        details[ALGORITHM_RESPONSE] = total + parts["response_loss"]
        return details[self.objective]
