"""L1's static part: chunk vectors from an `Embedder` (retrieval/embedder.py), and how they re-rank L1's pool.

Build: a static embedder's chunk vector is its token vectors' mean, composed from words. Each distinct
whitespace-separated word is embedded once and every chunk sums its words' vectors, which is what
embedding the text gives (the tokenizer never joins two words), without tokenising 100k chunks one by one
(11 s on the man-page bench, against about 2 s). Any other embedder embeds every chunk's text.

Query: the lexical, LSA and page parts choose L1's pool of pages, exactly as without the static part;
then each pool page's static score (the mean of its whole text's and its best section's cosines with the
query) is standardised over the pool and added to its sections' scores, scaled by the spread of the
pool's fused scores: `score += weight * spread * z`. Measured on the Hugo dev questions and SciFact train (docs/quality.md),
this beats adding the raw cosine to every chunk's score: cosines of a bag of token vectors are high and
alike across a corpus, so only their order among plausible pages carries signal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .embedder import Embedder, StaticEmbedder

WORD_BLOCK = 32_768  # distinct words embedded at a time (bounds a block's vectors to 32 MB at 256 dims)
TEXT_BATCH = 256


@dataclass(frozen=True)
class StaticBoost:
    """One pool page's static part: its static score (a cosine), its standard score over the pool, and
    what it adds to the page's sections' L1 scores."""

    cosine: float
    z: float
    added: float


def build_vectors(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Every text's unit vector, float16 (a cosine moves by about 1e-3)."""
    if isinstance(embedder, StaticEmbedder):
        vectors = _composed(embedder, texts)
    else:
        vectors = np.concatenate([checked_embed(embedder, texts[i:i + TEXT_BATCH])
                                  for i in range(0, len(texts), TEXT_BATCH)] or
                                 [np.zeros((0, embedder.dimensions), dtype=np.float32)])
    return _unit(vectors).astype(np.float16)


def _composed(embedder: StaticEmbedder, texts: Sequence[str]) -> np.ndarray:
    """Sum of each text's words' vectors (one row per text), each distinct word embedded once."""
    from scipy import sparse

    ids: dict[str, int] = {}
    columns: list[int] = []
    lengths = np.empty(len(texts), dtype=np.int64)
    for row, text in enumerate(texts):
        words = text.split()
        lengths[row] = len(words)
        columns.extend(ids.setdefault(w, len(ids)) for w in words)
    indptr = np.r_[0, np.cumsum(lengths)]
    counts = sparse.csr_matrix((np.ones(len(columns), dtype=np.float32), np.asarray(columns, dtype=np.int64), indptr),
                               shape=(len(texts), len(ids)))
    counts.sum_duplicates()
    counts = counts.tocsc()
    words = list(ids)
    out = np.zeros((len(texts), embedder.dimensions), dtype=np.float32)
    for start in range(0, len(words), WORD_BLOCK):
        block = embedder.word_vectors(words[start:start + WORD_BLOCK])
        out += np.asarray(counts[:, start:start + len(block)] @ block, dtype=np.float32)
    return out


def query_vector(embedder: Embedder | None, query: str) -> np.ndarray | None:
    """The query's unit vector, or None (no embedder, or nothing in the query to embed)."""
    if embedder is None:
        return None
    vector = checked_embed(embedder, [query])[0]
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm > 0 else None


def pool_boosts(page_cosines: np.ndarray, page_fused: np.ndarray, weight: float) -> list[StaticBoost]:
    """Each pool page's static part: `weight * spread(page_fused) * z(page_cosines)`, the spread being the
    standard deviation (nothing added when the pool has one page, or all its pages score alike)."""
    spread, deviation = float(page_fused.std()), float(page_cosines.std())
    z = (page_cosines - page_cosines.mean()) / deviation if deviation > 0 else np.zeros_like(page_cosines)
    added = weight * spread * z
    return [StaticBoost(float(c), float(s), float(a)) for c, s, a in zip(page_cosines, z, added, strict=True)]


def checked_embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed(texts)`, checked: the promised shape, finite values."""
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dimensions):
        raise ValueError(f"embedder {embedder.name} returned shape {vectors.shape} for {len(texts)} texts; "
                         f"expected ({len(texts)}, {embedder.dimensions})")
    if not np.isfinite(vectors).all():
        raise ValueError(f"embedder {embedder.name} returned a non-finite value")
    return vectors


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)
