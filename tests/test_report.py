"""simrec.report: run figures say what N is; figures drawn in parallel are the serial ones."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pandas as pd
import pytest

from simrec.experiment import RESULT_COLUMNS
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
    rows = [
        (r, w, "uniform", "uniform", rec, m, t, 0.1 * r + (t == "true"), 10, 0)
        for r, w, rec, m, t in itertools.product(
            range(3), ["w1", "w2"], ["Oracle", "Popular"], ["precision", "auc"], ["observed", "true"]
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
    assert titles[0].startswith("precision@50: observed vs true relevance") and "N = 50" in titles[0]
    # the y label on the first panel only (the second panel's would run into the first)
    assert ylabels[:2] == [["precision@50", ""], ["precision@50 error (observed − true)", ""]]
    assert titles[2].startswith("auc: observed") and "full ranking" in titles[2]  # AUC reads no list


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
