"""The knowledge base's model: entries, their heading-level chunks, and the base that holds them.

Source identity is the file path relative to the knowledge-base root (or the JSONL `_id`); it is
what deduplication, evaluation labels and traces all key on.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from retrieval.kb.files import LoadProblem
from retrieval.text.analysis import normalize_label


class KnowledgeBaseError(ValueError):
    """The knowledge base cannot be loaded as asked (missing folder, no entries, strict-mode error)."""


class KnowledgeBaseNotFound(KnowledgeBaseError):
    """No file or folder at `path`. The message is the library's (what to pass to the function); a command line
    or a page says it with its own flag or field (`with_flag`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        super().__init__(f"knowledge base not found: {self.path}{self.relative_to()}; pass the path of a folder of "
                         f"Markdown files or a corpus.jsonl, e.g. open_index(\"/path/to/kb\") or "
                         f"load_knowledge_base(\"/path/to/kb\")")

    def relative_to(self) -> str:
        """' (relative to the working folder …)' for a relative path, which is read from there; else ''."""
        return "" if self.path.is_absolute() else f" (relative to the working folder {Path.cwd()})"

    def with_flag(self, flag: str) -> str:
        """The same finding worded for a command line whose `flag` names the knowledge base (`--kb`)."""
        return (f"knowledge base not found: {self.path}{self.relative_to()}; pass {flag} with a folder of Markdown "
                f"files or a corpus.jsonl")


@dataclass(frozen=True)
class Chunk:
    """A heading-level section of one entry: what L1 indexes and what evidence content comes from."""

    source: str
    position: int
    title: str
    breadcrumb: str
    text: str
    domains: tuple[str, ...]

    @property
    def chunk_id(self) -> str:
        return f"{self.source}#{self.position}"

    @classmethod
    def stored(cls, source: str, position: int, title: str, domains: tuple[str, ...], store: Any, row: int) -> Chunk:
        """A chunk of a chunk store (chunk_store.ChunkStore) whose breadcrumb and text are decoded from
        `store`'s row `row` when first read: opening a cached index reads every page's first chunk for its
        source and domains, and decoding the texts of 100k one-chunk pages doubled that work. Equal to,
        and hashing and pickling as, the chunk built with every field."""
        chunk = object.__new__(cls)
        fields = chunk.__dict__  # written directly (a frozen dataclass refuses setattr): 40% faster than __init__
        fields["source"] = source
        fields["position"] = position
        fields["title"] = title
        fields["domains"] = domains
        fields["_store"] = store
        fields["_row"] = row
        return chunk

    def __getattr__(self, name: str) -> Any:  # only reached for an attribute the chunk does not hold
        fields = self.__dict__
        if "_store" not in fields or name not in ("breadcrumb", "text"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        store = fields["_store"]
        value = fields[name] = (store.breadcrumbs if name == "breadcrumb" else store.texts)[fields["_row"]]
        return value

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _CHUNK_FIELDS}


_CHUNK_FIELDS = ("source", "position", "title", "breadcrumb", "text", "domains")


@dataclass(frozen=True)
class Entry:
    """One knowledge entry (a Markdown file or a JSONL record) with its L0 fields and its chunks."""

    source: str
    title: str
    categories: tuple[str, ...]
    keywords: tuple[str, ...]
    entities: tuple[str, ...]
    description: str
    chunks: tuple[Chunk, ...]

    @cached_property
    def domains(self) -> tuple[str, ...]:
        """Categories compared the way filters compare them: case-folded, spaces collapsed, deduplicated
        (computed once: a lookup reads it for every matched entry and evidence block)."""
        return dedupe(normalize_label(c) for c in self.categories)


class EntrySequence(Sequence[Entry]):
    """Entries held some other way than as a tuple of `Entry` objects (a cached base's columns,
    entry_columns.EntryColumns): an `Entry` is built when read, and what a whole base is asked for (an entry
    by source, the chunk count, the domains) is answered without building them all."""

    @abstractmethod
    def find(self, source: str) -> Entry | None:
        """The entry with this source, or None."""

    @abstractmethod
    def chunk_count(self) -> int:
        """The number of chunks of all entries."""

    @abstractmethod
    def domains(self) -> set[str]:
        """The domains of all entries."""

    @abstractmethod
    def all_chunks(self) -> Sequence[Chunk]:
        """Every entry's chunks, in order."""

    def __eq__(self, other: object) -> bool:  # equal to any sequence of the same entries, as a tuple is
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))


@dataclass(frozen=True)
class KnowledgeBase:
    """Loaded entries plus what the load skipped and a fingerprint of the inputs (the index cache key).
    `entries` is a tuple when the base was read from its files, an EntrySequence when it came from the
    index cache (entries built as they are read)."""

    root: str
    entries: tuple[Entry, ...] | EntrySequence
    problems: tuple[LoadProblem, ...] = ()
    fingerprint: str = ""
    files_seen: int = 0
    excluded_paths: tuple[str, ...] = ()
    files_excluded: int = 0
    _by_source: dict[str, Entry] = field(default_factory=dict, repr=False, compare=False)
    _sources: Any = field(default=None, repr=False, compare=False)  # what the load read (kb.sources.SourceTable)

    def __post_init__(self) -> None:
        if not isinstance(self.entries, EntrySequence):
            self._by_source.update({e.source: e for e in self.entries})

    @property
    def source_table(self) -> Any:
        """What the load read, file by file or line by line (kb.sources.SourceTable; None when unknown)."""
        return self._sources

    @property
    def chunks(self) -> Sequence[Chunk]:
        if isinstance(self.entries, EntrySequence):
            return self.entries.all_chunks()
        return [c for e in self.entries for c in e.chunks]

    @property
    def chunk_count(self) -> int:
        if isinstance(self.entries, EntrySequence):
            return self.entries.chunk_count()
        return sum(len(e.chunks) for e in self.entries)

    def domains(self) -> list[str]:
        """Every entry's domains, sorted."""
        if isinstance(self.entries, EntrySequence):
            return sorted(self.entries.domains())
        return sorted({d for e in self.entries for d in e.domains})

    def entry(self, source: str) -> Entry | None:
        if isinstance(self.entries, EntrySequence):
            return self.entries.find(source)
        return self._by_source.get(source)

    def summary(self) -> dict[str, Any]:
        """Counts and skipped files, for the CLI, the app and logs."""
        return {"root": self.root, "files_seen": self.files_seen, "entries": len(self.entries),
                "excluded_paths": list(self.excluded_paths), "files_excluded": self.files_excluded,
                "chunks": self.chunk_count, "domains": self.domains(),
                "skipped_count": len(self.problems), "skipped": [p.__dict__ for p in self.problems]}


def dedupe(values: Iterable[str], key=lambda v: v) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(key(value), value)
    return tuple(seen.values())
