"""Updating a cached index for a changed knowledge base in time that grows with the change (issue 35, item 1).

`open_index` on a base whose files changed looks for the newest cached index of the same lineage (same base,
options, embedder, code and libraries: retrieval/index/lineage.py) and updates it: only added and changed
files (JSONL: lines) are parsed (retrieval/kb/reading.py); the entry and chunk columns are merged from the
cached ones (retrieval/index/merge.py); L0's arrays are made from the cached ones (`updated_arrays` in
retrieval/l0/arrays.py: the kept entries' term counts are reused, only the new entries are tokenised, and the
BM25 weights and idf are recomputed over all entries, equal to a build's); L1's counts are updated, BM25
reweighted, new sections folded into the LSA basis and embedded (retrieval/l1/update.py). When the rows changed
since the last full fit pass REFIT_SHARE of the rows it saw, the update gives way to a full build.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.index import arena, block_making
from retrieval.index.cache import MANIFEST, CachedIndex, CacheWarning, read_cache
from retrieval.index.chunk_store import ChunkRows, indexable
from retrieval.index.config import IndexConfig
from retrieval.index.entry_columns import EntryColumns
from retrieval.index.heap import small_pages
from retrieval.index.lineage import REFIT_SHARE, Lineage
from retrieval.index.merge import merge_entries
from retrieval.kb.load import read_changes
from retrieval.kb.model import KnowledgeBase
from retrieval.kb.reading import Prior
from retrieval.l0.arrays import updated_arrays as updated_l0
from retrieval.l0.index import L0Index
from retrieval.l1.arrays import loaded
from retrieval.l1.embedder import Embedder, LazyEmbedder
from retrieval.l1.search import L1Index
from retrieval.l1.update import update_arrays, update_sizes


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


def reserve_for_next_update(kb: KnowledgeBase, l1: L1Index | None) -> None:
    """Have the update pool make, while the process is quiet, the blocks the next update of this index will
    ask for (retrieval/index/arena.py): a process that follows its files does so once it has its index."""
    if l1 is not None and l1.arrays is not None:
        block_making.reserve_behind(update_sizes(l1.arrays, _text_bytes(kb)))


def _text_bytes(kb: KnowledgeBase) -> list[int]:
    """The sizes of the entries' text columns, which an update gathers first (none for a new build's entries,
    which are objects, not columns)."""
    store = kb.entries.store if isinstance(kb.entries, EntryColumns) else None
    return [store.breadcrumbs.blob.nbytes, store.texts.blob.nbytes] if store is not None else []


@small_pages()  # numpy's huge-page advice off while an update runs (retrieval/index/heap.py says why)
@arena.pooled()  # its large arrays made in memory earlier updates touched (retrieval/index/arena.py)
def update_index(prior: CachedIndex, path: str | Path, *, strict: bool, exclude_fields: tuple[str, ...],
                 exclude_paths: tuple[str, ...], config: IndexConfig,
                 embedder: Embedder | LazyEmbedder | None) -> Updated | None:
    """`prior` updated to the base at `path` as it is now; None when a full build is due instead (no lineage
    or source table, L1 unavailable before, the drift past REFIT_SHARE, or an update that cannot be done)."""
    started = time.perf_counter()
    table, lineage = prior.kb.source_table, prior.lineage
    if (table is None or lineage is None or prior.arrays is None or prior.l1_rows is None
            or not isinstance(prior.kb.entries, EntryColumns)):
        return None
    texts = _text_bytes(prior.kb)  # its memory made on the other core: the text columns (gathered once the files
    block_making.make_ahead(update_sizes(prior.arrays, texts), lead=len(texts))  # are read), then the last arrays
    reading, root = read_changes(path, Prior(table, prior.kb.problems), strict=strict, exclude_fields=exclude_fields,
                                 exclude_paths=exclude_paths)
    merged = merge_entries(prior.kb.entries, reading.items)
    source = merged.chunk_source
    old_l1 = np.full(len(prior.kb.entries.store), -1, dtype=np.int64)
    old_l1[prior.l1_rows] = np.arange(prior.l1_rows.size)
    fresh = [c for e in merged.new_entries for c in e.chunks]
    kept_mask = np.zeros(source.size, dtype=bool)
    kept_mask[source >= 0] = old_l1[source[source >= 0]] >= 0
    fresh_mask = np.zeros(source.size, dtype=bool)
    fresh_mask[source < 0] = np.fromiter((indexable(fresh[k]) for k in (-1 - source[source < 0]).tolist()),
                                         dtype=bool, count=int((source < 0).sum()))
    l1_rows = np.flatnonzero(kept_mask | fresh_mask).astype(np.int64)
    rows = np.empty(l1_rows.size, dtype=np.int64)
    is_kept = kept_mask[l1_rows]
    rows[is_kept] = old_l1[source[l1_rows[is_kept]]]
    new_chunks = [fresh[k] for k in (-1 - source[l1_rows[~is_kept]]).tolist()]
    rows[~is_kept] = -1 - np.arange(len(new_chunks))
    removed = prior.l1_rows.size - int(is_kept.sum())
    after = lineage.updated(len(new_chunks) + removed)
    if after.drift > REFIT_SHARE:
        return None
    try:
        arrays = update_arrays(prior.arrays, rows, new_chunks, config, loaded(embedder))
    except ValueError as exc:
        warnings.warn(f"the cached index could not be updated ({exc}); building it whole", CacheWarning, stacklevel=3)
        return None
    kb = KnowledgeBase(root, merged.entries, reading.problems, reading.fingerprint, reading.files_seen,
                       exclude_paths, reading.files_excluded, _sources=reading.table)
    l0 = L0Index(kb.entries, arrays=updated_l0(prior.l0, reading.items) if prior.l0 is not None else None)
    l1 = L1Index(ChunkRows(merged.entries.store, l1_rows), config, arrays=arrays, embedder=embedder)
    seconds = time.perf_counter() - started
    facts = UpdateFacts(reading.parsed, len(reading.items) - len(merged.new_entries), len(new_chunks), removed,
                        after, seconds)
    cached = CachedIndex(kb, arrays, l1_rows, None, config, prior.build_seconds, l0=l0.arrays, lineage=after)
    return Updated(kb, l0, l1, cached, facts)
