"""Term counts a block at a time: each block's distinct (row, column) pairs with their counts, kept compact,
then joined into one CSR matrix (retrieval/l1/terms.py counts with them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def packed_counts(rows: np.ndarray, columns: np.ndarray, n_columns: int) -> CountPart:
    """Distinct (row, column) pairs sorted by row then column, with their counts, kept compact: entries per
    row from the block's first row, int32 columns and float32 counts (8 bytes an entry, not 20: at 1M chunks
    the parts of both matrices are held together until they are joined)."""
    packed = rows * n_columns + columns
    packed.sort()
    if packed.size == 0:
        return CountPart(0, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32))
    first = np.r_[True, packed[1:] != packed[:-1]]
    positions = np.flatnonzero(first)
    counts = np.diff(np.r_[positions, packed.size]).astype(np.float32)
    del positions
    distinct = packed[first]
    del packed, first
    row_of = distinct // n_columns
    low = int(row_of[0])
    per_row = np.bincount(row_of - low)
    del row_of
    return CountPart(low, per_row, (distinct % n_columns).astype(np.int32), counts)


@dataclass(frozen=True, eq=False)
class CountPart:
    """One block's counts in CSR order: rows `first_row`, `first_row + 1`, ... hold `per_row` entries each."""

    first_row: int
    per_row: np.ndarray
    columns: np.ndarray  # int32
    counts: np.ndarray  # float32


def csr_of_parts(parts: list[CountPart], shape: tuple[int, int]) -> Any:
    """A CSR matrix from row-sorted parts (each part's rows after the previous part's), copied into place
    part by part and each part let go once copied, so the parts and the matrix are not held twice."""
    from scipy import sparse

    total = sum(p.columns.size for p in parts)
    per_row = np.zeros(shape[0], dtype=np.int64)
    indices = np.empty(total, dtype=np.int32)
    data = np.empty(total, dtype=np.float32)
    at = 0
    while parts:
        part = parts.pop(0)
        per_row[part.first_row:part.first_row + part.per_row.size] += part.per_row
        indices[at:at + part.columns.size] = part.columns
        data[at:at + part.counts.size] = part.counts
        at += part.columns.size
        del part
    indptr = np.r_[0, np.cumsum(per_row)].astype(np.int64)
    return sparse.csr_matrix((data, indices, indptr), shape=shape, copy=False)
