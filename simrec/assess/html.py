"""A self-contained HTML page: inline CSS, figures as base64 PNG ``<img>``, tables as ``<table>``; no script,
no external asset (it opens from a file, offline, and can be mailed as one file).

Every string is escaped (names come from the user's files). Numbers are
printed with 6 significant digits (:func:`format_value`), so a reader (or a
test) parsing a table gets the tidy CSV's value to a relative 1e-5.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["Section", "format_value", "table_html", "figure_html", "note_html", "render_page"]

_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1250px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f2f2f2; } td.text { text-align: left; }
img { max-width: 100%; height: auto; display: block; margin: 0.8em 0; }
p.note { color: #555; font-size: 0.92em; }
div.scroll { overflow-x: auto; }
"""


@dataclass(frozen=True)
class Section:
    """One part of the page: a heading, paragraphs of text (escaped), then tables and figures (HTML)."""

    title: str
    paragraphs: Sequence[str] = ()
    parts: Sequence[str] = ()


def format_value(v: object) -> str:
    """A cell's text: floats with 6 significant digits (0 for |v| < 1e-12), ``nan`` for missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return "0" if abs(v) < 1e-12 else f"{v:.6g}"
    try:
        if pd.isna(v):
            return "nan"
    except (TypeError, ValueError):
        pass
    return str(v)


def table_html(frame: pd.DataFrame, table_id: str, caption: str = "") -> str:
    """``frame`` as a ``<table id=table_id>`` (header row = column names; numbers right-aligned)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for rec in frame.itertuples(index=False):
        cells = []
        for v in rec:
            text = html.escape(format_value(v))
            cls = "" if isinstance(v, (int, float)) and not isinstance(v, bool) else ' class="text"'
            cells.append(f"<td{cls}>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (
        f'<div class="scroll"><table id="{html.escape(table_id)}">{cap}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def figure_html(png: bytes | None, alt: str) -> str:
    """An ``<img>`` with the PNG embedded as a data URI (a note instead when the figure could not be drawn)."""
    if png is None:
        return f'<p class="note">The figure ({html.escape(alt)}) could not be drawn; see manifest.json.</p>'
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def note_html(text: str) -> str:
    """A footnote paragraph (escaped), e.g. under a table."""
    return f'<p class="note">{html.escape(text)}</p>'


def render_page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The whole page (UTF-8 text)."""
    body = [f"<h1>{html.escape(title)}</h1>", f'<p class="note">{html.escape(subtitle)}</p>']
    for s in sections:
        body.append(f"<h2>{html.escape(s.title)}</h2>")
        body += [f"<p>{html.escape(p)}</p>" for p in s.paragraphs]
        body += list(s.parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<link rel="icon" href="data:,"><title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
