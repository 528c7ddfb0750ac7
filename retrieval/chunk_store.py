"""Chunks held column-wise (UTF-8 blobs plus offsets), made into `Chunk` objects only when read.

A cached index of 100k chunks loads its texts as two arrays instead of decoding 80 MB of JSON and
building 100k objects up front; a lookup then touches only the few chunks it returns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from .corpus import Chunk, Entry


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

    def __getitem__(self, i: int) -> str:
        return self.blob[self.offsets[i]:self.offsets[i + 1]].tobytes().decode("utf-8", "surrogatepass")

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

    heads: tuple[tuple[str, str, tuple[str, ...]], ...]
    entry_of: np.ndarray
    position: np.ndarray
    breadcrumbs: TextColumn
    texts: TextColumn

    def chunk(self, i: int) -> Chunk:
        source, title, domains = self.heads[int(self.entry_of[i])]
        return Chunk(source, int(self.position[i]), title, self.breadcrumbs[i], self.texts[i], domains)

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
        return self._store.chunk(int(self._rows[i]))

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
