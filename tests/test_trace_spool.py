"""The spool beside the trace file: record() only appends to it; bad lines are set aside, never fatal."""

from __future__ import annotations

import json
import os
import time
import warnings

import pytest

from retrieval import TraceStore, lookup_knowledge
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces.fold import pack
from retrieval.traces.spool import TraceSpoolRejectedWarning
from retrieval.traces.writer import TraceStoreWriteWarning
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
    assert not store.spool_path.exists() and not list(tmp_path.glob("*.draining"))


def test_record_stamps_the_callers_latency_and_its_own_time(tmp_path, index):
    store = TraceStore(tmp_path / "t.duckdb")
    result = lookup_knowledge("PagerDuty escalation", index=index, recorder=store)
    row = stored_row(store, result.invocation_id)
    timings = row["retrieval_details"]["timings_ms"]
    assert 0 <= timings["record"] < 50 and "record" in result.retrieval_details["timings_ms"]
    assert row["latency_ms"] >= timings["total"] + timings["record"] - 0.01


def test_a_drain_is_one_read_json_statement_with_no_python_decoding(tmp_path, monkeypatch):
    """The common path: DuckDB reads the claimed batch itself; `decode` (the Python judge) is not called."""
    import retrieval.traces.ingest as trace_ingest

    store = TraceStore(tmp_path / "t.duckdb")
    monkeypatch.setattr(store, "drain_in_background", lambda: None)
    judged = []
    monkeypatch.setattr(trace_ingest, "decode", lambda line: judged.append(line))
    store.record_many([_invocation(f"row {i}") for i in range(50)])
    assert store.count() == 50 and judged == []


def test_a_line_outside_the_strict_shapes_is_judged_by_decode_and_the_rest_still_stored(tmp_path):
    """A line in an older layout (JSON columns as text, an offset timestamp) fails the strict statement;
    the Python decoder then accepts it, so it is stored with the values `decode` gives."""
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    older = {**GOOD, "id": "older", "created_at": "2026-01-02T05:04:05+02:00", "l0_match_count": 3.0}
    path.with_name(path.name + ".pending.jsonl").write_text(json.dumps(older) + "\n")
    store = TraceStore(path)
    store.record(_invocation("new"))
    rows = store.query("SELECT id, created_at, l0_match_count, arguments FROM tool_invocation "
                       "ORDER BY id = 'older' DESC")
    assert rows["id"][0] == "older" and len(rows) == 2
    assert str(rows["created_at"][0]) == "2026-01-02 03:04:05" and rows["l0_match_count"][0] == 3
    assert json.loads(rows["arguments"][0]) == {"query": "q"}
    assert not store.rejected_path.exists()


@pytest.mark.parametrize("line", [
    {**GOOD, "id": "t1", "created_at": "2026-01-02 03:04:05"},
    {**GOOD, "id": "t2", "created_at": "2026-01-02"},
    {**GOOD, "id": "t3", "created_at": "2026-02-30T00:00:00"},
    {**GOOD, "id": "t4", "l1_candidate_count": 2**31},
    {**GOOD, "id": "t5", "l1_candidate_count": True},
    {**GOOD, "id": "t6", "latency_ms": "3"},
    {**GOOD, "id": "t7", "evidence_count": "3"},
    {**GOOD, "id": "t8", "retrieval_details": {"words": "NaN and Infinity are words here"}},
    {**GOOD, "id": "", "query": "empty id"},
    {**GOOD, "id": "t9", "status": None},
    {**GOOD, "id": "t10", "retrieval_details": 5},
    {**GOOD, "id": "t11", "arguments": [1, 2]},
])
def test_the_strict_statement_and_decode_agree_on_every_edge_case(tmp_path, line):
    """Whatever path a line takes, it is stored exactly when `decode` accepts it, with `decode`'s values."""
    from retrieval.traces import rows as trace_rows

    try:
        expected = trace_rows.decode(json.dumps(line).encode())
    except trace_rows.RejectedLine:
        expected = None
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    path.with_name(path.name + ".pending.jsonl").write_text(json.dumps(line) + "\n")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        store = TraceStore(path)
        store.flush()  # into a live part, shown by the view
        live = store.query("SELECT * FROM tool_invocation")
        assert pack(path, timeout=10) is not None  # folded into the file's table
        packed = store.query("SELECT * FROM tool_invocation")
    for frame in (live, packed):
        assert len(frame) == (0 if expected is None else 1)
        if expected is not None:
            stored = frame.iloc[0]
            for name, value in zip(trace_rows.COLUMNS, expected, strict=True):
                if name in trace_rows.JSON_COLUMNS_SET:
                    assert (None if stored[name] is None else json.loads(stored[name])) == (
                        None if value is None else json.loads(value)), name
                elif value is not None:
                    assert stored[name] == value, name


