"""Reading the trace store for the pages: the Traces page's filters (one default for the Traces and Export
pages), filtered traces, the read-only SQL box, diffs.

Plain functions over `TraceStore` and `LookupResult.to_dict()`, with no Streamlit calls, so they are
tested directly and reused by the Traces and Export pages (whose exports are appui.data.trace_export).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd

from appui.data import sql_sandbox as sql_box
from retrieval import TRACE_TABLE as TABLE
from retrieval import TraceStore
from retrieval.traces import TraceFilter

TIME_RANGES = {"All time": None, "Last hour": timedelta(hours=1), "Last 24 hours": timedelta(days=1),
               "Last 7 days": timedelta(days=7)}
NO_RUN, ANY = "(interactive lookups)", "(all)"
# the one default of the Run filter, for the Traces page and the Export page alike (an evaluation's hundreds of
# rows would otherwise bury the analyst's own lookups, and a new session's export would hold every row)
DEFAULT_RUN = NO_RUN
FORMATS = {"CSV": ("csv", "text/csv"), "Parquet": ("parquet", "application/vnd.apache.parquet"),
           "JSONL": ("jsonl", "application/x-ndjson"), "Markdown": ("md", "text/markdown"),
           "HTML": ("html", "text/html")}
# status, latency and id first: at the end of the row, a narrow window scrolled them out of sight
SUMMARY_COLUMNS = ["created_at", "status", "latency_ms", "id", "query", "retrieval_layer", "filter_decision",
                   "l1_status", "l0_match_count", "l1_candidate_count", "evidence_count", "run_id", "host", "pid"]


ReadOnlyError = sql_box.SqlRefused  # the SQL box's refusal, under the name the pages and tests use


@dataclass(frozen=True)
class TraceFilters:
    """What the Traces page filters on (the Export page exports the same rows); `core()` is the filter in
    retrieval's terms, `to_sql()` its parameterised WHERE clause."""

    time_range: str = "All time"
    run: str = DEFAULT_RUN
    layers: tuple[str, ...] = ()
    l1_statuses: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    text: str = ""
    limit: int | None = 1000
    now: datetime | None = field(default=None, compare=False)
    hosts: tuple[str, ...] = ()  # the hosts whose rows to keep (schema v9's `host`); none: every host

    def core(self) -> TraceFilter:
        """The same filter as retrieval's TraceFilter (what the exports and the CLI take); the time range is
        counted back from `now` (default: the current time)."""
        span = TIME_RANGES.get(self.time_range)
        since = None if span is None else (self.now or datetime.now(timezone.utc)) - span
        return TraceFilter(since=since, interactive=self.run == NO_RUN,
                           run_ids=() if self.run in (NO_RUN, ANY) else (self.run,), query_contains=self.text,
                           layers=tuple(self.layers), l1_statuses=tuple(self.l1_statuses),
                           decisions=tuple(self.decisions), hosts=tuple(self.hosts))

    def to_sql(self) -> tuple[str, list[Any]]:
        return self.core().where()

    def words(self) -> str:
        """The filters in words: 'interactive lookups · since 2026-01-05 16:00 UTC · query contains 'token''."""
        return self.core().words()


def filter_traces(store: TraceStore, filters: TraceFilters) -> pd.DataFrame:
    """`tool_invocation` rows matching `filters`, newest first, at most `filters.limit` (None: every row)."""
    where, params = filters.to_sql()
    cap = "" if filters.limit is None else f" LIMIT {int(filters.limit)}"
    return store.query(f"SELECT * FROM {TABLE}{where} ORDER BY created_at DESC, id{cap}", params)


RUN_OPTIONS = 200  # the Run filter offers the newest runs; an older one is reached through the Compare page


def distinct_values(store: TraceStore) -> dict[str, list[str]]:
    """The values the Traces filters offer: layers, L1 statuses, filter decisions, hosts, and the newest
    `RUN_OPTIONS` run ids (a month of sweeps holds thousands), newest first."""
    out = {}
    for column in ("retrieval_layer", "l1_status", "filter_decision", "host"):
        frame = store.query(f"SELECT DISTINCT {column} AS v FROM {TABLE} WHERE {column} IS NOT NULL ORDER BY 1")
        out[column] = [str(v) for v in frame["v"]]
    runs = store.query(f"SELECT run_id AS v FROM {TABLE} WHERE run_id IS NOT NULL GROUP BY run_id "
                       f"ORDER BY max(created_at) DESC, run_id LIMIT {RUN_OPTIONS}")
    out["run_id"] = [str(v) for v in runs["v"]]
    return out


def stamp(store: TraceStore) -> tuple[int, str]:
    """Row count and newest timestamp: the cache key that changes whenever a trace is added."""
    frame = store.query(f"SELECT count(*) AS n, max(created_at) AS newest FROM {TABLE}")
    return int(frame["n"][0]), str(frame["newest"][0])


def check_read_only(sql: str) -> str:
    """The one statement of `sql` if the SQL box may run it (see appui.data.sql_sandbox); else ReadOnlyError."""
    return sql_box.check_statement(sql)


def read_only_query(store: TraceStore, sql: str, *, max_rows: int = 10_000) -> pd.DataFrame:
    """Run a checked statement on the store's trace file, read in place and sealed (see appui.data.sql_sandbox);
    its first `max_rows` rows."""
    return sql_box.run(store.path, sql, max_rows=max_rows).frame


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
