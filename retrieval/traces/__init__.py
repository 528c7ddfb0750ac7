"""The trace store: every call recorded in DuckDB table `tool_invocation`, through a durable spool.

A row's one way into the table (docs/traces.md draws it): `record()` appends it to the spool (writer.py,
spool.py); a drain writes the spool's rows as a Parquet part in the live folder (drain.py, parts.py), which
the live view shows at once (view.py); the fold puts the parts into the table, each once (fold.py), done by
the keeper once writers are idle (keeper.py) and by every read-write connection of this project first."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "store": "TraceStore",
    "db": "TraceStoreError TraceStoreLocked check_file is_busy_error is_lock_error lock_holder one_line",
    "writer": "TraceWriter TraceStoreWriteWarning TraceStoreLockedWarning",
    "schema": "TABLE COLUMNS",
    "reader": "iter_rows nudge_keepers",
    "filters": "TraceFilter parse_moment parse_since parse_span",
    "export": "ExportEstimate ExportResult export_traces estimate_export=estimate EXPORT_FORMATS=FORMATS",
    "prune": "PruneReport prune_traces=prune file_size",
    "parts": "LoadedParts TracePartWarning load_parts part_files run_folder write_part",
    "sources": "expand_sources=expand",
    "fold": "Packed pack",
    "view": "live_dir",
    "file_state": "FileState trace_file_state=file_state Waiting waiting held_message",
    "figures": "Figure FIGURES FIGURE_NAMES=NAMES PRODUCTION_ROWS=PRODUCTION",
    "trends": "Trends trace_trends=trends TREND_BUCKETS=BUCKETS TREND_PER=PER",
    "changes": "Changes FigureChange ReportSection trace_changes=changes",
    "alerts": "Condition Breach parse_fail_on check_alerts=check load_alerts=load_config parse_significant",
    "gaps": "ContentGaps GapTopic NearestPage content_gaps",
})
