"""An update's term counts as CSC columns: the cached columns with the removed rows' entries dropped, the kept
rows renumbered, and the new rows' entries merged in, written into the result a run of entries at a time.

A one-page update removes and inserts a few hundred entries among millions: the kept entries are copied in
runs between them, with no temporary as long as the columns (a renumbered copy, then a copy without the
removed entries, then the merged one made 3 passes and 2 temporaries of every entry: at 100k chunks about
45,000 page faults of a one-page update's 150,000). Many runs (a large update) are copied a block at a time.
"""

from __future__ import annotations

import numpy as np

from retrieval.index import arena

MAX_RUNS = 20_000  # past this many runs of kept entries, a block at a time beats a loop over the runs
SCAN_ENTRIES = 1 << 18  # entries renumbered at a time when looking for removed rows' entries


def merged_counts(indptr: np.ndarray, rows: np.ndarray, tf: np.ndarray, final_of_old: np.ndarray,
                  old_columns: np.ndarray | None, new, final_of_new: np.ndarray, new_columns: np.ndarray,
                  n_columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, rows, tf) by column, then row: the old entries of kept rows (`final_of_old`: each old row's new
    row, -1 when gone), old column c now column `old_columns[c]` (monotone; None: the same), with the new rows'
    counts (`new`, CSR, rows `final_of_new`, columns `new_columns`) merged in. Kept rows keep their order, so
    each column stays sorted by row; a new entry is placed by a binary search in its own column only."""
    final32 = final_of_old.astype(np.int32)
    gone = _gone(rows, final32)
    # column sizes (the pages' columns count word pairs too: ~2M at 100k chunks, so no more passes than needed)
    if old_columns is None:
        targets, counts = np.arange(indptr.size - 1), np.diff(indptr)
        if counts.size < n_columns:
            counts = np.r_[counts, np.zeros(n_columns - counts.size, dtype=counts.dtype)]
    else:
        targets, counts = old_columns, arena.zeros(n_columns, np.int64)
        counts[targets] = np.diff(indptr)
    np.subtract.at(counts, targets[np.searchsorted(indptr, gone, side="right") - 1], 1)
    new = new.tocoo()
    new_cols, new_rows = new_columns[new.col].astype(np.int64), final_of_new[new.row]
    order = np.lexsort((new_rows, new_cols))
    new_cols, new_rows, new_tf = new_cols[order], new_rows[order], new.data[order].astype(np.float32)
    np.add.at(counts, new_cols, 1)
    at = _insertion_points(indptr, rows, final_of_old, targets, new_cols, new_rows)
    merged_rows, merged_tf = _spliced(rows, tf, final32, gone, at, new_rows, new_tf)
    merged_indptr = arena.zeros(n_columns + 1, np.int64)
    np.cumsum(counts, out=merged_indptr[1:])
    return merged_indptr, merged_rows, merged_tf


def _gone(rows: np.ndarray, final32: np.ndarray) -> np.ndarray:
    """Positions of the entries whose row was removed (ascending), found a block at a time."""
    if final32.size == 0 or final32.min() >= 0:
        return np.empty(0, dtype=np.int64)
    parts = [np.flatnonzero(np.take(final32, rows[a:a + SCAN_ENTRIES], mode="clip") < 0) + a
             for a in range(0, rows.size, SCAN_ENTRIES)]
    return np.concatenate(parts).astype(np.int64) if parts else np.empty(0, dtype=np.int64)


def _insertion_points(indptr: np.ndarray, rows: np.ndarray, final_of_old: np.ndarray, targets: np.ndarray,
                      new_cols: np.ndarray, new_rows: np.ndarray) -> np.ndarray:
    """For each new entry (sorted by column, then row), the old position it goes before: in its column, the first
    entry whose old row is at or past the first kept row that follows it (a column no old entry had: where the
    next old column starts). One binary search for all entries at once, a halving step at a time (a search per
    column was a Python loop of ~20,000 steps in a 1% update)."""
    if new_cols.size == 0:
        return np.empty(0, dtype=np.int64)
    kept_old = np.flatnonzero(final_of_old >= 0)
    after = np.searchsorted(final_of_old[kept_old], new_rows)  # kept rows before each new row
    boundary = np.full(new_rows.size, final_of_old.size, dtype=np.int64)
    inside = after < kept_old.size
    boundary[inside] = kept_old[after[inside]]
    old = np.searchsorted(targets, new_cols)  # the old column, or the next one when it is new
    lo = indptr[old].astype(np.int64)
    exists = old < targets.size
    exists[exists] = targets[old[exists]] == new_cols[exists]
    hi = np.where(exists, indptr[np.minimum(old + 1, indptr.size - 1)], lo)
    last = max(rows.size - 1, 0)
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) >> 1
        right = open_ & (rows[np.minimum(mid, last)] < boundary)
        lo = np.where(right, mid + 1, lo)
        hi = np.where(open_ & ~right, mid, hi)


def _spliced(rows: np.ndarray, tf: np.ndarray, final32: np.ndarray, gone: np.ndarray, at: np.ndarray,
             new_rows: np.ndarray, new_tf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`final32[rows]` and `tf` without the entries at `gone`, with the new entries inserted before old positions
    `at` (in order): np.insert(np.delete(...)) of both, in one pass."""
    n = rows.size
    merged_rows = arena.empty(n - gone.size + new_rows.size, np.int32)
    merged_tf = arena.empty(merged_rows.size, np.float32)
    new_at = at - np.searchsorted(gone, at) + np.arange(at.size)
    merged_rows[new_at], merged_tf[new_at] = new_rows, new_tf
    cuts = np.unique(np.concatenate([np.array([0, n], dtype=np.int64), gone, gone + 1, at]))
    starts, ends = cuts[:-1], cuts[1:]
    if gone.size:
        is_gone = gone[np.minimum(np.searchsorted(gone, starts), gone.size - 1)] == starts
        starts, ends = starts[~is_gone], ends[~is_gone]
    if starts.size > MAX_RUNS:
        _copy_kept_in_blocks(rows, tf, final32, gone, at, merged_rows, merged_tf)
        return merged_rows, merged_tf
    destinations = starts - np.searchsorted(gone, starts) + np.searchsorted(at, starts, side="right")
    for s, e, d in zip(starts.tolist(), ends.tolist(), destinations.tolist(), strict=True):
        np.take(final32, rows[s:e], out=merged_rows[d:d + e - s], mode="clip")  # "clip": not buffered
        merged_tf[d:d + e - s] = tf[s:e]
    return merged_rows, merged_tf


