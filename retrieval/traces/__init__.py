"""The trace store: every call recorded in DuckDB table `tool_invocation`, through a durable spool."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "TraceStore": "store",
    "TraceStoreError": "db",
    "TraceWriter": "writer",
    "TABLE": "schema",
    "COLUMNS": "schema",
    "iter_rows": "reader",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
