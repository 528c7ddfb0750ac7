"""Trace files made in SQL for the export, retention and backfill tests: `TraceStore` makes the schema, then one
`INSERT … SELECT … FROM range(n)` adds the rows (50,000 in about a second), and a run's eval rows when asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from retrieval import TraceStore
from retrieval.traces import pack

START = datetime(2026, 1, 1)  # row i is made at START + i × STEP (naive UTC)
STEP = timedelta(seconds=2)
HOSTILE = "=HYPERLINK(\"http://x\")"  # every 7th row's query starts like a spreadsheet formula
ROOT = Path(__file__).resolve().parents[1]


def build_traces(path: Path, n: int, *, run_every: int = 10, same_time: int = 1, offset: int = 0) -> Path:
    """`n` rows `id-<i>` (i from `offset`): every `run_every`-th of run `run-<i // 1000>` (0: none), the rest
    interactive; layer L0 for i % 3 == 0 else L0+L1; decision applied for even i else none; `same_time` rows
    share each created_at; a ~1 kB retrieval_details with evidence and a nested object."""
    TraceStore(path, background=False).detach()
    run = f"CASE WHEN i % {run_every} = 0 THEN 'run-' || (i // 1000) ELSE NULL END" if run_every else "NULL"
    with duckdb.connect(str(path)) as con:
        con.execute(f"""INSERT INTO tool_invocation (id, created_at, tool_name, query, arguments, status, latency_ms,
            retrieval_layer, filter_decision, l1_status, l0_match_count, evidence_count, run_id, config,
            retrieval_details)
          SELECT 'id-' || lpad(i::VARCHAR, 8, '0'), ?::TIMESTAMP + to_seconds((i // {same_time}) * 2),
            'lookup_knowledge', CASE WHEN i % 7 = 0 THEN ? || i ELSE 'query number ' || i END,
            '{{"top_k": 5}}'::JSON, CASE WHEN i % 11 = 0 THEN 'error' ELSE 'ok' END, (i % 97)::DOUBLE,
            CASE WHEN i % 3 = 0 THEN 'L0' ELSE 'L0+L1' END, CASE WHEN i % 2 = 0 THEN 'applied' ELSE 'none' END,
            'ok', 3, 2, {run}, '{{"l0_filter": true}}'::JSON,
            json_object('retrieval_layer', 'L0', 'filter', json_object('decision', 'applied', 'n', i),
                        'evidence', [json_object('source', 'a/' || i || '.md', 'content_preview',
                                                 repeat(md5(i::VARCHAR) || ' lorem ', 12)),
                                     json_object('source', 'b/' || (i % 977) || '.md', 'content_preview',
                                                 repeat(md5((i + 1)::VARCHAR) || ' ipsum ', 12))])
          FROM range({offset}, {offset + n}) t(i)""", [START, HOSTILE])
    return path


def add_run(path: Path, run_id: str, created_at: datetime, lookups: list[str]) -> None:
    """An `eval_run` row of `run_id` made at `created_at`, with one `eval_query` and metric row per lookup id."""
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO eval_run (run_id, created_at, dataset, status) VALUES (?, ?, 'data', 'complete')",
                    [run_id, created_at])
        for n, invocation in enumerate(lookups):
            con.execute("INSERT INTO eval_query (run_id, query_id, invocation_id) VALUES (?, ?, ?)",
                        [run_id, f"q{n}", invocation])
            con.execute("INSERT INTO eval_query_metric VALUES (?, ?, 'lookup', 'ndcg@10', 1.0)", [run_id, f"q{n}"])


def folded(path: Path) -> Path:
    """`path` with DuckDB's log folded into it (as the detached checkpointer does), so its size is the file's."""
    assert pack(path, timeout=60)
    return path


def counts(path: Path) -> dict[str, int]:
    """Rows per table of the file."""
    with duckdb.connect(str(path), read_only=True) as con:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("tool_invocation", "eval_run", "eval_query", "eval_query_metric")}


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m retrieval ARGS` in `cwd`, with this checkout's packages."""
    return subprocess.run([sys.executable, "-m", "retrieval", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def summary(completed: subprocess.CompletedProcess) -> dict:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)
