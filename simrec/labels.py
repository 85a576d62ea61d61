"""What a reader sees: one label per metric, world, estimator and table column (issue 28).

Tables, figures, the terminal and the assessment report name things the same
way: the run summary's columns, the run figures' titles and axes, and the
assessment page and its figures all call these functions, so ``ndcg`` is
"nDCG@10" everywhere and the quickstart's ``unif-unif`` and the presets'
``uniform-unif`` are both "Uniform, uniformly observed". The tidy files (CSV,
Parquet) keep the machine names: a label is for reading, a name for joining.

>>> metric_label("ndcg", 10), metric_label("auc", 10), metric_label("precision")
('nDCG@10', 'AUC', 'Precision')
>>> world_label("ibp-pop"), world_label("unif-unif"), world_label("my world")
('IBP, popularity-biased', 'Uniform, uniformly observed', 'my world')
>>> estimator_label("BV(gamma=0.01)"), estimator_label("rank_estimate")
('BV (γ = 0.01)', 'rank estimate')

Decision: a name that is not one of simrec's (a user's world called
``my world``, a user's own estimator) is shown as it is written; only the
names simrec gives are translated.
"""

from __future__ import annotations

import re

__all__ = ["metric_label", "world_label", "estimator_label", "column_label", "FULL_RANKING_METRICS"]

#: Metrics of the full ranking of candidates: their label takes no ``@N`` (every other metric reads the top-N list).
FULL_RANKING_METRICS: tuple[str, ...] = ("auc", "pap_at_k", "average_precision_full")

#: metric name -> (label before ``@N``, text after it).
_METRICS: dict[str, tuple[str, str]] = {
    "precision": ("Precision", ""),
    "recall": ("Recall", ""),
    "recall_truncated": ("Recall", " (truncated)"),
    "reciprocal_rank": ("RR", ""),
    "ndcg": ("nDCG", ""),
    "ndcg_lenskit07": ("nDCG", " (LensKit 0.7)"),
    "average_precision": ("AP", ""),
    "hits": ("Hits", ""),
    "hit": ("HR", ""),
    "auc": ("AUC", ""),
    "pap_at_k": ("pAp@k", ""),
    "average_precision_full": ("AP", " (untruncated)"),
}


def metric_label(metric: str, n: int | None = None) -> str:
    """``"nDCG@10"`` for ``("ndcg", 10)``; ``"nDCG"`` without ``n``; full-ranking metrics take no ``@N`` (AUC).

    Parameters
    ----------
    metric : str
        A metric's name in simrec's tables (``precision``, ``ndcg``, ...).
    n : int, optional
        The list length N (the cutoff K = N of the metric).
    """
    base, suffix = _METRICS.get(metric, (metric, ""))
    if n is None or metric in FULL_RANKING_METRICS:
        return base + suffix
    return f"{base}@{n}{suffix}"


#: First part of a world's name -> preference model's label.
_PREFERENCES = {"uniform": "Uniform", "unif": "Uniform", "ibp": "IBP", "lda": "LDA", "hpf": "HPF", "latent": "Latent"}
#: Second part -> how the observed items were sampled.
_OBSERVATIONS = {"pop": "popularity-biased", "unif": "uniformly observed", "uniform": "uniformly observed"}


def world_label(name: str) -> str:
    """``"IBP, popularity-biased"`` for a world named ``ibp-pop`` (preset cells and the quickstart's names alike).

    A name that is not ``<model>-<pop|unif>`` (a user's own world name) is returned unchanged.
    """
    pref, sep, obs = str(name).partition("-")
    if sep and pref.lower() in _PREFERENCES and obs.lower() in _OBSERVATIONS:
        return f"{_PREFERENCES[pref.lower()]}, {_OBSERVATIONS[obs.lower()]}"
    return str(name)


def estimator_label(name: str) -> str:
    """``"BV (γ = 0.01)"`` for ``BV(gamma=0.01)``, ``"rank estimate"`` for ``rank_estimate``; others unchanged."""
    text = re.sub(r"\(gamma=([^)]*)\)", r" (γ = \1)", str(name))
    return "rank estimate" if text == "rank_estimate" else text.replace("_MLE", "-MLE").replace("_MES", "-MES")


#: Column names of simrec's tables -> the header a reader sees.
_COLUMNS = {
    "recommender": "Algorithm",
    "metric": "Metric",
    "world": "World",
    "source": "From",
    "component": "Error",
    "mean": "Mean",
    "sd": "SD",
    "lower": "Lower",
    "upper": "Upper",
    "n": "n",
    "agree": "Agreeing",
    "probability": "Probability",
    "true_order": "Most frequent true order",
    "report": "Report",
    "scheme": "Sampling scheme",
    "estimator": "Estimator",
    "worst_rel_rmse": "Worst relative RMSE",
    "mean_abs_rel_error": "Mean |relative error|",
    "min_coverage": "Lowest interval coverage",
    "acceptable": "Acceptable coverage",
    "coverage_known_to_fail": "Interval known to fail",
    "reason": "Why",
    "cell": "World",
    "loss": "Fit loss",
    "used": "Used",
    "preference": "Preference model",
    "observation": "Observation model",
    "statistic": "Statistic",
    "value": "Value",
    "kl_item_popularity": "KL item popularity",
    "kl_user_activity": "KL user activity",
    "kl_item_similarity": "KL item similarity",
    "kl_user_similarity": "KL user similarity",
}


def column_label(column: str) -> str:
    """The header of a table column (``worst_rel_rmse`` -> "Worst relative RMSE"); unknown names with spaces."""
    return _COLUMNS.get(column, str(column).replace("_", " "))
