"""OpenTelemetry export: each lookup as an OpenInference RETRIEVER span with a child span per stage.

Nothing here imports OpenTelemetry until a name is used (`settings_from_env` never does), so without an
endpoint the CLI, the MCP server and the app load none of it. Needs the `[otel]` extra. See docs/otel.md.
"""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "settings": "OTelSettings settings_from_env",
    "recorder": "OTelRecorder OTelRecordingWarning",
    "export": "OTelExportWarning Tracing start_tracing",
    "plan": "SpanPlan plan_spans",
    "backfill": "BackfillReport export_stored parse_since",
    "env": "tracing_from_env",
    "receiver": "OTLPReceiver",
})
