"""Building and opening the L0 and L1 indexes of a knowledge base, cached on disk by its content."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "KnowledgeIndex": "build",
    "build_index": "build",
    "open_index": "build",
    "IndexConfig": "config",
    "BUILD_STAGES": "progress:STAGES",
    "build_share": "progress:overall",
    "file_digest": "cache",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
