"""Tidy summaries, the thesis's Table 3, and figures of a run's results.

Everything here reads the tidy results frame (:data:`simrec.experiment.RESULT_COLUMNS`);
aggregation over replicates happens here and only here: :mod:`.summaries`
(the error observed − true, t and Wilson intervals, Table 3's pairwise wins)
and :mod:`.figures` (:func:`plot_results`).
"""

from simrec.report.figures import plot_results
from simrec.report.summaries import errors, pairwise_wins, share_verdict, summarize, wilson_interval

__all__ = ["errors", "summarize", "wilson_interval", "share_verdict", "pairwise_wins", "plot_results"]
