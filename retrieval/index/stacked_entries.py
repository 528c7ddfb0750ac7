"""A knowledge base's entries and chunks read across two segments: the base's columns (a full build's cache folder,
never rewritten) and the delta's (the entries added or edited since), in the order a full load gives them."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import overload

import numpy as np

from retrieval.index.chunk_store import ChunkSequence, ChunkStore
from retrieval.index.entry_columns import EntryColumns
from retrieval.kb.model import Chunk, Entry, EntrySequence


class ChunkPicks(ChunkSequence):
    """Chunks picked from several stores: chunk i is row `rows[i]` of store `part[i]`."""

    def __init__(self, stores: Sequence[ChunkStore], part: np.ndarray, rows: np.ndarray) -> None:
        self._stores, self._part, self._rows = tuple(stores), part, rows

    @classmethod
    def end_to_end(cls, stores: Sequence[ChunkStore], rows: Sequence[np.ndarray]) -> ChunkPicks:
        """The rows `rows[k]` of store k, store after store."""
        part = np.repeat(np.arange(len(stores), dtype=np.int8), [r.size for r in rows])
        return cls(stores, part, np.concatenate([np.asarray(r, dtype=np.int64) for r in rows]))

    def __len__(self) -> int:
        return int(self._rows.size)

    def chunk_at(self, i: int) -> Chunk:
        i = operator.index(i)
        return self._stores[int(self._part[i])].chunk(int(self._rows[i]))

    def __iter__(self) -> Iterator[Chunk]:
        return (self.chunk_at(i) for i in range(len(self)))

    def _by_store(self, at: Sequence[int], read) -> list:
        """`read(store, rows)` for the picks at `at`, one call per store, put back in `at`'s order."""
        at = np.asarray(at, dtype=np.int64)
        out: list = [None] * at.size
        parts = self._part[at]
        for k, store in enumerate(self._stores):
            mine = np.flatnonzero(parts == k)
            if mine.size:
                for position, value in zip(mine.tolist(), read(store, self._rows[at[mine]]), strict=True):
                    out[position] = value
        return out

    def take(self, at: Sequence[int]) -> list[Chunk]:
        """The chunks at `at`, built in one pass per store."""
        return self._by_store(at, ChunkStore.take)

    def heads_at(self, at: np.ndarray) -> list[tuple[str, str, tuple[str, ...]]]:
        """(source, title, domains) of the chunks at `at`, without building them."""
        return self._by_store(at, ChunkStore.heads_at)

    def __repr__(self) -> str:
        return f"ChunkPicks({len(self)} chunks)"


class StackedEntries(EntrySequence):
    """The entries `picks` names, in order: picks[i] < len(base) is the base's entry, else the delta's entry
    picks[i] - len(base). Base entries no pick names are gone (removed, or replaced by a delta entry)."""

    def __init__(self, base: EntryColumns, delta: EntryColumns, picks: np.ndarray) -> None:
        self.base, self.delta, self.picks = base, delta, np.asarray(picks, dtype=np.int64)
        self.n_base = len(base)
        self.live_base = np.zeros(self.n_base, dtype=bool)
        self.live_base[self.picks[self.picks < self.n_base]] = True

    def __len__(self) -> int:
        return int(self.picks.size)

    @overload
    def __getitem__(self, i: int) -> Entry: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Entry]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        pick = int(self.picks[operator.index(i)])
        return self.base[pick] if pick < self.n_base else self.delta[pick - self.n_base]

    def __iter__(self) -> Iterator[Entry]:
        return (self[i] for i in range(len(self)))

    def find(self, source: str) -> Entry | None:
        found = self.delta.find(source)
        if found is not None:
            return found
        i = self.base.index_of(source)
        return self.base[i] if i >= 0 and self.live_base[i] else None

    def chunk_count(self) -> int:
        return int(np.diff(self.base.chunk_starts)[self.live_base].sum()) + self.delta.chunk_count()

    def domains(self) -> set[str]:
        return self.base.domains(self.live_base) | self.delta.domains()

    def all_chunks(self) -> Sequence[Chunk]:
        return self._chunks

    @cached_property
    def _chunks(self) -> ChunkPicks:
        """Every entry's chunks in entry order: each entry's run of rows in its segment's store."""
        in_delta = self.picks >= self.n_base
        firsts = np.empty(self.picks.size, dtype=np.int64)
        counts = np.empty(self.picks.size, dtype=np.int64)
        for mine, starts, local in ((~in_delta, self.base.chunk_starts, self.picks),
                                    (in_delta, self.delta.chunk_starts, self.picks - self.n_base)):
            firsts[mine] = starts[local[mine]]
            counts[mine] = starts[local[mine] + 1] - starts[local[mine]]
        rows = np.repeat(firsts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(int(counts.sum()))
        return ChunkPicks((self.base.store, self.delta.store), np.repeat(in_delta.astype(np.int8), counts), rows)

    def __repr__(self) -> str:
        return f"StackedEntries({len(self)} entries: {len(self.delta)} in the delta)"
