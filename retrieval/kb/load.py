"""Loading a knowledge base: Markdown folders (front matter + headings) or BEIR JSONL -> entries and chunks.

`exclude_paths` leaves whole folders or
files out (see retrieval.kb.exclusions: Markdown files under a prefix are never read; JSONL records whose
`_id` starts with a prefix are skipped). The reading itself, and the reading of only what changed since an
earlier load (`read_changes`), is retrieval/kb/reading.py; an entry's parsing, retrieval/kb/entries.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from retrieval.kb.entries import jsonl_entry, parse_markdown_entry
from retrieval.kb.exclusions import ExcludePathError, normalize_prefixes
from retrieval.kb.files import list_markdown
from retrieval.kb.model import KnowledgeBase, KnowledgeBaseError, KnowledgeBaseNotFound
from retrieval.kb.reading import (
    Prior,
    Reading,
    file_bytes,
    fingerprint_part,
    jsonl_bytes,
    options_bytes,
    read_jsonl,
    read_markdown,
)
from retrieval.kb.sources import digest

__all__ = ["exclude_prefixes", "fingerprint", "jsonl_entry", "load_knowledge_base", "markdown_sources",
           "parse_markdown_entry", "read_changes"]


def load_knowledge_base(path: str | Path, *, strict: bool = False, exclude_fields: Iterable[str] = (),
                        exclude_paths: Iterable[str] = (), max_chunk_words: int = 350) -> KnowledgeBase:
    """Load a Markdown folder or a BEIR-style JSONL file/folder (`corpus.jsonl`).

    `exclude_fields` are front-matter/metadata fields never indexed; `exclude_paths` are path prefixes
    relative to the root whose files are not read at all (JSONL: `_id` prefixes). A prefix that is
    absolute or contains `..` raises KnowledgeBaseError.
    """
    prefixes = exclude_prefixes(exclude_paths)
    reading, root = read_changes(path, None, strict=strict, exclude_fields=exclude_fields,
                                 exclude_paths=prefixes, max_chunk_words=max_chunk_words)
    entries = tuple(item for item in reading.items if not isinstance(item, int))
    return KnowledgeBase(root, entries, reading.problems, reading.fingerprint, reading.files_seen, prefixes,
                         reading.files_excluded, _sources=reading.table)


def read_changes(path: str | Path, prior: Prior | None, *, strict: bool = False, exclude_fields: Iterable[str] = (),
                 exclude_paths: Iterable[str] = (), max_chunk_words: int = 350,
                 stats: Mapping[str, bytes] | None = None) -> tuple[Reading, str]:
    """Read the base at `path` as `load_knowledge_base` does, parsing only what `prior` (what an earlier load
    with the same options read) did not read as it is now; the reading and the base's root."""
    root = Path(path)
    prefixes = exclude_prefixes(exclude_paths)
    if not root.exists():
        raise KnowledgeBaseNotFound(root)
    excluded = frozenset(exclude_fields)
    if root.is_file() and root.suffix == ".jsonl":
        return read_jsonl(root, excluded, prefixes, max_chunk_words, prior), str(root)
    if root.is_dir() and (root / "corpus.jsonl").is_file():
        return read_jsonl(root / "corpus.jsonl", excluded, prefixes, max_chunk_words, prior), str(root / "corpus.jsonl")
    if not root.is_dir():
        raise KnowledgeBaseError(f"not a folder or .jsonl file: {root}")
    reading = read_markdown(root, excluded, prefixes, max_chunk_words, prior, stats)
    if strict and reading.problems:
        first = reading.problems[0]
        raise KnowledgeBaseError(f"{first.path}:{first.line}: {first.message} (strict mode; fix the file, or "
                                 f"load without strict mode to skip it)")
    if not reading.files_seen:
        left_out = f" outside the excluded paths {', '.join(prefixes)}" if prefixes else ""
        raise KnowledgeBaseError(f"no Markdown files (*.md) under {root}{left_out}")
    return reading, str(root)


def exclude_prefixes(exclude_paths: Iterable[str] | str) -> tuple[str, ...]:
    """`exclude_paths` validated and normalised (sorted, no trailing `/`); a bad one raises KnowledgeBaseError."""
    try:
        return normalize_prefixes(exclude_paths)
    except ExcludePathError as exc:
        raise KnowledgeBaseError(str(exc)) from None


def fingerprint(path: str | Path, *, exclude_fields: Iterable[str] = (), exclude_paths: Iterable[str] = (),
                max_chunk_words: int = 350) -> str:
    """Hash of everything a load reads (paths, bytes, options): what `KnowledgeBase.fingerprint` holds. A
    Markdown base hashes each file's name and the XXH3-128 of its bytes, so a load that reads only the
    changed files computes it too."""
    root = Path(path)
    prefixes = exclude_prefixes(exclude_paths)
    if root.is_dir() and (root / "corpus.jsonl").is_file():
        root = root / "corpus.jsonl"
    options = options_bytes(exclude_fields, prefixes, max_chunk_words)
    if root.is_file():
        return hashlib.sha256(options + jsonl_bytes(root)).hexdigest()
    hashed = hashlib.sha256(options)
    listing = list_markdown(root, prefixes)
    for full, source in zip(listing.paths, listing.sources, strict=True):
        hashed.update(fingerprint_part(source, digest(file_bytes(Path(full), source)[0])))
    return hashed.hexdigest()


def markdown_sources(root: str | Path, *, exclude_paths: Iterable[str] = ()) -> list[str]:
    """The sources (relative paths) a Markdown load of `root` would read, without reading any file."""
    return list(list_markdown(Path(root), exclude_prefixes(exclude_paths)).sources)
