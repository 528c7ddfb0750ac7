"""L1: TF-IDF + LSA over heading-level chunks, a page score, and the static embedder part."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "search": "L1Index L1Result L1Candidate",
    "embedder": "Embedder StaticEmbedder EmbedderWarning WordLlamaEmbedder",
    "postings": "postings_sum",
    "segments": "QueryTerms QueryWeights",
    "dense": "DenseSettings VectorStore dense_text",
    "query_vectors": "lsa_query_vectors lsa_page_vectors known_terms",
})
