"""lookup-knowledge: L0 (BM25 hints) + L1 (TF-IDF/LSA and a static embedder) retrieval with DuckDB traces.

The public API is the names below; each subpackage declares its own in its `__init__` (retrieval.kb,
retrieval.text, retrieval.index, retrieval.l0, retrieval.l1, retrieval.lookup, retrieval.traces,
retrieval.export, retrieval.agent, retrieval.otel). Names load on first use, so `python -m retrieval` and
`import retrieval.agent` do not pay for DuckDB, pandas or scikit-learn until a command needs them (CLI
start-up stays under a second).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__version__ = "0.1.0"


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any],
                                                                    Callable[[], list[str]]]:
    """A package's `__all__`, `__getattr__` and `__dir__` (PEP 562) for names loaded on first use. `exports`
    maps each module (relative to `package`) to the public names it defines, space-separated; `public=attr`
    exports the module's `attr` as `public`."""
    where: dict[str, tuple[str, str]] = {}
    for module, names in exports.items():
        for name in names.split():
            public, _, attribute = name.partition("=")
            where[public] = (module, attribute or public)
    folder = Path(sys.modules[package].__file__ or "").parent
    shadowed = sorted(n for n in where if (folder / f"{n}.py").is_file() or (folder / n / "__init__.py").is_file())
    if shadowed:  # importing the submodule makes the package attribute the module: 'module' is not callable
        raise ImportError(f"{package} exports {', '.join(shadowed)} under the name of its own submodule; export "
                          "it under another name ('public=attribute')")

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where[name]
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *where])

    return sorted(where), __getattr__, __dir__


__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "config": "LookupConfig parse_assignments",
    "kb.model": "Chunk Entry KnowledgeBase KnowledgeBaseError",
    "kb.load": "load_knowledge_base",
    "l1.config": "IndexConfig",
    "index.build": "KnowledgeIndex build_index open_index",
    "lookup.orchestrator": "LookupResult lookup_knowledge",
    "lookup.explain": "explain_missing explain_result MissingReport Explanation MISSING_STAGES=STAGES",
    "lookup.invocation": "ToolInvocation",
    "lookup.recorders": "Recorders combine_recorders=combine",
    "agent.tool": "LookupTool",
    "traces.store": "TraceStore",
    "traces.db": "TraceStoreError",
    "traces.writer": "TraceWriter",
    "traces.schema": "TRACE_TABLE=TABLE",
    "traces.reader": "iter_trace_rows=iter_rows",
    "l1.embedder": "Embedder StaticEmbedder EmbedderWarning WordLlamaEmbedder",
})
