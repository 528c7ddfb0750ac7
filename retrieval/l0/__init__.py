"""L0: BM25Okapi over entry titles, keywords, categories and entities, turned into hints."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "L0Index": "index",
    "entry_terms": "index",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