def _copy_kept_in_blocks(rows: np.ndarray, tf: np.ndarray, final32: np.ndarray, gone: np.ndarray, at: np.ndarray,
                         merged_rows: np.ndarray, merged_tf: np.ndarray) -> None:
    """The kept entries of a large update copied a block of SCAN_ENTRIES at a time: each one's place is its
    position, less the removed entries before it, plus the new entries placed at or before it (block-sized
    temporaries the heap reuses: whole-array masks and gathers were ~150 MB of new memory per merge at 100k)."""
    for a in range(0, rows.size, SCAN_ENTRIES):
        b = min(a + SCAN_ENTRIES, rows.size)
        g_lo, g_hi = np.searchsorted(gone, [a, b]).tolist()
        i_lo, i_hi = np.searchsorted(at, [a, b]).tolist()
        removed = np.zeros(b - a, dtype=np.int64)
        removed[gone[g_lo:g_hi] - a] = 1
        inserted = np.bincount(at[i_lo:i_hi] - a, minlength=b - a)
        place = np.arange(a, b) - (g_lo + np.cumsum(removed) - removed) + (i_lo + np.cumsum(inserted))
        keep = removed == 0
        merged_rows[place[keep]] = np.take(final32, rows[a:b][keep], mode="clip")
        merged_tf[place[keep]] = tf[a:b][keep]
