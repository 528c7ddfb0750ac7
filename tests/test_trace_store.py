"""The DuckDB trace store: schema, batches, several processes, the lock, unreadable files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from retrieval import TraceStore, TraceStoreError, lookup_knowledge
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces.fold import pack
from retrieval.traces.schema import MIGRATIONS, SCHEMA_VERSION
from retrieval.traces.writer import TraceStoreLockedWarning

ROOT = Path(__file__).resolve().parents[1]


def _invocation(query: str = "q", extra: dict | None = None, **kwargs) -> ToolInvocation:
    details = {"retrieval_layer": "L0", "l0": {"match_count": 1}, "filter": {"decision": "applied"},
               "l1": {"status": "ok", "candidate_count": 2}, "candidate_count": 3, "evidence_count": 1,
               **(extra or {})}
    return ToolInvocation("lookup_knowledge", query, {"query": query}, "ok", 1.5, {"top_k": 5}, details, **kwargs)


def test_schema_version_is_recorded(store):
    assert store.query("SELECT max(version) AS v FROM schema_version")["v"][0] == SCHEMA_VERSION


def test_reopening_does_not_migrate_twice(tmp_path):
    first = TraceStore(tmp_path / "t.duckdb").query("SELECT count(*) AS n FROM schema_version")["n"][0]
    store = TraceStore(tmp_path / "t.duckdb")
    assert store.query("SELECT count(*) AS n FROM schema_version")["n"][0] == first == len(MIGRATIONS)
    assert store.query("SELECT max(version) AS v FROM schema_version")["v"][0] == SCHEMA_VERSION


def test_newer_schema_is_refused_with_advice(tmp_path):
    path = tmp_path / "t.duckdb"
    TraceStore(path)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (99, now()::TIMESTAMP)")
    con.close()
    with pytest.raises(TraceStoreError, match="schema v99, newer.*upgrade"):
        TraceStore(path)


def test_typed_columns_mirror_retrieval_details(store):
    store.record(_invocation(run_id="r1", query_id="q7"))
    row = store.invocations().iloc[0]
    assert (row.retrieval_layer, row.filter_decision, row.l1_status) == ("L0", "applied", "ok")
    assert (row.l0_match_count, row.l1_candidate_count, row.candidate_count, row.evidence_count) == (1, 2, 3, 1)
    assert (row.run_id, row.query_id) == ("r1", "q7")


def test_a_calls_tags_are_stored_as_json_and_untagged_calls_read_null(store):
    store.record_many([_invocation("tagged", tags={"page": "compare", "comparison_id": "cmp-1", "side": "B"}),
                       _invocation("plain")])
    rows = store.query("SELECT query, tags IS NULL AS untagged, tags->>'side' AS side, tags->>'comparison_id' AS cmp "
                       "FROM tool_invocation ORDER BY query")
    assert rows.fillna("-").values.tolist() == [["plain", True, "-", "-"], ["tagged", False, "B", "cmp-1"]]


def test_a_v5_file_gains_the_tags_column_on_open_and_keeps_its_rows(tmp_path):
    """Files made before the tags column (schema v5) upgrade in place: the column is added, old rows read null."""
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:  # closed and packed: the row in the table, no live part a v5 file cannot have
        store.record_many([_invocation("old")])
    pack(path, timeout=30.0)
    con = duckdb.connect(str(path))
    for column in ("tags", "host", "pid", "subject"):
        con.execute(f"ALTER TABLE tool_invocation DROP COLUMN {column}")
    con.execute("DROP TABLE judgement_cleared")
    for column in ("answerable", "confidence", "relevance_level", "question_set", "relevant_stages",  # v10's, v11's
                   "ranked", "ranked_scores", "tie_ranges", "judged_at_10", "facets"):  # v12's
        con.execute(f"ALTER TABLE eval_query DROP COLUMN {column}")
    con.execute("ALTER TABLE eval_run DROP COLUMN models")  # v13's
    con.execute("DELETE FROM schema_version WHERE version >= 6")
    con.close()
    store = TraceStore(path)
    store.record_many([_invocation("new", tags={"side": "A"})])
    rows = store.query("SELECT query, coalesce(tags->>'side', '-') AS side FROM tool_invocation ORDER BY query")
    assert rows.values.tolist() == [["new", "A"], ["old", "-"]]
    assert store.query("SELECT max(version) AS v FROM schema_version")["v"][0] == SCHEMA_VERSION == 16
    assert {"relevance_level", "relevant_stages"} <= set(store.query("SELECT * FROM eval_query LIMIT 0").columns)
    assert "models" in store.query("SELECT * FROM eval_run LIMIT 0").columns  # v13's column came back
    assert store.query("SELECT count(*) AS n FROM judgement_cleared")["n"][0] == 0  # v7's table came too


def test_a_schema_13_file_upgrades_and_its_old_rows_read_subject_null(tmp_path):
    """Schema v14: `subject`, who an authenticated MCP caller was; a v13 file gains the column on open, its old
    rows read null and a new row keeps its subject."""
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as old:
        old.record_many([_invocation("old")])
    assert pack(path, timeout=10) is not None  # the row in the file's table, as a v13 file holds its rows
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE tool_invocation DROP COLUMN subject")
    con.execute("DELETE FROM schema_version WHERE version >= 14")
    assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == 13
    con.close()
    store = TraceStore(path)
    store.record(_invocation("new", subject="ci-agent"))
    rows = store.query("SELECT query, subject FROM tool_invocation ORDER BY query")
    assert rows.astype(object).where(rows.notna(), None).values.tolist() == [["new", "ci-agent"], ["old", None]]
    assert store.query("SELECT max(version) AS v FROM schema_version")["v"][0] == SCHEMA_VERSION


def test_a_v15_file_upgrades_and_its_old_rows_get_their_back_filled_columns(tmp_path):
    """Schema v16: relevance level, confidence, abstention and the applied category as plain columns; a v15 file
    gains them on open, filled from each old row's retrieval_details (a row without a relevance reads null), and a
    new row is written with them."""
    path = tmp_path / "t.duckdb"
    graded = {"relevance": {"level": "low", "confidence": 0.12, "abstain": True},
              "filter": {"decision": "applied", "applied": {"category": "security"}}}
    with TraceStore(path) as old:
        old.record_many([_invocation("old graded", extra=graded), _invocation("old bare")])
    assert pack(path, timeout=10) is not None
    con = duckdb.connect(str(path))
    for column in ("relevance_level", "confidence", "abstained", "category"):
        con.execute(f"ALTER TABLE tool_invocation DROP COLUMN {column}")
    con.execute("DELETE FROM schema_version WHERE version >= 16")
    con.close()
    store = TraceStore(path)
    store.record(_invocation("new", extra={"relevance": {"level": "high", "confidence": 0.9, "abstain": False}}))
    rows = store.query("SELECT query, relevance_level, confidence, abstained, category FROM tool_invocation "
                       "ORDER BY query")
    assert rows.astype(object).where(rows.notna(), None).values.tolist() == [
        ["new", "high", 0.9, False, None], ["old bare", None, None, None, None],
        ["old graded", "low", 0.12, True, "security"]]
    assert store.query("SELECT max(version) AS v FROM schema_version")["v"][0] == SCHEMA_VERSION == 16


def test_batched_insert_keeps_every_row(store):
    store.record_many([_invocation(f"q{i}", run_id="batch") for i in range(500)])
    assert len(store.invocations(run_id="batch")) == 500


def test_failed_call_is_recorded_with_its_error(index, store):
    with pytest.raises(ValueError, match="query must be a non-empty string"):
        lookup_knowledge("   ", index=index, recorder=store)
    row = store.invocations().iloc[0]
    assert row.status == "error" and "non-empty" in row.error


def test_two_processes_writing_at_once_lose_no_row(tmp_path):
    path = tmp_path / "shared.duckdb"
    TraceStore(path)
    writer = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from retrieval.traces.store import TraceStore
        from tests.test_trace_store import _invocation
        store = TraceStore({str(path)!r}, lock_timeout=60)
        start = float(sys.argv[2])
        while time.time() < start:
            time.sleep(0.001)
        for i in range(40):
            store.record(_invocation(f"{{sys.argv[1]}}-{{i}}"))
    """)
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", writer, name, str(start)], stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    queries = set(TraceStore(path).query("SELECT query FROM tool_invocation")["query"])
    assert queries == {f"{name}-{i}" for name in "ab" for i in range(40)}


