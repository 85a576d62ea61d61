"""SIGINT and SIGTERM while tasks run: SIGTERM interrupts, cleanups are not cut short, pool start-ups are not split.

Each helper acts in the main thread only (Python delivers signals there) and
does nothing elsewhere.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While tasks run, SIGTERM raises KeyboardInterrupt (main thread only); the previous handler is restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def signals_blocked() -> Iterator[None]:
    """Defer SIGINT/SIGTERM (delivered on exit) so a second Ctrl-C cannot cut a cleanup short."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, then deliver the first to its own handler (main thread only).

    Unlike :func:`signals_blocked` (a signal mask, which is per thread), this
    also holds a signal the kernel hands to a helper thread of the process
    pool: Python runs the handler in the main thread at its next bytecode,
    which could be inside ``Process.start``.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def hold(signum: int, frame: object) -> None:
        got.append(signum)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        if got:
            signal.raise_signal(got[0])
