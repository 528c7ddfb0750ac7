"""Updating a cached index for a changed knowledge base by writing what changed, never the base (issue 50).

A full build's cache folder is a **base**: immutable, memory-mapped. An update (`open_index` on a base whose files
changed) reads only the added and changed files (JSONL: lines: retrieval/kb/reading.py) and makes a **delta**: the
entries added or edited since the base (with their chunks), the order a full load gives every entry (`picks`),
L1's delta segment over their sections in the base's fit, and tombstones over the base's pages they removed or
replaced (retrieval/l1/delta.py). Each update replaces the delta, so a search reads at most two segments; the
delta is written to its own small cache folder beside the base's (retrieval/index/cache.py). L0's arrays (one
row per entry) are made from the prior ones, tokenising only the new entries (retrieval/l0/arrays.py). When the
rows changed since the base's fit pass REFIT_SHARE of the rows it saw, the update gives way to a full build, which
makes a new base.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.index.cache import MANIFEST, CachedIndex, CacheWarning, IndexDelta, read_cache
from retrieval.index.chunk_store import ChunkRows, ChunkStore, TextColumn, indexable
from retrieval.index.entry_columns import EntryColumns
from retrieval.index.lineage import REFIT_SHARE, Lineage
from retrieval.index.stacked_entries import ChunkPicks, StackedEntries
from retrieval.kb.load import read_changes
from retrieval.kb.model import Entry, KnowledgeBase
from retrieval.kb.reading import Prior
from retrieval.l0.arrays import updated_arrays as updated_l0
from retrieval.l0.index import L0Index
from retrieval.l1.arrays import loaded
from retrieval.l1.config import IndexConfig
from retrieval.l1.delta import delta_of
from retrieval.l1.embedder import Embedder, LazyEmbedder
from retrieval.l1.search import L1Index
from retrieval.l1.segments import Delta


@dataclass(frozen=True)
class UpdateFacts:
    """What an update did: files or lines parsed, entries kept from the cache, L1 rows added and removed,
    the lineage after it (with the drift since the last full fit) and how long it took."""

    parsed: int
    entries_kept: int
    rows_added: int
    rows_removed: int
    lineage: Lineage
    seconds: float


@dataclass(frozen=True, eq=False)
class Updated:
    """An updated index's parts (build.py makes the KnowledgeIndex) and what the cache stores of it."""

    kb: KnowledgeBase
    l0: L0Index
    l1: L1Index
    cached: CachedIndex
    facts: UpdateFacts


def newest_of_lineage(cache_root: Path, key: str) -> CachedIndex | None:
    """The newest cache folder of lineage `key` that checks out (a damaged one is skipped, with a warning)."""
    if not cache_root.is_dir():
        return None
    found = []
    for folder in cache_root.iterdir():
        try:
            manifest = folder / MANIFEST
            if not folder.name.startswith(".") and manifest.is_file():
                lineage = json.loads(manifest.read_text(encoding="utf-8")).get("lineage") or {}
                if lineage.get("key") == key:
                    found.append((manifest.stat().st_mtime, folder))
        except (OSError, ValueError, AttributeError):
            continue
    for _, folder in sorted(found, reverse=True):
        cached = read_cache(folder)
        if cached is not None:
            return cached
    return None


def update_index(prior: CachedIndex, path: str | Path, *, strict: bool, exclude_fields: tuple[str, ...],
                 exclude_paths: tuple[str, ...], config: IndexConfig,
                 embedder: Embedder | LazyEmbedder | None, stats: dict[str, bytes] | None = None) -> Updated | None:
    """`prior` updated to the base at `path` as it is now; None when a full build is due instead (no lineage
    or source table, L1 unavailable before, the drift past REFIT_SHARE, or an update that cannot be done).
    `stats`: the files' stat lines by full path, as the cache key saw them (not stat-ed again)."""
    started = time.perf_counter()
    table, lineage = prior.kb.source_table, prior.lineage
    if (table is None or lineage is None or prior.arrays is None or prior.l1_rows is None or prior.folder is None
            or not isinstance(prior.kb.entries, EntryColumns | StackedEntries)):
        return None
    reading, root = read_changes(path, Prior(table, prior.kb.problems), strict=strict, exclude_fields=exclude_fields,
                                 exclude_paths=exclude_paths, stats=stats)
    base = prior.kb.entries.base if isinstance(prior.kb.entries, StackedEntries) else prior.kb.entries
    before = _Before.of(prior, base)
    picks, delta_entries, added, delta_rows_dropped = before.picks_for(reading.items)
    delta = EntryColumns.of_arrays(EntryColumns.columns_of(delta_entries), *_store_columns(delta_entries))
    entries = StackedEntries(base, delta, picks)
    gone = ~entries.live_base[base.store.entry_of[prior.l1_rows]]  # the base's L1 rows whose entries are gone
    delta_rows = np.flatnonzero(np.fromiter((indexable(c) for c in delta.all_chunks()), dtype=bool,
                                            count=len(delta.store))).astype(np.int64)
    rows_added = sum(1 for e in added for c in e.chunks if indexable(c))
    rows_removed = int(gone.sum()) - before.dead_rows + delta_rows_dropped
    after = lineage.updated(rows_added + rows_removed)
    if after.drift > REFIT_SHARE:
        return None
    try:
        l1_delta = _l1_delta(prior, entries, gone, delta_rows, config, embedder)
    except ValueError as exc:
        warnings.warn(f"the cached index could not be updated ({exc}); building it whole", CacheWarning, stacklevel=3)
        return None
    kb = KnowledgeBase(root, entries, reading.problems, reading.fingerprint, reading.files_seen,
                       exclude_paths, reading.files_excluded, _sources=reading.table)
    l0 = L0Index(kb.entries, arrays=updated_l0(prior.l0, reading.items) if prior.l0 is not None else None)
    chunks = ChunkPicks.end_to_end((base.store, delta.store), (prior.l1_rows, delta_rows))
    l1 = L1Index(chunks, config, arrays=prior.arrays, embedder=embedder, delta=l1_delta)
    seconds = time.perf_counter() - started
    facts = UpdateFacts(reading.parsed, len(reading.items) - len(added), rows_added, rows_removed, after, seconds)
    index_delta = IndexDelta(before.base_folder, delta, picks, l1_delta, delta_rows)
    cached = CachedIndex(kb, prior.arrays, prior.l1_rows, None, config, prior.build_seconds, store=base.store,
                         l0=l0.arrays, lineage=after, delta=index_delta)
    return Updated(kb, l0, l1, cached, facts)


