"""lookup-knowledge: L0 (BM25 hints) + L1 (TF-IDF/LSA) retrieval with DuckDB traces."""

__version__ = "0.1.0"

from .config import LookupConfig  # noqa: E402
from .corpus import KnowledgeBase, KnowledgeBaseError, load_knowledge_base  # noqa: E402
from .index import KnowledgeIndex, build_index, open_index  # noqa: E402
from .lookup import LookupResult, lookup_knowledge  # noqa: E402
from .trace_store import TraceStore, TraceStoreError  # noqa: E402

__all__ = ["KnowledgeBase", "KnowledgeBaseError", "KnowledgeIndex", "LookupConfig", "LookupResult",
           "TraceStore", "TraceStoreError", "build_index", "load_knowledge_base", "lookup_knowledge",
           "open_index"]
