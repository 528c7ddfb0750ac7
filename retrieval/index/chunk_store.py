"""Chunks held column-wise (UTF-8 blobs plus offsets), made into objects only when read.

A cached index loads its texts as arrays instead of decoding JSON and building every chunk up front; a
lookup then touches only the few chunks it returns. Entries are held the same way
(retrieval/index/entry_columns.py).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import numpy as np

from retrieval.kb.model import Chunk, Entry
from retrieval.storage.spill import IN_MEMORY, Spill
from retrieval.storage.text_column import TextColumn, int_view

LABEL_KINDS = ("categories", "keywords", "entities", "domains")  # an entry's labels, in this order


def indexable(chunk: Chunk) -> bool:
    """L1 indexes chunks with some text or a breadcrumb."""
    return bool(chunk.text.strip() or chunk.breadcrumb.strip())


@dataclass(frozen=True, eq=False)
class ChunkStore:
    """Every chunk of a knowledge base: its entry (index into `heads`: source, title, domains), position,
    breadcrumb and text."""

    heads: Sequence[tuple[str, str, tuple[str, ...]]]  # a tuple, or EntryHeads over a cached base's columns
    entry_of: np.ndarray
    position: np.ndarray
    breadcrumbs: TextColumn
    texts: TextColumn

    def chunk(self, i: int) -> Chunk:
        """Chunk `i`, its breadcrumb and text decoded when first read (see Chunk.stored)."""
        i = int(i)
        source, title, domains = self._head_list[self._entry_ints[i]]
        return Chunk.stored(source, self._position_ints[i], title, domains, self, i)

    # opening an index reads a chunk of every page (one per entry in a BEIR-shaped base): these give Python ints and
    # tuples without numpy's per-scalar overhead or a method call per head
    @cached_property
    def _head_list(self) -> Sequence[tuple[str, str, tuple[str, ...]]]:
        return self.heads.decoded() if isinstance(self.heads, EntryHeads) else self.heads

    @cached_property
    def _entry_ints(self) -> memoryview:
        return int_view(self.entry_of)

    @cached_property
    def _position_ints(self) -> memoryview:
        return int_view(self.position)

    def heads_at(self, indices: np.ndarray) -> list[tuple[str, str, tuple[str, ...]]]:
        """(source, title, domains) of the chunks at `indices`, without building the chunks."""
        heads = self._head_list
        return [heads[e] for e in self.entry_of[indices].tolist()]

    def take(self, indices: np.ndarray) -> list[Chunk]:
        """The chunks at `indices`, built in one pass."""
        heads = self.heads_at(indices)
        return [Chunk(source, position, title, breadcrumb, text, domains) for (source, title, domains), position,
                breadcrumb, text in zip(heads, self.position[indices].tolist(), self.breadcrumbs.take(indices),
                                        self.texts.take(indices), strict=True)]

    @classmethod
    def of(cls, entries: Sequence[Entry], spill: Spill = IN_MEMORY) -> ChunkStore:
        """The store of `entries`' chunks, in order (their text columns' blobs go to `spill` when large)."""
        chunks = [c for e in entries for c in e.chunks]
        entry_of = np.repeat(np.arange(len(entries), dtype=np.int32), [len(e.chunks) for e in entries])
        return cls(tuple((e.source, e.title, e.domains) for e in entries), entry_of,
                   np.asarray([c.position for c in chunks], dtype=np.int32),
                   TextColumn.of([c.breadcrumb for c in chunks], spill), TextColumn.of([c.text for c in chunks], spill))

    def __len__(self) -> int:
        return len(self.entry_of)


class ChunkSequence(Sequence[Chunk]):
    """Chunks of column stores by position, a `Chunk` built per access; equal to any sequence of the same chunks."""

    @abstractmethod
    def chunk_at(self, i: int) -> Chunk:
        """The chunk at position `i` (negative: from the end)."""

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Chunk]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self.chunk_at(j) for j in range(*i.indices(len(self))))
        return self.chunk_at(i)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))


class ChunkRows(ChunkSequence):
    """A sequence of chunks of a store, by their row numbers; a `Chunk` is built per access."""

    def __init__(self, store: ChunkStore, rows: np.ndarray) -> None:
        self._store, self._rows = store, rows

    def __len__(self) -> int:
        return len(self._rows)

    def chunk_at(self, i: int) -> Chunk:
        return self._store.chunk(self._row_ints[i])

    @cached_property
    def _row_ints(self) -> memoryview:
        return int_view(self._rows)

    def __iter__(self) -> Iterator[Chunk]:
        return (self._store.chunk(int(r)) for r in self._rows)

    def heads_at(self, rows: np.ndarray) -> list[tuple[str, str, tuple[str, ...]]]:
        """(source, title, domains) of the chunks at `rows` (positions in this sequence)."""
        return self._store.heads_at(self._rows[np.asarray(rows, dtype=np.int64)])

    def take(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks at `rows` (positions in this sequence), built in one pass."""
        return self._store.take(self._rows[np.asarray(rows, dtype=np.int64)])

    def __repr__(self) -> str:
        return f"ChunkRows({len(self)} chunks)"


class EntryHeads(Sequence[tuple[str, str, tuple[str, ...]]]):
    """(source, title, domains) of each entry, read off the entry columns: a cached store's `heads`.
    Decoded all at once when first read: opening an index reads the head of every page (L1 names its
    pages), and decoding them in one pass costs a quarter of decoding them one by one."""

    def __init__(self, sources: TextColumn, titles: TextColumn, labels: TextColumn, label_starts: np.ndarray) -> None:
        self._sources, self._titles, self._labels, self._starts = sources, titles, labels, label_starts

    def __len__(self) -> int:
        return len(self._sources)

    def __getitem__(self, i):  # type: ignore[override]
        return self.decoded()[i]

    def decoded(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """Every head, decoded on the first call."""
        return self._heads

    @cached_property
    def _heads(self) -> list[tuple[str, str, tuple[str, ...]]]:
        every = np.arange(len(self))
        kind = LABEL_KINDS.index("domains")
        starts = self._starts[kind:-1:len(LABEL_KINDS)].tolist()
        ends = self._starts[kind + 1::len(LABEL_KINDS)].tolist()
        labels = self._labels.take(np.arange(len(self._labels)))  # one pass over every label, not one per entry
        domains: list[tuple[str, ...]] = [tuple(labels[a:b]) if b > a else () for a, b in zip(starts, ends,
                                                                                              strict=True)]
        return list(zip(self._sources.take(every), self._titles.take(every), domains, strict=True))
