"""The spool beside the trace file: record() only appends to it; bad lines are set aside, never fatal."""

from __future__ import annotations

import json
import os
import time
import warnings

import pytest

from retrieval import TraceStore, lookup_knowledge
from retrieval.invocation import ToolInvocation
from retrieval.trace_store import TraceSpoolRejectedWarning, TraceStoreWriteWarning
from tests.conftest import stored_row

GOOD = {"id": "good-1", "created_at": "2026-01-02T03:04:05", "tool_name": "lookup_knowledge", "query": "q",
        "status": "ok", "arguments": '{"query": "q"}', "retrieval_details": "{}", "latency_ms": 1.0}
BAD_LINES = {
    "missing fields": b'{"id":"x"}',
    "invalid JSON": b'{"id": "y", "created_at": ',
    "wrong types": json.dumps({**GOOD, "id": "z", "latency_ms": "slow", "evidence_count": "3"}).encode(),
    "bad timestamp": json.dumps({**GOOD, "id": "w", "created_at": "yesterday"}).encode(),
    "not an object": b'["a", "list"]',
    "not UTF-8": b'{"id": "\xff\xfe", "query": "latin-1 \xe9"}',
    "details not JSON": json.dumps({**GOOD, "id": "v", "retrieval_details": "{nope"}).encode(),
}


def _invocation(query: str = "q", **kwargs) -> ToolInvocation:
    return ToolInvocation("lookup_knowledge", query, {"query": query}, "ok", 1.5, {"top_k": 5},
                          {"retrieval_layer": "L0", "timings_ms": {"total": 1.0}}, **kwargs)


def _spooled_queries(store: TraceStore) -> list[str]:
    return [json.loads(line)["query"] for line in store.spool_path.read_text().splitlines()]


def test_record_only_appends_to_the_spool_until_a_read_drains_it(tmp_path, monkeypatch):
    store = TraceStore(tmp_path / "t.duckdb")
    monkeypatch.setattr(store, "drain_in_background", lambda: None)  # hold the drainer thread off
    store.record(_invocation("first"))
    store.record(_invocation("second"))
    assert _spooled_queries(store) == ["first", "second"]
    assert sorted(store.query("SELECT query FROM tool_invocation")["query"]) == ["first", "second"]
    assert store.spool_path.read_text() == "" and not list(tmp_path.glob("*.draining"))


def test_record_stamps_the_callers_latency_and_its_own_time(tmp_path, index):
    store = TraceStore(tmp_path / "t.duckdb")
    result = lookup_knowledge("PagerDuty escalation", index=index, recorder=store)
    row = stored_row(store, result.invocation_id)
    timings = row["retrieval_details"]["timings_ms"]
    assert 0 <= timings["record"] < 50 and "record" in result.retrieval_details["timings_ms"]
    assert row["latency_ms"] >= timings["total"] + timings["record"] - 0.01


def test_a_drain_offers_the_gil_while_it_decodes_rows(tmp_path, monkeypatch):
    """Decoding spooled rows is Python; a background drain that held the GIL for a whole batch stalled the
    lookups running beside it, so it offers the GIL after every row (and still stores every row)."""
    import retrieval.trace_pending as trace_pending

    store = TraceStore(tmp_path / "t.duckdb")
    monkeypatch.setattr(store, "drain_in_background", lambda: None)
    store.record_many([_invocation(f"q{i}") for i in range(40)])
    yields = []
    monkeypatch.setattr(trace_pending.time, "sleep", yields.append)
    assert store.flush()
    assert len(yields) == 40 + 2 and set(yields) == {0}  # a row each, and between the 3 Arrow slices
    assert store.count() == 40


