"""Chunks and entries held column-wise (UTF-8 blobs plus offsets), made into objects only when read.

A cached index of 100k chunks loads its texts as two arrays instead of decoding 80 MB of JSON and
building 100k objects up front; a lookup then touches only the few chunks it returns. Entries likewise
(`EntryColumns`): a BEIR-shaped base has one entry per document, and building 100k `Entry` objects at
load cost 1.9 s; an entry is looked up by source through a sorted hash array (terms.TermIndex), not a
dict built at load.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import overload

import numpy as np

from retrieval.kb.model import Chunk, Entry, EntrySequence
from retrieval.l1.terms import TermIndex


def int_view(array: np.ndarray) -> memoryview:
    """A memoryview of a 1-D integer array (no copy when it is contiguous and in native byte order, as
    cached arrays are): indexing it gives Python ints, without numpy's per-scalar overhead."""
    if array.dtype.kind not in "iu" or not array.dtype.isnative:
        array = array.astype(np.int64)
    return memoryview(np.ascontiguousarray(array))


@dataclass(frozen=True, eq=False)
class TextColumn:
    """Strings as one UTF-8 byte array and int64 offsets (string i is blob[offsets[i]:offsets[i + 1]])."""

    blob: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, values: Sequence[str]) -> TextColumn:
        encoded = [v.encode("utf-8", "surrogatepass") for v in values]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @cached_property
    def _view(self) -> memoryview:
        return memoryview(self.blob)

    @cached_property
    def _bounds(self) -> memoryview:
        return int_view(self.offsets)

    def __getitem__(self, i: int) -> str:
        bounds = self._bounds  # a memoryview gives Python ints: half the cost of numpy's scalars
        return str(self._view[bounds[i]:bounds[i + 1]], "utf-8", "surrogatepass")

    def check(self, count: int | None, name: str) -> None:
        """ValueError unless the offsets fit the bytes (start at 0, never go back, end at the blob's end)
        and, when `count` is given, there are `count` strings."""
        offsets = self.offsets
        if (self.blob.ndim != 1 or offsets.ndim != 1 or len(offsets) == 0 or offsets[0] != 0 or
                offsets[-1] != self.blob.size or (count is not None and len(offsets) != count + 1) or
                np.any(offsets[1:] < offsets[:-1])):
            raise ValueError(f"the {name} column's offsets do not fit its bytes")

    def take(self, indices: np.ndarray) -> list[str]:
        """Strings at `indices`, decoded in one pass (a lookup reads ~100 at once; one by one, numpy's
        per-scalar overhead cost more than the decoding)."""
        view = memoryview(self.blob)
        starts, ends = self.offsets[indices].tolist(), self.offsets[np.asarray(indices) + 1].tolist()
        return [str(view[s:e], "utf-8", "surrogatepass") for s, e in zip(starts, ends, strict=True)]


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

    # opening an index reads a chunk of every page (100k in a BEIR-shaped base): these give Python ints and
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

    def take(self, indices: np.ndarray) -> list[Chunk]:
        """The chunks at `indices`, built in one pass."""
        heads = [self.heads[e] for e in self.entry_of[indices].tolist()]
        return [Chunk(source, position, title, breadcrumb, text, domains) for (source, title, domains), position,
                breadcrumb, text in zip(heads, self.position[indices].tolist(), self.breadcrumbs.take(indices),
                                        self.texts.take(indices), strict=True)]

    @classmethod
    def of(cls, entries: Sequence[Entry]) -> ChunkStore:
        """The store of `entries`' chunks, in order."""
        chunks = [c for e in entries for c in e.chunks]
        entry_of = np.repeat(np.arange(len(entries), dtype=np.int32), [len(e.chunks) for e in entries])
        return cls(tuple((e.source, e.title, e.domains) for e in entries), entry_of,
                   np.asarray([c.position for c in chunks], dtype=np.int32),
                   TextColumn.of([c.breadcrumb for c in chunks]), TextColumn.of([c.text for c in chunks]))

    def __len__(self) -> int:
        return len(self.entry_of)


class ChunkRows(Sequence[Chunk]):
    """A sequence of chunks of a store, by their row numbers; a `Chunk` is built per access."""

    def __init__(self, store: ChunkStore, rows: np.ndarray) -> None:
        self._store, self._rows = store, rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Chunk]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self._store.chunk(int(r)) for r in self._rows[i])
        return self._store.chunk(self._row_ints[i])

    @cached_property
    def _row_ints(self) -> memoryview:
        return int_view(self._rows)

    def __iter__(self) -> Iterator[Chunk]:
        return (self._store.chunk(int(r)) for r in self._rows)

    def take(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks at `rows` (positions in this sequence), built in one pass."""
        return self._store.take(self._rows[np.asarray(rows, dtype=np.int64)])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ChunkRows({len(self)} chunks)"


RECENT_ENTRIES = 4096  # entries kept once built: a lookup reads the same few entries in L0, evidence and details
LABEL_KINDS = ("categories", "keywords", "entities", "domains")  # an entry's labels, in this order


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
        labels = self._labels.take(np.arange(len(self._labels)))  # one pass over every label (per entry: 5 us each)
        domains: list[tuple[str, ...]] = [tuple(labels[a:b]) if b > a else () for a, b in zip(starts, ends, strict=True)]
        return list(zip(self._sources.take(every), self._titles.take(every), domains, strict=True))


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
        _check_starts(label_starts, len(LABEL_KINDS) * n, len(labels), "label")
        n_chunks = len(entry_of)
        _check_starts(chunk_starts, n, n_chunks, "chunk")
        if len(position) != n_chunks:
            raise ValueError("chunk columns disagree on the number of chunks")
        for text_column, name in ((breadcrumbs, "breadcrumb"), (texts, "text")):
            text_column.check(n_chunks, name)
        if not np.array_equal(entry_of, np.repeat(np.arange(n, dtype=entry_of.dtype), np.diff(chunk_starts))):
            raise ValueError("the chunks are not in the order of their entries")
        if len(hashes) != n or len(ids) != n or (n and (ids.min() < 0 or ids.max() >= n or np.any(np.diff(hashes) < 0))):
            raise ValueError("the entry source index is out of range or unsorted")
        store = ChunkStore(EntryHeads(sources, titles, labels, label_starts), entry_of, position, breadcrumbs, texts)
        return cls(sources, titles, descriptions, labels, label_starts, hashes, ids, chunk_starts, store)

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

    @cached_property
    def _source_index(self) -> TermIndex:
        return TermIndex(self.sources, self.source_hashes, self.source_ids)

    def chunk_count(self) -> int:
        return len(self.store)

    def domains(self) -> set[str]:
        # the kind of each label: its slot (4 * entry + kind) is the last start at or before it
        slots = np.searchsorted(self.label_starts, np.arange(len(self.labels)), side="right") - 1
        return set(self.labels.take(np.flatnonzero(slots % len(LABEL_KINDS) == LABEL_KINDS.index("domains"))))

    def all_chunks(self) -> Sequence[Chunk]:
        return ChunkRows(self.store, np.arange(len(self.store)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"EntryColumns({len(self)} entries)"


def _check_starts(starts: np.ndarray, count: int, size: int, name: str) -> None:
    if starts.ndim != 1 or len(starts) != count + 1 or starts[0] != 0 or starts[-1] != size or np.any(starts[1:] < starts[:-1]):
        raise ValueError(f"the entry {name} positions do not fit")

