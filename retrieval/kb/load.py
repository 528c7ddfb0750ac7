"""Loading a knowledge base: Markdown folders (front matter + headings) or BEIR JSONL -> entries and chunks.

`exclude_paths` leaves whole folders or
files out (see retrieval.kb.exclusions: Markdown files under a prefix are never read; JSONL records whose
`_id` starts with a prefix are skipped).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrieval.kb.exclusions import ExcludePathError, is_excluded_id, normalize_prefixes
from retrieval.kb.files import FileSkipped, LoadProblem, decode_text, list_markdown, read_regular_file
from retrieval.kb.jsonl import JsonlRecord, read_records
from retrieval.kb.markdown import FrontMatterError, first_heading, split_front_matter, split_sections
from retrieval.kb.model import Chunk, Entry, KnowledgeBase, KnowledgeBaseError, dedupe
from retrieval.text.analysis import normalize_label

CATEGORY_FIELDS = ("categories", "category", "domain", "domains")
KEYWORD_FIELDS = ("keywords", "tags")


def load_knowledge_base(path: str | Path, *, strict: bool = False, exclude_fields: Iterable[str] = (),
                        exclude_paths: Iterable[str] = (), max_chunk_words: int = 350) -> KnowledgeBase:
    """Load a Markdown folder or a BEIR-style JSONL file/folder (`corpus.jsonl`).

    `exclude_fields` are front-matter/metadata fields never indexed; `exclude_paths` are path prefixes
    relative to the root whose files are not read at all (JSONL: `_id` prefixes). A prefix that is
    absolute or contains `..` raises KnowledgeBaseError.
    """
    root = Path(path)
    prefixes = exclude_prefixes(exclude_paths)
    if not root.exists():
        raise KnowledgeBaseError(f"knowledge base not found: {root}; pass --kb with a folder of Markdown "
                                 f"files or a corpus.jsonl")
    excluded = frozenset(exclude_fields)
    if root.is_file() and root.suffix == ".jsonl":
        return _load_jsonl(root, excluded, prefixes, max_chunk_words)
    if root.is_dir() and (root / "corpus.jsonl").is_file():
        return _load_jsonl(root / "corpus.jsonl", excluded, prefixes, max_chunk_words)
    if not root.is_dir():
        raise KnowledgeBaseError(f"not a folder or .jsonl file: {root}")
    return _load_markdown(root, strict, excluded, prefixes, max_chunk_words)


def exclude_prefixes(exclude_paths: Iterable[str] | str) -> tuple[str, ...]:
    """`exclude_paths` validated and normalised (sorted, no trailing `/`); a bad one raises KnowledgeBaseError."""
    try:
        return normalize_prefixes(exclude_paths)
    except ExcludePathError as exc:
        raise KnowledgeBaseError(str(exc)) from None


def fingerprint(path: str | Path, *, exclude_fields: Iterable[str] = (), exclude_paths: Iterable[str] = (),
                max_chunk_words: int = 350) -> str:
    """Hash of everything a load reads (paths, bytes, options): the key of the on-disk index cache."""
    root = Path(path)
    prefixes = exclude_prefixes(exclude_paths)
    if root.is_dir() and (root / "corpus.jsonl").is_file():
        root = root / "corpus.jsonl"
    digest = hashlib.sha256(_options(exclude_fields, prefixes, max_chunk_words))
    if root.is_file():
        digest.update(_jsonl_bytes(root))
        return digest.hexdigest()
    for file in list_markdown(root, prefixes).files:
        source = file.relative_to(root).as_posix()
        digest.update(_digest_part(source, _file_bytes(file, source)[0]))
    return digest.hexdigest()


def _file_bytes(file: Path, source: str) -> tuple[bytes, LoadProblem | None]:
    """A file's bytes, read once for both the fingerprint and the load; or a marker and why it is unreadable."""
    try:
        return read_regular_file(file, source), None
    except FileSkipped as exc:
        return b"\0unreadable:" + exc.problem.message.encode(), exc.problem


def _digest_part(source: str, content: bytes) -> bytes:
    return source.encode("utf-8", "surrogateescape") + b"\0" + content + b"\0"


def _jsonl_bytes(path: Path) -> bytes:
    try:  # a corpus is one file: no size limit beyond memory, but a FIFO or a folder is refused
        return read_regular_file(path, path.name, max_bytes=1 << 40)
    except FileSkipped as exc:
        raise KnowledgeBaseError(f"cannot read the JSONL corpus {path}: {exc.problem.message}") from None


def markdown_sources(root: str | Path, *, exclude_paths: Iterable[str] = ()) -> list[str]:
    """The sources (relative paths) a Markdown load of `root` would read, without reading any file."""
    base = Path(root)
    return [f.relative_to(base).as_posix() for f in list_markdown(base, exclude_prefixes(exclude_paths)).files]


def _options(exclude_fields: Iterable[str], prefixes: tuple[str, ...], max_words: int) -> bytes:
    # no prefixes hashes as before, so caches built without exclusions stay valid
    options = (sorted(exclude_fields), max_words, *((list(prefixes),) if prefixes else ()))
    return repr(options).encode()


def _load_markdown(root: Path, strict: bool, excluded: frozenset[str], prefixes: tuple[str, ...],
                   max_words: int) -> KnowledgeBase:
    listing = list_markdown(root, prefixes)
    digest = hashlib.sha256(_options(excluded, prefixes, max_words))
    entries, problems = [], list(listing.problems)
    for file in listing.files:
        source = file.relative_to(root).as_posix()
        raw, unreadable = _file_bytes(file, source)
        digest.update(_digest_part(source, raw))
        if unreadable is not None:
            problems.append(unreadable)
            continue
        try:
            entries.append(parse_markdown_entry(source, decode_text(raw, source), excluded, max_words))
        except FrontMatterError as exc:
            problems.append(LoadProblem(exc.path, exc.line, exc.problem))
        except FileSkipped as exc:
            problems.append(exc.problem)
    if strict and problems:
        first = problems[0]
        raise KnowledgeBaseError(f"{first.path}:{first.line}: {first.message} (strict mode; fix the file or "
                                 f"load without --strict to skip it)")
    if not listing.files and not listing.problems:
        left_out = f" outside the excluded paths {', '.join(prefixes)}" if prefixes else ""
        raise KnowledgeBaseError(f"no Markdown files (*.md) under {root}{left_out}")
    return KnowledgeBase(str(root), tuple(entries), tuple(problems), digest.hexdigest(),
                         len(listing.files) + len(listing.problems), prefixes, listing.excluded)


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


def _load_jsonl(path: Path, excluded: frozenset[str], prefixes: tuple[str, ...], max_words: int) -> KnowledgeBase:
    raw = _jsonl_bytes(path)
    digest = hashlib.sha256(_options(excluded, prefixes, max_words) + raw)
    entries, problems, skipped = [], [], 0
    for item in read_records(raw, path.name):
        if not isinstance(item, JsonlRecord):
            problems.append(item)
        elif prefixes and is_excluded_id(str(item.record["_id"]), prefixes):
            skipped += 1
        else:
            entries.append(jsonl_entry(item.record, excluded, max_words))
    return KnowledgeBase(str(path), tuple(entries), tuple(problems), digest.hexdigest(),
                         len(entries) + len(problems), prefixes, skipped)


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
