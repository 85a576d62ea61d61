"""A self-contained HTML page: inline CSS, figures as base64 PNG ``<img>``, tables as ``<table>``; no script,
no external asset (it opens from a file, offline, and can be mailed as one file).

Every string is escaped (names come from the user's files). Numbers are
printed for reading, to 3 significant digits (:func:`format_value`); the
tidy CSVs beside the page keep full precision.

Layout (issue 28): the page is at most 1180 px wide and every table fits it
(cells wrap; a table wider than the page scrolls inside its own box, never
the page); print CSS drops the width limit and the scroll boxes, keeps
figures and table rows whole on a page and prints the link-free page in
black on white with the verdict colours kept as text.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from simrec.assess.formatting import NOT_AVAILABLE, format_number

__all__ = ["Section", "format_value", "table_html", "figure_html", "note_html", "list_html", "render_page"]

_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1180px; margin: 1.5em auto; padding: 0 1em; color: #222;
       line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.3em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin: 1.1em 0 0.4em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.88em; max-width: 100%; }
caption { text-align: left; font-weight: 600; padding: 0.2em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.55em; text-align: right; vertical-align: top; }
th { background: #f2f2f2; text-align: left; } td.text { text-align: left; overflow-wrap: break-word; }
img { max-width: 100%; height: auto; display: block; margin: 0.8em 0; }
p.note, p.sub { color: #555; font-size: 0.92em; }
div.scroll { overflow-x: auto; max-width: 100%; }
section.bottom-line { border: 2px solid #444; border-radius: 6px; padding: 0.2em 1.2em 0.8em; margin-top: 1em; }
section.bottom-line h2 { margin-top: 0.6em; border: none; }
div.warnings { background: #fff4e0; border-left: 4px solid #d98200; padding: 0.3em 1em; margin: 0.8em 0; }
section.slot p.status { font-style: italic; color: #555; }
td.within-tolerance, td.likely-right { color: #17641f; font-weight: 600; }
td.too-high, td.too-low, td.likely-wrong { color: #a3190f; font-weight: 600; }
td.uncertain, td.not-measured { color: #8a5a00; font-weight: 600; }
@media print {
  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
  div.scroll { overflow: visible; }
  table { font-size: 8.5pt; page-break-inside: auto; }
  tr, img, div.warnings { page-break-inside: avoid; }
  h2, h3 { page-break-after: avoid; }
  section.bottom-line { border-color: #000; }
}
"""


@dataclass(frozen=True)
class Section:
    """One part of the page: a heading, paragraphs of text (escaped), then tables and figures (HTML).

    ``key`` becomes the section's ``id`` (a stable hook for tests and for
    studies that fill a slot); ``css`` its class.
    """

    title: str
    paragraphs: Sequence[str] = ()
    parts: Sequence[str] = ()
    key: str = ""
    css: str = ""


def format_value(v: object) -> str:
    """A cell's text: floats to 3 significant digits (0 for |v| < 1e-12), ``yes``/``no``, ``n/a`` for missing."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return NOT_AVAILABLE
    if isinstance(v, float):
        return format_number(v)
    try:
        if pd.isna(v):
            return NOT_AVAILABLE
    except (TypeError, ValueError):
        pass
    return str(v)


def _css_class(text: str) -> str:
    return text.replace(" ", "-")


def table_html(frame: pd.DataFrame, table_id: str, caption: str = "", *, verdict_columns: Sequence[str] = ()) -> str:
    """``frame`` as a ``<table id=table_id>`` (header row = column names; numbers right-aligned, text left).

    Cells of ``verdict_columns`` get their text as a CSS class (coloured verdicts).
    """
    head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in frame.columns)
    verdicts = {i for i, c in enumerate(frame.columns) if c in verdict_columns}
    rows = []
    for rec in frame.itertuples(index=False):
        cells = []
        for i, v in enumerate(rec):
            text = format_value(v)
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            cls = [] if numeric else ["text"]
            if i in verdicts:
                cls.append(_css_class(text))
            attr = f' class="{" ".join(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{html.escape(text)}</td>")
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


def list_html(items: Sequence[str], css: str = "", title: str = "") -> str:
    """A bulleted list of sentences (escaped), optionally in a ``<div class=css>`` under an ``<h3>`` title."""
    body = "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"
    head = f"<h3>{html.escape(title)}</h3>" if title else ""
    return f'<div class="{html.escape(css)}">{head}{body}</div>' if css else head + body


def render_page(title: str, subtitle: str, sections: Sequence[Section], intro: Sequence[str] = ()) -> str:
    """The whole page (UTF-8 text): title, subtitle, introductory paragraphs, then each section."""
    body = [f"<h1>{html.escape(title)}</h1>", f'<p class="sub">{html.escape(subtitle)}</p>']
    body += [f"<p>{html.escape(p)}</p>" for p in intro]
    for s in sections:
        attrs = (f' id="{html.escape(s.key)}"' if s.key else "") + (f' class="{html.escape(s.css)}"' if s.css else "")
        body.append(f"<section{attrs}>")
        body.append(f"<h2>{html.escape(s.title)}</h2>")
        body += [f"<p>{html.escape(p)}</p>" for p in s.paragraphs]
        body += list(s.parts)
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )
