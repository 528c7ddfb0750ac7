"""L1's arrays: what a build computes (BM25 term weights, the LSA space, the static vectors) and the cache stores."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.kb.model import Chunk
from retrieval.l1 import stages as bp
from retrieval.l1.config import IndexConfig
from retrieval.l1.embedder import Embedder, EmbedderWarning, LazyEmbedder, is_static
from retrieval.l1.kept_fit import LsaFit
from retrieval.l1.lsa_fit import fit_components
from retrieval.l1.stable_sample import content_keys, sample_rows, term_keys
from retrieval.l1.static import composed_with_pages, embedded_vectors, page_vectors
from retrieval.l1.terms import SurfaceWords, TermIndex, count_terms
from retrieval.storage.heap import release_freed_memory
from retrieval.storage.spill import IN_MEMORY, Spill
from retrieval.storage.text_column import TextColumn


@dataclass(frozen=True, eq=False)
class L1Arrays:
    """Everything L1 searches with, as plain arrays (what the cache stores; no fitted objects)."""

    unigram_blob: np.ndarray  # uint8: the unigrams' UTF-8 bytes (see chunk_store.TextColumn)
    unigram_offsets: np.ndarray  # int64
    unigram_hashes: np.ndarray  # int64, sorted (see terms.TermIndex)
    unigram_ids: np.ndarray  # int64: the unigram id of each sorted hash
    pair_keys: np.ndarray  # int64, sorted: first * number of unigrams + second
    section_indptr: np.ndarray  # CSC by unigram: BM25's term-frequency part per chunk (the idf is the query's)
    section_rows: np.ndarray
    section_weights: np.ndarray
    section_idf: np.ndarray  # float64, per unigram: this segment's own (a query weighs terms across segments)
    page_indptr: np.ndarray  # CSC by unigram-then-pair: BM25's term-frequency part per page
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
    section_tf: np.ndarray  # float32: the term counts behind `section_weights`, entry for entry
    page_tf: np.ndarray  # float32: the term counts behind `page_weights`, likewise
    lengths_mean: np.ndarray  # float64 [section, page]: the mean lengths BM25 normalised by (an update keeps them)
    lsa_head: np.ndarray  # float32 (chunks, HEAD_DIMS): the LSA rows' first dimensions, contiguous (bounded search)
    lsa_tail: np.ndarray  # float32 (chunks,): the norm of each LSA row's other dimensions


def build_arrays(chunks: Sequence[Chunk], config: IndexConfig, progress: bp.Progress | None = None,
                 embedder: Embedder | None = None, spill: Spill = IN_MEMORY, fit: LsaFit | None = None) -> L1Arrays:
    """Count terms, weight them (BM25 for sections and pages), fit the LSA space and embed every chunk with
    `embedder` (no static part without one); `progress` gets each stage's fractions (retrieval.l1.stages).
    The LSA rows and static vectors go to `spill` as they are made (retrieval/storage/spill.py), and every large
    intermediate is let go as soon as the next stage has what it needs: at 1M chunks they are what sets the
    build's peak memory (docs/benchmarks.md, bench/build_memory.py). With `fit`, the LSA space and BM25's mean
    lengths are that fit's (retrieval/l1/kept_fit.py), not new ones: what an update's delta segment is built on."""
    sources = [c.source for c in chunks]
    page_number: dict[str, int] = {}
    page_of_chunk = np.fromiter((page_number.setdefault(s, len(page_number)) for s in sources), dtype=np.int64,
                                count=len(sources))
    del sources
    texts = bp.counted((f"{c.breadcrumb}\n{c.text}" for c in chunks), len(chunks), progress, bp.VECTORISING,
                       then=bp.WEIGHTING)
    counts = count_terms(texts, page_of_chunk, len(page_number), lambda f: bp.report(progress, bp.WEIGHTING, 0.95 * f),
                         surface=is_static(embedder))
    unigrams, pair_keys, surface, chunk_counts, page_counts = (counts.unigrams, counts.pair_keys, counts.surface,
                                                               counts.chunks, counts.pages)
    del counts
    if chunk_counts.nnz == 0:
        raise ValueError("L1 needs at least one chunk with an indexable term")
    release_freed_memory(len(chunks))
    # the static part first: its word table is made while the fewest arrays are held
    static, name, static_pages = _static_part(embedder, chunks, surface, page_of_chunk, len(page_number), spill)
    del surface
    lengths = (None, None) if fit is None else fit.lengths_mean
    pages = weight_columns(page_counts, config.k1, config.page_b, lengths[1])
    del page_counts
    sections = weight_columns(chunk_counts, config.k1, config.b, lengths[0])
    release_freed_memory(len(chunks))
    bp.report(progress, bp.WEIGHTING, 1.0)
    if fit is None:
        lsa_idf, projection, projection_row, (lsa, head, tail) = _fit_lsa(chunk_counts, config, progress,
                                                                          content_keys(chunks), unigrams, spill)
    else:
        bp.report(progress, bp.SVD, 1.0)  # nothing to fit
        lsa_idf, projection_row = fit.for_terms(unigrams, _smoothed_idf(chunk_counts))
        projection = fit.projection
        lsa, head, tail = _projected(chunk_counts, lsa_idf, projection_row, projection, progress, spill)
    del chunk_counts
    order = np.argsort(page_of_chunk, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(page_of_chunk, minlength=len(page_number)))].astype(np.int64)
    terms = TermIndex.of(unigrams)
    column = TextColumn.of(unigrams)
    return L1Arrays(column.blob, column.offsets, terms.hashes, terms.ids, pair_keys,
                    sections.indptr, sections.rows, sections.weights, sections.idf,
                    pages.indptr, pages.rows, pages.weights, pages.idf, lsa_idf, projection, projection_row, lsa,
                    page_of_chunk, starts, order.astype(np.int64), static, name, static_pages, sections.tf, pages.tf,
                    np.array([sections.length_mean, pages.length_mean], dtype=np.float64), head, tail)


HEAD_DIMS = 16  # LSA dimensions kept contiguous for the bounded search's cosine bound: 64 bytes, one cache line


def lsa_heads(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LSA rows' first HEAD_DIMS dimensions (contiguous) and the norm of the rest: what the bounded search
    bounds a cosine with (retrieval/l1/bounded.py), made as the rows are projected and stored beside them."""
    tail = rows[:, HEAD_DIMS:]
    return np.ascontiguousarray(rows[:, :HEAD_DIMS]), np.sqrt(np.einsum("ij,ij->i", tail, tail)).astype(np.float32)


