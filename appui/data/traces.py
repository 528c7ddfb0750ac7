"""Reading the trace store for the pages: filtered traces, the read-only SQL box, diffs, export bytes.

Plain functions over `TraceStore` and `LookupResult.to_dict()`, with no Streamlit calls, so they are
tested directly and reused by the Traces and Export pages.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from appui.data import sql_sandbox as sql_box
from appui.data import trace_report
from retrieval import TRACE_TABLE as TABLE
from retrieval import TraceStore
from retrieval import iter_trace_rows as iter_rows
from retrieval.export import csv_safe, html_document, json_lines, markdown_document

TIME_RANGES = {"All time": None, "Last hour": timedelta(hours=1), "Last 24 hours": timedelta(days=1),
               "Last 7 days": timedelta(days=7)}
NO_RUN, ANY = "(interactive lookups)", "(all)"
FORMATS = {"CSV": ("csv", "text/csv"), "Parquet": ("parquet", "application/vnd.apache.parquet"),
           "JSONL": ("jsonl", "application/x-ndjson"), "Markdown": ("md", "text/markdown"),
           "HTML": ("html", "text/html")}
# status, latency and id first: at the end of the row, a narrow window scrolled them out of sight
SUMMARY_COLUMNS = ["created_at", "status", "latency_ms", "id", "query", "retrieval_layer", "filter_decision",
                   "l1_status", "l0_match_count", "l1_candidate_count", "evidence_count", "run_id", "host", "pid"]


ReadOnlyError = sql_box.SqlRefused  # the SQL box's refusal, under the name the pages and tests use


@dataclass(frozen=True)
class TraceFilters:
    """What the Traces page filters on; `to_sql()` gives a parameterised WHERE clause."""

    time_range: str = "All time"
    run: str = ANY
    layers: tuple[str, ...] = ()
    l1_statuses: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    text: str = ""
    limit: int | None = 1000
    now: datetime | None = field(default=None, compare=False)
    hosts: tuple[str, ...] = ()  # the hosts whose rows to keep (schema v9's `host`); none: every host

    def to_sql(self) -> tuple[str, list[Any]]:
        clauses, params = [], []
        span = TIME_RANGES.get(self.time_range)
        if span is not None:
            clauses.append("created_at >= ?")
            params.append((self.now or datetime.now(timezone.utc)).replace(tzinfo=None) - span)
        if self.run == NO_RUN:
            clauses.append("run_id IS NULL")
        elif self.run != ANY:
            clauses.append("run_id = ?")
            params.append(self.run)
        for column, values in (("retrieval_layer", self.layers), ("l1_status", self.l1_statuses),
                               ("filter_decision", self.decisions), ("host", self.hosts)):
            if values:
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        if self.text.strip():
            clauses.append("query ILIKE ?")
            params.append(f"%{self.text.strip()}%")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def filter_traces(store: TraceStore, filters: TraceFilters) -> pd.DataFrame:
    """`tool_invocation` rows matching `filters`, newest first, at most `filters.limit` (None: every row)."""
    where, params = filters.to_sql()
    cap = "" if filters.limit is None else f" LIMIT {int(filters.limit)}"
    return store.query(f"SELECT * FROM {TABLE}{where} ORDER BY created_at DESC, id{cap}", params)


def distinct_values(store: TraceStore) -> dict[str, list[str]]:
    """The values the Traces filters offer: layers, L1 statuses, filter decisions, run ids, hosts."""
    out = {}
    for column in ("retrieval_layer", "l1_status", "filter_decision", "run_id", "host"):
        frame = store.query(f"SELECT DISTINCT {column} AS v FROM {TABLE} WHERE {column} IS NOT NULL ORDER BY 1")
        out[column] = [str(v) for v in frame["v"]]
    return out


def stamp(store: TraceStore) -> tuple[int, str]:
    """Row count and newest timestamp: the cache key that changes whenever a trace is added."""
    frame = store.query(f"SELECT count(*) AS n, max(created_at) AS newest FROM {TABLE}")
    return int(frame["n"][0]), str(frame["newest"][0])


def check_read_only(sql: str) -> str:
    """The one statement of `sql` if the SQL box may run it (see appui.data.sql_sandbox); else ReadOnlyError."""
    return sql_box.check_statement(sql)


def read_only_query(store: TraceStore, sql: str, *, max_rows: int = 10_000) -> pd.DataFrame:
    """Run a checked statement on a sealed in-memory copy of the trace tables (see appui.data.sql_sandbox)."""
    return sql_box.run(sql_box.snapshot(store.query), sql, max_rows=max_rows).frame


def result_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """What changed from lookup A to lookup B: blocks gained, lost and reordered, filter, layer, L1."""
    rank_a = {blk["source"]: i for i, blk in enumerate(a.get("evidence_blocks") or [], start=1)}
    rank_b = {blk["source"]: i for i, blk in enumerate(b.get("evidence_blocks") or [], start=1)}
    da, db = a.get("retrieval_details") or {}, b.get("retrieval_details") or {}

    def pair(*path: str) -> list[Any]:
        return [_dig(da, path), _dig(db, path)]

    return {"gained": [s for s in rank_b if s not in rank_a], "lost": [s for s in rank_a if s not in rank_b],
            "reordered": [(s, rank_a[s], rank_b[s]) for s in rank_b if s in rank_a and rank_a[s] != rank_b[s]],
            "filter_decision": pair("filter", "decision"), "filter_applied": pair("filter", "applied"),
            "retrieval_layer": pair("retrieval_layer"), "l1_status": pair("l1", "status"),
            "relevance": [(a.get("relevance") or {}).get("level"), (b.get("relevance") or {}).get("level")]}


def _dig(mapping: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = mapping
    for name in path:
        value = (value or {}).get(name)
    return value


def export_traces(frame: pd.DataFrame, fmt: str, *, title: str = "Traces") -> bytes:
    """The filtered `tool_invocation` rows as CSV, Parquet, JSONL, or a report in Markdown or self-contained
    HTML: the summary table, then each trace in full (appui.data.trace_report)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "CSV":
        return csv_safe(frame).to_csv(index=False).encode()
    if fmt == "Parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    if fmt == "JSONL":
        return json_lines(iter_rows(frame)).encode()
    summary = frame.reindex(columns=[c for c in SUMMARY_COLUMNS if c in frame.columns])
    sections = trace_report.report_sections(title, summary, list(iter_rows(frame)))
    return (markdown_document(sections) if fmt == "Markdown" else html_document(sections)).encode()