def test_a_background_drain_paces_itself_to_a_small_share_of_the_gil(tmp_path, monkeypatch):
    """A background drain (nobody waits for it) sleeps after each row for about nine times what the row
    took, so lookups beside it get the GIL first; a reader's drain only offers it (test above)."""
    import retrieval.trace_pending as trace_pending
    from retrieval import trace_drain

    store = TraceStore(tmp_path / "t.duckdb")
    monkeypatch.setattr(trace_drain, "notify", lambda now=False: None)  # no drainer thread in this test
    rows = store.batch_size
    store.record_many([_invocation(f"q{i}") for i in range(rows)])
    decode = trace_pending.decode

    def slow_decode(line):  # each row takes at least 1 ms of work
        started = time.perf_counter()
        while time.perf_counter() - started < 0.001:
            pass
        return decode(line)

    naps = []
    monkeypatch.setattr(trace_pending, "decode", slow_decode)
    monkeypatch.setattr(trace_pending.time, "sleep", naps.append)
    store.drain_in_background()
    row_naps = naps[1:rows]  # the first paces the claim of the batch
    assert len(naps) == rows + -(-rows // trace_pending.ARROW_ROWS) - 1  # a row each, and between Arrow slices
    share = trace_pending.BACKGROUND_SHARE
    assert min(row_naps) >= 0.001 * (1 - share) / share * 0.99  # >= 9 ms after a 1 ms row
    assert max(naps) <= trace_pending.LONGEST_STEP * (1 - share) / share + 1e-9
    assert store.count() == rows


def test_a_background_drain_behind_a_large_backlog_goes_at_full_speed(tmp_path, monkeypatch):
    """Pacing bounds a drain's throughput; past PACED_BACKLOG spooled rows it only offers the GIL, so a
    process recording faster than a paced drain moves rows cannot grow the spool without bound."""
    import retrieval.trace_pending as trace_pending
    from retrieval import trace_drain

    store = TraceStore(tmp_path / "t.duckdb", batch_size=20)  # 31 rows are due for a drain
    monkeypatch.setattr(trace_drain, "notify", lambda now=False: None)
    monkeypatch.setattr(trace_pending, "PACED_BACKLOG", 30)
    store.record_many([_invocation(f"q{i}") for i in range(31)])
    naps = []
    monkeypatch.setattr(trace_pending.time, "sleep", naps.append)
    store.drain_in_background()
    assert naps and set(naps) == {0} and store.count() == 31


def test_a_drain_builds_its_arrow_batch_in_slices_and_inserts_it_whole(tmp_path, monkeypatch):
    """Converting 500 rows to Arrow in one call held the GIL for milliseconds; the drain converts
    ARROW_ROWS at a time (offering the GIL between slices) and still inserts the batch in one statement."""
    import retrieval.trace_pending as trace_pending

    store = TraceStore(tmp_path / "t.duckdb")
    monkeypatch.setattr(store, "drain_in_background", lambda: None)
    rows = 2 * trace_pending.ARROW_ROWS + 5
    store.record_many([_invocation(f"q{i}") for i in range(rows)])
    slices, inserts = [], []
    to_table, insert = trace_pending.to_table, trace_pending.insert
    monkeypatch.setattr(trace_pending, "to_table", lambda part: slices.append(len(part)) or to_table(part))
    monkeypatch.setattr(trace_pending, "insert", lambda con, batch, table: inserts.append(table.num_rows) or
                        insert(con, batch, table))
    assert store.flush()
    assert slices == [trace_pending.ARROW_ROWS, trace_pending.ARROW_ROWS, 5]
    assert inserts == [rows] and store.count() == rows


def test_context_manager_flushes_on_exit(tmp_path):
    with TraceStore(tmp_path / "t.duckdb") as store:
        store.record(_invocation("inside"))
    assert store.spool_path.read_text() == ""
    import duckdb  # a plain reader that does not drain: the row must already be in the table

    with duckdb.connect(str(tmp_path / "t.duckdb")) as con:
        assert con.execute("SELECT query FROM tool_invocation").fetchall() == [("inside",)]


def test_background_drainer_moves_rows_without_any_read(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    store.record(_invocation("background"))
    deadline = time.monotonic() + 10
    while store.spool_path.stat().st_size and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.spool_path.stat().st_size == 0, "the background drainer did not run within 10 s"
    assert store.count() == 1


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_bad_spool_line_goes_to_the_rejected_file_and_lookups_go_on(tmp_path, index, kind):
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    spool = path.with_name(path.name + ".pending.jsonl")
    spool.write_bytes(json.dumps(GOOD).encode() + b"\n" + BAD_LINES[kind] + b"\n")
    store = TraceStore(path)  # opening does not drain; the first read does
    result = lookup_knowledge("PagerDuty", index=index, recorder=store)
    with pytest.warns(TraceSpoolRejectedWarning, match="moved to .*rejected.jsonl"):
        stored = set(store.query("SELECT id FROM tool_invocation")["id"])
    assert stored == {"good-1", result.invocation_id}
    rejected = [json.loads(line) for line in store.rejected_path.read_text().splitlines()]
    assert len(rejected) == 1 and rejected[0]["reason"]
    assert rejected[0]["line"].startswith(BAD_LINES[kind][:2].decode())
    assert store.spool_path.read_text() == ""


def test_the_issue_spool_line_no_longer_stops_lookups(tmp_path, index):
    path = tmp_path / "traces.duckdb"
    TraceStore(path).close()
    (tmp_path / "traces.duckdb.pending.jsonl").write_text('{"id":"x"}\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = TraceStore(path)
        lookup_knowledge("silence", index=index, recorder=store)
        assert store.count() == 1
    assert any(issubclass(w.category, TraceSpoolRejectedWarning) for w in caught)
    assert json.loads(store.rejected_path.read_text())["line"] == '{"id":"x"}'


def test_orphaned_batch_of_a_killed_drainer_is_drained(tmp_path):
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    orphan = tmp_path / "t.duckdb.pending.jsonl.99999-deadbeef.draining"
    orphan.write_text(json.dumps(GOOD) + "\n")
    assert TraceStore(path).query("SELECT id FROM tool_invocation")["id"].tolist() == ["good-1"]
    assert not orphan.exists()


def test_lone_surrogates_in_any_field_do_not_break_the_write(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    odd = "bad \ud800 and \udfff, fine 😀"
    store.record(ToolInvocation("lookup_knowledge", odd, {"query": odd, "category": "\ud83d"}, "ok", 1.0,
                                {"note": odd}, {"l0": {"matched_titles": [odd]}, "timings_ms": {"total": 1.0}},
                                error=odd, run_id="\udc00", query_id=odd))
    row = store.query("SELECT * FROM tool_invocation").iloc[0]
    assert row["query"] == "bad \ufffd and \ufffd, fine 😀" and row["run_id"] == "\ufffd"
    assert json.loads(row["arguments"])["category"] == "\ufffd"
    assert json.loads(row["retrieval_details"])["l0"]["matched_titles"] == ["bad \ufffd and \ufffd, fine 😀"]


def test_non_finite_floats_in_details_are_stored_as_null(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    store.record(ToolInvocation("lookup_knowledge", "q", {}, "ok", 1.0, {},
                                {"l1": {"scores": [float("nan"), float("inf"), 0.5]}}))
    assert json.loads(store.query("SELECT retrieval_details FROM tool_invocation")["retrieval_details"][0])[
        "l1"]["scores"] == [None, None, 0.5]


def test_write_failure_becomes_a_warning_and_a_spool_row(tmp_path, monkeypatch):
    store = TraceStore(tmp_path / "t.duckdb")

    def full_disk(con, rows, table=None):
        import duckdb

        raise duckdb.IOException("IO Error: No space left on device")

    monkeypatch.setattr("retrieval.trace_pending.insert", full_disk)
    store.record(_invocation("kept"))  # never raises
    with pytest.warns(TraceStoreWriteWarning, match="No space left.*kept in"):
        assert store.flush() is False
    assert "kept" in "".join(p.read_text() for p in store.spool_files())
    monkeypatch.undo()
    assert store.query("SELECT query FROM tool_invocation")["query"].tolist() == ["kept"]


def test_unwritable_spool_keeps_rows_in_memory_with_a_warning(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    store.spool_path.unlink(missing_ok=True)
    store.spool_path.mkdir()  # appending to a folder fails with an OSError
    store._spool.close()
    with pytest.warns(TraceStoreWriteWarning, match="cannot write the spool.*kept in memory"):
        store.record(_invocation("in memory"))
    store.spool_path.rmdir()
    assert store.query("SELECT query FROM tool_invocation")["query"].tolist() == ["in memory"]


def test_fsync_policy_is_optional_and_still_records(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    store = TraceStore(tmp_path / "t.duckdb", fsync=True)
    store.record(_invocation("synced"))
    assert len(synced) == 1 and store.count() == 1


def _odd_values_invocation() -> ToolInvocation:
    import dataclasses
    from datetime import datetime, timezone

    import numpy as np

    @dataclasses.dataclass
    class Point:
        x: int

    details = {"plain": {"score": 0.25, "tiny": 1e-7, "words": ["é", "😀"], "ok": True, "none": None},
               "numpy": [np.float32(0.5), np.int64(3), np.float64(0.125)], "when": datetime(2026, 1, 2, tzinfo=timezone.utc),
               "point": Point(1), "keys": {1: "one", None: "none"}, "big": 2**70, "nan": float("nan"),
               "odd": "lone \ud800", "timings_ms": {"total": 1.0}}
    return ToolInvocation("lookup_knowledge", "q", {"query": "q", "top_k": np.int64(5)}, "ok", 1.5, {"top_k": 5},
                          details, id="odd-values")


def test_a_spool_line_decodes_to_the_same_row_whichever_json_library_wrote_it(monkeypatch):
    from retrieval import trace_rows

    invocation = _odd_values_invocation()
    plain = ToolInvocation("lookup_knowledge", "q", {"query": "q"}, "ok", 1.5, {"top_k": 5},
                           {"plain": {"score": 0.25, "tiny": 1e-7, "words": ["é", "😀"]}}, id="plain")
    fast = [trace_rows.decode(trace_rows.encode(inv)) for inv in (invocation, plain)]
    assert trace_rows.STANDARD_JSON.encode() not in trace_rows.encode(plain)  # the plain row took orjson

    def refuse(*args, **kwargs):
        raise TypeError("orjson switched off")

    monkeypatch.setattr(trace_rows.orjson, "dumps", refuse)
    monkeypatch.setattr(trace_rows.orjson, "loads", lambda line: (_ for _ in ()).throw(
        trace_rows.orjson.JSONDecodeError("off", "", 0)))
    slow = [trace_rows.decode(trace_rows.encode(inv)) for inv in (invocation, plain)]
    assert fast == slow
    details = json.loads(fast[0][trace_rows.COLUMNS.index("retrieval_details")])
    assert details["numpy"] == ["0.5", "3", 0.125]  # json's default=str, as before orjson
    assert details["when"] == "2026-01-02 00:00:00+00:00" and details["keys"] == {"1": "one", "None": "none"}
    assert details["big"] == 2**70 and details["nan"] is None and details["odd"] == "lone \ufffd"


def test_lines_orjson_refuses_are_read_by_the_standard_parser():
    from retrieval import trace_rows

    line = json.dumps({**GOOD, "id": "nan-literal", "latency_ms": float("nan"),
                       "retrieval_details": {"note": "\ud800"}}).encode()
    assert b"NaN" in line and b"\\ud800" in line
    row = trace_rows.decode(line)
    assert row[trace_rows.COLUMNS.index("id")] == "nan-literal"
    assert json.loads(row[trace_rows.COLUMNS.index("retrieval_details")]) == {"note": "\ufffd"}


def test_a_process_that_exits_without_flushing_has_its_rows_moved_at_exit(tmp_path):
    """`atexit` flushes what is spooled. A script's first drain can be that exit flush, and its imports
    (pyarrow, pandas) once failed during shutdown, leaving the rows in a batch file behind a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    import duckdb

    path = tmp_path / "t.duckdb"
    script = ("from retrieval import TraceStore\nfrom retrieval.invocation import ToolInvocation\n"
              f"store = TraceStore({str(path)!r})\n"
              "store.record(ToolInvocation('lookup_knowledge', 'q', {}, 'ok', 1.0, {}, {'a': 1}, id='at-exit'))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    with duckdb.connect(str(path), read_only=True) as con:  # the table itself: no drain on the way
        assert con.execute("SELECT id FROM tool_invocation").fetchall() == [("at-exit",)]
    assert not list(tmp_path.glob("*.draining"))  # no batch left behind
    spool = tmp_path / "t.duckdb.pending.jsonl"
    assert not spool.exists() or spool.stat().st_size == 0