PROJECTED_ROWS = 50_000  # rows weighted and projected at a time


def _fit_lsa(counts, config: IndexConfig, progress: bp.Progress | None, row_keys: np.ndarray, unigrams: Sequence[str],
             spill: Spill = IN_MEMORY) -> tuple[np.ndarray, np.ndarray, np.ndarray, Projected]:
    """Sublinear, smoothed-idf, L2-normalised TF-IDF; TruncatedSVD fitted on a row sample (the LSA space
    of 20k sections matches that of all of them closely, and a fit is quadratic in what it sees);
    then every chunk projected and L2-normalised, a block of rows at a time (the TF-IDF of every row is
    never held whole: at 1M chunks it was 0.4 GB, and its copy restricted to the fitted terms as much). The
    sample and the SVD's start follow the chunks' and terms' content keys (retrieval/l1/stable_sample.py): a
    fit after a small edit lands near the one before."""
    bp.report(progress, bp.SVD, 0.0)  # the TF-IDF sample, then TruncatedSVD's steps (retrieval.l1.lsa_fit)
    n_rows, n_terms = counts.shape
    idf = _smoothed_idf(counts)
    sample = sample_rows(row_keys, config.svd_sample_rows, config.random_state)
    fitted = _tfidf(counts[sample] if sample.size < n_rows else counts, idf)
    # fit on the terms the sample holds; from a sampled (large) base, only those in two sampled chunks or more:
    # a term seen once shapes no shared direction, and in a large base they are most of the vocabulary
    least = 1 if sample.size == n_rows else 2
    seen = np.flatnonzero(np.bincount(fitted.indices, minlength=n_terms) >= least)
    dims = min(config.svd_dims, seen.size - 1, sample.size - 1)
    projection_row = np.full(n_terms, -1, dtype=np.int32)
    if dims < 2:
        bp.report(progress, bp.SVD, 1.0)  # too few chunks or terms for an LSA space: nothing to fit
        nothing = np.zeros((n_rows, 0), dtype=np.float32)
        return idf, np.zeros((0, 0), dtype=np.float32), projection_row, (nothing, nothing, np.zeros(n_rows, np.float32))
    keys = (row_keys[sample], term_keys(unigrams[int(t)] for t in seen))
    components = fit_components(fitted[:, seen], dims, config.random_state, lambda f: bp.report(progress, bp.SVD, f),
                                keys)
    del fitted
    projection = np.ascontiguousarray(components.T, dtype=np.float32)
    projection_row[seen] = np.arange(seen.size, dtype=np.int32)
    return idf, projection, projection_row, _projected(counts, idf, projection_row, projection, progress, spill)


