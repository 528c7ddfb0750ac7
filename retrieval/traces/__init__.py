"""The trace store: every call recorded in DuckDB table `tool_invocation`, through a durable spool."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "store": "TraceStore",
    "db": "TraceStoreError TraceStoreLocked check_file is_busy_error is_lock_error lock_holder one_line",
    "writer": "TraceWriter TraceStoreWriteWarning TraceStoreLockedWarning",
    "schema": "TABLE COLUMNS",
    "reader": "iter_rows nudge_keepers",
    "filters": "TraceFilter",
    "export": "ExportEstimate ExportResult export_traces estimate_export=estimate EXPORT_FORMATS=FORMATS",
    "prune": "PruneReport prune_traces=prune file_size",
    "moments": "parse_moment parse_since parse_span",
    "parts": "LoadedParts TracePartWarning load_parts part_files run_folder write_part",
    "sources": "expand_sources=expand",
    "status": "Waiting waiting held_message",
    "keeper": "Packed pack",
    "live": "live_dir",
    "file_state": "FileState trace_file_state=file_state",
})
