"""Single-threaded BLAS for small dense kernels (the estimators', the resampling tests').

The estimators multiply n x n matrices (n <= a few thousand) and thin row
blocks of P(r|R). Multithreaded OpenBLAS gains little at these sizes and, on a
machine shared with other processes, busy-waiting threads make it slow and
erratic (measured: docs/design.md §9). Parallelism belongs one level up, in
the harness that runs independent repeats in processes.
:func:`single_threaded_blas` limits BLAS to one thread for the duration of a
call (a small fixed overhead) and restores the previous setting afterwards.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

__all__ = ["single_threaded_blas", "blas_single_thread"]

F = TypeVar("F", bound=Callable[..., Any])
#: The controller and ``len(sys.modules)`` when it was built: a controller knows only the BLAS libraries loaded
#: before it was built (threadpoolctl inspects them once), so it is rebuilt after any import (one that loads scipy's
#: own OpenBLAS, say, would otherwise stay multi-threaded: issue 29 measured +0.5 s CPU on the README ranks example).
_CONTROLLER: list[Any] = []


def single_threaded_blas() -> AbstractContextManager[Any]:
    """Context manager limiting BLAS to one thread (no-op without threadpoolctl)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return nullcontext()
    if not _CONTROLLER or _CONTROLLER[1] != len(sys.modules):
        _CONTROLLER[:] = [ThreadpoolController(), len(sys.modules)]
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def blas_single_thread(fn: F) -> F:
    """Decorator form of :func:`single_threaded_blas`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with single_threaded_blas():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
