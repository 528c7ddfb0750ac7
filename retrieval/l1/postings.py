"""Column-major (CSC-style) postings as plain numpy arrays, and the one query-time operation on them.

L0 and L1 score a query as a weighted sum of a few term columns. Doing that on three arrays costs only
the query terms' postings; scipy's compiled column product adds long columns, and is imported only when a
query first has that many postings (so the CLI's start-up on a small knowledge base never pays for it).
"""

from __future__ import annotations

import functools

import numpy as np


def columns_from_triples(rows: np.ndarray, columns: np.ndarray, values: np.ndarray,
                         n_columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, row indices, values) of the column-major matrix holding `values` at (rows, columns);
    entries of one column keep the order they were given in."""
    order = np.argsort(columns, kind="stable")
    indptr = np.r_[0, np.cumsum(np.bincount(columns, minlength=n_columns))].astype(np.int64)
    return indptr, np.asarray(rows)[order], np.asarray(values)[order]


def postings_sum(indptr: np.ndarray, rows: np.ndarray, values: np.ndarray, ids: np.ndarray,
                 query_weights: np.ndarray, size: int, dtype: type = np.float64,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Sum over query terms t of query_weights[t] times column t, as a dense vector of `size` in `dtype`.
    Each row's sum adds its terms' weighted values in query-term order, one rounding per product and per
    add: float64 gives bincount's sums exactly; float32 (L1's per-chunk scores, which are float32 anyway)
    multiplies and adds in float32, within 2 float32 ulps of the float64 sums (docs/l1.md). Columns are
    added in place by scipy's compiled sparse product, one term at a time (at 1M chunks 0.7 ms for 265k
    postings against 1.3 ms for numpy's `add.at` over the joined columns, same sums). `out` (zeros of `size`
    in `dtype`: a segment's part of a vector over every segment) is added into and returned."""
    starts, ends = indptr[ids].tolist(), indptr[np.asarray(ids) + 1].tolist()
    weights = np.asarray(query_weights, dtype=np.float64).tolist()
    spans = [(start, end, weight) for start, end, weight in zip(starts, ends, weights, strict=True) if end > start]
    summed = np.zeros(size, dtype=dtype) if out is None else out
    if not spans:
        return summed
    column_add = _compiled_column_add(rows, values, summed, sum(end - start for start, end, _ in spans))
    if column_add is not None:
        for start, end, weight in spans:  # float32 values summed in float64 are widened first: exact, as numpy
            column_add(size, 1, np.array([0, end - start], dtype=rows.dtype), rows[start:end],
                       values[start:end].astype(summed.dtype, copy=False), np.array([weight], dtype=summed.dtype),
                       summed)
        return summed
    joined_rows = np.concatenate([rows[start:end] for start, end, _ in spans])
    scalar = np.dtype(dtype).type
    weighted = np.concatenate([values[start:end] * scalar(weight) for start, end, weight in spans])
    if weighted.dtype != summed.dtype:  # float64 values (L0's) weighted for a float32 sum
        weighted = weighted.astype(dtype)
    np.add.at(summed, joined_rows, weighted)  # in order, one add each: the compiled sum's result
    return summed


COMPILED_MIN_POSTINGS = 20_000  # below this many, numpy's add.at is as quick and scipy stays unimported


def _compiled_column_add(rows: np.ndarray, values: np.ndarray, summed: np.ndarray, postings: int):
    """scipy's column product when it can add these postings into `summed` and they are many enough to be
    worth it (the values in the sum's type or widened to it exactly: float32 into float64; row numbers in one
    of its index types; both contiguous); else None."""
    widened = values.dtype == np.float32 and summed.dtype == np.float64
    if postings < COMPILED_MIN_POSTINGS or not (values.dtype == summed.dtype or widened) \
            or rows.dtype not in (np.int32, np.int64) or not (rows.flags.c_contiguous and values.flags.c_contiguous):
        return None
    return _scipy_column_add()


@functools.cache
def _scipy_column_add():
    """scipy's `csc_matvec(n_rows, n_columns, indptr, rows, values, x, y)`, which adds the product into `y`
    (what `scipy.sparse` itself calls for a CSC matrix times a vector; the same float operations as the
    numpy path on x86-64); None when this scipy lacks it, and the sum falls back to numpy."""
    try:
        from scipy.sparse import _sparsetools
    except ImportError:  # pragma: no cover - every supported scipy has it
        return None
    column_add = getattr(_sparsetools, "csc_matvec", None)
    if column_add is None:
        return None
    try:  # a private function: one known sum first, so a scipy that changed it falls back instead of failing L1
        summed = np.zeros(3, dtype=np.float32)
        column_add(3, 1, np.array([0, 2], dtype=np.int32), np.array([0, 2], dtype=np.int32),
                   np.array([1.5, 2.0], dtype=np.float32), np.array([2.0], dtype=np.float32), summed)
    except (TypeError, ValueError):
        return None
    return column_add if summed.tolist() == [3.0, 0.0, 4.0] else None
