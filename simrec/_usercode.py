"""Code a user named (a LensKit scorer: its module, its configuration, its methods) runs inside a guard.

Whatever such code raises leaves :func:`user_code` as one
:class:`UserCodeError` naming what failed and the exception: an ``Exception``,
but also ``SystemExit`` (``SystemExit(0)`` and ``exit()`` included),
``KeyboardInterrupt``, ``GeneratorExit`` or any other ``BaseException``. So a
job whose scorer calls ``sys.exit(0)`` ends with a non-zero exit and one line
naming the recommender, its run folder's manifest records the failure, and no
user code can end a simrec command as if it had succeeded. ``MemoryError``
propagates unchanged (the command line's advice on memory applies to it).

Decision (issue 22): a ``KeyboardInterrupt`` *raised by user code* versus a real
Ctrl-C. A real interrupt is a signal delivered to simrec's process (SIGINT from
Ctrl-C, or SIGTERM while tasks run, which :mod:`simrec.tasks` turns into a
``KeyboardInterrupt``); Python runs the signal's handler in the main thread,
which raises at whatever line runs then, often inside the user's code. While
guarded code runs in the main thread, :func:`signals_marked` wraps the
Python-level handlers of SIGINT and SIGTERM so that a delivered signal is
recorded. A ``KeyboardInterrupt`` leaving the guard is then

* a real interrupt if a signal was delivered meanwhile: it propagates
  unchanged, and the command says "interrupted; finished tasks are kept in
  DIR; re-run the same command to resume" (exit 130) as before;
* the user's own exception otherwise (a ``raise KeyboardInterrupt`` in a
  scorer): a failure of that recommender like any other (exit 1, one line).

Where no signal can raise it (a thread other than the main one, or a process
that ignores SIGINT, as the workers of the ``processes`` backend do: their
parent handles Ctrl-C and stops them), every ``KeyboardInterrupt`` is the
user's.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Literal

__all__ = ["UserCodeError", "describe", "signals_marked", "user_code"]

#: Signals whose Python-level handlers raise KeyboardInterrupt (the default SIGINT one; simrec's SIGTERM one).
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Characters of an exception's message kept in one line.
_MAX_MESSAGE = 300


class UserCodeError(RuntimeError):
    """Code a user named failed; ``str(exc)`` is one line: what failed, then the exception's type and message.

    The original exception is the ``__cause__`` (in the process that raised it).
    """


def describe(exc: BaseException) -> str:
    """``"Type: message"`` of ``exc`` on one line (whitespace collapsed; a long message is cut and its length said)."""
    text = " ".join(str(exc).split())
    if len(text) > _MAX_MESSAGE:
        text = f"{text[:_MAX_MESSAGE]}... ({len(text)} characters)"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


@contextmanager
def signals_marked() -> Iterator[Callable[[], bool]]:
    """Record SIGINT and SIGTERM delivered while the block runs; yields ``signalled()`` (True once one was).

    Only Python-level handlers are wrapped (the wrapper records the signal,
    then calls the handler, which raises as before), and only in the main
    thread (the only one Python runs handlers in). A signal that is ignored or
    left to the operating system raises nothing, so it needs no record.
    """
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: bool(got)
        return
    previous = {}
    for sig in _SIGNALS:
        handler = signal.getsignal(sig)
        if callable(handler):

            def marked(signum: int, frame: object, _handler: Callable[..., object] = handler) -> None:
                got.append(signum)
                _handler(signum, frame)

            previous[sig] = handler
            signal.signal(sig, marked)
    try:
        yield lambda: bool(got)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class user_code:
    """Run the block as code a user named: whatever it raises becomes :class:`UserCodeError` ``"{what} failed: ..."``.

    Exceptions that pass unchanged: a real interrupt (a ``KeyboardInterrupt``
    while a signal was delivered, see the module docstring), ``MemoryError``,
    and a :class:`UserCodeError` of an inner guard (it already names what
    failed).

    Parameters
    ----------
    what : str
        What runs, for the message, e.g. ``"recommender 'ShrunkPop'"``.
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._marks: AbstractContextManager[Callable[[], bool]] | None = None
        self._signalled: Callable[[], bool] = lambda: False

    def __enter__(self) -> None:
        self._marks = signals_marked()
        self._signalled = self._marks.__enter__()

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        # a class, not a generator: contextlib would hand a StopIteration raised by user code back unchanged
        signalled = self._signalled()
        if self._marks is not None:
            self._marks.__exit__(None, None, None)
            self._marks = None
        if exc is None or isinstance(exc, (MemoryError, UserCodeError)):
            return False
        if isinstance(exc, KeyboardInterrupt) and signalled:
            return False
        raise UserCodeError(f"{self.what} failed: {describe(exc)}") from exc