@dataclass(frozen=True, eq=False)
class _Before:
    """The prior index's segments: its base's folder, entry order and delta."""

    base_folder: str
    n_base: int
    picks: np.ndarray  # the prior entries: base entry e, or n_base + k for prior delta entry k
    delta: EntryColumns | None
    dead_rows: int  # base L1 rows tombstoned before this update
    delta_l1_rows: np.ndarray  # the prior delta's store rows L1 indexed

    @classmethod
    def of(cls, prior: CachedIndex, base: EntryColumns) -> _Before:
        if prior.delta is None:
            empty = np.empty(0, dtype=np.int64)
            return cls(prior.folder.name, len(base), np.arange(len(base), dtype=np.int64), None, 0, empty)
        d = prior.delta
        return cls(d.base, len(base), d.picks, d.entries, d.l1.dead.rows if d.l1 is not None else 0, d.l1_rows)

    def picks_for(self, items: tuple[Entry | int, ...]) -> tuple[np.ndarray, list[Entry], list[Entry], int]:
        """The new entry order as picks, the new delta's entries (the prior delta's that stay, and those read
        anew, in order), the entries read anew, and the L1 rows of the prior delta's entries that did not stay."""
        picks = np.empty(len(items), dtype=np.int64)
        delta_entries: list[Entry] = []
        added: list[Entry] = []
        carried = np.zeros(len(self.delta) if self.delta is not None else 0, dtype=bool)
        for position, item in enumerate(items):
            if isinstance(item, Entry):
                added.append(item)
                picks[position] = self.n_base + len(delta_entries)
                delta_entries.append(item)
                continue
            pick = int(self.picks[item])
            if pick < self.n_base:
                picks[position] = pick
            else:  # an entry of the prior delta: it moves to the new one
                picks[position] = self.n_base + len(delta_entries)
                delta_entries.append(self.delta[pick - self.n_base])
                carried[pick - self.n_base] = True
        dropped = 0
        if self.delta is not None and self.delta_l1_rows.size:
            dropped = int(np.count_nonzero(~carried[self.delta.store.entry_of[self.delta_l1_rows]]))
        return picks, delta_entries, added, dropped


def _store_columns(entries: list[Entry]) -> tuple[np.ndarray, np.ndarray, TextColumn, TextColumn]:
    """The chunk columns of `entries` as EntryColumns.of_arrays takes them."""
    store = ChunkStore.of(entries)
    return store.entry_of, store.position, store.breadcrumbs, store.texts


def _l1_delta(prior: CachedIndex, entries: StackedEntries, gone: np.ndarray, delta_rows: np.ndarray,
              config: IndexConfig, embedder: Embedder | LazyEmbedder | None) -> Delta:
    """L1's delta segment of the new entries: the delta's sections, and the base's pages whose entries are gone
    tombstoned. ValueError when a base page is partly gone or a delta page shares a live base page's source."""
    arrays = prior.arrays
    page_of_row = arrays.page_of_chunk
    dead_pages = np.unique(page_of_row[gone])
    if np.count_nonzero(gone) != int(np.diff(arrays.page_row_starts)[dead_pages].sum()):
        raise ValueError("a page of the base is partly gone (entries sharing a source)")
    base_chunks = ChunkRows(entries.base.store, prior.l1_rows)
    dead_order = np.concatenate([arrays.page_row_order[arrays.page_row_starts[p]:arrays.page_row_starts[p + 1]]
                                 for p in dead_pages.tolist()]) if dead_pages.size else np.empty(0, dtype=np.int64)
    delta_chunks = ChunkRows(entries.delta.store, delta_rows)
    sources = {head[0] for head in delta_chunks.heads_at(np.arange(len(delta_chunks)))}
    if any(entries.base.index_of(s) >= 0 and entries.live_base[entries.base.index_of(s)] for s in sources):
        raise ValueError("a new page shares its source with a page of the base")
    return delta_of(arrays, delta_chunks, dead_pages, base_chunks.take(dead_order) if dead_order.size else [],
                    config, loaded(embedder))
