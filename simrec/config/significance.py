"""The ``[significance]`` section of a run scenario: how often is "significantly better" right?

With the section, ``simrec run`` adds a phase (:mod:`simrec.studies.significance`)
that runs paired tests between recommenders on every replicate of every
world, under each protocol, and compares each verdict with the world's true
difference (``significance.csv``, :func:`simrec.significance.truth_table`).

Example
-------
.. code-block:: toml

    [significance]
    tests = ["paired_t", "wilcoxon", "sign", "bootstrap_percentile", "permutation"]
    protocols = ["full", "users", "sampled_naive", "sampled_corrected"]   # also "full_ips", by name
    pairs = [["oracle", "popular"], ["popular", "random"]]   # default: every pair
    metrics = ["ndcg"]                                        # default: every metric
    alpha = 0.05
    users = 200          # user sample of the "users" protocol
    negatives = 100      # sampled negatives of the "sampled_*" protocols
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from simrec.config.base import Strict, no_repeats
from simrec.config.budget import BYTES_PER_ROW, SIGNIFICANCE_TEST_BYTES, Need
from simrec.config.cost import Work

if TYPE_CHECKING:
    from simrec.significance import PairedTest

__all__ = [
    "SignificanceSpec",
    "PROTOCOLS",
    "DEFAULT_PROTOCOLS",
    "TEST_NAMES",
    "RESAMPLING_TESTS",
    "LOO_METRICS",
    "IPS_METRICS",
    "significance_problems",
]

#: The protocols a significance study compares (``full``: every evaluated user, full ranking; ``users``: a
#: random sample of ``users`` of them; ``sampled_naive`` / ``sampled_corrected``: leave-one-out with
#: ``negatives`` sampled negatives, the metric on the sampled rank / Krichene & Rendle's BV correction;
#: ``full_ips``: as ``full``, each user's value IPS-corrected for the missing-not-at-random observation with
#: the world's propensities, :func:`simrec.debias.ips_per_user`). The default: all but ``full_ips``.
PROTOCOLS: tuple[str, ...] = ("full", "users", "sampled_naive", "sampled_corrected", "full_ips")
#: The protocols run when ``protocols`` is not given (``full_ips`` needs linear metrics and a world sampler with
#: propensities, so it is asked for by name).
DEFAULT_PROTOCOLS: tuple[ProtocolName, ...] = ("full", "users", "sampled_naive", "sampled_corrected")

#: The paired tests by name (the names of :data:`simrec.significance.PAIRED_TESTS`, kept here so that loading a
#: scenario does not load scipy.stats; tests/config/test_significance_spec.py checks they agree).
TEST_NAMES: tuple[TestName, ...] = (
    "paired_t",
    "wilcoxon",
    "sign",
    "bootstrap_percentile",
    "bootstrap_bca",
    "permutation",
)

#: The tests that resample (``resamples`` times each: their cost, :meth:`SignificanceSpec.work`).
RESAMPLING_TESTS: tuple[str, ...] = ("bootstrap_percentile", "bootstrap_bca", "permutation")
#: Scenario metrics with a leave-one-out rank function (:mod:`simrec.sampling.functions`) at K = N: the
#: metrics the ``sampled_*`` protocols can measure.
LOO_METRICS: tuple[str, ...] = ("precision", "recall", "ndcg", "reciprocal_rank", "average_precision", "hit")

#: Scenario metrics linear in the relevance (:func:`simrec.debias.linear_metric`): the metrics ``full_ips``
#: can correct (tests/config/test_significance_spec.py checks they agree with simrec.debias).
IPS_METRICS: tuple[str, ...] = ("hits", "precision", "recall", "recall_truncated", "ndcg")

ProtocolName = Literal["full", "users", "sampled_naive", "sampled_corrected", "full_ips"]
TestName = Literal["paired_t", "wilcoxon", "sign", "bootstrap_percentile", "bootstrap_bca", "permutation"]


class SignificanceSpec(Strict):
    """A validated ``[significance]`` section (defaults in the module docstring's example).

    ``tolerance``: a true difference with ``|Δ| <= tolerance`` is no difference
    (the table also counts as null a world whose true difference is within
    its own ``confidence`` interval of 0; :func:`simrec.significance.truth_table`).
    ``resamples``: the bootstrap and permutation tests' resamples. ``gamma``:
    the BV correction's γ (Krichene & Rendle 2020, eq. 21) of ``sampled_corrected``.
    """

    tests: list[TestName] = Field(default_factory=lambda: list(TEST_NAMES), min_length=1)
    protocols: list[ProtocolName] = Field(default_factory=lambda: list(DEFAULT_PROTOCOLS), min_length=1)
    pairs: list[list[str]] | None = None
    metrics: list[str] | None = None
    alpha: float = Field(default=0.05, gt=0, lt=1)
    tolerance: float = Field(default=0.0, ge=0)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    users: int = Field(default=200, ge=10, le=10_000_000)
    negatives: int = Field(default=100, ge=2, le=1_000_000)
    gamma: float = Field(default=0.1, ge=0, le=1)
    resamples: int = Field(default=1000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _shape(self) -> SignificanceSpec:
        no_repeats(self, "tests", "protocols")
        for i, p in enumerate(self.pairs or []):
            if len(p) != 2 or p[0] == p[1]:
                raise ValueError(f"`pairs[{i}]` must name two different recommenders; got {p!r}")
        if self.metrics is not None:
            no_repeats(self, "metrics")
        return self

    def paired_tests(self) -> tuple[PairedTest, ...]:
        """The tests as configured objects, in the order given."""
        from simrec.significance import PAIRED_TESTS, BootstrapBCa, BootstrapPercentile, Permutation

        by_name: dict[str, PairedTest] = {t.name: t for t in PAIRED_TESTS}
        by_name |= {
            "bootstrap_percentile": BootstrapPercentile(self.resamples),
            "bootstrap_bca": BootstrapBCa(self.resamples),
            "permutation": Permutation(self.resamples),
        }
        return tuple(by_name[t] for t in self.tests)

    def chosen_pairs(self, recommenders: list[str]) -> list[tuple[str, str]]:
        """The pairs (A, B) tested: the given ones, else every pair in the scenario's order."""
        if self.pairs is not None:
            return [(a, b) for a, b in self.pairs]
        return list(combinations(recommenders, 2))

    def chosen_metrics(self, metrics: list[str]) -> list[str]:
        return list(self.metrics) if self.metrics is not None else list(metrics)

    def work(self, *, replicate: Work, loo: Work, n_users: float, n_recommenders: int, metrics: list[str]) -> Work:
        """One task's work (:mod:`simrec.config.cost`): a (replicate, world) of the phase.

        ``replicate``: the run's replicate (``full``, ``users`` and ``full_ips`` regenerate it and its lists);
        ``loo``: a leave-one-out replicate with every recommender's ranks (the ``sampled_*`` protocols rank the
        recommenders of the pairs only: its recommenders' share is counted); ``n_users``: the evaluated users.
        The tests read every case's per-user values once per resample (:data:`RESAMPLING_TESTS`; one for the
        closed-form tests).
        """
        protocols = set(self.protocols)
        pairs = len(self.pairs) if self.pairs is not None else n_recommenders * (n_recommenders - 1) // 2
        needed = len({n for p in self.pairs for n in p}) if self.pairs is not None else n_recommenders
        out = Work()
        if protocols & {"full", "users"}:
            out = out + replicate
        if "full_ips" in protocols:
            out = out + replicate
        sampled = [p for p in self.protocols if p.startswith("sampled")]
        if sampled:
            share = min(1.0, needed / max(n_recommenders, 1))
            out = out + Work(pairs=loo.pairs) + replace(loo, pairs=0.0).times(share)
            out = out + Work(draws=float(n_users) * self.negatives * needed)
        cases = len(self.protocols) * len(self.chosen_metrics(metrics)) * pairs
        resamples = sum(self.resamples if t in RESAMPLING_TESTS else 1 for t in self.tests)
        return out + Work(test_draws=float(cases) * float(n_users) * resamples)

    def memory_needs(self, *, n_users: int, recommenders: list[str], metrics: list[str], tasks: float) -> list[Need]:
        """The phase's needs beyond its world's replicate: [per task, parent] (:mod:`simrec.config.budget`).

        A task regenerates its replicate (counted by the caller with the world's
        need) and holds, at most, every recommender x metric x truth's per-user
        values of the run's replicate and the two values of every protocol x
        metric x pair, 8 B per user each, plus the tests' resampling chunks
        (:data:`~simrec.config.budget.SIGNIFICANCE_TEST_BYTES`). The parent
        holds one outcome row per task x protocol x metric x pair x test.
        """
        pairs, chosen = len(self.chosen_pairs(recommenders)), len(self.chosen_metrics(metrics))
        arrays = len(recommenders) * len(metrics) * 2 + len(self.protocols) * chosen * pairs * 2
        rows = tasks * len(self.protocols) * chosen * pairs * len(self.tests)
        return [
            Need(
                f"significance: {arrays} per-user arrays of {n_users:.3g} users and the tests' resampling chunks",
                "population.n_users, significance.pairs, significance.metrics, significance.protocols",
                8.0 * n_users * arrays + SIGNIFICANCE_TEST_BYTES,
            ),
            Need(
                f"significance: {rows:.3g} outcome rows",
                "replicates, significance.tests, significance.pairs, significance.protocols",
                BYTES_PER_ROW * rows,
            ),
        ]


def significance_problems(spec: SignificanceSpec, recommenders: list[str], metrics: list[str], items: int) -> list[str]:
    """The rules that need the rest of the scenario: names of pairs and metrics, sizes; one line each."""
    problems = []
    for i, pair in enumerate(spec.pairs or []):
        for name in pair:
            if name not in recommenders:
                problems.append(
                    f"significance.pairs[{i}]: {name!r} is not a recommender of the scenario; got one of {recommenders}"
                )
    for name in spec.metrics or []:
        if name not in metrics:
            problems.append(f"significance.metrics: {name!r} is not a metric of evaluation.metrics {metrics}")
    sampled = [p for p in spec.protocols if p.startswith("sampled")]
    if sampled:
        bad = [m for m in spec.chosen_metrics(metrics) if m not in LOO_METRICS]
        if bad:
            problems.append(
                f"significance.protocols: {sampled} need metrics with a leave-one-out rank function "
                f"({', '.join(LOO_METRICS)}); got {bad} (set significance.metrics)"
            )
        if spec.negatives >= items - 1:
            problems.append(
                f"significance.negatives: must be < the number of items of every world minus 1 (smallest: {items}); "
                f"got {spec.negatives}"
            )
    if "full_ips" in spec.protocols:
        bad = [m for m in spec.chosen_metrics(metrics) if m not in IPS_METRICS]
        if bad:
            problems.append(
                f"significance.protocols: 'full_ips' needs metrics linear in the relevance ({', '.join(IPS_METRICS)}); "
                f"got {bad} (set significance.metrics)"
            )
    if len(recommenders) < 2 and spec.pairs is None:
        problems.append(f"significance: needs at least two recommenders to compare; got {recommenders}")
    return problems
