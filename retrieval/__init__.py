"""lookup-knowledge: L0 (BM25 hints) + L1 (TF-IDF/LSA and a static embedder) retrieval with DuckDB traces.

The public API is the names below; each subpackage declares its own in its `__init__` (retrieval.kb,
retrieval.text, retrieval.index, retrieval.l0, retrieval.l1, retrieval.lookup, retrieval.traces,
retrieval.export, retrieval.agent). Names load on first use, so `python -m retrieval` and
`import retrieval.agent` do not pay for DuckDB, pandas or scikit-learn until a command needs them (CLI
start-up stays under a second).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__version__ = "0.1.0"


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's `__getattr__` and `__dir__` (PEP 562) for names loaded on first use: `exports` maps a
    public name to the module that defines it, relative to `package` ("module" or "module:attribute")."""

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *exports])

    return __getattr__, __dir__


_EXPORTS = {
    "LookupConfig": "config", "parse_assignments": "config",
    "Chunk": "kb.model", "Entry": "kb.model", "KnowledgeBase": "kb.model", "KnowledgeBaseError": "kb.model",
    "load_knowledge_base": "kb.load",
    "IndexConfig": "index.config", "KnowledgeIndex": "index.build", "build_index": "index.build",
    "open_index": "index.build",
    "LookupResult": "lookup.orchestrator", "lookup_knowledge": "lookup.orchestrator",
    "ToolInvocation": "lookup.invocation",
    "LookupTool": "agent.tool",
    "TraceStore": "traces.store", "TraceStoreError": "traces.db", "TraceWriter": "traces.writer",
    "TRACE_TABLE": "traces.schema:TABLE", "iter_trace_rows": "traces.reader:iter_rows",
    "Embedder": "l1.embedder", "StaticEmbedder": "l1.embedder", "EmbedderWarning": "l1.embedder",
    "WordLlamaEmbedder": "l1.embedder",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
