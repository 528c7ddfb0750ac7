"""Issue 31: the trace file's reading side. A plain DuckDB client started in any folder sees every row within
2 s of a call, and, once writers have stopped, the trace file copied alone holds every row; reads take no
write lock; an analyst holding the file loses nothing, rows arrive when it lets go, and reads say so.

Real processes and real DuckDB files throughout; "plain" means `duckdb.connect(path, read_only=True)` in a
process of its own, with nothing of this project."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from retrieval import TraceStore, TraceStoreError
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import keeper
from retrieval.traces import reader as trace_reader
from retrieval.traces.db import TraceStoreLocked
from retrieval.traces.db import connect as trace_connect
from retrieval.traces.file_state import waiting
from retrieval.traces.writer import TraceStoreLockedWarning
from tests.conftest import held_trace_file

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "data" / "kb"
QUERIES = ("rotate an API token", "download invoices", "silence alerts", "PagerDuty escalation", "retention")

PLAIN = """
import json, sys, duckdb
with duckdb.connect(sys.argv[1], read_only=True) as con:
    rows = con.execute("SELECT id, (retrieval_details->'l0') IS NOT NULL FROM tool_invocation ORDER BY id").fetchall()
print(json.dumps(rows))
"""


def _plain(path: Path, cwd: Path) -> list[list]:
    """The rows a plain DuckDB client started in `cwd` reads from `path`: [id, has the L0 details]."""
    done = subprocess.run([sys.executable, "-c", PLAIN, str(path)], cwd=cwd, capture_output=True, text=True,
                          timeout=60)
    if done.returncode:
        raise AssertionError(done.stderr[-2000:])
    return json.loads(done.stdout)


def _alone(path: Path) -> bool:
    """The file alone holds its rows: no DuckDB log, no live parts, no keeper at work."""
    return not (path.with_name(path.name + ".wal").exists() or keeper.running(path)
                or list(path.with_name(path.name + ".live").glob("*.parquet")))


def _invocations(n: int, prefix: str = "q") -> list[ToolInvocation]:
    return [ToolInvocation("lookup_knowledge", f"{prefix}{i}", {}, "ok", 1.0, {}, {"l0": {"n": i}}) for i in range(n)]


def test_a_session_of_cli_lookups_copied_alone_holds_every_row(tmp_path):
    """Five `python -m retrieval lookup` runs; a plain client started in another folder sees each within 2 s;
    once they have stopped, the keeper folds everything into the file, and the file copied alone (no log, no
    live folder, nothing beside it) opens elsewhere with every row and its retrieval_details."""
    traces, elsewhere = tmp_path / "work" / "t.duckdb", tmp_path / "elsewhere"
    elsewhere.mkdir()
    ids = []
    for query in QUERIES:
        done = subprocess.run([sys.executable, "-m", "retrieval", "lookup", query, "--kb", str(SAMPLE_KB),
                               "--traces", str(traces)], cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
        exited = time.monotonic()
        ids.append(json.loads(done.stdout)["invocation_id"])
        while len(_plain(traces, elsewhere)) < len(ids):
            assert time.monotonic() - exited <= 2.0, "a plain client did not see the row within 2 s of the exit"
            time.sleep(0.05)
    deadline = time.monotonic() + 30
    while not _alone(traces):
        assert time.monotonic() < deadline, "the keeper did not fold the rows into the file within 30 s"
        time.sleep(0.1)
    copy = elsewhere / "copied.duckdb"
    shutil.copyfile(traces, copy)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["copied.duckdb"]
    assert _plain(copy, tmp_path) == [[i, True] for i in sorted(ids)]


def test_reads_take_no_write_lock(tmp_path):
    """Another process holds the file read-only, as a DuckDB client opened with `-readonly` does: a write lock
    would be refused, and every reading function still reads."""
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:
        store.record_many(_invocations(3))
    reader = TraceStore(path)
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}, "
                               "read_only=True); print('ready', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert trace_reader.count(path, timeout=0.5) == 3
        assert reader.count() == 3 and len(reader.invocations()) == 3
        assert trace_reader.query(path, "SELECT count(*) AS n FROM tool_invocation")["n"][0] == 3
        with pytest.raises(TraceStoreLocked), reader.connect(timeout=0.3):  # a write lock is refused meanwhile
            pass
    finally:
        holder.kill()
        holder.wait()


def test_an_analyst_holding_the_file_loses_nothing_and_reads_say_who_holds_it(tmp_path):
    """The duckdb shell holds the file read-write: a writer records and its drains keep every row (in the live
    folder, not shown), with one warning naming the holder; reads fail naming it, quickly, and the waiting
    rows are said so; when it lets go, every row arrives, once, with no further step."""
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    writer = TraceStore(path, lock_timeout=0.5)
    with held_trace_file(path) as holder:
        writer.record_many(_invocations(20))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert writer.flush() is False
        held = [w.message for w in caught if isinstance(w.message, TraceStoreLockedWarning)]
        assert len(held) == 1 and f"process {holder.pid}" in held[0].holder
        assert "arrive when it lets go" in str(held[0])
        with pytest.raises(TraceStoreLocked) as refused:
            trace_reader.count(path, timeout=0.3)
        assert f"process {holder.pid}" in refused.value.holder
        rows_waiting = waiting(path)
        assert rows_waiting is not None and f"held by process {holder.pid}" in rows_waiting.message()
        assert "new rows are waiting and will arrive when it lets go" in rows_waiting.message()
    deadline = time.monotonic() + 10  # the keeper the writer started, or its background drain, shows them
    while True:
        try:
            ids = trace_reader.query(path, "SELECT id FROM tool_invocation")["id"].tolist()
        except TraceStoreError:
            ids = []
        if len(ids) >= 20 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(ids) == len(set(ids)) == 20
    assert waiting(path) is None
    writer.close()


def test_rows_wait_unseen_while_the_file_is_held_read_only_and_arrive_after(tmp_path):
    """A read-only holder lets every read through, but the live view cannot be made: the rows wait in the live
    folder, `waiting` names the holder, and they arrive when it lets go."""
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    writer = TraceStore(path, lock_timeout=0.3)
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}, "
                               "read_only=True); print('ready', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        writer.record_many(_invocations(5))
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            assert writer.flush() is False
        assert trace_reader.count(path) == 0  # the read works; the rows are not shown yet
        assert f"process {holder.pid}" in waiting(path).holder
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while trace_reader.count(path) < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert trace_reader.count(path) == 5
    writer.close()


def test_no_trace_file_connection_draws_duckdbs_progress_bar_on_stdout(tmp_path):
    """DuckDB prints its progress bar on stdout for a statement over 2 s: on a slow machine it corrupted a
    command's printed report or JSON, so every connection the trace store opens turns it off."""
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:
        store.record_many(_invocations(1))
    for read_only in (False, True):
        con = trace_connect(path, timeout=5, read_only=read_only)
        try:
            assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False
        finally:
            con.close()
