"""Numbers as a reader sees them: 2-3 significant digits, an interval with its estimate, a share with its interval.

The report page and the terminal print the assessment's numbers through
these functions; the tidy CSVs keep full precision.

Decision (digits): an estimate with an interval is printed with the decimals
that give its interval's half-width two significant digits (the usual
convention for an uncertainty), but never fewer than two nor more than three
significant digits of the largest number printed; an estimate without an
interval gets three significant digits. So a bias of +0.2713 with a
half-width of 0.0004 reads "+0.271 [+0.271, +0.272]" (the half-width would ask
for five digits) and one of 0.0012 with a half-width of 0.05 reads
"+0.001 [-0.049, +0.051]".

>>> format_interval(0.27134, 0.2309, 0.3118)
'+0.271 [+0.231, +0.312]'
>>> format_number(1234.5678), format_number(0.000123456), format_share(3, 6, 0.19, 0.81)
('1.23e+03', '0.000123', '0.50 [0.19, 0.81] (3 of 6)')
"""

from __future__ import annotations

import math

__all__ = ["format_number", "format_interval", "format_share", "format_percent", "NOT_AVAILABLE"]

#: What a missing number reads as (never ``nan``).
NOT_AVAILABLE = "n/a"


def _missing(v: object) -> bool:
    try:
        return v is None or math.isnan(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def format_number(v: object, digits: int = 3, *, sign: bool = False) -> str:
    """``v`` to ``digits`` significant digits (``n/a`` when missing; ``0`` for ``|v| < 1e-12``)."""
    if _missing(v):
        return NOT_AVAILABLE
    x = float(v)  # type: ignore[arg-type]
    if abs(x) < 1e-12:
        return "0"
    text = f"{x:.{digits}g}"
    return f"+{text}" if sign and x > 0 else text


def _decimals(values: list[float], half: float) -> int:
    """Decimals for a set of numbers with an uncertainty ``half`` (module docstring)."""
    top = max(abs(v) for v in values)
    if top == 0:
        return 0
    e = math.floor(math.log10(top))
    low, high = 1 - e, 2 - e  # two and three significant digits of the largest number
    want = 1 - math.floor(math.log10(half)) if half > 0 and math.isfinite(half) else high
    return max(0, min(max(want, low), high))


def format_interval(mean: object, lower: object, upper: object, *, sign: bool = True) -> str:
    """``"+0.271 [+0.231, +0.312]"``: an estimate and its interval with the same decimals (module docstring).

    ``sign`` puts a ``+`` before positive numbers (errors). A missing bound
    prints the estimate alone; a missing estimate prints ``n/a``.
    """
    if _missing(mean):
        return NOT_AVAILABLE
    m = float(mean)  # type: ignore[arg-type]
    if _missing(lower) or _missing(upper):
        return format_number(m, sign=sign)
    lo, hi = float(lower), float(upper)  # type: ignore[arg-type]
    if max(abs(m), abs(lo), abs(hi)) >= 1e4 or 0 < max(abs(m), abs(lo), abs(hi)) < 1e-4:
        return f"{format_number(m, sign=sign)} [{format_number(lo, sign=sign)}, {format_number(hi, sign=sign)}]"
    d = _decimals([m, lo, hi], (hi - lo) / 2)
    f = f"{{:{'+' if sign else ''}.{d}f}}"

    def show(x: float) -> str:
        text = f.format(x)
        return text.lstrip("+-") if float(text) == 0 else text  # no sign on a zero (-0.000 for -0.0001)

    return f"{show(m)} [{show(lo)}, {show(hi)}]"


def format_share(agree: int, n: int, lower: object, upper: object) -> str:
    """``"0.50 [0.19, 0.81] (3 of 6)"``: a proportion, its interval, and how many evaluations it rests on."""
    if not n:
        return f"{NOT_AVAILABLE} (no evaluation)"
    return f"{agree / n:.2f} [{float(lower):.2f}, {float(upper):.2f}] ({agree} of {n})"  # type: ignore[arg-type]


def format_percent(v: object) -> str:
    """A relative error as a signed percentage to 2 significant digits (``"-85%"``, ``"+4.1%"``)."""
    if _missing(v):
        return NOT_AVAILABLE
    x = 100 * float(v)  # type: ignore[arg-type]
    if abs(x) >= 100:
        return f"{x:+.0f}%"
    return f"{float(f'{x:.2g}'):+g}%"
