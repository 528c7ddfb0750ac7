"""Many texts as L1's LSA vectors at once, and each page's LSA vector: what content gaps cluster and compare.

A lookup makes its query's LSA vector in `L1Index.score` (the sublinear TF-IDF of its live words, weighted by the
fit's idf, projected on the SVD's components, L2-normalised); `lsa_query_vectors` makes the same vector for
thousands of texts in one sparse product, each distinct word looked up once. A page's vector is the L2-normalised
sum of its sections' LSA rows, made in one pass over the rows, a block at a time (the rows are memory-mapped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from retrieval.l1.segments import live_frequencies
from retrieval.text.analysis import tokenize

if TYPE_CHECKING:
    from retrieval.l1.search import L1Index

PAGE_BLOCK_ROWS = 65_536  # LSA rows summed at a time into the page vectors (64 MB of float32 at 256 dimensions)


def lsa_query_vectors(index: L1Index, texts: Sequence[str],
                      tokens: Sequence[Sequence[str]] | None = None) -> np.ndarray:
    """float32 [len(texts), dimensions]: each text's LSA query vector as `index.score(text).query_vector` makes
    it (a text with no word the fit saw: a row of zeros). `tokens`: each text's `tokenize`, when the caller has
    it already."""
    dims = index.dimensions
    if not dims or not texts:
        return np.zeros((len(texts), dims), dtype=np.float32)
    term_of: dict[str, int] = {}
    rows, terms, counts = [], [], []
    for row, text in enumerate(texts):
        seen: dict[int, int] = {}
        for word in (tokenize(text) if tokens is None else tokens[row]):
            term = term_of.setdefault(word, len(term_of))
            seen[term] = seen.get(term, 0) + 1
        rows.extend([row] * len(seen))
        terms.extend(seen)
        counts.extend(seen.values())
    words = list(term_of)
    live = known_terms(index, words)
    base = np.fromiter((index.segments[0].vocabulary.get(w) for w in words), dtype=np.int64, count=len(words))
    arrays = index.arrays
    projection_row = np.full(len(words), -1, dtype=np.int64)
    usable = live & (base >= 0)  # a live word of the base's vocabulary, as the lookup's QueryWeights keeps it
    projection_row[usable] = arrays.projection_row[base[usable]]
    weight = np.zeros(len(words), dtype=np.float32)
    weight[usable] = arrays.lsa_idf[base[usable]]
    rows_a, terms_a = np.asarray(rows, dtype=np.int64), np.asarray(terms, dtype=np.int64)
    counts_a = np.asarray(counts, dtype=np.float64)
    keep = projection_row[terms_a] >= 0
    values = ((1.0 + np.log(counts_a[keep])) * weight[terms_a[keep]]).astype(np.float32)
    from scipy import sparse

    tfidf = sparse.csr_matrix((values, (rows_a[keep], projection_row[terms_a[keep]])),
                              shape=(len(texts), arrays.projection.shape[0]), dtype=np.float32)
    projected = np.asarray(tfidf @ arrays.projection, dtype=np.float32)
    norms = np.linalg.norm(projected, axis=1, keepdims=True)
    return (projected / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def lsa_page_vectors(index: L1Index) -> np.ndarray:
    """float32 [pages, dimensions]: each page's LSA vector, the L2-normalised sum of its sections' rows (a
    tombstoned page: zeros)."""
    from scipy import sparse

    n_rows, n_pages, dims = index.n_rows, index.n_pages, index.dimensions
    sums = np.zeros((n_pages, dims), dtype=np.float64)
    page_of = np.asarray(index.page_of_chunk, dtype=np.int64)
    start = 0
    for part in index.lsa.parts:
        for first in range(0, int(part.shape[0]), PAGE_BLOCK_ROWS):
            block = np.asarray(part[first:first + PAGE_BLOCK_ROWS], dtype=np.float32)
            owners = page_of[start + first:start + first + block.shape[0]]
            members = sparse.csr_matrix((np.ones(owners.size, dtype=np.float32), (owners, np.arange(owners.size))),
                                        shape=(n_pages, owners.size))
            sums += members @ block
        start += int(part.shape[0])
    if start != n_rows:
        raise ValueError(f"L1 holds {n_rows} rows but its LSA parts hold {start}")
    if index.dead.pages.size:
        sums[index.dead.pages] = 0.0
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def known_terms(index: L1Index, terms: Sequence[str]) -> np.ndarray:
    """bool per term (a stemmed word, as `tokenize` gives it): whether a live section of the index holds it."""
    columns = [np.fromiter((segment.vocabulary.get(t) for t in terms), dtype=np.int64, count=len(terms))
               for segment in index.segments]
    return live_frequencies(index.segments, index.dead, columns, sections=True) > 0