def test_locked_file_spools_rows_names_the_holder_and_adds_them_later(tmp_path):
    path = tmp_path / "locked.duckdb"
    store = TraceStore(path, lock_timeout=0.3)
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys, time; c = duckdb.connect({str(path)!r}); "
                               "print('ready', flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.warns(TraceStoreLockedWarning, match=rf"locked by process {holder.pid} \(.*python"):
            store.record(_invocation("while locked"))  # spooled at once; the write to DuckDB waits
            store.flush()
        parts = [str(p) for p in store.spool_files() if p.suffix == ".parquet"]  # drained, waiting to be shown
        assert parts and duckdb.sql(f"SELECT query FROM read_parquet({parts})").fetchall() == [("while locked",)]
    finally:
        holder.kill()
        holder.wait()
    store.record(_invocation("after"))
    assert set(store.query("SELECT query FROM tool_invocation")["query"]) == {"while locked", "after"}
    assert not store.spool_path.exists()


def test_a_file_that_is_not_duckdb_is_refused_with_advice(tmp_path):
    path = tmp_path / "notes.duckdb"
    path.write_text("not a database")
    with pytest.raises(TraceStoreError, match="cannot open trace file.*--traces"):
        TraceStore(path)


def test_a_folder_is_refused_as_trace_file(tmp_path):
    with pytest.raises(TraceStoreError, match="is a folder"):
        TraceStore(tmp_path)



def test_each_row_says_which_host_and_process_recorded_it(tmp_path, monkeypatch):
    """Schema v9: `host` ($LOOKUP_KNOWLEDGE_HOST, else the host name) and `pid` of the recording process; a v8
    file gains both columns on open and its old rows read null."""
    import os
    import socket

    path = tmp_path / "t.duckdb"
    with TraceStore(path) as old:
        old.record_many([_invocation("old")])
    assert pack(path, timeout=10) is not None  # the row in the file's table, as a v8 file holds its rows
    con = duckdb.connect(str(path))
    for column in ("host", "pid", "subject"):
        con.execute(f"ALTER TABLE tool_invocation DROP COLUMN {column}")
    con.execute("DELETE FROM schema_version WHERE version >= 9")
    con.close()
    store = TraceStore(path)
    store.record(_invocation("named"))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_HOST", "build-7")
    store.record(_invocation("tagged"))
    rows = store.query("SELECT query, host, pid FROM tool_invocation ORDER BY query")
    assert rows.astype(object).where(rows.notna(), None).values.tolist() == [
        ["named", socket.gethostname(), os.getpid()], ["old", None, None], ["tagged", "build-7", os.getpid()]]
