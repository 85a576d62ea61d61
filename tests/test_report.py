"""simrec.report: figures drawn in parallel are the serial ones."""

import hashlib
import itertools

import numpy as np
import pandas as pd
import pytest

from simrec.experiment import RESULT_COLUMNS
from simrec.report import plot_results


def _results(metrics):
    rng = np.random.default_rng(5)
    rows = [(r, w, "ibp", "pop", rec, m, kind, rng.random(), 10, 0)
            for r, w, rec, m, kind in itertools.product(range(4), ["w1", "w2"], ["Oracle", "Random"], metrics,
                                                         ["observed", "true"])]
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _digests(paths):
    return [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths]


def test_parallel_figures_are_byte_identical_and_in_order(tmp_path):
    res = _results(["recall_truncated", "auc"])
    serial = plot_results(res, tmp_path / "serial")
    parallel = plot_results(res, tmp_path / "parallel", n_jobs=2)
    assert [p.name for p in serial] == ["values_recall_truncated.png", "error_recall_truncated.png",
                                        "values_auc.png", "error_auc.png"]
    assert _digests(parallel) == _digests(serial)


def test_n_jobs_is_checked():
    with pytest.raises(ValueError, match="n_jobs"):
        plot_results(_results(["ndcg"]), "unused", n_jobs=0)