def _smoothed_idf(counts) -> np.ndarray:
    """scikit-learn's smoothed idf of every column of CSR `counts` (float32)."""
    n_rows, n_terms = counts.shape
    doc_freq = np.bincount(counts.indices, minlength=n_terms)
    return (np.log((1.0 + n_rows) / (1.0 + doc_freq)) + 1.0).astype(np.float32)


Projected = tuple[np.ndarray, np.ndarray, np.ndarray]  # the LSA rows, their heads and tail norms (lsa_heads)


def _projected(counts, idf: np.ndarray, projection_row: np.ndarray, projection: np.ndarray,
               progress: bp.Progress | None, spill: Spill) -> Projected:
    """Every row of `counts` as TF-IDF, projected and L2-normalised, a block of rows at a time, with the heads
    the bounded search reads, made from each block as it is written (read back through the spilled rows' map,
    every page of them counted in the build's memory: 0.4 GB at 1M chunks)."""
    n_rows, dims = counts.shape[0], projection.shape[1]
    lsa = spill.rows("lsa", (n_rows, dims), np.float32)
    head = np.empty((n_rows, min(dims, HEAD_DIMS)), dtype=np.float32)
    tail = np.empty(n_rows, dtype=np.float32)
    for start in bp.counted(range(0, n_rows, PROJECTED_ROWS), -(-n_rows // PROJECTED_ROWS), progress, bp.PROJECTING):
        part = _seen_only(_tfidf(counts[start:start + PROJECTED_ROWS], idf), projection_row,
                          projection.shape[0]) @ projection
        part = np.asarray(part, dtype=np.float32)
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        rows = part / np.where(norms > 0, norms, 1.0)
        head[start:start + rows.shape[0]], tail[start:start + rows.shape[0]] = lsa_heads(rows)
        lsa.write(rows)
    release_freed_memory(n_rows)
    return lsa.finish(), head, tail


def _tfidf(counts, idf: np.ndarray):
    """Sublinear TF-IDF of CSR `counts` rows, each row L2-normalised (a new matrix; `counts` is unchanged)."""
    tfidf = counts.astype(np.float32, copy=True)
    tfidf.data = (1.0 + np.log(tfidf.data)) * idf[tfidf.indices]
    return l2_normalised_rows(tfidf)


def l2_normalised_rows(matrix):
    """CSR float32 `matrix` with each row divided by its L2 norm, in place, by scikit-learn's `normalize`
    float operations (float32 squares summed in float64 in order, the division in float64), so the same bits,
    without importing scikit-learn: an update of a cached index would pay seconds for its import."""
    n_rows = matrix.shape[0]
    data = matrix.data
    rows = np.repeat(np.arange(n_rows), np.diff(matrix.indptr))
    sums = np.bincount(rows, weights=(data * data).astype(np.float64), minlength=n_rows)
    norms = np.sqrt(sums)
    norms[sums == 0.0] = 1.0  # an empty row stays as it is
    matrix.data = (data.astype(np.float64) / norms[rows]).astype(np.float32)
    return matrix


def _seen_only(tfidf, projection_row: np.ndarray, n_columns: int):
    """`tfidf` with only the terms the SVD saw, as columns of the projection (their order kept: the
    product sums each row's entries in the order a column selection gives them)."""
    from scipy import sparse

    target = projection_row[tfidf.indices]
    keep = target >= 0
    rows = np.repeat(np.arange(tfidf.shape[0]), np.diff(tfidf.indptr))
    indptr = np.r_[0, np.cumsum(np.bincount(rows[keep], minlength=tfidf.shape[0]))].astype(np.int64)
    return sparse.csr_matrix((tfidf.data[keep], target[keep], indptr),
                             shape=(tfidf.shape[0], n_columns))


def _static_part(embedder: Embedder | None, chunks: Sequence[Chunk], surface: SurfaceWords | None,
                 page_of_chunk: np.ndarray, n_pages: int,
                 spill: Spill = IN_MEMORY) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every chunk's static vector, the embedder's name and every page's vector; empty without an embedder,
    or when it breaks its promise (wrong shape, non-finite values: said once, as an EmbedderWarning)."""
    none = (np.zeros((len(chunks), 0), dtype=np.float16), np.zeros(0, dtype=np.uint8),
            np.zeros((n_pages, 0), dtype=np.float16))
    if embedder is None:
        return none
    try:
        if is_static(embedder) and surface is not None:
            vectors, pages = composed_with_pages(embedder, surface, page_of_chunk, n_pages, spill)
        else:
            vectors = embedded_vectors(embedder, [f"{c.breadcrumb}\n{c.text}" for c in chunks])
            pages = page_vectors(vectors, page_of_chunk, n_pages)
    except ValueError as exc:
        warnings.warn(f"{exc}; L1 is built without its static part", EmbedderWarning, stacklevel=4)
        return none
    return vectors, np.frombuffer(embedder.name.encode("utf-8"), dtype=np.uint8).copy(), pages


def loaded(embedder: Embedder | LazyEmbedder | None) -> Embedder | None:
    """The embedder itself (a lazy one loaded now; None when its load failed)."""
    return embedder.get() if isinstance(embedder, LazyEmbedder) else embedder


@dataclass(frozen=True, eq=False)
class WeightColumns:
    """BM25's term-frequency part as CSC arrays by term (indptr, rows, weights), the idf per term (applied by
    the query: retrieval/l1/query_stats.py), the term counts behind the weights (`tf`, entry for entry) and the
    mean row length the weights were normalised by."""

    indptr: np.ndarray
    rows: np.ndarray
    weights: np.ndarray
    idf: np.ndarray
    tf: np.ndarray
    length_mean: float


def weight_columns(counts, k1: float, b: float, length_mean: float | None = None) -> WeightColumns:
    """BM25 weights of a scipy CSR count matrix, with the counts in the same (CSC) order: one conversion to
    CSC, weighted where it lies (`weight_columns_of`: the same weights, entry for entry, as weighting the CSR
    rows; converting the counts and the weights each cost a copy of every entry at 1M chunks)."""
    columns = counts.tocsc()
    tf = columns.data if columns.data.dtype == np.float32 else columns.data.astype(np.float32)
    return weight_columns_of(columns.indptr.astype(np.int64), columns.indices, tf, counts.shape[0], k1, b,
                             length_mean)


def bm25_idf(doc_freq: np.ndarray, n_rows: int) -> np.ndarray:
    """BM25's idf, log(1 + (N - df + 0.5) / (df + 0.5)), 0 for a term no row holds (float64)."""
    doc_freq = np.asarray(doc_freq, dtype=np.float64)
    idf = np.log1p((n_rows - doc_freq + 0.5) / (doc_freq + 0.5))
    idf[doc_freq <= 0] = 0.0
    return idf


def weight_columns_of(indptr: np.ndarray, rows: np.ndarray, tf: np.ndarray, n_rows: int, k1: float,
                      b: float, length_mean: float | None = None) -> WeightColumns:
    """`weight_columns` of counts held as CSC arrays: a row's length summed from its counts, a term's document
    frequency its column's size; lengths normalised by `length_mean` when given (a delta segment keeps its
    base's), else by their own mean. Weighted a run of columns at a time, so no temporary is as long as all
    the entries."""
    lengths = np.zeros(n_rows, dtype=np.float64)
    step = max(WEIGHTED_ENTRIES, 4 * n_rows)  # each part's sums are a vector of n_rows: parts a few times longer
    for start in range(0, tf.size, step):  # counts are whole numbers: sums in parts are exact
        lengths += np.bincount(rows[start:start + step], weights=tf[start:start + step], minlength=n_rows)
    if length_mean is None:
        length_mean = float(lengths.mean()) if lengths.sum() else 1.0
    idf = bm25_idf(np.diff(indptr), n_rows)
    norm = (k1 * (1 - b + b * lengths / length_mean)).astype(np.float32)
    del lengths
    values = np.empty(tf.size, dtype=np.float32)
    scale = np.float32(k1 + 1)
    for a in range(0, tf.size, WEIGHTED_ENTRIES):  # tf * (k1 + 1) / (tf + norm), written in place
        z = min(a + WEIGHTED_ENTRIES, tf.size)
        part = np.multiply(tf[a:z], scale, out=values[a:z])
        below = norm[rows[a:z]]
        below += tf[a:z]
        part /= below
    return WeightColumns(indptr, rows, values, idf, tf, float(length_mean))


WEIGHTED_ENTRIES = 1 << 18  # entries weighted at a time: each temporary ~1 MB, reused from the heap
