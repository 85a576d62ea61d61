"""Estimators of a global metric from sampled ranks, as values that carry their own fitting.

Each estimator is a small frozen dataclass naming one estimator of
T = (1/M) Σ_u F(R_u) from the sampled ranks r_u and its parameters; its
:attr:`~simrec.sampling.Estimator.name` is the label used in output tables
(``"BV(gamma=0.1)"``, ``"MN_MLE"``, ``"mapping:beta@P"``). Names are produced
for tables and never parsed. Every estimator is fitted the same way,
``estimator.fit(sampled_ranks, scheme).estimate(metric)``
(:mod:`simrec.sampling.fitted`: an :class:`~simrec.sampling.Estimate` with a
bootstrap interval over users), and carries its own fitting behaviour (the
protocol of :class:`~simrec.sampling.Estimator`), so the engine runs any of
them, including one defined outside simrec, without knowing it:

* per-rank corrections F̂ (Krichene & Rendle 2020; Li's dissertation §2.5),
  shape :class:`~.base.CorrectionEstimator`: :class:`Naive`,
  :class:`RankEstimate`, :class:`ConstrainedLeastSquares` (:mod:`.fixed`);
  :class:`LeastSquares`, :class:`BiasVariance` (uniform or an estimated
  prior), :class:`MSEOptimal` (Li's MN, eq. 45),
  :class:`BiasVarianceInverseUsers` (BV at γ = 1/M) (:mod:`.linear`);
* rank-distribution estimators (Li's dissertation §2.4), shape
  :class:`~.base.PlugInEstimator`: :class:`MLE`, :class:`WeightedMLE`,
  :class:`MES` (:mod:`.plugin`); the adaptive MLE (§2.6) fits each user's own
  sample size and is its own type, :class:`~simrec.sampling.AdaptiveMLE`
  (:mod:`simrec.sampling.adaptive`);
* Li & Jin's mappings (KDD 2020), Recall/HR only: :class:`MappingEstimator`
  (:mod:`.mappings`).

The distributions the plug-ins fit, which the linear estimators with a prior
(dissertation §2.5: BV_MLE, MN_MES, ...) use as their prior, are
:class:`MLEPrior` and :class:`MESPrior` (:mod:`.priors`, with the weighted
MLE's :class:`~.priors.WeightedMLEFit`): each holds its objective's stopping
rule and its linearisation.

Adding an estimator
-------------------
One new file with one class (a :class:`~.base.CorrectionEstimator` that
implements ``correction``, a :class:`~.base.PlugInEstimator` with a
``rank_fit``, or an :class:`~simrec.sampling.Estimator` that implements
``estimate_counts``), and one line naming its family in the estimator union of
:mod:`simrec.config.estimators` for scenario files (docs/design.md, "Adding an
estimator"; ``tests/stress/test_toy_estimator.py`` adds one at test time and
runs it through ``simrec stress``).

Interval kinds (issue 22)
-------------------------
Every interval of :mod:`simrec.sampling` is a bootstrap percentile interval
(sampling variability only), so its coverage depends on the estimator's bias.
:attr:`~simrec.sampling.Estimator.interval_kind` is ``IntervalKind.SAMPLING_BIASED`` (coverage
known to fail) when the estimator's bias is fixed by construction — it does
not shrink with the number of users M while the interval does — **and** the
stress harness measured its coverage collapsing; ``IntervalKind.SAMPLING``
otherwise. The measurement (the numbers in each estimator's
``interval_kind``): the leave-one-out ranks of MovieLens 100K written by
``simrec ranks <ml-100k> -r popular -r item_knn -r implicit_mf`` (default
seed; about N = 1,577 candidates per user) for Popular, LensKit's ItemKNN and
ImplicitMF; :func:`simrec.stress.run_stress` at n = 100 with
``StressConfig(repeats=50, k_max=50, n_boot=100)`` and ``rng=11``, 95%
intervals, Recall, NDCG and AP at K = 1..50; (a) M = 943 users, binomial and
hypergeometric sampling (900 cells per estimator, 300 for the recall-only
mappings), and (b) the users resampled with replacement to M = 5,658 (about
ML-1M's M), binomial (450 / 150 cells). An estimator is marked when more
than 10% of its cells cover the exact metric in fewer than half of the
repeats in (a) or (b). The split is sharp in (b): the marked estimators miss
in 24-100% of their cells, every other one in at most 2% (in (a): 2-100%
and 0%; with more users the fixed bias stands out against a narrower
interval). This is the coverage of these data; ``coverage.csv`` of a stress
run with ``n_boot`` measures it on others.

Marked (``SAMPLING_BIASED``): :class:`Naive`, :class:`RankEstimate`,
:class:`ConstrainedLeastSquares`, :class:`BiasVariance` with the uniform
prior at γ >= 0.01, :class:`WeightedMLE` and every :class:`MappingEstimator`
(``bound`` included). Not marked: :class:`LeastSquares` (minimal bias, an
interval as wide as its unusable estimates), BV uniform at γ < 0.01, every
estimator with an estimated prior (BV_MLE, BV_MES, MN_MLE, MN_MES, BV at
1/M), :class:`MSEOptimal` and :class:`BiasVarianceInverseUsers` with the
uniform prior (their bias term is weighted by 1/M and vanishes as M grows;
not measured), :class:`MLE`, :class:`MES` and :class:`~simrec.sampling.AdaptiveMLE`.

Example
-------
>>> from simrec.sampling import BiasVariance, MESPrior, MSEOptimal, MLEPrior
>>> BiasVariance(0.1).name, BiasVariance(0.01, prior=MLEPrior()).name, MSEOptimal(MESPrior()).name
('BV(gamma=0.1)', 'BV_MLE(gamma=0.01)', 'MN_MES')
"""

from simrec.sampling.adaptive import AdaptiveMLE
from simrec.sampling.estimators.base import CorrectionEstimator, PlugInEstimator, fixed_corrections
from simrec.sampling.estimators.fixed import ConstrainedLeastSquares, Naive, RankEstimate
from simrec.sampling.estimators.linear import BiasVariance, BiasVarianceInverseUsers, LeastSquares, MSEOptimal
from simrec.sampling.estimators.mappings import BETA_A_VALUES, MAPPINGS, MappingEstimator
from simrec.sampling.estimators.plugin import MES, MLE, WeightedMLE
from simrec.sampling.estimators.priors import MESPrior, MLEPrior, PooledPrior, WeightedMLEFit
from simrec.sampling.fitted import Estimator

__all__ = [
    "Estimator",
    "CorrectionEstimator",
    "PlugInEstimator",
    "MLEPrior",
    "MESPrior",
    "WeightedMLEFit",
    "PooledPrior",
    "Naive",
    "RankEstimate",
    "LeastSquares",
    "ConstrainedLeastSquares",
    "BiasVariance",
    "MSEOptimal",
    "BiasVarianceInverseUsers",
    "MLE",
    "WeightedMLE",
    "MES",
    "AdaptiveMLE",
    "MappingEstimator",
    "MAPPINGS",
    "BETA_A_VALUES",
    "fixed_corrections",
]
