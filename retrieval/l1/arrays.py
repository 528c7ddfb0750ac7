"""L1's arrays: what a build computes (BM25 term weights, the LSA space, the static vectors) and the cache stores."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.index import progress as bp
from retrieval.index.chunk_store import TextColumn
from retrieval.index.config import IndexConfig
from retrieval.kb.model import Chunk
from retrieval.l1.embedder import Embedder, EmbedderWarning, LazyEmbedder, is_static
from retrieval.l1.lsa_fit import fit_components
from retrieval.l1.stable_sample import content_keys, sample_rows, term_keys
from retrieval.l1.static import composed_vectors, embedded_vectors, page_vectors
from retrieval.l1.terms import TermIndex, count_terms


@dataclass(frozen=True, eq=False)
class L1Arrays:
    """Everything L1 searches with, as plain arrays (what the cache stores; no fitted objects)."""

    unigram_blob: np.ndarray  # uint8: the unigrams' UTF-8 bytes (see chunk_store.TextColumn)
    unigram_offsets: np.ndarray  # int64
    unigram_hashes: np.ndarray  # int64, sorted (see terms.TermIndex)
    unigram_ids: np.ndarray  # int64: the unigram id of each sorted hash
    pair_keys: np.ndarray  # int64, sorted: first * number of unigrams + second
    section_indptr: np.ndarray  # CSC by unigram: BM25 weights per chunk
    section_rows: np.ndarray
    section_weights: np.ndarray
    section_idf: np.ndarray  # float64, per unigram
    page_indptr: np.ndarray  # CSC by unigram-then-pair: BM25 weights per page
    page_rows: np.ndarray
    page_weights: np.ndarray
    page_idf: np.ndarray
    lsa_idf: np.ndarray  # float32, smoothed idf of the sublinear TF-IDF the SVD saw
    projection: np.ndarray  # float32 (terms the SVD saw, dims): the SVD's components, transposed
    projection_row: np.ndarray  # int32 per unigram: its row of `projection`, -1 for a term the SVD never saw
    lsa: np.ndarray  # float32 (chunks, dims), rows L2-normalised
    page_of_chunk: np.ndarray  # int64 per chunk
    page_row_starts: np.ndarray  # int64 (pages + 1): chunks of page p are page_row_order[starts[p]:starts[p+1]]
    page_row_order: np.ndarray
    static_vectors: np.ndarray  # float16 (chunks, d), unit rows: the static part (retrieval/l1/static.py); d = 0: none
    static_embedder: np.ndarray  # uint8: the name of the embedder that made them, UTF-8 (empty: none)
    static_pages: np.ndarray  # float16 (pages, d), unit rows: each page's whole text (its sections' vectors summed)
    section_tf: np.ndarray  # float32: the term counts behind `section_weights`, entry for entry (an update reweights)
    page_tf: np.ndarray  # float32: the term counts behind `page_weights`, likewise


def build_arrays(chunks: Sequence[Chunk], config: IndexConfig, progress: bp.Progress | None = None,
                 embedder: Embedder | None = None) -> L1Arrays:
    """Count terms, weight them (BM25 for sections and pages), fit the LSA space and embed every chunk with
    `embedder` (no static part without one); `progress` gets each stage's fractions (retrieval.index.progress)."""
    sources = [c.source for c in chunks]
    page_number: dict[str, int] = {}
    page_of_chunk = np.fromiter((page_number.setdefault(s, len(page_number)) for s in sources), dtype=np.int64,
                                count=len(sources))
    texts = bp.counted((f"{c.breadcrumb}\n{c.text}" for c in chunks), len(chunks), progress, bp.VECTORISING,
                       then=bp.WEIGHTING)
    counts = count_terms(texts, page_of_chunk, len(page_number), lambda f: bp.report(progress, bp.WEIGHTING, 0.95 * f),
                         surface=is_static(embedder))
    if counts.chunks.nnz == 0:
        raise ValueError("L1 needs at least one chunk with an indexable term")
    sections = weight_columns(counts.chunks, config.k1, config.b)
    pages = weight_columns(counts.pages, config.k1, config.page_b)
    bp.report(progress, bp.WEIGHTING, 1.0)
    lsa_idf, projection, projection_row, lsa = _fit_lsa(counts.chunks, config, progress, content_keys(chunks),
                                                        counts.unigrams)
    order = np.argsort(page_of_chunk, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(page_of_chunk, minlength=len(page_number)))].astype(np.int64)
    static, name = _static_part(embedder, chunks, counts)
    static_pages = page_vectors(static, page_of_chunk, len(page_number))
    terms = TermIndex.of(counts.unigrams)
    column = TextColumn.of(counts.unigrams)
    return L1Arrays(column.blob, column.offsets, terms.hashes, terms.ids, counts.pair_keys,
                    sections.indptr, sections.rows, sections.weights, sections.idf,
                    pages.indptr, pages.rows, pages.weights, pages.idf, lsa_idf, projection, projection_row, lsa,
                    page_of_chunk, starts, order.astype(np.int64), static, name, static_pages, sections.tf, pages.tf)


