"""One progress bar for every long run (``simrec run``, ``simrec stress``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(name: str, total: int, label: str, enabled: bool = True) -> Iterator[Callable[..., None]]:
    """A rich progress bar of ``total`` steps; yields ``advance(steps=1)``.

    Nothing is shown (and ``advance`` does nothing) when ``enabled`` is false
    or there is nothing to do; the bar is stopped however the block exits.
    """
    if not enabled or total == 0:
        yield lambda steps=1: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn(f"[bold]{name}[/bold] {label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    )
    task = bar.add_task(label, total=total)
    bar.start()
    try:
        yield lambda steps=1: bar.advance(task, steps)
    finally:
        bar.stop()
