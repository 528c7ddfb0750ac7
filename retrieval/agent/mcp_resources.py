"""`knowledge://{source}` resources: a source's URI, the check that a source belongs to the base, and
the full entry as Markdown.

Sources hold `/` (`api/api-tokens.md`), which a single-segment `{source}` template variable does not
match, so URIs percent-encode the whole source (RFC 6570 simple expansion). The entry is rendered from
the loaded index, never read from disk, so a source can only name an entry of the base.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import quote

from retrieval.kb.model import Entry, KnowledgeBase

SCHEME = "knowledge://"
URI_TEMPLATE = SCHEME + "{source}"


class SourceRefused(ValueError):
    """A resource asked for a source that is not an entry of the knowledge base."""


def resource_uri(source: str) -> str:
    """`knowledge://` + the source percent-encoded (`/` too), as `{source}` expands in RFC 6570."""
    return SCHEME + quote(source, safe="")


def find_entry(kb: KnowledgeBase, source: str) -> Entry:
    """The entry of `source`; a path outside the base or an unknown source raises `SourceRefused`."""
    entry = kb.entry(source)
    if entry is not None:
        return entry
    parts = PurePosixPath(source.replace("\\", "/")).parts
    if "\0" in source or source.startswith(("/", "\\")) or ".." in parts:
        raise SourceRefused(f"source {source!r} is outside the knowledge base; read the `resource_uri` of an "
                            f"evidence block from lookup_knowledge")
    raise SourceRefused(f"unknown source {source!r}: no entry of the knowledge base has it; read the "
                        f"`resource_uri` of an evidence block from lookup_knowledge")


def render_entry(entry: Entry) -> str:
    """The whole entry as Markdown: title, its L0 fields, then every section under its heading."""
    lines = [f"# {entry.title or entry.source}", "", f"source: {entry.source}"]
    for name, values in (("categories", entry.categories), ("keywords", entry.keywords),
                         ("entities", entry.entities)):
        if values:
            lines.append(f"{name}: {', '.join(values)}")
    for position, chunk in enumerate(entry.chunks):
        heading = chunk.breadcrumb.split(" > ")
        if position > 0 and len(heading) > 1:
            lines += ["", f"{'#' * min(len(heading), 6)} {heading[-1]}"]
        if chunk.text.strip():
            lines += ["", chunk.text.strip()]
    if not entry.chunks and entry.description:
        lines += ["", entry.description]
    return "\n".join(lines) + "\n"