def _fit_lsa(counts, config: IndexConfig, progress: bp.Progress | None, row_keys: np.ndarray,
             unigrams: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sublinear, smoothed-idf, L2-normalised TF-IDF; TruncatedSVD fitted on a row sample (the LSA space
    of 20k sections matches that of all of them closely, and a fit is quadratic in what it sees);
    then every chunk projected and L2-normalised. The sample and the SVD's start follow the chunks' and
    terms' content keys (retrieval/l1/stable_sample.py): a fit after a small edit lands near the one before."""
    from sklearn.preprocessing import normalize

    bp.report(progress, bp.SVD, 0.0)  # the TF-IDF sample, then TruncatedSVD's steps (retrieval.l1.lsa_fit)
    n_rows, n_terms = counts.shape
    doc_freq = np.bincount(counts.indices, minlength=n_terms)
    idf = (np.log((1.0 + n_rows) / (1.0 + doc_freq)) + 1.0).astype(np.float32)
    tfidf = counts.astype(np.float32, copy=True)
    tfidf.data = (1.0 + np.log(tfidf.data)) * idf[tfidf.indices]
    tfidf = normalize(tfidf, copy=False)
    sample = sample_rows(row_keys, config.svd_sample_rows, config.random_state)
    fitted = tfidf[sample]
    # fit on the terms the sample holds; from a sampled (large) base, only those in two sampled chunks or more:
    # a term seen once shapes no shared direction, and in a large base they are most of the vocabulary
    least = 1 if sample.size == n_rows else 2
    seen = np.flatnonzero(np.bincount(fitted.indices, minlength=n_terms) >= least)
    dims = min(config.svd_dims, seen.size - 1, sample.size - 1)
    projection_row = np.full(n_terms, -1, dtype=np.int32)
    if dims < 2:
        bp.report(progress, bp.SVD, 1.0)  # too few chunks or terms for an LSA space: nothing to fit
        return idf, np.zeros((0, 0), dtype=np.float32), projection_row, np.zeros((n_rows, 0), dtype=np.float32)
    keys = (row_keys[sample], term_keys(unigrams[int(t)] for t in seen))
    components = fit_components(fitted[:, seen], dims, config.random_state, lambda f: bp.report(progress, bp.SVD, f),
                                keys)
    projection = np.ascontiguousarray(components.T, dtype=np.float32)
    projection_row[seen] = np.arange(seen.size, dtype=np.int32)
    seen_only = tfidf[:, seen].tocsr()  # the terms the SVD never saw project to nothing
    lsa = np.empty((n_rows, dims), dtype=np.float32)
    for start in bp.counted(range(0, n_rows, 50_000), -(-n_rows // 50_000), progress, bp.PROJECTING):
        part = np.asarray(seen_only[start:start + 50_000] @ projection, dtype=np.float32)
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        lsa[start:start + 50_000] = part / np.where(norms > 0, norms, 1.0)
    return idf, projection, projection_row, lsa


def _static_part(embedder: Embedder | None, chunks: Sequence[Chunk], counts) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk's static vector and the embedder's name; empty without an embedder, or when it breaks its
    promise (wrong shape, non-finite values: said once, as an EmbedderWarning)."""
    none = np.zeros((len(chunks), 0), dtype=np.float16), np.zeros(0, dtype=np.uint8)
    if embedder is None:
        return none
    try:
        if is_static(embedder) and counts.surface is not None:
            vectors = composed_vectors(embedder, counts.surface)
        else:
            vectors = embedded_vectors(embedder, [f"{c.breadcrumb}\n{c.text}" for c in chunks])
    except ValueError as exc:
        warnings.warn(f"{exc}; L1 is built without its static part", EmbedderWarning, stacklevel=4)
        return none
    return vectors, np.frombuffer(embedder.name.encode("utf-8"), dtype=np.uint8).copy()


def loaded(embedder: Embedder | LazyEmbedder | None) -> Embedder | None:
    """The embedder itself (a lazy one loaded now; None when its load failed)."""
    return embedder.get() if isinstance(embedder, LazyEmbedder) else embedder


@dataclass(frozen=True, eq=False)
class WeightColumns:
    """BM25 weights as CSC arrays by term (indptr, rows, weights), the idf per term, and the term counts
    behind the weights (`tf`, entry for entry: what an update reweights from)."""

    indptr: np.ndarray
    rows: np.ndarray
    weights: np.ndarray
    idf: np.ndarray
    tf: np.ndarray


def weight_columns(counts, k1: float, b: float) -> WeightColumns:
    """BM25 weights of a scipy CSR count matrix, with the counts in the same (CSC) order."""
    weights, idf = _bm25_weights(counts, k1, b)
    tf = counts.tocsc().data.astype(np.float32)  # the same sparsity, converted the same way: entry for entry
    return WeightColumns(weights.indptr.astype(np.int64), weights.indices, weights.data.astype(np.float32), idf, tf)


def weight_columns_of(indptr: np.ndarray, rows: np.ndarray, tf: np.ndarray, n_rows: int, k1: float,
                      b: float) -> WeightColumns:
    """`weight_columns` of counts held as CSC arrays (an update's): the same weights, entry for entry, without
    a conversion (a row's length summed from its counts, a term's document frequency its column's size)."""
    lengths = np.bincount(rows, weights=tf, minlength=n_rows)
    average = lengths.mean() if lengths.sum() else 1.0
    doc_freq = np.diff(indptr)
    idf = np.log1p((n_rows - doc_freq + 0.5) / (doc_freq + 0.5))
    idf[doc_freq == 0] = 0.0
    norm = (k1 * (1 - b + b * lengths / average)).astype(np.float32)
    values = tf * np.float32(k1 + 1) / (tf + norm[rows])
    values *= np.repeat(idf.astype(np.float32), doc_freq)
    return WeightColumns(indptr, rows, values.astype(np.float32), idf, tf)


def _bm25_weights(counts, k1: float, b: float):
    """Per row and term of a scipy CSR matrix: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg len)),
    Lucene's idf; the weights as a CSC matrix, and the idf (0 for a term no row holds any more: an updated
    index keeps the terms of deleted pages, which a query must not count, as a fresh build would not know them)."""
    from scipy import sparse

    n_rows = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    average = lengths.mean() if lengths.sum() else 1.0
    doc_freq = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_rows - doc_freq + 0.5) / (doc_freq + 0.5))
    idf[doc_freq == 0] = 0.0
    norm = (k1 * (1 - b + b * lengths / average)).astype(np.float32)  # per row; float32 keeps 1M chunks small
    tf = counts.data.astype(np.float32)
    values = tf * np.float32(k1 + 1) / (tf + np.repeat(norm, np.diff(counts.indptr)))
    values *= idf[counts.indices].astype(np.float32)
    weights = sparse.csr_matrix((values, counts.indices, counts.indptr), shape=counts.shape)
    return weights.tocsc(), idf
