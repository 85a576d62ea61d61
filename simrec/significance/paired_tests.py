"""The paired tests as objects: one configured test per instance, called the same way whatever the test.

A study that runs several tests over the same replicates holds a tuple of
these (e.g. :data:`PAIRED_TESTS`) and calls each with the two systems'
per-user values, an ``rng`` and a confidence level; each object passes on
what its test uses (the random tests the ``rng``, the tests with an interval
the ``confidence``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from simrec._random import RNGLike
from simrec._validation import check_choice
from simrec.significance._common import check_resamples
from simrec.significance.bootstrap import DEFAULT_BOOTSTRAP_RESAMPLES, bootstrap_bca_test, bootstrap_percentile_test
from simrec.significance.effect_size import ZERO_METHODS
from simrec.significance.permutation import DEFAULT_PERMUTATION_RESAMPLES, paired_permutation_test
from simrec.significance.result import PairedTestResult
from simrec.significance.sign import sign_test
from simrec.significance.ttest import paired_t_test
from simrec.significance.wilcoxon import wilcoxon_test

__all__ = [
    "PairedTest",
    "PairedT",
    "Wilcoxon",
    "SignTest",
    "BootstrapPercentile",
    "BootstrapBCa",
    "Permutation",
    "PAIRED_TESTS",
]


class PairedTest(ABC):
    """A paired test of two systems' per-user values (shape (n_users,) or (n_replicates, n_users))."""

    #: Name of the test, the ``test`` of its results.
    name: ClassVar[str]
    #: Whether the test draws random numbers (and so reads ``rng``).
    random: ClassVar[bool] = False

    @abstractmethod
    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        """Run the test; ``rng`` is used by the random tests only, ``confidence`` by the tests with an interval."""


@dataclass(frozen=True)
class PairedT(PairedTest):
    """:func:`~simrec.significance.paired_t_test`."""

    name: ClassVar[str] = "paired_t"

    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        return paired_t_test(a, b, confidence=confidence)


@dataclass(frozen=True)
class Wilcoxon(PairedTest):
    """:func:`~simrec.significance.wilcoxon_test` with its ``zero_method`` and ``correction``."""

    zero_method: str = "wilcox"
    correction: bool = False
    name: ClassVar[str] = "wilcoxon"

    def __post_init__(self) -> None:
        check_choice("zero_method", self.zero_method, ZERO_METHODS)

    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        return wilcoxon_test(a, b, zero_method=self.zero_method, correction=self.correction)


@dataclass(frozen=True)
class SignTest(PairedTest):
    """:func:`~simrec.significance.sign_test`."""

    name: ClassVar[str] = "sign"

    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        return sign_test(a, b, confidence=confidence)


@dataclass(frozen=True)
class BootstrapPercentile(PairedTest):
    """:func:`~simrec.significance.bootstrap_percentile_test` with ``n_resamples`` (default 2,000)."""

    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES
    name: ClassVar[str] = "bootstrap_percentile"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_resamples(self.n_resamples, 2)

    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        return bootstrap_percentile_test(a, b, n_resamples=self.n_resamples, confidence=confidence, rng=rng)


@dataclass(frozen=True)
class BootstrapBCa(PairedTest):
    """:func:`~simrec.significance.bootstrap_bca_test` with ``n_resamples`` (default 2,000)."""

    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES
    name: ClassVar[str] = "bootstrap_bca"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_resamples(self.n_resamples, 2)

    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        return bootstrap_bca_test(a, b, n_resamples=self.n_resamples, confidence=confidence, rng=rng)


@dataclass(frozen=True)
class Permutation(PairedTest):
    """:func:`~simrec.significance.paired_permutation_test` with ``n_resamples`` (default 9,999)."""

    n_resamples: int = DEFAULT_PERMUTATION_RESAMPLES
    name: ClassVar[str] = "permutation"
    random: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_resamples(self.n_resamples, 1)

    def __call__(self, a: object, b: object, *, rng: RNGLike = None, confidence: float = 0.95) -> PairedTestResult:
        return paired_permutation_test(a, b, n_resamples=self.n_resamples, rng=rng)


#: Every paired test with its defaults, in the order of the issue.
PAIRED_TESTS: tuple[PairedTest, ...] = (
    PairedT(),
    Wilcoxon(),
    SignTest(),
    BootstrapPercentile(),
    BootstrapBCa(),
    Permutation(),
)
