"""Trace files for the trends, changes and alerts tests, built fast: a few real rows recorded through TraceStore
(the writer path and schema v16's columns), then synthetic production rows inserted by DuckDB from `range()`,
with controlled times, abstentions and latencies, and a PLANTED change in the last window (or none).

Randomness is DuckDB's `hash()` of the row number and a salt: the same file every time, without a seed to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb

from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from tests.conftest import settle_trace_file

UNTIL = datetime(2026, 3, 1)  # the end of every planted window (naive UTC)
WINDOW = timedelta(days=7)
PER_DAY = 2000
HOSTS = ("alpha", "beta")
CATEGORIES = ("security", "billing")
PLANTED_QUESTIONS = ("how do I rotate the quantum vault key", "where is the flux capacitor manual",
                     "can I export invoices to cobol")
REAL_ROWS = 24


@dataclass(frozen=True)
class Plant:
    """What a planted file holds: abstention shares before and after, and the latency added after (ms)."""

    abstain_before: float = 0.05
    abstain_after: float = 0.05
    latency_shift_ms: float = 0.0


def real_rows(path: Path) -> None:
    """REAL_ROWS lookups recorded through TraceStore inside the planted windows (every fourth abstaining)."""
    invocations = []
    for n in range(REAL_ROWS):
        abstain = n % 4 == 0
        details = {"retrieval_layer": "L0+L1", "l0": {"match_count": 3}, "l1": {"status": "ok", "candidate_count": 5},
                   "filter": {"decision": "applied", "applied": {"category": CATEGORIES[n % 2]}},
                   "candidate_count": 6, "evidence_count": 0 if abstain else 3,
                   "relevance": {"level": "none" if abstain else "high", "confidence": 0.05 if abstain else 0.8,
                                 "abstain": abstain, "semantic_support": not abstain, "basis": "test"}}
        invocations.append(ToolInvocation("lookup_knowledge", f"real question {n % 6}", {"query": "q"}, "ok",
                                          20.0 + n, {"top_k": 5}, details,
                                          created_at=(UNTIL - timedelta(hours=1 + n * 13)).replace(
                                              tzinfo=timezone.utc)))
    with TraceStore(path) as store:
        store.record_many(invocations)
    settle_trace_file(path)  # folded, and no keeper left to hold the file while DuckDB inserts below


def _u(salt: str) -> str:
    """A uniform number in [0, 1) for row `i`, the same every build."""
    return f"((hash(i, '{salt}') % 1000000) / 1000000.0)"


def plant(path: Path, plant_: Plant = Plant(), *, per_day: int = PER_DAY, days: int = 14,
          until: datetime = UNTIL, with_runs: bool = True, questions: tuple[str, ...] = PLANTED_QUESTIONS) -> int:
    """A trace file at `path`: real rows, then `per_day` synthetic production lookups a day over the `days` days
    before `until`, the last WINDOW planted with `plant_`; with `with_runs`, evaluation rows too (never counted).
    Returns the number of synthetic production rows."""
    real_rows(path)
    total = per_day * days
    step_us = days * 86_400 * 10**6 // total
    start = until - timedelta(days=days)
    cut = until - WINDOW
    current = f"(TIMESTAMP '{start.isoformat(sep=' ')}' + to_microseconds(i * {step_us}) >= TIMESTAMP " \
              f"'{cut.isoformat(sep=' ')}')"
    u, planted = _u("abstain"), f"{_u('abstain')} >= {plant_.abstain_before}"
    abstain = (f"CASE WHEN {current} THEN {u} < {plant_.abstain_after} ELSE {u} < {plant_.abstain_before} END")
    extra = f"({current} AND {abstain} AND {planted})"  # the planted abstentions: asked by the planted questions
    latency = f"(5.0 + 40.0 * {_u('latency')} * {_u('latency2')} + CASE WHEN {current} THEN " \
              f"{plant_.latency_shift_ms} ELSE 0 END)"
    asked = ", ".join("'" + q.replace("'", "''") + "'" for q in questions)
    con = duckdb.connect(str(path))
    try:
        con.execute(f"""
            INSERT INTO tool_invocation BY NAME
            SELECT 'syn-' || i AS id,
                   TIMESTAMP '{start.isoformat(sep=' ')}' + to_microseconds(i * {step_us}) AS created_at,
                   'lookup_knowledge' AS tool_name,
                   CASE WHEN {extra} THEN [{asked}][1 + i % {len(questions)}]
                        ELSE 'question number ' || (hash(i, 'q') % 40) END AS query,
                   CASE WHEN {_u('error')} < 0.01 THEN 'error' ELSE 'ok' END AS status,
                   {latency} AS latency_ms,
                   CASE WHEN {_u('layer')} < 0.1 THEN 'L0' ELSE 'L0+L1' END AS retrieval_layer,
                   CASE WHEN {_u('filter')} < 0.6 THEN 'applied' ELSE 'skipped_no_domain' END AS filter_decision,
                   CASE WHEN {_u('l1')} < 0.02 THEN 'failed' WHEN {_u('l1')} < 0.05 THEN 'empty' ELSE 'ok' END
                       AS l1_status,
                   CASE WHEN {abstain} AND {_u('empty')} < 0.5 THEN 0 ELSE 3 END AS evidence_count,
                   '/kb/' || CASE WHEN i % 5 = 0 THEN 'other' ELSE 'main' END AS kb_path,
                   ['{HOSTS[0]}', '{HOSTS[1]}'][1 + i % 2] AS host,
                   CASE WHEN {_u('filter')} < 0.6 THEN ['{CATEGORIES[0]}', '{CATEGORIES[1]}'][1 + i % 2] END
                       AS category,
                   CASE WHEN {abstain} THEN (CASE WHEN i % 2 = 0 THEN 'low' ELSE 'none' END)
                        WHEN {_u('level')} < 0.5 THEN 'high' ELSE 'medium' END AS relevance_level,
                   CASE WHEN {abstain} THEN 0.15 * {_u('conf')} ELSE 0.3 + 0.7 * {_u('conf')} END AS confidence,
                   {abstain} AS abstained
            FROM range({total}) t(i)""")
        if with_runs:  # evaluation rows, all abstaining and slow: a figure that counted them would show it
            con.execute(f"""
                INSERT INTO tool_invocation BY NAME
                SELECT 'run-' || i AS id, TIMESTAMP '{cut.isoformat(sep=' ')}' + to_microseconds(i * 1000000)
                       AS created_at, 'lookup_knowledge' AS tool_name, 'eval question' AS query, 'ok' AS status,
                       5000.0 AS latency_ms, 'none' AS relevance_level, 0.0 AS confidence, true AS abstained,
                       'run-1' AS run_id
                FROM range(2000) t(i)""")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return total
