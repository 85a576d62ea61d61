"""Parameter checks with one message format.

Messages name the parameter, the rule and the value received, e.g.
"`sigma` must be in [0, 1); got 1.2". Functions validate every parameter in one
place, before any allocation, and never with ``assert``.
"""

from __future__ import annotations

import math
import re
import reprlib
from numbers import Integral, Real

__all__ = [
    "quote",
    "shorten",
    "QUOTE_LIMIT",
    "parse_size",
    "format_bytes",
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


#: Characters of a received value a message quotes (:func:`quote`).
QUOTE_LIMIT = 100


def _short_repr() -> reprlib.Repr:
    """reprlib's view of containers: a few entries of a few levels, strings cut (the length is said after)."""
    r = reprlib.Repr()
    r.maxlevel = 3
    r.maxtuple = r.maxlist = r.maxarray = r.maxset = r.maxfrozenset = r.maxdeque = 8
    r.maxdict = 6
    r.maxstring = r.maxlong = r.maxother = QUOTE_LIMIT
    return r


_REPR = _short_repr()


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for a message: at most about ``limit`` characters, and how long the value was if cut.

    Every message that quotes a received value goes through here (issue 22),
    so a 50 MB string in a scenario gives a message of one short line::

        >>> quote("x" * 52_428_800)
        "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…' (52,428,800 characters)"
        >>> quote([1, 2])
        '[1, 2]'

    A string or bytes value is cut before it is ``repr``-ed (never the
    repr of the whole value); a container shows its first entries
    (:mod:`reprlib`) and its number of entries.
    """
    if isinstance(value, (str, bytes, bytearray)):
        text = repr(value[:limit])
        if len(value) <= limit and len(text) <= limit + 3:
            return text
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{text[: min(len(text) - 1, limit)]}…{text[-1]} ({len(value):,} {unit})"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        text = _REPR.repr(value)
        if len(text) > limit:
            text = text[:limit] + "…"
        if "..." in text or text.endswith("…"):
            return f"{text} ({len(value):,} {'entry' if len(value) == 1 else 'entries'})"
        return text
    return shorten(repr(value), limit)


def shorten(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` itself, or its first ``limit`` characters, "…" and its length (for text that is not a value)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def _fmt(value: object) -> str:
    """A received value in a message: strings and containers quoted (:func:`quote`), anything else as ``str``, cut."""
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset)):
        return quote(value)
    return shorten(str(value))


_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(name: str, text: object) -> int:
    """``"8G"``, ``"512M"``, ``"1.5T"``, ``"1000000"`` (bytes) -> bytes (binary units); ValueError naming ``name``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), flags=re.IGNORECASE)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"`{name}` must be a size such as 8G, 512M or 1.5T; got {quote(text)}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_bytes(n: float) -> str:
    """``5.9 TiB``, ``812 MiB``, ... (``inf`` for an infinite estimate)."""
    if not math.isfinite(n):
        return "inf"
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


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
