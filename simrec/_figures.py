"""Figures never break a job: names are drawn as written, and a failed figure loses no table (issue 22).

**Literal text.** A recommender named ``$\\frac{$`` (a ranks file's
``recommender`` column, a ``simrec ranks --recommender`` name) made
matplotlib parse it as mathtext and raise while the figure was saved: the
tables were written, the run stayed ``running`` and every re-run failed the
same way. Decision: simrec's figures use no mathtext of their own, so every
figure is drawn with ``text.parse_math`` off (matplotlib draws ``$`` and
``\\`` as they are, in titles, labels, legends and tick labels alike,
including the ones it creates while saving) and ``text.usetex`` off (a
user's ``matplotlibrc`` asking for LaTeX would make ``_``, ``%`` or ``&`` in
a name fail the same way). This escapes every ``$`` of every label without
having to find each label (:func:`literal_text`).

**Every name in the legend.** matplotlib leaves out of a legend every
label that starts with ``_`` (its convention for artists not to list). A
ranks file may name a recommender ``_baseline`` (scenario names cannot start
with ``_``), which then vanished from the legend of ``expected_vs_n.png``
while its line was drawn. Names reach legends through :func:`legend_label`,
which puts a zero-width space (U+200B, drawn as nothing; DejaVu Sans,
matplotlib's default font, has it) before such a name.

**Log axes in plain numbers.** With mathtext off, matplotlib's log-axis
labels (``$\\mathdefault{10^{1}}$``) are drawn as that source text;
:func:`plain_log_axis` labels a log axis ``0.1``, ``1``, ``10`` instead.

**Failures are recorded.** The figures are drawn after every table is
written; a figure that still fails (a matplotlib bug, a missing font) is
recorded (:func:`drawing`) instead of raised: the job completes, its
manifest says ``"figures_failed"`` and the command line exits 1 naming the
failure (a fault, not bad input). A full or read-only disk and running out
of memory are not caught here: they stop the job as anywhere else, and the
re-run resumes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from simrec._validation import shorten

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["LITERAL_TEXT", "literal_text", "legend_label", "drawing", "plain_log_axis"]

#: The matplotlib settings every simrec figure is drawn with.
LITERAL_TEXT: dict[Any, bool] = {"text.parse_math": False, "text.usetex": False}  # (keys: matplotlib's rcParams)

P = ParamSpec("P")
R = TypeVar("R")


#: Put before a legend label that starts with ``_`` so that matplotlib lists it (a zero-width space).
_LISTED = "\u200b"


def legend_label(name: str) -> str:
    """``name`` as a legend label: unchanged, or after a zero-width space if it starts with ``_`` (see above)."""
    return _LISTED + name if name.startswith("_") else name


def literal_text(draw: Callable[P, R]) -> Callable[P, R]:
    """Decorate a function that draws and saves figures: it runs with :data:`LITERAL_TEXT` (restored after)."""

    @functools.wraps(draw)
    def drawn_literally(*args: P.args, **kwargs: P.kwargs) -> R:
        import matplotlib

        with matplotlib.rc_context(LITERAL_TEXT):
            return draw(*args, **kwargs)

    return drawn_literally


def plain_log_axis(ax: Axes, which: str) -> None:
    """Put ``ax``'s ``which`` axis (``"x"`` or ``"y"``) on a log scale labelled in plain numbers (``0.1``, ``10``).

    Minor ticks stay unlabelled (module docstring: log axes in plain numbers).
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


@contextmanager
def drawing(failures: list[str], what: str) -> Iterator[None]:
    """Draw figures; an error (not OSError, not MemoryError) is appended to ``failures`` as one line, not raised.

    ``what`` names the figures (e.g. ``"figures"``, ``"user-sampling figures"``).
    """
    try:
        yield
    except (OSError, MemoryError):
        raise
    except Exception as exc:
        failures.append(f"{what}: {type(exc).__name__}: {shorten(' '.join(str(exc).split()), 300)}")
