"""lookup-knowledge: L0 (BM25 hints) + L1 (TF-IDF/LSA) retrieval with DuckDB traces.

The public names load on first use, so `python -m retrieval` and `import retrieval.tool` do not pay
for DuckDB, pandas or scikit-learn until a command needs them (CLI start-up stays under a second).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "LookupConfig": "config", "IndexConfig": "index_config", "KnowledgeBase": "corpus",
    "KnowledgeBaseError": "corpus", "load_knowledge_base": "corpus", "KnowledgeIndex": "index",
    "build_index": "index", "open_index": "index", "LookupResult": "lookup", "lookup_knowledge": "lookup",
    "TraceStore": "trace_store", "TraceStoreError": "trace_store", "TraceWriter": "trace_writer",
    "Embedder": "embedder", "StaticEmbedder": "embedder", "EmbedderWarning": "embedder",
    "WordLlamaEmbedder": "embedder",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
