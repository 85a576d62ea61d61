"""Significance tests between recommenders, and how often they are right when the truth is known.

Researchers compare two recommenders with a paired test on per-user metric
values; simrec knows the true difference, so it can say how often a
"significant" result is real, false or points the wrong way (issue 26).

* **Paired tests** on per-user values of systems A and B, shape
  ``(n_users,)`` or ``(n_replicates, n_users)``, vectorised over replicates,
  NaN = undefined user (paired deletion; :mod:`~simrec.significance._common`),
  each returning a :class:`PairedTestResult` (statistic, two-sided p-value,
  effect size, interval, users used) per replicate:
  :func:`paired_t_test`, :func:`wilcoxon_test`, :func:`sign_test`,
  :func:`bootstrap_percentile_test`, :func:`bootstrap_bca_test`,
  :func:`paired_permutation_test`; the same as configured objects
  (:class:`PairedTest`, :data:`PAIRED_TESTS`). scipy's implementations
  (``ttest_rel``, ``wilcoxon``, ``binomtest``'s law, ``bootstrap``'s
  intervals, ``permutation_test``'s p-value), vectorised where scipy loops.
* **Tests from summary statistics** (a difference and its standard error):
  :func:`t_test_from_summary`, :func:`z_test_from_summary` — the user-sampling
  study of the dissertation §2.7 (:mod:`simrec.stress.user_sampling`,
  :mod:`simrec.sampling.users`) runs its tests through them.
* **Many pairs**: :func:`bonferroni`, :func:`holm` (family-wise error rate),
  :func:`tukey_hsd` (all pairs of k systems, users as blocks) and its
  one-way variant :func:`tukey_hsd_independent` (scipy's).
* **Effect sizes**: :func:`cohens_dz`, :func:`rank_biserial`.
* **Against the truth**: :func:`truth_rates` — correct, type I, II and III
  rates with Wilson intervals (:class:`TruthRates`); :func:`truth_table` —
  the same per group of a frame of replicates' outcomes, against each
  group's true difference (what ``simrec run``'s ``[significance]`` phase
  and ``simrec assess`` write, :mod:`simrec.studies.significance`).

Every random test takes ``rng`` (seeded numpy Generator, int or
SeedSequence); nothing seeds a global state. Undefined values are NaN with an
:class:`UndefinedStatisticWarning`.
"""

from simrec.significance._common import UndefinedStatisticWarning
from simrec.significance.bootstrap import DEFAULT_BOOTSTRAP_RESAMPLES, bootstrap_bca_test, bootstrap_percentile_test
from simrec.significance.corrections import MultipleTestResult, bonferroni, holm
from simrec.significance.effect_size import ZERO_METHODS, cohens_dz, rank_biserial
from simrec.significance.paired_tests import (
    PAIRED_TESTS,
    BootstrapBCa,
    BootstrapPercentile,
    PairedT,
    PairedTest,
    Permutation,
    SignTest,
    Wilcoxon,
)
from simrec.significance.permutation import DEFAULT_PERMUTATION_RESAMPLES, paired_permutation_test
from simrec.significance.rates import Rate, TruthRates, truth_rates
from simrec.significance.result import PairedTestResult
from simrec.significance.sign import sign_test
from simrec.significance.summary import SummaryTestResult, t_test_from_summary, z_test_from_summary
from simrec.significance.truth_table import OUTCOME_COLUMNS, RATE_NAMES, truth_table
from simrec.significance.ttest import paired_t_test
from simrec.significance.tukey import AllPairsResult, tukey_hsd, tukey_hsd_independent
from simrec.significance.wilcoxon import wilcoxon_test

__all__ = [
    # paired tests
    "PairedTestResult",
    "paired_t_test",
    "wilcoxon_test",
    "sign_test",
    "bootstrap_percentile_test",
    "bootstrap_bca_test",
    "paired_permutation_test",
    "DEFAULT_BOOTSTRAP_RESAMPLES",
    "DEFAULT_PERMUTATION_RESAMPLES",
    "ZERO_METHODS",
    # as objects
    "PairedTest",
    "PairedT",
    "Wilcoxon",
    "SignTest",
    "BootstrapPercentile",
    "BootstrapBCa",
    "Permutation",
    "PAIRED_TESTS",
    # from summary statistics
    "SummaryTestResult",
    "t_test_from_summary",
    "z_test_from_summary",
    # many pairs
    "MultipleTestResult",
    "bonferroni",
    "holm",
    "AllPairsResult",
    "tukey_hsd",
    "tukey_hsd_independent",
    # effect sizes
    "cohens_dz",
    "rank_biserial",
    # against the truth
    "Rate",
    "TruthRates",
    "truth_rates",
    "truth_table",
    "OUTCOME_COLUMNS",
    "RATE_NAMES",
    "UndefinedStatisticWarning",
]
