"""Per-user IPS-corrected metric values of one replicate, beside the per-user truth (for paired tests).

A paired test between two recommenders needs one value per user and
recommender. :func:`ips_per_user` gives, for the evaluated users of one
replicate (the data and lists of ``simrec run``'s replicate of the same seed:
:func:`~simrec.debias.harness.observed_replicate`), the IPS estimate of each
user's metric with the world's own propensities (or another kind of
:data:`~simrec.debias.harness.PROPENSITY_KINDS`)

.. math:: \\hat M_u^{\\mathrm{IPS}} = \\frac{1}{g_u(n_u)}
          \\sum_{i \\in S_u} \\frac{y_{ui}\\, c_u(Z_{ui})}{p_{ui}}

(:class:`~simrec.debias.IPS`: Yang et al. 2018, §3; Schnabel et al. 2016,
§3.2), and the metric on the user's true relevance set
:math:`M_u = \\frac{1}{g_u(n_u)} \\sum_{i \\in \\mathrm{Rel}_u} c_u(Z_{ui})`
(the ``"true"`` value of ``simrec run``). Each :math:`\\hat M_u` is unbiased
for :math:`M_u` given the propensities (each relevant pair is observed with
probability :math:`p_{ui}`); its mean over users is
:class:`~simrec.debias.IPS`'s estimate (tested against the harness's row).

Decision: :math:`n_u = |\\mathrm{Rel}_u|` is the simulation's (IPS needs it
for recall and nDCG; real data would need SNIPS), and the propensities are
the world's, so this is the correction at its best: what a researcher who
knew the observation process could do. A user whose value is undefined
(:math:`n_u = 0`) is NaN in both arrays.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from simrec.debias.estimators import IPS, Naive
from simrec.debias.harness import PROPENSITY_KINDS, observed_replicate
from simrec.debias.metrics import LinearMetric
from simrec.debias.ranked import rank_test
from simrec.experiment import Evaluation, World
from simrec.metrics import UndefinedMetricWarning

__all__ = ["PerUserEstimate", "ips_per_user"]


@dataclass(frozen=True, eq=False)
class PerUserEstimate:
    """One recommender x metric: the per-user estimates and the per-user truth on the same users.

    Attributes
    ----------
    estimate : ndarray of float64, shape (n_evaluated,)
        :math:`\\hat M_u^{\\mathrm{IPS}}` (NaN where undefined).
    truth : ndarray of float64, shape (n_evaluated,)
        :math:`M_u` on the true relevance set (NaN where undefined).
    """

    estimate: np.ndarray
    truth: np.ndarray


def ips_per_user(
    world: World,
    evaluation: Evaluation,
    seed: np.random.SeedSequence | int,
    metrics: Mapping[str, LinearMetric],
    recommenders: Sequence[str] | None = None,
    propensity: str = "world",
) -> dict[tuple[str, str], PerUserEstimate]:
    """Per-user IPS estimates and truths of one replicate (module docstring).

    Parameters
    ----------
    world, evaluation
        As :func:`simrec.experiment.run_replicate`.
    seed : SeedSequence or int
        The replicate's seed (the same as ``simrec run``'s for the same data and lists).
    metrics : mapping of str to LinearMetric
        The metrics by the name the result is keyed with (e.g. ``{"recall": Recall()}``).
    recommenders : sequence of str, optional
        Names of the evaluation's recommenders to return (default: every one; all are run, so the lists are
        the run's).
    propensity : str, default "world"
        A kind of :data:`~simrec.debias.harness.PROPENSITY_KINDS`.

    Returns
    -------
    dict of (recommender name, metric name) to PerUserEstimate

    Raises
    ------
    ValueError
        An unknown ``propensity`` kind or recommender name.
    TypeError
        The kind does not apply to the world (e.g. a sampler without propensities).
    """
    if propensity not in PROPENSITY_KINDS:
        raise ValueError(f"`propensity` must be one of {', '.join(PROPENSITY_KINDS)}; got {propensity!r}")
    names = [r.name for r in evaluation.recommenders]
    wanted = names if recommenders is None else list(recommenders)
    unknown = [r for r in wanted if r not in names]
    if unknown:
        raise ValueError(f"`recommenders` must be among the evaluation's {names}; got {unknown}")
    o = observed_replicate(world, evaluation, {propensity: PROPENSITY_KINDS[propensity](world)}, seed)
    p = o.propensities[propensity]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for name in wanted:
            lists = o.lists[names.index(name)]
            ranked = rank_test(lists, o.test, train=o.train, n_relevant=o.n_relevant)
            truth_ranked = rank_test(lists, o.true_rel, train=o.train)
            for key, metric in metrics.items():
                # means over users: their per_user is set
                estimate = cast(np.ndarray, IPS().estimate(ranked, metric, p).per_user)
                truth = cast(np.ndarray, Naive().estimate(truth_ranked, metric).per_user)
                undefined = np.isnan(estimate) | np.isnan(truth)
                out[name, key] = PerUserEstimate(
                    np.where(undefined, np.nan, estimate), np.where(undefined, np.nan, truth)
                )
    return out
