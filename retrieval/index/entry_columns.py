"""Entries held column-wise, an `Entry` built only when read: a BEIR-shaped base has one entry per document, and
building every `Entry` at load cost seconds; an entry is found by source through a sorted hash array (TermIndex)."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import numpy as np

from retrieval.index.chunk_store import LABEL_KINDS, ChunkRows, ChunkStore, EntryHeads, TextColumn, int_view
from retrieval.kb.model import Chunk, Entry, EntrySequence
from retrieval.l1.terms import TermIndex

RECENT_ENTRIES = 4096  # entries kept once built: a lookup reads the same few entries in L0, evidence and details




@dataclass(frozen=True, eq=False)
class EntryColumns(EntrySequence):
    """A knowledge base's entries as columns over its chunk store; `Entry` objects are built when read.

    `labels` holds every entry's categories, keywords, entities and domains (LABEL_KINDS), entry by entry:
    kind k of entry i is labels[label_starts[4i + k]:label_starts[4i + k + 1]]. The chunks of entry i are the
    store's rows chunk_starts[i]:chunk_starts[i + 1]. `sources` is searched through `source_hashes` (sorted)
    and `source_ids`, as terms.TermIndex searches a vocabulary."""

    sources: TextColumn
    titles: TextColumn
    descriptions: TextColumn
    labels: TextColumn
    label_starts: np.ndarray
    source_hashes: np.ndarray
    source_ids: np.ndarray
    chunk_starts: np.ndarray
    store: ChunkStore

    @classmethod
    def columns_of(cls, entries: Sequence[Entry]) -> dict[str, np.ndarray]:
        """The arrays that hold `entries` (what the index cache writes; `of_arrays` reads them back)."""
        labels: list[str] = []
        counts: list[int] = []
        for e in entries:
            for kind in (e.categories, e.keywords, e.entities, e.domains):
                labels.extend(kind)
                counts.append(len(kind))
        sources = [e.source for e in entries]
        index = TermIndex.of(sources)
        columns = {"source": TextColumn.of(sources), "title": TextColumn.of([e.title for e in entries]),
                   "description": TextColumn.of([e.description for e in entries]), "label": TextColumn.of(labels)}
        arrays = {f"entry_{name}_{part}": getattr(column, part)
                  for name, column in columns.items() for part in ("blob", "offsets")}
        return {**arrays, "entry_label_starts": np.r_[0, np.cumsum(counts, dtype=np.int64)].astype(np.int64),
                "entry_source_hashes": index.hashes, "entry_source_ids": index.ids,
                "entry_chunk_starts": np.r_[0, np.cumsum([len(e.chunks) for e in entries], dtype=np.int64)]
                .astype(np.int64)}

    @classmethod
    def of_arrays(cls, arrays: dict[str, np.ndarray], entry_of: np.ndarray, position: np.ndarray,
                  breadcrumbs: TextColumn, texts: TextColumn) -> EntryColumns:
        """The entries and their chunk store from `columns_of`'s arrays and the chunk columns; ValueError
        unless every array fits the others (counts, offsets and positions in range, chunks in entry order)."""
        def column(name: str) -> TextColumn:
            return TextColumn(arrays[f"entry_{name}_blob"], arrays[f"entry_{name}_offsets"])

        sources, titles, descriptions, labels = (column(n) for n in ("source", "title", "description", "label"))
        n = len(sources.offsets) - 1
        for name, text_column in (("source", sources), ("title", titles), ("description", descriptions)):
            text_column.check(n, f"entry {name}")
        labels.check(None, "entry label")
        label_starts, chunk_starts = arrays["entry_label_starts"], arrays["entry_chunk_starts"]
        hashes, ids = arrays["entry_source_hashes"], arrays["entry_source_ids"]
        check_starts(label_starts, len(LABEL_KINDS) * n, len(labels), "label")
        n_chunks = len(entry_of)
        check_starts(chunk_starts, n, n_chunks, "chunk")
        if len(position) != n_chunks:
            raise ValueError("chunk columns disagree on the number of chunks")
        for text_column, name in ((breadcrumbs, "breadcrumb"), (texts, "text")):
            text_column.check(n_chunks, name)
        if not np.array_equal(entry_of, np.repeat(np.arange(n, dtype=entry_of.dtype), np.diff(chunk_starts))):
            raise ValueError("the chunks are not in the order of their entries")
        if len(hashes) != n or len(ids) != n or (
                n and (ids.min() < 0 or ids.max() >= n or np.any(np.diff(hashes) < 0))):
            raise ValueError("the entry source index is out of range or unsorted")
        store = ChunkStore(EntryHeads(sources, titles, labels, label_starts), entry_of, position, breadcrumbs, texts)
        return cls(sources, titles, descriptions, labels, label_starts, hashes, ids, chunk_starts, store)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays that hold these entries, as `columns_of` gives them (without building an entry)."""
        columns = {"source": self.sources, "title": self.titles, "description": self.descriptions,
                   "label": self.labels}
        return {**{f"entry_{name}_{part}": getattr(column, part)
                   for name, column in columns.items() for part in ("blob", "offsets")},
                "entry_label_starts": self.label_starts, "entry_source_hashes": self.source_hashes,
                "entry_source_ids": self.source_ids, "entry_chunk_starts": self.chunk_starts}

    def __len__(self) -> int:
        return len(self.sources)

    @overload
    def __getitem__(self, i: int) -> Entry: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Entry]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        i = operator.index(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("entry index out of range")
        recent = self._recent
        entry = recent.get(i)
        if entry is None:
            if len(recent) >= RECENT_ENTRIES:
                recent.clear()
            entry = recent[i] = self._build(i)
        return entry

    @cached_property
    def _recent(self) -> dict[int, Entry]:
        return {}

    def _build(self, i: int) -> Entry:
        starts = self._label_bounds[4 * i:4 * i + 5].tolist()
        first = starts[0]
        labels = [self.labels[j] for j in range(first, starts[4])]
        kinds = [tuple(labels[a - first:b - first]) for a, b in zip(starts, starts[1:], strict=False)]
        chunks = self._chunk_bounds
        return Entry(self.sources[i], self.titles[i], kinds[0], kinds[1], kinds[2], self.descriptions[i],
                     ChunkRows(self.store, np.arange(chunks[i], chunks[i + 1])))

    @cached_property
    def _label_bounds(self) -> memoryview:
        return int_view(self.label_starts)

    @cached_property
    def _chunk_bounds(self) -> memoryview:
        return int_view(self.chunk_starts)

    def __iter__(self) -> Iterator[Entry]:
        recent = self._recent  # a pass over every entry builds them without filling (and emptying) `_recent`
        return (recent.get(i) or self._build(i) for i in range(len(self)))

    def find(self, source: str) -> Entry | None:
        i = self._source_index.get(source)
        return self[i] if i >= 0 else None

    def index_of(self, source: str) -> int:
        """The position of the entry with this source (-1: none)."""
        return self._source_index.get(source)

    @cached_property
    def _source_index(self) -> TermIndex:
        return TermIndex(self.sources, self.source_hashes, self.source_ids)

    def chunk_count(self) -> int:
        return len(self.store)

    def domains(self, live: np.ndarray | None = None) -> set[str]:
        """The domains of every entry (`live`: of the entries where it is True)."""
        # the kind of each label: its slot (4 * entry + kind) is the last start at or before it
        slots = np.searchsorted(self.label_starts, np.arange(len(self.labels)), side="right") - 1
        wanted = slots % len(LABEL_KINDS) == LABEL_KINDS.index("domains")
        if live is not None:
            wanted &= live[slots // len(LABEL_KINDS)]
        return set(self.labels.take(np.flatnonzero(wanted)))

    def all_chunks(self) -> Sequence[Chunk]:
        return ChunkRows(self.store, np.arange(len(self.store)))

    def __repr__(self) -> str:
        return f"EntryColumns({len(self)} entries)"


def check_starts(starts: np.ndarray, count: int, size: int, name: str) -> None:
    if (starts.ndim != 1 or len(starts) != count + 1 or starts[0] != 0 or starts[-1] != size
            or np.any(starts[1:] < starts[:-1])):
        raise ValueError(f"the entry {name} positions do not fit")
