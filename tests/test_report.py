"""Run figures say what N is (simrec.report.plot_results)."""

from __future__ import annotations

import itertools

import pandas as pd

from simrec.report import plot_results


def test_run_figures_show_the_list_length(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    titles, ylabels = [], []
    real = Figure.savefig

    def record(self, *args, **kwargs):
        titles.append(self._suptitle.get_text())
        ylabels.append([ax.get_ylabel() for ax in self.axes if ax.get_visible()])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    rows = [(r, w, "uniform", "uniform", rec, m, t, 0.1 * r + (t == "true"), 10, 0)
            for r, w, rec, m, t in itertools.product(range(3), ["w1", "w2"], ["Oracle", "Popular"], ["precision", "auc"],
                                                  ["observed", "true"])]
    results = pd.DataFrame(rows, columns=["replicate", "world", "preference", "observation", "recommender", "metric",
                                          "truth", "value", "n_evaluated", "n_undefined"])
    plot_results(results, tmp_path, n=50)
    assert titles[0].startswith("precision@50: observed vs true relevance") and "N = 50" in titles[0]
    # the y label on the first panel only (the second panel's would run into the first)
    assert ylabels[:2] == [["precision@50", ""], ["precision@50 error (observed − true)", ""]]
    assert titles[2].startswith("auc: observed") and "full ranking" in titles[2]  # AUC reads no list
