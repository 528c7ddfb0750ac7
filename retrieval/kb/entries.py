"""A knowledge-base file or record as an Entry: front matter and headings (Markdown) or a BEIR record (JSONL),
cut into chunks of at most `max_chunk_words` words."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrieval.kb.markdown import first_heading, split_front_matter, split_sections
from retrieval.kb.model import Chunk, Entry, dedupe
from retrieval.text.analysis import normalize_label

CATEGORY_FIELDS = ("categories", "category", "domain", "domains")
KEYWORD_FIELDS = ("keywords", "tags")


def parse_markdown_entry(source: str, text: str, exclude_fields: frozenset[str] = frozenset(),
                         max_chunk_words: int = 350) -> Entry:
    """One Markdown file -> Entry; raises FrontMatterError naming the file and line on broken front matter."""
    meta, body, _ = split_front_matter(text, source)
    meta = {k: v for k, v in meta.items() if k not in exclude_fields}
    title = _text(meta.get("title")) or first_heading(body) or _title_from_path(source)
    categories = _labels(meta, CATEGORY_FIELDS)
    description = _text(meta.get("description"))
    sections = [(s.headings[1:] if s.levels[:1] == (1,) else s.headings, s.body) for s in split_sections(body)]
    if description and sections and sections[0][0] == ():  # the summary opens the intro section
        sections[0] = ((), f"{description}\n\n{sections[0][1]}".strip())
    elif description:
        sections.insert(0, ((), description))
    return _entry(source, title, categories, _labels(meta, KEYWORD_FIELDS), _labels(meta, ("entities",)),
                  description, sections, max_chunk_words)


def jsonl_entry(record: Mapping[str, Any], excluded: frozenset[str] = frozenset(), max_words: int = 350) -> Entry:
    """A BEIR record (`_id`, `title`, `text`, `metadata`) -> Entry; metadata may carry category/keywords/entities."""
    meta = {k: v for k, v in dict(record.get("metadata") or {}).items() if k not in excluded}
    source = str(record["_id"])
    title = _text(record.get("title")) if "title" not in excluded else ""
    return _entry(source, title, _labels(meta, CATEGORY_FIELDS), _labels(meta, KEYWORD_FIELDS),
                  _labels(meta, ("entities",)), _text(meta.get("description")),
                  [((), _text(record.get("text")))], max_words)


def _entry(source: str, title: str, categories: tuple[str, ...], keywords: tuple[str, ...],
           entities: tuple[str, ...], description: str, sections: list[tuple[tuple[str, ...], str]],
           max_words: int) -> Entry:
    domains = dedupe(normalize_label(c) for c in categories)
    chunks: list[Chunk] = []
    for headings, body in sections:
        parts = _split_long(body, max_words)
        for number, part in enumerate(parts, start=1):
            crumb = " > ".join((title or source, *headings))
            if len(parts) > 1:
                crumb += f" (part {number})"
            chunks.append(Chunk(source, len(chunks), title, crumb, part, domains))
    if not chunks:
        chunks.append(Chunk(source, 0, title, title or source, "", domains))
    return Entry(source, title, categories, keywords, entities, description, tuple(chunks))


def _split_long(body: str, max_words: int) -> list[str]:
    """Split a section over `max_words` at paragraph breaks (or sentence ends inside an over-long
    paragraph) so one chunk does not dilute the others."""
    if not body.strip():
        return []
    if len(body.split()) <= max_words:
        return [body]
    parts: list[str] = []
    current, count, last_paragraph = "", 0, -1
    for paragraph, piece in _pieces(body, max_words):
        words = len(piece.split())
        if current and count + words > max_words:
            parts.append(current)
            current, count = "", 0
        joiner = " " if paragraph == last_paragraph else "\n\n"
        current = f"{current}{joiner}{piece}" if current else piece
        count, last_paragraph = count + words, paragraph
    parts.append(current)
    return parts


def _pieces(body: str, max_words: int) -> list[tuple[int, str]]:
    """(paragraph number, text): paragraphs, with one over `max_words` broken at sentence ends or words."""
    pieces: list[tuple[int, str]] = []
    for number, paragraph in enumerate(body.split("\n\n")):
        if len(paragraph.split()) <= max_words:
            pieces.append((number, paragraph))
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
            words = sentence.split()
            pieces.extend((number, " ".join(words[i:i + max_words])) for i in range(0, len(words), max_words))
    return pieces


def _labels(meta: Mapping[str, Any], fields: Iterable[str]) -> tuple[str, ...]:
    values: list[str] = []
    for name in fields:
        value = meta.get(name)
        items = value if isinstance(value, (list, tuple)) else [value]
        # a label is a scalar: nested lists and mappings (`categories: {a: 1}`) are not labels
        values.extend(" ".join(str(v).split()) for v in items
                      if v is not None and not isinstance(v, (dict, list, tuple)) and str(v).strip())
    return dedupe(values, key=normalize_label)


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):  # `title: [a, b]` reads as "a b"; a mapping is no text
        return " ".join(_text(v) for v in value if not isinstance(v, (dict, list, tuple))).strip()
    return " ".join(str(value).split()) if value is not None and not isinstance(value, dict) else ""


def _title_from_path(source: str) -> str:
    path = Path(source)
    stem = path.parent.name if path.stem in ("_index", "index") and path.parent.name else path.stem
    words = stem.replace("-", " ").replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else source
