"""An update's L1 delta segment: the sections of the pages added or edited since the base was built, counted and
weighted with the base's fit (its LSA projection and idf, BM25's mean lengths) and embedded, plus the tombstones
over the base's pages the update removed or replaced, with the document frequencies their rows took away.

Only the delta's sections and the tombstoned pages' sections are read: an update costs what changed since the
last full build, never the base (retrieval/l1/segments.py is how a search reads both; docs/l1.md says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from retrieval.kb.model import Chunk
from retrieval.l1.arrays import L1Arrays, build_arrays
from retrieval.l1.config import IndexConfig
from retrieval.l1.embedder import Embedder
from retrieval.l1.kept_fit import LsaFit
from retrieval.l1.segments import Delta, Tombstones
from retrieval.l1.terms import TermIndex, count_terms
from retrieval.storage.text_column import TextColumn


def delta_of(base: L1Arrays, chunks: Sequence[Chunk], dead_pages: np.ndarray, dead_chunks: Sequence[Chunk],
             config: IndexConfig, embedder: Embedder | None) -> Delta:
    """The delta of `base` holding `chunks` (the sections of the added and edited pages, a page's together), with
    `dead_pages` (base page numbers, whose sections are `dead_chunks`, page by page) tombstoned. ValueError when
    it cannot be done without a full build (a static part and no embedder to embed new sections)."""
    dims = int(base.static_vectors.shape[1])
    if dims and embedder is None:
        raise ValueError("the index has a static part and no embedder was given to embed new sections")
    arrays = None
    if chunks:
        arrays = build_arrays(chunks, config, embedder=embedder if dims else None, fit=LsaFit.frozen(base))
        if arrays.static_vectors.shape[1] != dims or arrays.lsa.shape[1] != base.lsa.shape[1]:
            raise ValueError("the delta's vectors do not match the base's (another embedder or LSA space)")
        # the projection is the base's (a query is projected with it): the delta keeps none of its own
        arrays = replace(arrays, projection=np.zeros((0, base.projection.shape[-1]), dtype=np.float32))
    return Delta(arrays, tombstones(base, np.asarray(dead_pages, dtype=np.int64), dead_chunks))


def tombstones(base: L1Arrays, pages: np.ndarray, chunks: Sequence[Chunk]) -> Tombstones:
    """The tombstones over `pages` of `base` (sorted), whose sections are `chunks`: their texts are counted again
    (as the build counted them) to know which of the base's term columns lose a row or a page."""
    if pages.size == 0:
        return Tombstones.none()
    page_of_text = np.repeat(np.arange(pages.size, dtype=np.int64), np.diff(base.page_row_starts)[pages])
    if page_of_text.size != len(chunks):
        raise ValueError("the tombstoned pages' sections do not match their rows")
    counts = count_terms((f"{c.breadcrumb}\n{c.text}" for c in chunks), page_of_text, pages.size)
    vocabulary = TermIndex(TextColumn(base.unigram_blob, base.unigram_offsets), base.unigram_hashes, base.unigram_ids)
    to_base = np.fromiter((vocabulary.get(t) for t in counts.unigrams), dtype=np.int64, count=len(counts.unigrams))
    if np.any(to_base < 0):
        raise ValueError("a tombstoned section holds a word the base does not know")
    n_local, n_base = max(len(counts.unigrams), 1), len(vocabulary)
    base_keys = to_base[counts.pair_keys // n_local] * n_base + to_base[counts.pair_keys % n_local]
    at = np.minimum(np.searchsorted(base.pair_keys, base_keys), max(base.pair_keys.size - 1, 0))
    if base_keys.size and (base.pair_keys.size == 0 or np.any(base.pair_keys[at] != base_keys)):
        raise ValueError("a tombstoned page holds a word pair the base does not know")
    page_columns = np.r_[to_base, n_base + at[:base_keys.size]]
    section_columns, section_counts = _per_column(to_base[counts.chunks.indices])
    page_cols, page_counts = _per_column(page_columns[counts.pages.indices])
    return Tombstones(pages, section_columns, section_counts, page_cols, page_counts, int(page_of_text.size))


def _per_column(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct columns, ascending, and how many entries name each (a row or page names a column once)."""
    distinct, counts = np.unique(columns, return_counts=True)
    return distinct.astype(np.int64), counts.astype(np.int64)
