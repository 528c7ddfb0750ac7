"""A changed base's entry and chunk columns made from the cached ones and the entries read anew, without
decoding or building the unchanged entries: their bytes are copied a run of rows at a time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.index import arena
from retrieval.index.chunk_store import ChunkStore, TextColumn
from retrieval.index.entry_columns import EntryColumns
from retrieval.kb.model import Entry
from retrieval.l1.terms import term_hash


@dataclass(frozen=True, eq=False)
class Merged:
    """The new base's entries as columns, and where each of its chunks comes from: `chunk_source[i]` is the
    old store's row (>= 0) or -1 - k for chunk k of the new entries (in order)."""

    entries: EntryColumns
    chunk_source: np.ndarray
    new_entries: tuple[Entry, ...]


def merge_entries(old: EntryColumns, items: Sequence[Entry | int]) -> Merged:
    """The entries `items` name in order (an int: the old entry at that position; an Entry: one read anew)."""
    new_entries = tuple(item for item in items if isinstance(item, Entry))
    n_old = len(old)
    picks = np.empty(len(items), dtype=np.int64)  # old entry e, or n_old + k for new entry k
    is_old = np.fromiter((isinstance(item, int) for item in items), dtype=bool, count=len(items))
    picks[is_old] = np.fromiter((item for item in items if isinstance(item, int)), dtype=np.int64,
                                count=int(is_old.sum()))
    picks[~is_old] = n_old + np.arange(len(new_entries))
    fresh = EntryColumns.columns_of(new_entries)
    store = ChunkStore.of(new_entries)

    def text(name: str) -> TextColumn:
        return TextColumn(fresh[f"entry_{name}_blob"], fresh[f"entry_{name}_offsets"])

    label_picks, label_counts = _runs_of(old.label_starts, fresh["entry_label_starts"], picks, n_old, 4)
    chunk_picks, chunk_counts = _runs_of(old.chunk_starts, fresh["entry_chunk_starts"], picks, n_old, 1)
    n_old_chunks = len(old.store)
    arrays = {f"entry_{name}_{part}": getattr(column, part)
              for name, column in (("source", gather(old.sources, text("source"), picks)),
                                   ("title", gather(old.titles, text("title"), picks)),
                                   ("description", gather(old.descriptions, text("description"), picks)),
                                   ("label", gather(old.labels, text("label"), label_picks)))
              for part in ("blob", "offsets")}
    old_hash = np.empty(n_old, dtype=np.int64)
    old_hash[old.source_ids] = old.source_hashes
    hashes = np.empty(len(items), dtype=np.int64)
    hashes[is_old] = old_hash[picks[is_old]]
    hashes[~is_old] = np.fromiter((term_hash(e.source) for e in new_entries), dtype=np.int64, count=len(new_entries))
    order = np.argsort(hashes, kind="stable")
    arrays.update(entry_label_starts=np.r_[0, np.cumsum(label_counts)].astype(np.int64),
                  entry_source_hashes=hashes[order], entry_source_ids=order.astype(np.int64),
                  entry_chunk_starts=np.r_[0, np.cumsum(chunk_counts)].astype(np.int64))
    entry_of = np.repeat(np.arange(len(items), dtype=np.int32), chunk_counts.reshape(-1))
    position = np.concatenate([old.store.position, store.position])[chunk_picks].astype(np.int32)
    columns = EntryColumns.of_arrays(arrays, entry_of, position,
                                     gather(old.store.breadcrumbs, store.breadcrumbs, chunk_picks),
                                     gather(old.store.texts, store.texts, chunk_picks))
    chunk_source = np.where(chunk_picks < n_old_chunks, chunk_picks, -1 - (chunk_picks - n_old_chunks))
    return Merged(columns, chunk_source, new_entries)


def _runs_of(old_starts: np.ndarray, new_starts: np.ndarray, picks: np.ndarray, n_old: int,
             per_entry: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows (old rows, or the old count + new rows) of each picked entry's run of `per_entry` groups
    (labels: 4 kinds per entry; chunks: 1), end to end, and the size of each group."""
    old_counts = np.diff(old_starts).reshape(-1, per_entry)
    new_counts = np.diff(new_starts).reshape(-1, per_entry)
    counts = np.concatenate([old_counts, new_counts])[picks]
    firsts = np.concatenate([old_starts[:-1:per_entry], old_starts[-1] + new_starts[:-1:per_entry]])[picks]
    totals = counts.sum(axis=1)
    offsets = np.r_[0, np.cumsum(totals)][:-1]
    rows = np.repeat(firsts - offsets, totals) + np.arange(int(totals.sum()))
    return rows.astype(np.int64), counts.reshape(-1)


def gather(old: TextColumn, new: TextColumn, picks: np.ndarray) -> TextColumn:
    """The strings `picks` names (i < len(old): old's i; else new's i - len(old)), copied a run at a time."""
    n_old = len(old)
    from_new = picks >= n_old
    local = np.where(from_new, picks - n_old, picks)
    starts = np.where(from_new, new.offsets[np.minimum(local, len(new))], old.offsets[np.minimum(local, n_old)])
    ends = np.where(from_new, new.offsets[np.minimum(local + 1, len(new))],
                    old.offsets[np.minimum(local + 1, n_old)])
    offsets = np.r_[0, np.cumsum(ends - starts)].astype(np.int64)
    blob = arena.empty(int(offsets[-1]), np.uint8)
    breaks = np.flatnonzero((picks[1:] != picks[:-1] + 1) | (from_new[1:] != from_new[:-1])) + 1
    for a, b in zip(np.r_[0, breaks].tolist(), np.r_[breaks, picks.size].tolist(), strict=True):
        if a == b:
            continue
        source = new.blob if from_new[a] else old.blob
        blob[offsets[a]:offsets[b]] = source[starts[a]:ends[b - 1]]
    return TextColumn(blob, offsets)
