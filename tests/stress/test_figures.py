"""The look of the stress figures (issue 14): nothing overlaps, nothing is off the chart, every line in the legend."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from simrec.stress import figures


@pytest.fixture()
def captured(monkeypatch, tmp_path):
    """Draw the figures of a synthetic run and keep them open (name -> Figure)."""
    import matplotlib

    matplotlib.use("Agg")
    figs = {}

    def keep(fig, path):
        figs[path.name] = fig
        return path

    monkeypatch.setattr(figures, "_save", keep)
    rows = []
    for scheme, n, fam, est, rec, k in itertools.product(
        ["binomial", "adaptive"],
        [100, 500],
        ["recall", "ndcg", "average_precision"],
        ["naive", "CLS", "MLE", "mapping:beta@P", "MES"],
        ["A", "B"],
        range(1, 11),
    ):
        if est == "mapping:beta@P" and fam != "recall":
            continue  # mappings exist for recall only (NaN elsewhere)
        rel = {"naive": 7.4, "CLS": 0.05, "MLE": -0.2, "mapping:beta@P": -0.4, "MES": 2500.0}[est]
        rows.append((scheme, n, fam, est, rec, k, rel))
    est = pd.DataFrame(rows, columns=["scheme", "n", "metric", "estimator", "recommender", "k", "rel_error"])
    sizes = [10, 20, 50, 100, 200, 500, 1000, 2000]
    expected = pd.DataFrame(
        [(fam, rec, 10, n, 1 / np.sqrt(n), 0.01) for fam in ["recall", "ndcg"] for rec in "AB" for n in sizes],
        columns=["metric", "recommender", "k", "n", "expected_sampled", "exact"],
    )
    decomp = pd.DataFrame(
        [
            (s, n, 10, "recall", e, r, 0.1, -0.02, 0.08)
            for s in ["binomial", "adaptive"]
            for n in [100, 500]
            for e in ["naive", "CLS"]
            for r in "AB"
        ],
        columns=[
            "scheme",
            "n",
            "k",
            "metric",
            "estimator",
            "recommender",
            "sampling_error",
            "missing_data_error",
            "total_error",
        ],
    )
    figures.plot_stress(tmp_path, est, expected, pd.DataFrame(), decomp)
    yield figs
    import matplotlib.pyplot as plt

    for f in figs.values():
        plt.close(f)


def _boxes(fig):
    """Draw the figure (layout happens at draw time) and return its renderer."""
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.slow
def test_relative_error_shows_every_estimator_and_nothing_overlaps(captured):
    fig = captured["relative_error_binomial_n100.png"]
    r = _boxes(fig)
    axes = fig.axes
    for ax in axes:  # naive (7.4) and MES (2500 here) are inside the axis: symlog, upper limit from the data
        lo, hi = ax.get_ylim()
        assert lo <= -1 and hi >= 2500 and ax.get_yscale() == "symlog"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "mapping:beta@P" in labels and "naive" in labels and "MES" in labels  # drawn in one panel only, still listed
    title = fig._suptitle.get_window_extent(r)
    for ax in axes:
        assert not _overlap(title, ax.title.get_window_extent(r))
    for left, right in zip(axes, axes[1:]):  # a panel's y label stays out of its left neighbour
        assert not _overlap(right.yaxis.label.get_window_extent(r), left.get_window_extent(r))
        assert not _overlap(right.get_tightbbox(r), left.get_tightbbox(r))


def test_expected_vs_n_ticks_are_the_sizes_and_do_not_overlap(captured):
    fig = captured["expected_vs_n.png"]
    r = _boxes(fig)
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in ticks] == ["10", "20", "50", "100", "200", "500", "1000", "2000"]
        boxes = [t.get_window_extent(r) for t in ticks]
        assert not any(_overlap(a, b) for a, b in zip(boxes, boxes[1:]))
    assert any("exact metric" in t.get_text() for t in fig.legends[0].get_texts())


def test_decomposition_says_what_it_shows(captured):
    title = captured["decomposition.png"]._suptitle.get_text()
    assert "shown for binomial sampling with n = 100" in title
    assert "not shown: adaptive n = 100, adaptive n = 500, binomial n = 500" in title


@pytest.mark.parametrize(
    ("n", "want"),
    [
        (100, {"1", "2", "5", "10", "20", "50", "100"}),
        (500, {"1", "2", "5", "10", "200", "500"}),
        (3200, {"1", "3", "10", "30", "100", "300", "1000", "3000"}),
    ],
)
def test_hit_ratio_log_axis_is_labelled_in_plain_numbers(n, want, monkeypatch, tmp_path):
    """The k axis of ``hit_ratio_*.png`` is logarithmic: its labels read 1, 2, 5, 10, ..., 100, not the mathtext
    source ``$\\mathdefault{10^{0}}$`` that matplotlib's log formatter writes (figures are drawn with mathtext off),
    without overlapping and without minor ticks."""
    import matplotlib

    matplotlib.use("Agg")
    figs = {}
    monkeypatch.setattr(figures, "_save", lambda fig, path: figs.setdefault(path.name, fig) and path)
    k = np.arange(1, n + 1)
    hr = pd.DataFrame(
        [
            ("binomial", n, rec, m, int(i), 1 - 1 / i, 1 - 0.5 / i)
            for rec in "AB"
            for m in ("linear", "bound")
            for i in k
        ],
        columns=["scheme", "n", "recommender", "mapping", "k", "sampled_hr", "global_hr_at_f"],
    )
    none = pd.DataFrame(columns=["scheme", "n", "metric", "estimator", "recommender", "k", "rel_error"])
    figures.plot_stress(tmp_path, none, pd.DataFrame(), hr, pd.DataFrame())
    fig = figs[f"hit_ratio_binomial_n{n}.png"]
    fig.canvas.draw()
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert want <= set(labels) and not any("$" in t for t in labels), labels
        assert not ax.xaxis.get_minorticklocs().size
        boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
        assert not any(_overlap(a, b) for a, b in zip(boxes, boxes[1:]))
    import matplotlib.pyplot as plt

    plt.close(fig)
