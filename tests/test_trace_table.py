"""Issue 19's acceptance: every process leaves its rows in `tool_invocation`, where a plain DuckDB sees them.

A "plain" reader here is `duckdb.connect(path, read_only=True)` and nothing of this project: no drain on the
way. One-shot commands leave their rows in the table when they exit; long-lived processes (the MCP server,
an eval run, the app) within 2 s of a call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

import duckdb
import pytest

from retrieval import TraceStore, trace_reader
from retrieval.invocation import ToolInvocation

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "data" / "kb"
WITHIN = 2.0  # seconds a long-lived process may keep the table behind


def _plain(path: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()


def _seen_within(path: Path, sql: str, expected: int, limit: float = WITHIN) -> float:
    """Seconds until a plain reader finds `expected` rows for `sql` (a writer may hold the lock a moment)."""
    started = time.monotonic()
    while True:
        try:
            if path.exists() and _plain(path, sql)[0][0] >= expected:
                return time.monotonic() - started
        except (duckdb.IOException, duckdb.ConnectionException):
            pass  # a writer holds the file right now (another process's lock, or this process's connection)
        if time.monotonic() - started > limit + 3:
            raise AssertionError(f"{sql} did not reach {expected} within {limit + 3:.0f} s")
        time.sleep(0.05)


def _cli(*args: str, cwd: Path = ROOT, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=180, **kwargs)


def test_after_a_cli_lookup_exits_a_plain_duckdb_finds_its_row_with_the_l0_hints(tmp_path):
    traces = tmp_path / "t.duckdb"
    done = _cli("-m", "retrieval", "lookup", "how do I add a PagerDuty integration", "--kb", str(SAMPLE_KB),
                "--traces", str(traces))
    assert done.returncode == 0, done.stderr
    invocation_id = json.loads(done.stdout)["invocation_id"]
    rows = _plain(traces, "SELECT id, retrieval_details FROM tool_invocation")
    assert [row[0] for row in rows] == [invocation_id]
    l0 = json.loads(rows[0][1])["l0"]
    assert l0["matched_titles"] and l0["domains"], l0  # the L0 hints are persisted in the table itself
    assert not list(tmp_path.glob("t.duckdb.pending*")), "no spool file is left"
    assert done.stderr == ""


def test_a_traced_cli_lookup_imports_neither_pyarrow_nor_pandas(tmp_path):
    done = _cli("-X", "importtime", "-m", "retrieval", "lookup", "invoice", "--kb", str(SAMPLE_KB),
                "--traces", str(tmp_path / "t.duckdb"))
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "duckdb" in imported  # the drain helper's imports are reported too (it is forked with -X importtime)
    assert not imported & {"pyarrow", "pandas"}
    assert _plain(tmp_path / "t.duckdb", "SELECT count(*) FROM tool_invocation") == [(1,)]


def test_a_cli_lookup_on_a_held_file_keeps_its_row_spooled_and_names_the_holder_in_one_line(tmp_path):
    traces = tmp_path / "t.duckdb"
    TraceStore(traces).close()
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(traces)!r}); "
                               "print('ready', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        done = _cli("-m", "retrieval", "lookup", "invoice", "--kb", str(SAMPLE_KB), "--traces", str(traces),
                    "--lock-timeout", "0.5")
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0 and json.loads(done.stdout)["invocation_id"]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"locked by process {holder.pid}" in lines[0] and "t.duckdb.pending.jsonl" in lines[0]
    assert json.loads(done.stdout)["invocation_id"] in (tmp_path / "t.duckdb.pending.jsonl").read_text()
    assert trace_reader.count(traces) == 1  # the next reader moves it


def test_a_cli_lookup_on_a_broken_file_fails_in_one_line_and_keeps_its_row(tmp_path):
    traces = tmp_path / "t.duckdb"
    traces.write_bytes(b"\0" * 8 + b"DUCK" + b"\x07" * 5000)
    done = _cli("-m", "retrieval", "lookup", "invoice", "--kb", str(SAMPLE_KB), "--traces", str(traces))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: cannot open trace file") and done.stderr.count("\n") == 1
    assert (tmp_path / "t.duckdb.pending.jsonl").stat().st_size > 0  # nothing recorded is lost


def test_an_mcp_call_reaches_the_table_within_two_seconds_while_the_server_runs(tmp_path):
    pytest.importorskip("mcp")
    from tests.test_mcp_server import mcp_server

    with mcp_server(tmp_path) as server:
        invocation_id = server.lookup(query="invoices").structured_content["invocation_id"]
        took = _seen_within(server.traces, f"SELECT count(*) FROM tool_invocation WHERE id = '{invocation_id}'", 1)
    assert took <= WITHIN


def test_an_eval_run_leaves_its_lookups_in_the_table(tmp_path):
    traces = tmp_path / "t.duckdb"
    done = _cli("-m", "eval", "run", "--kb", str(SAMPLE_KB), "--queries", str(ROOT / "data" / "queries.jsonl"),
                "--traces", str(traces), "--no-baseline", "--no-oracle")
    assert done.returncode == 0, done.stderr[-2000:]
    ((queries,),) = _plain(traces, "SELECT n_queries FROM eval_run")
    ((runs, lookups),) = _plain(traces, "SELECT count(DISTINCT run_id), count(*) FROM tool_invocation")
    assert (runs, lookups) == (1, queries) and queries > 50
    assert not list(tmp_path.glob("t.duckdb.pending*"))


def test_a_long_lived_writer_keeps_the_table_within_two_seconds(tmp_path):
    """The app, the MCP server and eval runs record through a TraceStore that stays open: its background
    drain moves each row into the table within WITHIN seconds, without any read."""
    traces = tmp_path / "t.duckdb"
    store = TraceStore(traces)
    for i in range(3):
        store.record(ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {"n": i}))
        assert _seen_within(traces, "SELECT count(*) FROM tool_invocation", i + 1) <= WITHIN
        time.sleep(0.3)
    store.close()


def test_an_app_lookup_is_in_the_table_when_the_page_shows_it(env):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.text_input(key="lookup_query").set_value("rotate an API token")
    at = at.button(key="lookup_run").click().run()
    assert not at.exception and not at.error
    assert _seen_within(env["traces"], "SELECT count(*) FROM tool_invocation", 1) <= WITHIN


def test_the_reading_functions_drain_the_spool_without_a_writer(tmp_path):
    traces = tmp_path / "t.duckdb"
    writer = TraceStore(traces)
    writer.detach()  # a process that recorded and went away without draining
    writer.record_many([ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {}) for i in range(5)])
    writer.detach()
    assert _plain(traces, "SELECT count(*) FROM tool_invocation") == [(0,)]
    assert trace_reader.count(traces) == 5
    assert list(trace_reader.query(traces, "SELECT query FROM tool_invocation ORDER BY query")["query"]) == [
        f"q{i}" for i in range(5)]
    assert not (tmp_path / "t.duckdb.pending.jsonl").exists()


def test_a_batch_stored_by_a_drainer_killed_before_removing_it_is_not_stored_twice(tmp_path):
    """The ledger: rows and the batch's name commit together, so the batch file a killed drainer left
    behind is recognised and removed, not inserted again."""
    from retrieval.trace_file import drain_into, spool_path
    from retrieval.trace_spool import Spool

    traces = tmp_path / "t.duckdb"
    TraceStore(traces).close()
    spool = Spool(spool_path(traces))
    spool.append(b"".join(json.dumps({"id": f"r{i}", "created_at": "2026-01-02T03:04:05", "tool_name": "t",
                                      "query": "q", "status": "ok"}).encode() + b"\n" for i in range(3)))
    with duckdb.connect(str(traces)) as con:
        real_unlink = Path.unlink
        Path.unlink = lambda self, missing_ok=False: None  # the drainer "dies" before removing its batch
        try:
            drain_into(con, traces, spool, deque())
        finally:
            Path.unlink = real_unlink
    assert len(list(tmp_path.glob("*.draining"))) == 1
    assert trace_reader.count(traces) == 3  # the next drain finds the batch in the ledger
    assert not list(tmp_path.glob("*.draining"))


def test_a_store_dropped_without_closing_still_leaves_its_rows_in_the_table_at_exit(tmp_path):
    traces = tmp_path / "t.duckdb"
    script = ("import gc\nfrom retrieval import TraceStore\nfrom retrieval.invocation import ToolInvocation\n"
              f"store = TraceStore({str(traces)!r})\n"
              "store.record(ToolInvocation('lookup_knowledge', 'q', {}, 'ok', 1.0, {}, {}, id='dropped'))\n"
              "del store\ngc.collect()\n")
    done = _cli("-c", script)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _plain(traces, "SELECT id FROM tool_invocation") == [("dropped",)]
