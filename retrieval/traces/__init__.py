"""The trace store: every call recorded in DuckDB table `tool_invocation`, through a durable spool."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "store": "TraceStore",
    "db": "TraceStoreError TraceStoreLocked",
    "writer": "TraceWriter TraceStoreWriteWarning TraceStoreLockedWarning",
    "schema": "TABLE COLUMNS",
    "reader": "iter_rows",
    "parts": "LoadedParts TracePartWarning load_parts part_files run_folder write_part",
    "sources": "expand_sources=expand",
    "status": "Waiting waiting held_message",
    "keeper": "Packed pack",
})
