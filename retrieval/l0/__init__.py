"""L0: BM25Okapi over entry titles, keywords, categories and entities, turned into hints."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "index": "L0Index",
    "arrays": "L0Arrays entry_terms",
})
