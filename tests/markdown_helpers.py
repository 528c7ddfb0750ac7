"""Reading exported Markdown as a reader's viewer does: rendered by a CommonMark renderer (markdown-it-py, with
the GFM table extension every Markdown viewer of tables has), then parsed for its tables, headings and text."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt


@dataclass
class Rendered:
    """What a rendered document shows: its HTML, its tables (header row, body rows), headings and list items."""

    html: str
    tables: list[tuple[list[str], list[list[str]]]] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    text: str = ""
    tags: set[str] = field(default_factory=set)

    def table(self, *headers: str) -> list[dict[str, str]]:
        """The rows of the one table whose header row starts with `headers`, as dicts."""
        found = self.tables_with(*headers)
        assert len(found) == 1, f"{len(found)} tables start with {headers}; tables: {[h for h, _ in self.tables]}"
        return found[0]

    def tables_with(self, *headers: str) -> list[list[dict[str, str]]]:
        """Every table whose header row starts with `headers`, in document order, each as its rows' dicts."""
        return [[dict(zip(head, row, strict=True)) for row in rows] for head, rows in self.tables
                if head[:len(headers)] == list(headers)]


class _Reader(HTMLParser):
    def __init__(self, out: Rendered) -> None:
        super().__init__(convert_charrefs=True)
        self.out, self.cell, self.row, self.heading, self.item = out, None, None, None, None
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.out.tags.add(tag)
        if tag == "table":
            self.out.tables.append(([], []))
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = ""
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.heading = (int(tag[1]), "")
        elif tag == "li":
            self.item = ""

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            head, rows = self.out.tables[-1]
            if not head:
                head.extend(self.row)
            else:
                rows.append(self.row)
            self.row = None
        elif tag.startswith("h") and tag[1:].isdigit() and self.heading is not None:
            self.out.headings.append((self.heading[0], self.heading[1].strip()))
            self.heading = None
        elif tag == "li" and self.item is not None:
            self.out.items.append(self.item.strip())
            self.item = None

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self.cell is not None:
            self.cell += data
        if self.heading is not None:
            self.heading = (self.heading[0], self.heading[1] + data)
        if self.item is not None:
            self.item += data


def render_markdown(markdown: str) -> Rendered:
    """`markdown` rendered by markdown-it-py's CommonMark preset with tables, and read back."""
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    out = Rendered(html)
    reader = _Reader(out)
    reader.feed(html)
    out.text = "".join(reader.texts)
    return out
