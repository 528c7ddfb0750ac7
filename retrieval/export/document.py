"""Markdown and standalone HTML of titled sections: one renderer each, for app exports and eval reports."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from retrieval.export.cells import html_cell, is_ms, markdown_cell, markdown_text

STYLESHEET = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
              "table{border-collapse:collapse;margin:1em 0}"
              "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;font-size:13px}"
              "th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}")


@dataclass(frozen=True)
class Section:
    """A document section: a heading, lines shown as a bulleted list, and an optional table. `level` is the
    heading's depth (1-4); by default the first section of a document is its title (1) and the others are 2."""

    title: str
    lines: tuple[str, ...] = ()
    table: pd.DataFrame | None = field(default=None, compare=False)
    level: int | None = None

    def depth(self, number: int) -> int:
        """The heading depth of this section when it is the document's `number`-th (from 0)."""
        return min(max(self.level, 1), 4) if self.level is not None else 1 if number == 0 else 2


def markdown_table(frame: pd.DataFrame) -> str:
    """`frame` as a Markdown table, one line per row, every cell escaped (`markdown_cell`); `_none_` if it has
    no rows."""
    if frame.empty:
        return "_none_"
    ms = [is_ms(c) for c in frame.columns]
    lines = [_markdown_row(frame.columns), "|" + " --- |" * len(frame.columns)]
    lines.extend(_markdown_row(row, ms) for row in frame.itertuples(index=False))
    return "\n".join(lines)


def _markdown_row(values: Iterable[Any], ms: Sequence[bool] = ()) -> str:
    return "| " + " | ".join(markdown_cell(v, ms=bool(ms) and ms[i]) for i, v in enumerate(values)) + " |"


def markdown_document(sections: Sequence[Section]) -> str:
    """The sections as Markdown: a heading of the section's depth (`#` for the first title, `##` for the others
    by default), a blank line between blocks, so every list and table stands as its own CommonMark block."""
    blocks = []
    for number, section in enumerate(sections):
        blocks.append("#" * section.depth(number) + " " + markdown_text(section.title))
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
    ms = [is_ms(c) for c in frame.columns]
    rows = "".join("<tr>" + "".join(_td(v, ms[i]) for i, v in enumerate(row)) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _td(value: Any, ms: bool = False) -> str:
    text = html_cell(value, ms=ms)
    number = text and isinstance(value, (int, float)) and not isinstance(value, bool)
    return f"<td class=\"num\">{text}</td>" if number else f"<td>{text}</td>"


def html_document(sections: Sequence[Section]) -> str:
    """The sections as one HTML page: `STYLESHEET` inline, no script or outside resource, text escaped."""
    body = []
    for number, section in enumerate(sections):
        tag = f"h{section.depth(number)}"
        body.append(f"<{tag}>{html.escape(section.title)}</{tag}>")
        if section.lines:
            body.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in section.lines) + "</ul>")
        if section.table is not None:
            body.append(html_table(section.table))
    title = html.escape(sections[0].title) if sections else "Report"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{STYLESHEET}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
