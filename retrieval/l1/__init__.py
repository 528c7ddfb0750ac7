"""L1: TF-IDF + LSA over heading-level chunks, a page score, and the static embedder part."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "L1Index": "search",
    "L1Result": "search",
    "L1Candidate": "search",
    "Embedder": "embedder",
    "StaticEmbedder": "embedder",
    "EmbedderWarning": "embedder",
    "WordLlamaEmbedder": "embedder",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
