"""A build from the columns a cached index holds, not from the base's Python objects.

A base read from files holds an `Entry` and a `Chunk` object per entry and chunk (1.1 GB at 1M chunks), and a
build held them from its start to its end, its peak included. `as_columns` makes them into the entry and chunk
columns the cache writes (the chunk text blob going to the build's spill) so they can go before L0 and L1 are
built; L1 then reads the chunks' texts a block at a time (`StreamedRows`), never a `Chunk` per row at once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import replace

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
    """Rows of the chunks with some text or a breadcrumb (chunk_store.indexable), read off the columns."""
    every = np.arange(len(store), dtype=np.int64)
    kept = (bool(text.strip() or breadcrumb.strip()) for breadcrumb, text in
            zip(streamed_texts(store.breadcrumbs, every), streamed_texts(store.texts, every), strict=True))
    return np.flatnonzero(np.fromiter(kept, dtype=bool, count=every.size)).astype(np.int64)


class StreamedRows(ChunkRows):
    """ChunkRows whose iteration builds each `Chunk` whole from texts read a block at a time (what a build's
    passes over every chunk want); indexing and the rest are ChunkRows'."""

    def __iter__(self) -> Iterator[Chunk]:
        store, rows = self._store, self._rows
        breadcrumbs, texts = streamed_texts(store.breadcrumbs, rows), streamed_texts(store.texts, rows)
        for start in range(0, rows.size, HEAD_ROWS):
            block = rows[start:start + HEAD_ROWS]
            for (source, title, domains), position in zip(store.heads_at(block), store.position[block].tolist(),
                                                          strict=True):
                yield Chunk(source, position, title, next(breadcrumbs), next(texts), domains)


def streamed_texts(column: TextColumn, rows: np.ndarray) -> Iterator[str]:
    """The strings at `rows` (ascending), decoded from their bytes read `READ_BYTES` at a time: from the file
    when the column's blob was spilled, so the pages read stay in the page cache and out of this process
    (read through the blob's map, every page read would count in its memory until the build ended)."""
    if rows.size == 0:
        return
    starts, ends = column.offsets[rows], column.offsets[rows + 1]
    cuts = np.unique(np.r_[0, np.searchsorted(starts, np.arange(starts[0], ends[-1], READ_BYTES)), rows.size])
    path = spilled_file(column.blob)
    with path.open("rb") if path is not None else nullcontext() as handle:
        data_at = handle.seek(0, 2) - column.blob.nbytes if handle is not None else 0
        for a, z in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            first, last = int(starts[a]), int(ends[z - 1])
            if handle is not None:
                handle.seek(data_at + first)
                data = memoryview(handle.read(last - first))
            else:
                data = memoryview(column.blob[first:last])
            for s, e in zip(starts[a:z].tolist(), ends[a:z].tolist(), strict=True):
                yield str(data[s - first:e - first], "utf-8", "surrogatepass")
