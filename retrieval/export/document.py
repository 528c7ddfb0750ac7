"""Markdown and standalone HTML of titled sections: one renderer each, for app exports and eval reports."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from retrieval.export.cells import html_cell, markdown_cell, markdown_text

STYLESHEET = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
              "table{border-collapse:collapse;margin:1em 0}"
              "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;font-size:13px}"
              "th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}")


@dataclass(frozen=True)
class Section:
    """A document section: a heading, lines shown as a bulleted list, and an optional table."""

    title: str
    lines: tuple[str, ...] = ()
    table: pd.DataFrame | None = field(default=None, compare=False)


def markdown_table(frame: pd.DataFrame) -> str:
    """`frame` as a Markdown table, one line per row, every cell escaped (`markdown_cell`); `_none_` if it has
    no rows."""
    if frame.empty:
        return "_none_"
    lines = [_markdown_row(frame.columns), "|" + " --- |" * len(frame.columns)]
    lines.extend(_markdown_row(row) for row in frame.itertuples(index=False))
    return "\n".join(lines)


def _markdown_row(values: Iterable[Any]) -> str:
    return "| " + " | ".join(map(markdown_cell, values)) + " |"


def markdown_document(sections: Sequence[Section]) -> str:
    """The sections as Markdown: `#` for the first title, `##` for the others, a blank line between blocks."""
    blocks = []
    for number, section in enumerate(sections):
        blocks.append(("# " if number == 0 else "## ") + markdown_text(section.title))
        if section.lines:
            blocks.append("\n".join(f"- {markdown_text(line)}" for line in section.lines))
        if section.table is not None:
            blocks.append(markdown_table(section.table))
    return "\n\n".join(blocks) + "\n"


def html_table(frame: pd.DataFrame) -> str:
    """`frame` as an HTML table, every cell escaped (`html_cell`), numbers right-aligned; `none` if it has
    no rows."""
    if frame.empty:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{html_cell(c)}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(map(_td, row)) + "</tr>" for row in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _td(value: Any) -> str:
    text = html_cell(value)
    number = text and isinstance(value, (int, float)) and not isinstance(value, bool)
    return f"<td class=\"num\">{text}</td>" if number else f"<td>{text}</td>"


def html_document(sections: Sequence[Section]) -> str:
    """The sections as one HTML page: `STYLESHEET` inline, no script or outside resource, text escaped."""
    body = []
    for number, section in enumerate(sections):
        tag = "h1" if number == 0 else "h2"
        body.append(f"<{tag}>{html.escape(section.title)}</{tag}>")
        if section.lines:
            body.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in section.lines) + "</ul>")
        if section.table is not None:
            body.append(html_table(section.table))
    title = html.escape(sections[0].title) if sections else "Report"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLESHEET}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
