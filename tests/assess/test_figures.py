"""The assessment's figures (issue 28): labels of simrec.labels, one y scale per figure, plain numbers on log axes."""

from __future__ import annotations

import pandas as pd
import pytest

from simrec.assess.figures import error_figure, estimator_figure, ranking_figure


@pytest.fixture
def drawn(monkeypatch):
    """Every figure saved meanwhile: (panel titles, y limits, all tick label texts), after its save's draw."""
    from matplotlib.figure import Figure

    seen = []
    real = Figure.savefig

    def record(self, *args, **kwargs):
        done = real(self, *args, **kwargs)
        axes = [ax for ax in self.axes if ax.get_visible()]
        ticks = [t.get_text() for ax in axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())]
        seen.append(([ax.get_title() for ax in axes], [ax.get_ylim() for ax in axes], ticks))
        return done

    monkeypatch.setattr(Figure, "savefig", record)
    return seen


def test_error_panels_share_one_scale_and_say_the_metric_as_the_tables_do(drawn):
    rows = []
    for metric, bias in (("ndcg", -0.27), ("recall", 0.004)):  # a +0.27 bias beside +-0.004 noise
        for rec in ("ItemKNN", "Popular"):
            for comp in ("missing data", "sampling", "total"):
                rows.append((rec, metric, comp, "all worlds", bias, bias - 0.01, bias + 0.01))
    errors = pd.DataFrame(rows, columns=["recommender", "metric", "component", "source", "mean", "lower", "upper"])
    assert error_figure(errors, 10)[:4] == b"\x89PNG"
    titles, ylims, ticks = drawn[0]
    assert titles == ["nDCG@10", "Recall@10"]
    assert ylims[0] == ylims[1] and ylims[0][0] < -0.27  # recall's panel on nDCG's scale
    assert "ItemKNN" in ticks


def test_ranking_figure_names_metrics_and_worlds(drawn):
    ranking = pd.DataFrame(
        {
            "metric": ["ndcg", "ndcg"],
            "source": ["all worlds", "ibp-pop"],
            "probability": [0.5, 0.5],
            "lower": [0.2, 0.2],
            "upper": [0.8, 0.8],
        }
    )
    ranking_figure(ranking, 10)
    _, _, ticks = drawn[0]
    assert "nDCG@10" in ticks


def test_estimator_figure_log_axes_read_as_plain_numbers(drawn):
    """With mathtext off (simrec._figures.literal_text) the log labels read "$\\mathdefault{10^{1}}$" before."""
    best = pd.DataFrame(
        {
            "metric": ["ndcg", "ndcg", "recall", "recall"],
            "n": [20, 50, 20, 50],
            "estimator": ["BV(gamma=1)", "CLS", "CLS", "naive"],
            "worst_rel_rmse": [0.5, 0.3, 0.6, 0.05],
        }
    )
    estimates = pd.DataFrame(
        {
            "metric": ["ndcg", "ndcg", "recall", "recall"],
            "k": 5,
            "estimator": "naive",
            "n": [20, 50, 20, 50],
            "rel_rmse": [10.0, 2.0, 12.0, 3.0],
        }
    )
    estimator_figure(best, estimates, k=5, max_rel_rmse=0.1)
    titles, ylims, ticks = drawn[0]
    assert titles == ["nDCG@5", "Recall@5"] and ylims[0] == ylims[1]
    shown = [t for t in ticks if t]
    assert {"20", "50", "1", "10"} <= set(shown), shown
    assert not any("$" in t or "mathdefault" in t for t in shown), shown


def test_sim_to_real_figure_has_a_panel_per_metric_from_zero_with_the_data_and_each_world(drawn):
    """Values, not errors: each metric's panel on its own scale from 0 (Precision@10 is a tenth of Recall@10),
    the data and every world in the legend, the algorithms as ticks."""
    from simrec.assess.figures import sim_to_real_figure

    rows = []
    for world in ("lda-pop", "ibp-pop"):
        for metric, scale in (("recall", 1.0), ("precision", 0.1)):
            for alg, v in (("ItemKNN", 0.1), ("ImplicitMF", 0.12)):
                rows.append((world, metric, alg, v * scale, 0.9 * v * scale, 1.1 * v * scale, 0.8 * v * scale,
                             0.7 * v * scale, 0.9 * v * scale))  # fmt: skip
    values = pd.DataFrame(
        rows, columns=["world", "metric", "algorithm", "real", "real_low", "real_high", "sim", "sim_low", "sim_high"]
    )
    assert sim_to_real_figure(values, 10)[:4] == b"\x89PNG"
    titles, ylims, ticks = drawn[0]
    assert titles == ["Recall@10", "Precision@10"]
    assert ylims[0][0] == 0 and ylims[1][0] == 0 and ylims[1][1] < ylims[0][1] / 5  # own scales, from 0
    assert {"ItemKNN", "ImplicitMF"} <= set(ticks)
