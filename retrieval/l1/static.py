"""L1's static part: chunk vectors from an `Embedder` (retrieval/l1/embedder.py), and how they re-rank L1's pool.

Build: a static embedder's text vector is its token vectors' mean, so a chunk's vector is composed from
its words: L1's term count (one pass over the text) keeps every case-folded word's id, stop words
included, and each distinct word is embedded once: far cheaper than tokenising every chunk's text
(docs/embedder.md). The query is read the same way (case-folded words). Any other
embedder embeds every chunk's text and the query as they are.

Query: the lexical, LSA and page parts choose L1's pool of pages, exactly as without the static part;
then each pool page's static score (the mean of its whole text's and its best pooled section's cosines
with the query; the page vectors are made at build) is standardised over the pool and added to its
sections' scores, scaled by the spread of the pool's fused scores: `score += weight * spread * z`.
Measured on the Hugo dev questions and SciFact train (docs/quality.md), this beats adding the raw cosine
to every chunk's score: cosines of a bag of token vectors are high and alike across a corpus, so only
their order among plausible pages carries signal.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from retrieval.l1.embedder import Embedder, StaticEmbedder, is_static, unit_rows
from retrieval.l1.stacked import Stacked, one_array
from retrieval.l1.terms import SurfaceWords
from retrieval.storage.spill import IN_MEMORY, Spill
from retrieval.text.analysis import WORD

TEXT_BLOCK = 65_536  # texts composed at a time (bounds a block's float32 vectors to 64 MB at 256 dims)
TEXT_BATCH = 256
REFERENCE_PAGES = 20  # the pool's best pages that standardise the static part: the default pool (l1_pool)


def composed_vectors(embedder: StaticEmbedder, surface: SurfaceWords) -> np.ndarray:
    """Every text's unit vector (float16: a cosine moves by about 1e-3), the sum of its words' vectors: each
    distinct word embedded once, then a block of texts at a time, one sparse product (a word met twice
    in a text is two entries, which the product adds: counting them first cost as much as it saved)."""
    return composed_with_pages(embedder, surface, None, 0)[0]


def composed_with_pages(embedder: StaticEmbedder, surface: SurfaceWords, page_of_row: np.ndarray | None,
                        n_pages: int, spill: Spill = IN_MEMORY) -> tuple[np.ndarray, np.ndarray]:
    """`composed_vectors`, written to `spill` a block at a time, and `page_vectors` of them summed from the
    same blocks (equal to it: the same blocks, in the same order), so the vectors are never read back
    (`page_of_row` None: no page vectors, an empty array in their place)."""
    from scipy import sparse

    table = _checked_words(embedder, surface.words)
    n_texts = surface.starts.size - 1
    vectors = spill.rows("static", (n_texts, embedder.dimensions), np.float16)
    sums = np.zeros((n_pages, embedder.dimensions), dtype=np.float32)
    for start in range(0, n_texts, TEXT_BLOCK):
        end = min(start + TEXT_BLOCK, n_texts)
        first, last = int(surface.starts[start]), int(surface.starts[end])
        words = sparse.csr_matrix((np.ones(last - first, dtype=np.float32), surface.ids[first:last],
                                   surface.starts[start:end + 1] - first), shape=(end - start, len(surface.words)))
        block = unit_rows(np.asarray(words @ table, dtype=np.float32)).astype(np.float16)
        vectors.write(block)
        if page_of_row is not None:
            sums += _page_sums(block.astype(np.float32), page_of_row[start:end], n_pages)
    return vectors.finish(), unit_rows(sums).astype(np.float16)


def _page_sums(block: np.ndarray, pages: np.ndarray, n_pages: int) -> np.ndarray:
    """Each page's sum of the `block` rows it owns (one sparse product)."""
    from scipy import sparse

    owner = sparse.csr_matrix((np.ones(pages.size, dtype=np.float32), (pages, np.arange(pages.size))),
                              shape=(n_pages, pages.size))
    return np.asarray(owner @ block, dtype=np.float32)


def page_vectors(vectors: np.ndarray | Stacked, page_of_row: np.ndarray, n_pages: int) -> np.ndarray:
    """Each page's unit vector (float16): its rows' vectors summed (one sparse product per block of rows); the
    static part's at build, the dense part's over an index's segments."""
    rows = one_array(vectors)
    sums = np.zeros((n_pages, rows.shape[1]), dtype=np.float32)
    for start in range(0, rows.shape[0], TEXT_BLOCK):
        block = rows.take(np.arange(start, min(start + TEXT_BLOCK, rows.shape[0]))).astype(np.float32)
        sums += _page_sums(block, page_of_row[start:start + block.shape[0]], n_pages)
    return unit_rows(sums).astype(np.float16)


def embedded_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Every text's unit vector (float16), embedded text by text (any embedder)."""
    vectors = np.concatenate([checked_embed(embedder, texts[i:i + TEXT_BATCH])
                              for i in range(0, len(texts), TEXT_BATCH)]
                             or [np.zeros((0, embedder.dimensions), dtype=np.float32)])
    return unit_rows(vectors).astype(np.float16)


def query_vector(embedder: Embedder | None, query: str) -> np.ndarray | None:
    """The query's unit vector, read as the chunks were, or None (no embedder, or nothing to embed)."""
    if embedder is None:
        return None
    if is_static(embedder):
        words = WORD.findall(unicodedata.normalize("NFKC", query).casefold())
        vector = _checked_words(embedder, words).sum(axis=0) if words else np.zeros(embedder.dimensions)
    else:
        vector = checked_embed(embedder, [query])[0]
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else None


def pool_boosts(page_cosines: np.ndarray, page_fused: np.ndarray, weight: float) -> np.ndarray:
    """What each pool page's static score adds to its sections' scores: `weight * spread * z`, the spread
    (standard deviation) of the fused scores and the mean and deviation of the static scores taken over
    the pool's REFERENCE_PAGES best pages (by fused score), so a larger pool (a larger `top_k`) leaves the
    best pages' scores as they were. Nothing is added when the reference has one page, or its pages score alike."""
    reference = np.argsort(-page_fused, kind="stable")[:REFERENCE_PAGES]
    spread, deviation = float(page_fused[reference].std()), float(page_cosines[reference].std())
    centre = float(page_cosines[reference].mean())
    z = (page_cosines - centre) / deviation if deviation > 0 else np.zeros_like(page_cosines)
    return weight * spread * z


def checked_embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed(texts)`, checked: the promised shape, finite values."""
    return _checked(embedder, embedder.embed(list(texts)), len(texts), "texts")


def _checked_words(embedder: StaticEmbedder, words: Sequence[str]) -> np.ndarray:
    """`embedder.word_vectors(words)`, checked as `checked_embed` checks."""
    return _checked(embedder, embedder.word_vectors(list(words)), len(words), "words")


def _checked(embedder: Embedder, returned: Any, count: int, what: str) -> np.ndarray:
    vectors = np.asarray(returned, dtype=np.float32)
    if vectors.shape != (count, embedder.dimensions):
        raise ValueError(f"embedder {embedder.name} returned shape {vectors.shape} for {count} {what}; "
                         f"expected ({count}, {embedder.dimensions})")
    if not np.isfinite(vectors).all():
        raise ValueError(f"embedder {embedder.name} returned a non-finite value")
    return vectors
