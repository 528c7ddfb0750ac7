"""A build from the columns a cached index holds, not from the base's Python objects.

A base read from files holds an `Entry` and a `Chunk` object per entry and chunk (1.1 GB at 1M chunks), and a
build held them from its start to its end, its peak included. `as_columns` makes them into the entry and chunk
columns the cache writes (the chunk text blob going to the build's spill) so they can go before L0 and L1 are
built; L1 then reads the chunks' texts a block at a time (`StreamedRows`), never a `Chunk` per row at once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO

import numpy as np

from retrieval.index.chunk_store import ChunkRows, ChunkStore
from retrieval.index.entry_columns import EntryColumns
from retrieval.index.lineage import source_arrays, source_table
from retrieval.kb.model import Chunk, Entry, EntrySequence, KnowledgeBase
from retrieval.storage.heap import release_freed_memory
from retrieval.storage.spill import IN_MEMORY, Spill, spilled_file
from retrieval.storage.text_column import TextColumn

READ_BYTES = 16 * 2**20  # bytes of a text column read at a time
HEAD_ROWS = 8192  # rows whose heads and positions are read at a time


def as_columns(kb: KnowledgeBase, spill: Spill = IN_MEMORY) -> KnowledgeBase:
    """`kb` with its entries and source table as columns (EntryColumns over a ChunkStore, large text blobs going
    to `spill`), as a cached index holds them. `kb` as it is when its entries are columns already, or when a
    chunk's source, title or domains are not its entry's (the store keeps those per entry: it could not hold it)."""
    entries = kb.entries
    if isinstance(entries, EntrySequence) or not _heads_agree(entries):
        return kb
    store = ChunkStore.of(entries, spill)
    columns = EntryColumns.of_arrays(EntryColumns.columns_of(entries), store.entry_of, store.position,
                                     store.breadcrumbs, store.texts)
    table = kb.source_table
    if table is not None:  # its names and stat lines, read between the entries, would keep their memory pages
        table = source_table(source_arrays(table), len(columns))
    return replace(kb, entries=columns, _by_source={}, _sources=table)  # no field of it refers to an Entry


def let_go(rows: int) -> None:
    """Collect the objects of a base of `rows` chunks just dropped and give their memory back to the system
    (retrieval/storage/heap.py)."""
    gc.collect()
    release_freed_memory(rows)


def _heads_agree(entries: Sequence[Entry]) -> bool:
    """Whether every chunk has its entry's source, title and domains (what the cache writer checks too)."""
    return all((c.source, c.title, c.domains) == (e.source, e.title, e.domains) for e in entries for c in e.chunks)


def indexable_rows(store: ChunkStore) -> np.ndarray:
    """Rows of the chunks with some text or a breadcrumb (chunk_store.indexable), read off the columns a block
    at a time: a text that starts with a printable ASCII byte is one; only the others are decoded."""
    every = np.arange(len(store), dtype=np.int64)
    return np.concatenate([rows[_indexable(held)] for rows, held in text_blocks(store, every)] or [every])


def _indexable(held: HeldRows) -> np.ndarray:
    """Which rows of `held` are indexable (exactly `indexable` of their chunks)."""
    blob, offsets = held.texts.blob, held.texts.offsets
    starts = offsets[:-1]
    sure = np.zeros(starts.size, dtype=bool)
    filled = np.flatnonzero(offsets[1:] > starts)
    first = blob[starts[filled]]
    sure[filled] = (first < 0x80) & ~_ASCII_SPACE[first]  # str.strip() leaves such a text non-empty
    for i in np.flatnonzero(~sure).tolist():
        sure[i] = bool(held.texts[i].strip() or held.breadcrumbs[i].strip())
    return sure


_ASCII_SPACE = np.zeros(256, dtype=bool)
_ASCII_SPACE[[ord(c) for c in map(chr, range(128)) if c.isspace()]] = True


class StreamedRows(ChunkRows):
    """ChunkRows whose iteration reads the chunks' texts a block at a time (what a build's passes over every
    chunk want), each chunk decoding its own when read (Chunk.stored); indexing and the rest are ChunkRows'."""

    def __iter__(self) -> Iterator[Chunk]:
        store = self._store
        for rows, held in text_blocks(store, self._rows):
            first = int(rows[0])
            for (source, title, domains), position, row in zip(store.heads_at(rows), store.position[rows].tolist(),
                                                               rows.tolist(), strict=True):
                yield Chunk.stored(source, position, title, domains, held, row - first)


@dataclass(frozen=True)
class HeldRows:
    """The breadcrumbs and texts of a run of a store's rows, as read: what a `Chunk.stored` decodes its own from."""

    breadcrumbs: TextColumn
    texts: TextColumn


def text_blocks(store: ChunkStore, rows: np.ndarray) -> Iterator[tuple[np.ndarray, HeldRows]]:
    """`rows` (ascending) a block of about `READ_BYTES` of text at a time, each with the texts and breadcrumbs
    of the store's rows from its first to its last (row r at r - first). A spilled blob is read from its
    file, so the pages read stay in the page cache and out of this process (read through the blob's map, each
    page would count in its memory until the build ended)."""
    if rows.size == 0:
        return
    starts = store.texts.offsets[rows]
    cuts = np.unique(np.r_[0, np.searchsorted(starts, np.arange(starts[0], starts[-1], READ_BYTES)), rows.size])
    with _Reader(store.texts) as texts, _Reader(store.breadcrumbs) as breadcrumbs:
        for a, z in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            first, end = int(rows[a]), int(rows[z - 1]) + 1
            yield rows[a:z], HeldRows(breadcrumbs.run(first, end), texts.run(first, end))


class _Reader:
    """Runs of rows of a text column, read from its spilled file when it has one (else sliced from memory)."""

    def __init__(self, column: TextColumn) -> None:
        self._column, self._path = column, spilled_file(column.blob)
        self._file: BinaryIO | None = None

    def __enter__(self) -> _Reader:
        if self._path is not None:
            self._file = self._path.open("rb")
            self._data_at = self._file.seek(0, 2) - self._column.blob.nbytes  # the .npy file's header comes first
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()

    def run(self, first: int, end: int) -> TextColumn:
        """Rows `first` to `end` (exclusive) as a column of their own."""
        offsets = self._column.offsets[first:end + 1]
        a, z = int(offsets[0]), int(offsets[-1])
        if self._file is None:
            blob = self._column.blob[a:z]
        else:
            self._file.seek(self._data_at + a)
            blob = np.frombuffer(self._file.read(z - a), dtype=np.uint8)
        return TextColumn(blob, offsets - a)
