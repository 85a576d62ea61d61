"""A per-process memo of stress repeats, keyed by the repeat's sampled-rank histogram (issue 29).

Every estimator of :func:`~simrec.stress.harness.run_stress` depends on a
repeat's sampled ranks only through their histogram (n counts; for the
``adaptive`` scheme, the counts of the distinct (n_u, r_u) pairs, on which
:func:`simrec.sampling.mle_adaptive` runs), and its fits are deterministic
(every EM starts from the uniform π, MES's L-BFGS from λ = 0). So two repeats
with the same histogram, under the same scheme, metrics, estimators and
iteration cap, have the same estimates, iterations and convergence flags, to
the bit. With few users most repeats repeat a histogram: the README's ranks
file (3 rows, N = 20,720, n = 100) draws a handful of distinct histograms in
100 repeats, so a stress run costs the distinct histograms' fits instead of
one set of fits per repeat (bench/bench_stress_readme.py). With many users
histograms hardly repeat and the memo only costs a dictionary look-up per
repeat.

Decisions
---------
* Only repeats without bootstrap intervals are memoised (``n_boot = 0``): a
  repeat with intervals draws its replicates from the task's generator, and
  skipping them would change the next repeat's draws.
* The key holds everything the estimates depend on besides the histogram
  (N, n, with/without replacement, the tail cutoff, the metrics, the
  estimator objects, ``max_iter``), so tasks of one process share entries
  (other recommenders with the same histogram, or the same task re-run);
  M is the histogram's total.
* Stored values are read-only copies; the memo is bounded
  (:data:`MAX_BYTES`, least recently used entries dropped first) and is
  per process (worker processes each keep their own; nothing is written).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

__all__ = ["MAX_BYTES", "RepeatMemo", "REPEAT_MEMO"]

#: Bound of one memo's stored arrays, in bytes (a repeat of the default stress
#: configuration stores about 40 KB: 31 estimators x 150 metric columns).
MAX_BYTES = 64 << 20

T = TypeVar("T")


def _nbytes(value: object) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value) + 64
    return 64


def _frozen(value: T) -> T:
    """A read-only copy of every array in ``value`` (an array or a tuple of them and scalars)."""
    if isinstance(value, np.ndarray):
        out = value.copy()
        out.setflags(write=False)
        return out
    if isinstance(value, tuple):
        return tuple(_frozen(v) for v in value)  # type: ignore[return-value]
    return value


class RepeatMemo:
    """Memo of computed repeats by histogram, least recently used dropped beyond ``max_bytes``.

    Parameters
    ----------
    max_bytes : int, default :data:`MAX_BYTES`

    Attributes
    ----------
    hits, misses : int
        Look-ups answered from the memo, and computed.
    """

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = int(max_bytes)
        self.enabled = True
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[int, bytes], tuple[object, int]] = OrderedDict()
        self._contexts: dict[Hashable, int] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        self._entries.clear()
        self._bytes = 0
        self.hits = self.misses = 0

    @contextmanager
    def disabled(self) -> Iterator[None]:
        """Within the block, every look-up computes (nothing read or stored): the uncached path."""
        before, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = before

    def namespace(self, context: Hashable) -> int:
        """A small integer standing for ``context`` (what the values depend on besides the histogram).

        Hashing the context (estimator objects, metrics) once per task rather
        than once per repeat keeps a look-up at the cost of hashing the
        histogram's bytes.
        """
        return self._contexts.setdefault(context, len(self._contexts))

    def get_or_compute(self, namespace: int, histogram: bytes, compute: Callable[[], T]) -> T:
        """The value stored for ``histogram`` in ``namespace``, or ``compute()`` stored (read-only) and returned."""
        if not self.enabled:
            return compute()
        key = (namespace, histogram)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]  # type: ignore[return-value]
        self.misses += 1
        value = _frozen(compute())
        size = _nbytes(value) + len(histogram) + 128
        if size <= self.max_bytes:
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return value


#: The memo :func:`~simrec.stress.harness.run_stress` uses (one per process).
REPEAT_MEMO = RepeatMemo()
