"""Parameter checks with one message format.

Messages name the parameter, the rule and the value received, e.g.
"`sigma` must be in [0, 1); got 1.2". Functions validate every parameter in one
place, before any allocation, and never with ``assert``.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

__all__ = [
    "check_int",
    "check_real",
    "check_in_range",
    "check_choice",
    "check_pairs_budget",
    "DEFAULT_MAX_PAIRS",
    "SizeLimitError",
]

#: Default ceiling on the expected number of (user, item) pairs a generator may
#: produce. A pair costs about 4 bytes in the final CSR and up to ~40 bytes in
#: transient int64 index arrays while it is built, so 2e8 pairs stays well under
#: the 24 GiB of the reference machine. Override per call with ``max_pairs``.
DEFAULT_MAX_PAIRS = 200_000_000


class SizeLimitError(ValueError):
    """A parameter set would generate more data than the memory guard allows."""


def _fmt(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """Check ``value`` is an integer in ``[low, high]`` (either bound optional)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"`{name}` must be an integer; got {_fmt(value)}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else str(low)
        hi = "inf" if high is None else str(high)
        raise ValueError(f"`{name}` must be an integer in [{lo}, {hi}]; got {v}")
    return v


def check_real(name: str, value: object) -> float:
    """Check ``value`` is a finite real number."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{name}` must be a real number; got {_fmt(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"`{name}` must be finite; got {v}")
    return v


def check_in_range(
    name: str,
    value: object,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Check a real ``value`` lies in an interval; the message shows the interval.

    ``low_open`` / ``high_open`` exclude the bound, e.g.
    ``check_in_range("sigma", s, 0, 1, high_open=True)`` checks ``[0, 1)``.
    """
    v = check_real(name, value)
    bad = False
    if low is not None:
        bad |= v <= low if low_open else v < low
    if high is not None:
        bad |= v >= high if high_open else v > high
    if bad:
        left = "(" if (low_open or low is None) else "["
        right = ")" if (high_open or high is None) else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"`{name}` must be in {left}{lo}, {hi}{right}; got {v:g}")
    return v


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Check ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, choices))}; got {_fmt(value)}")
    return str(value)


def check_pairs_budget(expected_pairs: float, max_pairs: int | None, what: str) -> None:
    """Refuse a generation whose expected number of pairs exceeds ``max_pairs``.

    Raises :class:`SizeLimitError` with the estimate, before anything is
    allocated. ``max_pairs=None`` uses :data:`DEFAULT_MAX_PAIRS`.
    """
    limit = DEFAULT_MAX_PAIRS if max_pairs is None else max_pairs
    if not math.isfinite(expected_pairs) or expected_pairs > limit:
        raise SizeLimitError(
            f"{what} would generate about {expected_pairs:.3g} (user, item) pairs, over the "
            f"limit `max_pairs` = {limit:.3g}; lower the parameters or raise `max_pairs`"
        )
