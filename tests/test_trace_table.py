"""Issue 19's acceptance: every process leaves its rows in `tool_invocation`, where a plain DuckDB sees them.

A "plain" reader here is `duckdb.connect(path, read_only=True)` and nothing of this project: no drain on the
way. Every process's rows are there within 2 s of a call: long-lived processes (the MCP server, an eval run,
the app) drain them, and a one-shot command hands its row to the keeper it leaves behind (issue 31).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import pack
from retrieval.traces import reader as trace_reader
from tests.conftest import held_trace_file

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "data" / "kb"
WITHIN = 2.0  # seconds a long-lived process may keep the table behind


def _plain(path: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(sql).fetchall()


WATCH = """
import sys, time, duckdb
path, sql = sys.argv[1], sys.argv[2]
while True:
    try:
        with duckdb.connect(path, read_only=True) as con:
            print(time.time(), con.execute(sql).fetchone()[0], flush=True)
    except duckdb.Error:
        pass  # the file does not exist yet, or a writer holds it at this moment
    time.sleep(0.1)
"""


class Watcher:
    """A plain DuckDB reader in its own process, as an analyst's would be, polling `sql` every 0.1 s."""

    def __init__(self, path: Path, sql: str) -> None:
        self.seen: list[tuple[float, int]] = []  # (time.time(), value)
        self.proc = subprocess.Popen([sys.executable, "-c", WATCH, str(path), sql], stdout=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            at, value = line.split()
            self.seen.append((float(at), int(value)))

    def seconds_until(self, expected: int, since: float, limit: float = WITHIN + 3) -> float:
        """Seconds from `since` (time.time()) until the reader first saw `expected` or more."""
        while time.time() - since < limit:
            hit = next((at for at, value in list(self.seen) if at >= since and value >= expected), None)
            if hit is not None:
                return hit - since
            time.sleep(0.05)
        raise AssertionError(f"the plain reader did not see {expected} within {limit:.0f} s: {self.seen[-5:]}")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.reader.join(5)


def _plain_within(path: Path, sql: str, expected: list[tuple], limit: float = WITHIN) -> float:
    """Seconds until a plain read of `sql` gives `expected` (polled every 50 ms), or AssertionError after `limit`."""
    started, last = time.monotonic(), None
    while time.monotonic() - started < limit:
        try:
            last = _plain(path, sql)
        except duckdb.Error as exc:  # the file does not exist yet, or the keeper holds it a moment
            last = exc
        if last == expected:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"a plain read of {sql!r} gave {last!r}, not {expected!r}, for {limit:.1f} s")


def _cli(*args: str, cwd: Path = ROOT, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=180, **kwargs)


def test_after_a_cli_lookup_exits_a_plain_duckdb_finds_its_row_with_the_l0_hints(tmp_path):
    traces = tmp_path / "t.duckdb"
    done = _cli("-m", "retrieval", "lookup", "how do I add a PagerDuty integration", "--kb", str(SAMPLE_KB),
                "--traces", str(traces))
    assert done.returncode == 0, done.stderr
    invocation_id = json.loads(done.stdout)["invocation_id"]
    _plain_within(traces, "SELECT count(*) FROM tool_invocation", [(1,)])  # within 2 s of its exit
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
    _plain_within(tmp_path / "t.duckdb", "SELECT count(*) FROM tool_invocation", [(1,)])


def test_a_cli_lookup_on_a_held_file_keeps_its_row_waiting_and_names_the_holder_in_one_line(tmp_path):
    traces = tmp_path / "t.duckdb"
    TraceStore(traces).close()
    with held_trace_file(traces) as holder:
        done = _cli("-m", "retrieval", "lookup", "invoice", "--kb", str(SAMPLE_KB), "--traces", str(traces),
                    "--lock-timeout", "0.5")
        assert done.returncode == 0 and json.loads(done.stdout)["invocation_id"]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"locked by process {holder.pid}" in lines[0] and "t.duckdb.pending.jsonl" in lines[0]
        assert "arrives when it lets go" in lines[0]
        time.sleep(1.0)  # the keeper drains it into the live folder meanwhile, but cannot show it yet
    _plain_within(traces, "SELECT count(*) FROM tool_invocation", [(1,)], limit=5.0)  # it arrives


def test_a_cli_lookup_on_a_broken_file_fails_in_one_line_and_keeps_its_row(tmp_path):
    traces = tmp_path / "t.duckdb"
    traces.write_bytes(b"\0" * 8 + b"DUCK" + b"\x07" * 5000)
    done = _cli("-m", "retrieval", "lookup", "invoice", "--kb", str(SAMPLE_KB), "--traces", str(traces))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: cannot open trace file") and done.stderr.count("\n") == 1
    assert (tmp_path / "t.duckdb.pending.jsonl").stat().st_size > 0  # nothing recorded is lost


def test_an_mcp_call_reaches_the_table_within_two_seconds_while_the_server_runs(tmp_path):
    pytest.importorskip("mcp")
    from tests.mcp_helpers import mcp_server

    with mcp_server(tmp_path) as server:
        watcher = Watcher(server.traces, "SELECT count(*) FROM tool_invocation")
        try:
            called = time.time()
            server.lookup(query="invoices")
            took = watcher.seconds_until(1, called)
        finally:
            watcher.stop()
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
    watcher = Watcher(traces, "SELECT count(*) FROM tool_invocation")
    try:
        for i in range(3):
            recorded = time.time()
            store.record(ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {"n": i}))
            assert watcher.seconds_until(i + 1, recorded) <= WITHIN
    finally:
        watcher.stop()
        store.close()


