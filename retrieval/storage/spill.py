"""Where a large build puts its largest arrays: written to disk a block of rows at a time, as they are made,
and mapped back read-only, so they live in the page cache instead of the building process's memory.

At 1M chunks the LSA rows (about 0.9 GB of float32) and the static vectors (about 0.5 GB of float16) are
most of what a build holds at its end; spilled, they never sit whole in the process's heap, and the index
cache takes the written file as it is (`spilled_file`: linked, or copied by the kernel) instead of writing
the array again through the map. An array under `min_bytes` (every small base's) stays in memory.
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPILL_MIN_MB = 64.0  # arrays from this size go to disk: a 100k-chunk base's LSA rows are ~100 MB
SPILL_MIN_ENV = "LOOKUP_KNOWLEDGE_SPILL_MIN_MB"  # another size (0: every array of a build that has a cache)


def spill_min_bytes() -> int:
    """The size from which a build's array is spilled: `$LOOKUP_KNOWLEDGE_SPILL_MIN_MB`, else 64 MB."""
    raw = os.environ.get(SPILL_MIN_ENV, "").strip()
    try:
        megabytes = float(raw) if raw else SPILL_MIN_MB
    except ValueError:
        raise ValueError(f"{SPILL_MIN_ENV}={raw!r} is not a number of megabytes; set it to, say, 64 or unset it") \
            from None
    return max(0, int(megabytes * 2**20))

_FILES: dict[int, tuple[weakref.ref, Path]] = {}  # id of a spilled array -> (the array, its .npy file)
_FILES_LOCK = threading.Lock()


@dataclass(frozen=True)
class Spill:
    """A folder for a build's large arrays (None: keep every array in memory), and the size from which an
    array goes there."""

    folder: Path | None
    min_bytes: int | None = None  # None: spill_min_bytes()

    def rows(self, name: str, shape: tuple[int, ...], dtype: np.dtype | type) -> RowWriter:
        """A writer of an array of `shape` and `dtype`, filled a block of rows at a time in order."""
        dtype = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if self.folder is None or size < (spill_min_bytes() if self.min_bytes is None else self.min_bytes):
            return RowWriter(None, shape, dtype)
        self.folder.mkdir(parents=True, exist_ok=True)
        return RowWriter(self.folder / f"{name}-{uuid.uuid4().hex}.npy", shape, dtype)


IN_MEMORY = Spill(None)


class RowWriter:
    """Fills an array row block by row block: in memory, or appended to a `.npy` file (plain writes: the
    pages go to the page cache, not to this process) that `finish` maps back read-only."""

    def __init__(self, path: Path | None, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.path, self.shape, self.dtype = path, tuple(int(n) for n in shape), dtype
        self.written = 0
        self._array = np.empty(self.shape, dtype=dtype) if path is None else None
        self._file = None
        if path is not None:
            self._file = path.open("wb")
            header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": self.shape}
            np.lib.format.write_array_header_1_0(self._file, header)

    def write(self, block: np.ndarray) -> None:
        """The next rows (converted to the writer's dtype)."""
        block = np.ascontiguousarray(block, dtype=self.dtype)
        end = self.written + block.shape[0]
        if block.shape[1:] != self.shape[1:] or end > self.shape[0]:
            raise ValueError(f"a block of shape {block.shape} does not fit rows {self.written}: of {self.shape}")
        if self._array is not None:
            self._array[self.written:end] = block
        else:
            self._file.write(block.tobytes())
        self.written = end

    def finish(self) -> np.ndarray:
        """The whole array (read-only and file-backed when spilled); every row must have been written."""
        if self.written != self.shape[0]:
            raise ValueError(f"{self.written} of {self.shape[0]} rows were written")
        if self._array is not None:
            return self._array
        self._file.close()
        mapped = np.load(self.path, mmap_mode="r", allow_pickle=False)
        array = mapped.view(np.ndarray)  # a plain ndarray: np.memmap makes an object per scalar read
        with _FILES_LOCK:
            for key in [k for k, (ref, _) in _FILES.items() if ref() is None]:
                del _FILES[key]
            _FILES[id(array)] = (weakref.ref(array), self.path)
        return array


def spilled_file(array: np.ndarray) -> Path | None:
    """The `.npy` file `array` was spilled to and mapped from (the whole of it), or None."""
    with _FILES_LOCK:
        known = _FILES.get(id(array))
    if known is None or known[0]() is not array:
        return None
    return known[1] if known[1].exists() else None
