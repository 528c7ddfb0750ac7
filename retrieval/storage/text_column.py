"""Strings held as one UTF-8 byte array and int64 offsets: how L0, L1 and the index cache keep vocabularies,
titles and texts, decoded only when read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from retrieval.storage.spill import IN_MEMORY, Spill


def int_view(array: np.ndarray) -> memoryview:
    """A memoryview of a 1-D integer array (no copy when it is contiguous and in native byte order, as
    cached arrays are): indexing it gives Python ints, without numpy's per-scalar overhead."""
    if array.dtype.kind not in "iu" or not array.dtype.isnative:
        array = array.astype(np.int64)
    return memoryview(np.ascontiguousarray(array))


TEXT_WRITE_BYTES = 16 * 2**20  # bytes of a text column encoded before they are written to its blob


@dataclass(frozen=True, eq=False)
class TextColumn:
    """Strings as one UTF-8 byte array and int64 offsets (string i is blob[offsets[i]:offsets[i + 1]])."""

    blob: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, values: Sequence[str], spill: Spill = IN_MEMORY) -> TextColumn:
        """The column of `values` (read twice: their byte lengths, then their bytes, a block at a time into a
        blob of the final size; an encoded list and its join held every text twice, 1.4 GB at 1M chunks). A
        large blob goes to `spill` (retrieval/storage/spill.py)."""
        lengths = np.fromiter((len(v) if v.isascii() else len(v.encode("utf-8", "surrogatepass")) for v in values),
                              dtype=np.int64, count=len(values))
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        del lengths
        blob = spill.rows("text", (int(offsets[-1]),), np.uint8)
        pending = bytearray()
        for value in values:
            pending += value.encode("utf-8", "surrogatepass")
            if len(pending) >= TEXT_WRITE_BYTES:
                blob.write(np.frombuffer(pending, dtype=np.uint8))
                pending = bytearray()
        if pending:
            blob.write(np.frombuffer(pending, dtype=np.uint8))
        return cls(blob.finish(), offsets)

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
