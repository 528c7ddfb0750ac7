"""`python -m retrieval traces export-otlp`: stored `tool_invocation` rows sent as spans, with their original
times, so an analyst can move a day of traces into Phoenix (or any OTLP back end).

Each row becomes the spans a live lookup gives (plan.py), as its own trace, marked `lookup.backfilled`.
Rows are read a page at a time, oldest first, each page after the last row sent by its key (created_at, id)
rather than by OFFSET (which rescans every row before the page: quadratic in the rows); after each page the
spans are flushed, and the export stops at the first page the collector does not take, saying how far it got.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context

from retrieval.lookup.invocation import ToolInvocation
from retrieval.otel.export import start_tracing
from retrieval.otel.plan import plan_spans
from retrieval.otel.recorder import emit
from retrieval.otel.settings import OTelSettings
from retrieval.traces import reader as trace_reader
from retrieval.traces.schema import JSON_COLUMNS, TABLE
from retrieval.traces.sources import expand

PAGE = 500
RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class BackfillReport:
    """What an export did: rows read, spans sent and lost, and whether it stopped at a refused page."""

    rows: int
    spans_sent: int
    spans_lost: int
    stopped: bool

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "spans_sent": self.spans_sent, "spans_lost": self.spans_lost,
                "stopped_early": self.stopped}


def export_stored(traces: str | Path | Sequence[str | Path], settings: OTelSettings, *,
                  since: datetime | None = None, run_id: str | None = None, page: int = PAGE) -> BackfillReport:
    """Send the rows of `traces` (a trace file, a folder of them, or several: read as one; created at or after
    `since`, of `run_id`) to `settings.endpoint` as spans."""
    named = [traces] if isinstance(traces, (str, Path)) else list(traces)
    files = expand(named)
    missing = [str(f) for f in files if not f.is_file()] or ([] if files else [", ".join(map(str, named))])
    if missing:
        raise ValueError(f"no trace file at {missing[0]}; pass the DuckDB file the lookups were recorded in, or a "
                         f"folder of them (--traces)")
    traces = files
    tracing = start_tracing(settings)
    where, params = _where(since, run_id)
    rows = 0
    stopped = False
    last: tuple[Any, Any] | None = None  # (created_at, id) of the last row sent
    try:
        while True:
            after = "" if last is None else \
                (" AND " if where else " WHERE ") + "(created_at > ? OR (created_at = ? AND id > ?))"
            frame = trace_reader.query(traces, f"SELECT * FROM {TABLE}{where}{after} ORDER BY created_at, id "
                                               f"LIMIT {int(page)}",
                                       params + ([] if last is None else [last[0], last[0], last[1]]))
            for record in frame.to_dict(orient="records"):
                plan = plan_spans(invocation_of(record))
                emit(tracing.recorder.tracer, replace(plan, attributes={**plan.attributes, "lookup.backfilled": True}),
                     otel_context.Context())
            rows += len(frame)
            if len(frame):
                last = (frame["created_at"].iloc[-1].to_pydatetime(), str(frame["id"].iloc[-1]))
            tracing.provider.force_flush()
            if tracing.exporter.lost:
                stopped = len(frame) == page
                break
            if len(frame) < page:
                break
    finally:
        tracing.shutdown()
    return BackfillReport(rows, tracing.exporter.exported, tracing.exporter.lost, stopped)


def invocation_of(record: dict[str, Any]) -> ToolInvocation:
    """A `tool_invocation` row (JSON columns as text or decoded) as the ToolInvocation it was recorded from."""
    values = {name: json.loads(record[name]) if isinstance(record.get(name), str) else record.get(name)
              for name in JSON_COLUMNS}
    latency = record.get("latency_ms")
    created = record.get("created_at")
    created = created.to_pydatetime() if hasattr(created, "to_pydatetime") else created
    return ToolInvocation(
        str(record.get("tool_name")), str(record.get("query")), values.get("arguments") or {},
        str(record.get("status")),
        float(latency) if isinstance(latency, (int, float)) and math.isfinite(latency) else 0.0,
        values.get("config") or {}, values.get("retrieval_details") or {},
        error=_text(record.get("error")), run_id=_text(record.get("run_id")), query_id=_text(record.get("query_id")),
        id=str(record.get("id")), subject=_text(record.get("subject")),
        created_at=created.replace(tzinfo=timezone.utc) if created.tzinfo is None else created)


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`--since`: an ISO date or time (UTC unless it has an offset), or a span back from now such as `90m`,
    `24h`, `7d`, `2w`. Returned as naive UTC, as `created_at` is stored."""
    now = now or datetime.now(timezone.utc)
    relative = RELATIVE.match(text)
    if relative:
        moment = now - timedelta(**{UNITS[relative.group(2)]: float(relative.group(1))})
    else:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(f"--since takes an ISO date or time (2026-12-01, 2026-12-01T09:30, 2026-12-01T09:30"
                             f"+01:00) or a span back from now (90m, 24h, 7d, 2w), got {text!r}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def _where(since: datetime | None, run_id: str | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if since is not None:
        clauses.append("created_at >= ?")
        params.append(since)
    if run_id is not None:
        clauses.append("run_id = ?")
        params.append(run_id)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
