"""L1's arrays updated for a changed knowledge base without a new fit: kept rows reused, new rows counted.

The rows of unchanged pages keep their term counts, LSA vector and static vector; only the new sections'
texts are counted (`count_terms`), mapped onto the existing vocabulary (new unigrams appended; pair keys,
`first * n_unigrams + second`, re-encoded for the larger vocabulary, which keeps their order). BM25's
statistics (idf, average lengths) are recomputed from every row's counts, so a lexical score is what a full
build gives. New sections are folded into the existing LSA basis with the stored projection and the fit's
idf (a new term projects to nothing until a refit) and get their static vectors; a page's static vector is
made from its sections' as at build. The refit itself is a full build (retrieval/index/incremental.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from retrieval.index import arena
from retrieval.index.chunk_store import TextColumn
from retrieval.index.config import IndexConfig
from retrieval.kb.model import Chunk
from retrieval.l1.arrays import L1Arrays, weight_columns_of
from retrieval.l1.count_merge import merged_counts
from retrieval.l1.embedder import Embedder, is_static
from retrieval.l1.static import composed_vectors, embedded_vectors, page_vectors
from retrieval.l1.terms import TermIndex, count_terms, term_hash


def update_arrays(old: L1Arrays, rows: np.ndarray, new_chunks: Sequence[Chunk], config: IndexConfig,
                  embedder: Embedder | None) -> L1Arrays:
    """The arrays of an index whose row j is old row `rows[j]` (>= 0) or `new_chunks[-1 - rows[j]]`; rows of
    one page are contiguous and a page is wholly old or wholly new. ValueError when it cannot be done
    without a build (a static part and no embedder, or no indexable term left)."""
    rows = np.asarray(rows, dtype=np.int64)
    kept, fresh = rows[rows >= 0], -1 - rows[rows < 0]
    texts = [f"{c.breadcrumb}\n{c.text}" for c in new_chunks]
    local_page: dict[str, int] = {}
    local_of_text = np.fromiter((local_page.setdefault(c.source, len(local_page)) for c in new_chunks),
                                dtype=np.int64, count=len(new_chunks))
    dims = int(old.static_vectors.shape[1])
    if dims and embedder is None:
        raise ValueError("the index has a static part and no embedder was given to embed new sections")
    counts = count_terms(texts, local_of_text, len(local_page), surface=bool(dims) and is_static(embedder))
    vocabulary = TermIndex(TextColumn(old.unigram_blob, old.unigram_offsets), old.unigram_hashes, old.unigram_ids)
    n_old = len(vocabulary)
    added: list[str] = []
    to_global = np.empty(len(counts.unigrams), dtype=np.int64)
    for local, term in enumerate(counts.unigrams):
        known = vocabulary.get(term)
        if known < 0:
            known = n_old + len(added)
            added.append(term)
        to_global[local] = known
    n_unigrams = n_old + len(added)

    # pair keys re-encoded for the grown vocabulary (order kept), the new pages' pairs merged in
    old_keys = (old.pair_keys if n_unigrams == n_old  # no new word: the same keys, not four passes over them
                else (old.pair_keys // max(n_old, 1)) * n_unigrams + old.pair_keys % max(n_old, 1))
    n_local = max(len(counts.unigrams), 1)
    new_keys = to_global[counts.pair_keys // n_local] * n_unigrams + to_global[counts.pair_keys % n_local]
    added_keys = np.unique(new_keys)  # few; the old keys are sorted and distinct already
    if old_keys.size:  # membership by binary search: a hash or a sort of the old keys costs seconds at 100k chunks
        at = np.minimum(np.searchsorted(old_keys, added_keys), old_keys.size - 1)
        added_keys = added_keys[old_keys[at] != added_keys]
    pair_keys = np.insert(old_keys, np.searchsorted(old_keys, added_keys), added_keys)
    old_columns = np.concatenate([np.arange(n_old), n_unigrams + np.searchsorted(pair_keys, old_keys)])
    new_columns = np.concatenate([to_global, n_unigrams + np.searchsorted(pair_keys, new_keys)])
    n_columns = n_unigrams + pair_keys.size

    # where each new row and page comes from: position in [kept rows or pages; new ones]
    source_row = np.empty(rows.size, dtype=np.int64)
    source_row[rows >= 0] = np.arange(kept.size)
    source_row[rows < 0] = kept.size + fresh
    page_key = np.empty(rows.size, dtype=np.int64)
    page_key[rows >= 0] = old.page_of_chunk[kept]
    page_key[rows < 0] = -1 - local_of_text[fresh]
    starts_page = np.r_[True, page_key[1:] != page_key[:-1]] if rows.size else np.zeros(0, dtype=bool)
    page_of_chunk = np.cumsum(starts_page) - 1
    firsts = page_key[starts_page]
    kept_pages = firsts[firsts >= 0]
    source_page = np.empty(firsts.size, dtype=np.int64)
    source_page[firsts >= 0] = np.arange(kept_pages.size)
    source_page[firsts < 0] = kept_pages.size - 1 - firsts[firsts < 0]

    final_of_old = np.full(old.page_of_chunk.size, -1, dtype=np.int64)
    final_of_old[kept] = np.flatnonzero(rows >= 0)
    final_of_new = np.empty(len(new_chunks), dtype=np.int64)
    final_of_new[fresh] = np.flatnonzero(rows < 0)
    sections = merged_counts(old.section_indptr, old.section_rows, old.section_tf, final_of_old, None, counts.chunks,
                             final_of_new, to_global, n_unigrams)
    old_pages = old.page_row_starts.size - 1
    final_of_old_page = np.full(old_pages, -1, dtype=np.int64)
    final_of_old_page[kept_pages] = np.flatnonzero(firsts >= 0)
    final_of_new_page = np.empty(len(local_page), dtype=np.int64)
    final_of_new_page[-1 - firsts[firsts < 0]] = np.flatnonzero(firsts < 0)
    pages = merged_counts(old.page_indptr, old.page_rows, old.page_tf, final_of_old_page, old_columns, counts.pages,
                          final_of_new_page, new_columns, n_columns)
    if sections[1].size == 0:
        raise ValueError("L1 needs at least one chunk with an indexable term")
    sections = weight_columns_of(*sections, rows.size, config.k1, config.b)
    page_weights = weight_columns_of(*pages, firsts.size, config.k1, config.page_b)
    new_counts = type(counts.chunks)((counts.chunks.data, to_global[counts.chunks.indices].astype(np.int32),
                                      counts.chunks.indptr), shape=(len(new_chunks), n_unigrams))

    doc_freq = np.diff(sections.indptr)[n_old:]
    added_idf = (np.log((1.0 + rows.size) / (1.0 + doc_freq)) + 1.0).astype(np.float32)
    lsa_idf = np.concatenate([old.lsa_idf, added_idf])
    projection_row = np.concatenate([old.projection_row, np.full(len(added), -1, dtype=np.int32)])
    lsa = arena.empty((rows.size, old.lsa.shape[1]), np.float32)
    copy_kept(lsa, old.lsa, rows)
    lsa[rows < 0] = _folded(new_counts, lsa_idf, projection_row, old.projection)[fresh]

    static = arena.empty((rows.size, dims), np.float16)
    static_pages = arena.empty((firsts.size, dims), np.float16)
    if dims:
        copy_kept(static, old.static_vectors, rows)
        vectors = (composed_vectors(embedder, counts.surface) if counts.surface is not None
                   else embedded_vectors(embedder, texts))
        static[rows < 0] = vectors[fresh]
        static_pages[firsts >= 0] = old.static_pages[kept_pages]
        static_pages[firsts < 0] = page_vectors(vectors, local_of_text, len(local_page))[-1 - firsts[firsts < 0]]
    column = TextColumn.of(added)
    added_hashes = np.fromiter((term_hash(t) for t in added), dtype=np.int64, count=len(added))
    hashes = np.concatenate([old.unigram_hashes, added_hashes])
    ids = np.concatenate([old.unigram_ids, np.arange(n_old, n_unigrams, dtype=np.int64)])
    order = np.argsort(hashes, kind="stable")
    n_pages = firsts.size
    return replace(old, unigram_blob=np.concatenate([old.unigram_blob, column.blob]),
                   unigram_offsets=np.concatenate([old.unigram_offsets, old.unigram_offsets[-1] + column.offsets[1:]]),
                   unigram_hashes=hashes[order], unigram_ids=ids[order], pair_keys=pair_keys,
                   section_indptr=sections.indptr, section_rows=sections.rows, section_weights=sections.weights,
                   section_idf=sections.idf, section_tf=sections.tf, page_indptr=page_weights.indptr,
                   page_rows=page_weights.rows, page_weights=page_weights.weights, page_idf=page_weights.idf,
                   page_tf=page_weights.tf, lsa_idf=lsa_idf, projection_row=projection_row, lsa=lsa,
                   page_of_chunk=page_of_chunk.astype(np.int64),
                   page_row_starts=np.r_[0, np.cumsum(np.bincount(page_of_chunk, minlength=n_pages))].astype(np.int64),
                   page_row_order=np.arange(rows.size, dtype=np.int64), static_vectors=static,
                   static_pages=static_pages)


def update_sizes(arrays: L1Arrays, text_bytes: Sequence[int]) -> list[int]:
    """The sizes, in bytes and in the order an update asks for them, of the large arrays an update of an index
    with these arrays makes (the entries' gathered text columns of `text_bytes` first): what the update pool
    reserves before a process's first update (retrieval/index/arena.py; tests/test_update_pool.py holds it to
    what an update asks for)."""
    section = [arrays.section_rows.nbytes, arrays.section_tf.nbytes, arrays.section_indptr.nbytes]
    page = [arrays.page_indptr.nbytes, arrays.page_rows.nbytes, arrays.page_tf.nbytes, arrays.page_indptr.nbytes]
    weights = [arrays.section_weights.nbytes, arrays.page_weights.nbytes]
    vectors = [arrays.lsa.nbytes, arrays.static_vectors.nbytes, arrays.static_pages.nbytes]
    return [int(size) for size in (*text_bytes, *section, *page, *weights, *vectors)]


MAX_RUNS = 10_000  # past this many runs of kept rows, one gather copies them


def copy_kept(destination: np.ndarray, source: np.ndarray, rows: np.ndarray) -> None:
    """`destination[j] = source[rows[j]]` for every `rows[j] >= 0`, a run of consecutive rows at a time: an
    update keeps most rows in order, and a gather then a masked write made two passes and a temporary copy of
    the LSA rows (100 MB at 100k chunks, 1 GB at 1M)."""
    at = np.flatnonzero(rows >= 0)
    if at.size == 0:
        return
    breaks = np.flatnonzero((np.diff(at) != 1) | (np.diff(rows[at]) != 1)) + 1
    if breaks.size >= MAX_RUNS:
        destination[at] = source[rows[at]]
        return
    for start, end in zip(np.r_[0, breaks].tolist(), np.r_[breaks, at.size].tolist(), strict=True):
        first, last = int(at[start]), int(at[end - 1])
        destination[first:last + 1] = source[int(rows[at[start]]):int(rows[at[end - 1]]) + 1]


def _folded(counts, lsa_idf: np.ndarray, projection_row: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """New rows' LSA vectors: sublinear TF-IDF with the fit's idf, over the terms the fit saw, projected and
    L2-normalised (as the build projects every row; the TF-IDF's own normalisation cancels in the last one)."""
    from scipy import sparse

    n_rows, dims = counts.shape[0], projection.shape[1] if projection.ndim == 2 else 0
    if not dims or n_rows == 0:
        return np.zeros((n_rows, dims), dtype=np.float32)
    counts = counts.tocoo()
    seen = projection_row[counts.col] >= 0
    values = ((1.0 + np.log(counts.data[seen])) * lsa_idf[counts.col[seen]]).astype(np.float32)
    tfidf = sparse.csr_matrix((values, (counts.row[seen], projection_row[counts.col[seen]])),
                              shape=(n_rows, projection.shape[0]))
    part = np.asarray(tfidf @ projection, dtype=np.float32)
    norms = np.linalg.norm(part, axis=1, keepdims=True)
    return part / np.where(norms > 0, norms, 1.0)