def test_context_manager_flushes_on_exit(tmp_path):
    with TraceStore(tmp_path / "t.duckdb") as store:
        store.record(_invocation("inside"))
    assert not store.spool_path.exists()
    import duckdb  # a plain reader that does not drain: the row must already be in the table

    with duckdb.connect(str(tmp_path / "t.duckdb")) as con:
        assert con.execute("SELECT query FROM tool_invocation").fetchall() == [("inside",)]


def test_background_drainer_moves_rows_without_any_read(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    store.record(_invocation("background"))
    deadline = time.monotonic() + 10
    while store.spool_path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not store.spool_path.exists(), "the background drainer did not run within 10 s"
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
    assert not store.spool_path.exists()


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
    store = TraceStore(path)
    assert store.flush()  # any drain takes batches no drainer holds
    assert store.query("SELECT id FROM tool_invocation")["id"].tolist() == ["good-1"]
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

    def full_disk(con, query, target, **kwargs):
        import duckdb

        raise duckdb.IOException("IO Error: No space left on device")

    monkeypatch.setattr("retrieval.traces.parts.copy_part", full_disk)  # the one writer of a part
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
               "numpy": [np.float32(0.5), np.int64(3), np.float64(0.125)], "when": datetime(2026, 1, 2,
                                                                                            tzinfo=timezone.utc),
               "point": Point(1), "keys": {1: "one", None: "none"}, "big": 2**70, "nan": float("nan"),
               "odd": "lone \ud800", "timings_ms": {"total": 1.0}}
    return ToolInvocation("lookup_knowledge", "q", {"query": "q", "top_k": np.int64(5)}, "ok", 1.5, {"top_k": 5},
                          details, id="odd-values")


def test_a_spool_line_decodes_to_the_same_row_whichever_json_library_wrote_it(monkeypatch):
    from retrieval.traces import rows as trace_rows

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
    from retrieval.traces import rows as trace_rows

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
    script = ("from retrieval import TraceStore\nfrom retrieval.lookup.invocation import ToolInvocation\n"
              f"store = TraceStore({str(path)!r})\n"
              "store.record(ToolInvocation('lookup_knowledge', 'q', {}, 'ok', 1.0, {}, {'a': 1}, id='at-exit'))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    with duckdb.connect(str(path), read_only=True) as con:  # the table itself: no drain on the way
        assert con.execute("SELECT id FROM tool_invocation").fetchall() == [("at-exit",)]
    assert not list(tmp_path.glob("*.draining"))  # no batch left behind
    spool = tmp_path / "t.duckdb.pending.jsonl"
    assert not spool.exists()


def test_half_a_line_left_by_a_killed_writer_costs_only_itself(tmp_path):
    """A writer SIGKILLed inside a long write() can leave half a line; the next writer starts a new line,
    so the half is rejected alone and the row written after it is stored."""
    path = tmp_path / "t.duckdb"
    TraceStore(path).close()
    path.with_name(path.name + ".pending.jsonl").write_bytes(json.dumps(GOOD).encode()[:40])
    store = TraceStore(path)
    store.record(_invocation("after the half line"))
    with pytest.warns(TraceSpoolRejectedWarning):
        assert store.query("SELECT query FROM tool_invocation")["query"].tolist() == ["after the half line"]
    assert json.loads(store.rejected_path.read_text())["line"] == json.dumps(GOOD)[:40]
