"""Per-row arrays kept in parts, one per segment (the base's rows, then the delta's), read as one array: an update
adds a small part beside the base's memory-mapped rows instead of copying them into a new array."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Stacked:
    """The rows of `parts`, end to end: row i of the whole is row i - start of the part it falls in."""

    def __init__(self, parts: Sequence[np.ndarray]) -> None:
        if not parts:
            raise ValueError("a stacked array needs at least one part")
        self.parts = tuple(parts)
        sizes = [int(p.shape[0]) for p in self.parts]
        self.starts = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        self.shape = (int(self.starts[-1]), *self.parts[0].shape[1:])
        self.dtype = self.parts[0].dtype

    def __len__(self) -> int:
        return self.shape[0]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The rows at `rows` (any order), as one new array."""
        if len(self.parts) == 1:
            return self.parts[0][rows]
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, *self.shape[1:]), dtype=self.dtype)
        part = np.searchsorted(self.starts, rows, side="right") - 1
        for k, array in enumerate(self.parts):
            mine = part == k
            if mine.any():
                out[mine] = array[rows[mine] - self.starts[k]]
        return out

    def dots(self, rows: np.ndarray | None, vector: np.ndarray) -> np.ndarray:
        """Each row's dot product with `vector` (`rows` None: every row), each row summed alone (einsum), so a
        value does not depend on which other rows come with it (a BLAS product's last bits do)."""
        if rows is None:
            return np.concatenate([np.einsum("ij,j->i", part, vector) for part in self.parts])
        if len(self.parts) == 1:
            return np.einsum("ij,j->i", self.parts[0][rows], vector)
        return np.einsum("ij,j->i", self.take(rows), vector)


def one_array(array: np.ndarray | Stacked) -> Stacked:
    """`array` as a Stacked (one part when it is a plain array)."""
    return array if isinstance(array, Stacked) else Stacked([array])
