"""Building and opening the L0 and L1 indexes of a knowledge base, cached on disk by its content."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "build": "KnowledgeIndex build_index default_cache_dir file_signature open_index",
    "progress": "BUILD_STAGES=STAGES build_share=overall",
    "integrity": "file_digest",
    "live": "LiveIndex current_index",
})