def test_an_app_lookup_is_in_the_table_when_the_page_shows_it(env):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    watcher = Watcher(env["traces"], "SELECT count(*) FROM tool_invocation")
    try:
        clicked = time.time()
        at.text_input(key="lookup_query").set_value("rotate an API token")
        at = at.button(key="lookup_run").click().run()
        assert not at.exception and not at.error
        assert watcher.seconds_until(1, clicked) <= WITHIN
    finally:
        watcher.stop()


def test_rows_of_a_writer_gone_without_draining_arrive_though_reads_never_drain(tmp_path):
    """A read opens the file read-only and moves nothing; seeing rows wait in a spool with no keeper (their
    writer is gone), it starts one, which drains them within 2 s."""
    traces = tmp_path / "t.duckdb"
    writer = TraceStore(traces)
    writer.detach()  # a process that recorded and went away without draining
    writer.record_many([ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {}) for i in range(5)])
    writer.detach()
    assert trace_reader.count(traces) == 0  # the read itself drains nothing
    _plain_within(traces, "SELECT count(*) FROM tool_invocation", [(5,)])
    assert list(trace_reader.query(traces, "SELECT query FROM tool_invocation ORDER BY query")["query"]) == [
        f"q{i}" for i in range(5)]
    assert not (tmp_path / "t.duckdb.pending.jsonl").exists()


def test_a_part_folded_by_a_fold_killed_before_removing_it_is_not_stored_twice(tmp_path):
    """The ledger, the one place exactly-once is enforced: a part's rows and its name commit together, so a part
    a killed fold left behind is left out of the live view and only removed by the next fold."""
    from retrieval.traces.fold import fold
    from retrieval.traces.spool import Spool, spool_path

    traces = tmp_path / "t.duckdb"
    TraceStore(traces).close()
    spool = Spool(spool_path(traces))
    spool.append(b"".join(json.dumps({"id": f"r{i}", "created_at": "2026-01-02T03:04:05", "tool_name": "t",
                                      "query": "q", "status": "ok"}).encode() + b"\n" for i in range(3)))
    assert TraceStore(traces).flush()  # a drain: the rows are a live part, shown by the live view
    assert len(list(tmp_path.glob("t.duckdb.live/*.parquet"))) == 1
    with duckdb.connect(str(traces)) as con:
        real_unlink = Path.unlink
        Path.unlink = lambda self, missing_ok=False: None  # the fold "dies" after its commit, before removing
        try:
            assert fold(con, traces) == 3
        finally:
            Path.unlink = real_unlink
    assert len(list(tmp_path.glob("t.duckdb.live/*.parquet"))) == 1
    assert trace_reader.count(traces) == 3
    assert TraceStore(traces).flush()  # a drain shows the left part again: the live view leaves it out ...
    assert trace_reader.count(traces) == 3
    assert pack(traces, timeout=60)  # ... and the fold finds it in the ledger too, and only removes it
    assert trace_reader.count(traces) == 3
    assert not list(tmp_path.glob("t.duckdb.live/*.parquet"))


def test_a_store_dropped_without_closing_still_leaves_its_rows_in_the_table_at_exit(tmp_path):
    traces = tmp_path / "t.duckdb"
    script = ("import gc\nfrom retrieval import TraceStore\nfrom retrieval.lookup.invocation import ToolInvocation\n"
              f"store = TraceStore({str(traces)!r})\n"
              "store.record(ToolInvocation('lookup_knowledge', 'q', {}, 'ok', 1.0, {}, {}, id='dropped'))\n"
              "del store\ngc.collect()\n")
    done = _cli("-c", script)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _plain(traces, "SELECT id FROM tool_invocation") == [("dropped",)]


def test_an_eval_run_keeps_the_table_within_two_seconds_while_it_runs(tmp_path, monkeypatch):
    """A run spools its lookups every SPOOL_AGE seconds (not only every 200 queries), so a plain reader
    sees the run's rows grow while it runs."""

    from eval import runs
    from eval.datasets import load_query_set
    from retrieval import LookupConfig, open_index

    traces = tmp_path / "t.duckdb"
    store = TraceStore(traces)
    dataset = load_query_set(SAMPLE_KB, ROOT / "data" / "queries.jsonl")
    index = open_index(SAMPLE_KB)
    started = time.time()
    real_lookup = runs.lookup_knowledge
    finished: list[float] = []

    def slow_lookup(*args, **kwargs):  # 50 ms a lookup: a 67-query run lasts over 3 s
        time.sleep(0.05)
        result = real_lookup(*args, **kwargs)
        finished.append(time.time())
        return result

    monkeypatch.setattr(runs, "lookup_knowledge", slow_lookup)
    watcher = Watcher(traces, "SELECT count(*) FROM tool_invocation")
    try:
        runs.run_evaluation(dataset, LookupConfig(), store=store, index=index, baseline=False, oracle=False)
        time.sleep(0.3)
    finally:
        watcher.stop()
    seen = [(at, count) for at, count in watcher.seen if at <= finished[-1]]
    assert finished[-1] - started > 3 and len(seen) > 10
    behind = [(round(at - started, 2), count, sum(1 for f in finished if f <= at - WITHIN)) for at, count in seen]
    assert all(count >= due for _, count, due in behind), [b for b in behind if b[1] < b[2]]
    assert any(0 < count < len(finished) for _, count, _ in behind), "no row reached the table while it ran"
