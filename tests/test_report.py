"""simrec.report: run figures say what N is; figures drawn in parallel are the serial ones."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pandas as pd
import pytest

from simrec.experiment import RESULT_COLUMNS
from simrec.report import plot_results


def _outside(fig) -> list[str]:
    """Texts of a figure whose box leaves the image (tick labels, titles, axis labels, legend), or a legend that
    overlaps the title (drawn again at the figure's own dpi: the extents cached by a save are at the save's)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [fig._suptitle, *(lg for legend in fig.legends for lg in legend.get_texts())]
    for ax in fig.axes:
        if ax.get_visible():
            texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
    out = []
    for t in texts:
        if t is None or not t.get_visible() or not t.get_text():
            continue
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1:
            out.append(t.get_text())
    title = fig._suptitle.get_window_extent(renderer)
    out += [f"legend over {fig._suptitle.get_text()!r}" for lg in fig.legends if lg.get_window_extent().overlaps(title)]
    return out


def test_run_figures_show_the_list_length_share_a_scale_and_keep_labels_inside(tmp_path, monkeypatch):
    """Issue 28: labels from simrec.labels (as the tables), one y scale per figure (world w2's +-0.004 error does
    not fill its panel as w1's +1 does), every label inside the image (long names were cut: "temKNN")."""
    from matplotlib.figure import Figure

    titles, ylabels, ylims, outside = [], [], [], []
    real = Figure.savefig

    def record(self, *args, **kwargs):
        titles.append(self._suptitle.get_text())
        ylabels.append([ax.get_ylabel() for ax in self.axes if ax.get_visible()])
        ylims.append([ax.get_ylim() for ax in self.axes if ax.get_visible()])
        done = real(self, *args, **kwargs)
        outside.append(_outside(self))
        return done

    monkeypatch.setattr(Figure, "savefig", record)
    rows = [
        (r, w, "uniform", "uniform", rec, m, t, (0.1 * r + (t == "true")) if w == "w1" else 0.5 + 0.004 * r, 10, 0)
        for r, w, rec, m, t in itertools.product(
            range(3), ["w1", "w2"], ["Oracle", "AVeryLongItemKNNName"], ["precision", "auc"], ["observed", "true"]
        )
    ]
    results = pd.DataFrame(
        rows,
        columns=[
            "replicate",
            "world",
            "preference",
            "observation",
            "recommender",
            "metric",
            "truth",
            "value",
            "n_evaluated",
            "n_undefined",
        ],
    )
    plot_results(results, tmp_path, n=50)
    assert titles[0].startswith("Precision@50: observed vs true relevance") and "N = 50" in titles[0]
    # the y label on the first panel only: the scale is shared
    assert ylabels[:2] == [["Precision@50", ""], ["error (observed − true)", ""]]
    assert titles[1].startswith("Precision@50: missing-data error")
    assert titles[2].startswith("AUC: observed") and "full ranking" in titles[2]  # AUC reads no list
    for lims in ylims:  # both panels of every figure on one scale
        assert lims[0] == lims[1]
    assert ylims[1][0][1] - ylims[1][0][0] > 1  # the error scale spans w1's -1, so w2's 0 does not fill its panel
    assert outside == [[]] * len(titles), outside


def _results(metrics):
    rng = np.random.default_rng(5)
    rows = [
        (r, w, "ibp", "pop", rec, m, kind, rng.random(), 10, 0)
        for r, w, rec, m, kind in itertools.product(
            range(4), ["w1", "w2"], ["Oracle", "Random"], metrics, ["observed", "true"]
        )
    ]
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _digests(paths):
    return [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths]


@pytest.mark.slow
def test_parallel_figures_are_byte_identical_and_in_order(tmp_path):
    res = _results(["recall_truncated", "auc"])
    serial = plot_results(res, tmp_path / "serial")
    parallel = plot_results(res, tmp_path / "parallel", n_jobs=2)
    assert [p.name for p in serial] == [
        "values_recall_truncated.png",
        "error_recall_truncated.png",
        "values_auc.png",
        "error_auc.png",
    ]
    assert _digests(parallel) == _digests(serial)


def test_n_jobs_is_checked():
    with pytest.raises(ValueError, match="n_jobs"):
        plot_results(_results(["ndcg"]), "unused", n_jobs=0)


@pytest.mark.parametrize(
    "published, successes, n, expected",
    [
        (47, 45, 100, "coin flip"),  # Tian's IBP-Unif MRR: an interval holding 50% is never a match, even of 47
        (47, 78, 100, "differs"),
        (87, 92, 100, "match"),  # [85, 96] holds 87
        (100, 100, 100, "match"),
        (0, 0, 100, "match"),
        (50, 10, 20, "coin flip"),  # [29, 71]
        (89, 63, 100, "differs"),
    ],
)
def test_share_verdict_calls_an_interval_holding_half_a_coin_flip(published, successes, n, expected):
    from simrec.report import share_verdict, wilson_interval

    assert share_verdict(published, successes, n) == expected
    lo, hi = wilson_interval(np.array([successes]), np.array([n]))
    assert (lo[0] <= 0.5 <= hi[0]) == (expected == "coin flip")
