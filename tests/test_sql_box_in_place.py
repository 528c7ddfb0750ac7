"""The SQL box runs on the trace file in place (issue 31): no copy of any table, a sealed read-only connection,
one page of rows, the time limit, and a clear message while a writer holds the file."""

from __future__ import annotations

import threading
import time

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from appui.data import sql_sandbox as sql_box
from retrieval import TraceStore, TraceStoreError
from tests.app_helpers import APP, ok
from tests.sql_box_helpers import DECISIONS, fill, hold, peak_growth, release

GROUP_BY_COLUMN = "SELECT filter_decision, count(*) AS n FROM tool_invocation GROUP BY ALL ORDER BY 1"
GROUP_BY_JSON = ("SELECT retrieval_details->>'$.filter.decision' AS d, count(*) AS n FROM tool_invocation "
                 "GROUP BY d ORDER BY d")
LIMIT_OVER_ALL = "SELECT * FROM tool_invocation LIMIT 10"


def test_the_sql_box_makes_no_copy_of_the_trace_tables(tmp_path):
    """50,000 calls of 8 kB details (a 400 MB file): a copy of the table would take more than 400 MB on its own
    (the old design grew by 1.9 GB here). In place, a GROUP BY and a LIMIT read a column or a few rows, and a
    JSON extraction over every row stays within DuckDB's memory limit."""
    path = fill(tmp_path / "big.duckdb", 50_000, padding_chars=8_000)
    column, limit, extraction = peak_growth(path, [GROUP_BY_COLUMN, LIMIT_OVER_ALL, GROUP_BY_JSON])
    counts = [[decision, n] for decision, n in sorted({"applied": 16_667, "none": 16_667, "ambiguous": 16_666}.items())]
    assert column["rows"] == counts and extraction["rows"] == counts
    assert len(limit["rows"]) == 10
    assert limit["growth_mb"] < 400, limit
    assert extraction["growth_mb"] < 512 + 188, extraction  # MEMORY_LIMIT, plus the result and Python


def test_the_sql_box_reads_the_trace_file_itself_read_only(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    with sql_box.sandbox(path) as con:
        databases = con.execute("SELECT path, readonly FROM duckdb_databases() WHERE database_name = "
                                "current_database()").fetchall()
        tables = con.execute("SELECT count(*) FROM duckdb_tables() WHERE NOT temporary "
                             "AND database_name <> current_database()").fetchone()[0]
    assert databases == [(str(path), True)] and tables == 0


def test_every_seal_setting_is_in_force_before_a_statement_runs(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    with sql_box.sandbox(path) as con:
        settings = dict(con.execute("SELECT name, value FROM duckdb_settings()").fetchall())
    assert {name: settings.get(name) for name in sql_box.SEALED} == sql_box.SEALED
    assert settings["enable_external_access"] == "false" and settings["lock_configuration"] == "true"
    assert settings["python_enable_replacements"] == "false" and settings["temp_directory"] == ""
    assert settings["memory_limit"] == "488.2 MiB" and settings["threads"] == str(sql_box.THREADS)  # 512 MB


def test_two_sql_box_runs_at_once_share_one_sealed_connection(tmp_path):
    """The second opens the same DuckDB instance, already sealed by the first: its own SETs are refused by the
    lock, and the settings it reads back are the sealed ones."""
    path = fill(tmp_path / "t.duckdb", 3)
    with sql_box.sandbox(path) as first, sql_box.sandbox(path) as second:
        for con in (first, second):
            assert con.execute("SELECT count(*) FROM tool_invocation").fetchone()[0] == 3
            assert con.execute("SELECT value FROM duckdb_settings() WHERE name = 'enable_progress_bar'"
                               ).fetchone()[0] == "false"  # no bar drawn on the server's terminal
            with pytest.raises(duckdb.Error, match="locked"):
                con.execute("SET enable_external_access = true")


def test_results_are_paged_and_say_more_rows_exist(tmp_path):
    path = fill(tmp_path / "t.duckdb", 5_000)
    result = sql_box.run(path, "SELECT id FROM tool_invocation ORDER BY id")
    assert len(result.frame) == sql_box.MAX_ROWS == 1_000 and result.truncated
    assert result.notice() == "First 1,000 rows shown; add LIMIT/OFFSET for more."
    rest = sql_box.run(path, "SELECT id FROM tool_invocation ORDER BY id LIMIT 1000 OFFSET 4500")
    assert len(rest.frame) == 500 and not rest.truncated and rest.notice() == ""


def test_long_cells_are_cut_for_display_and_say_so(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3, padding_chars=5_000)
    result = sql_box.run(path, "SELECT retrieval_details, retrieval_details->>'$.filter.decision' AS d "
                               "FROM tool_invocation ORDER BY id")
    cell = result.frame["retrieval_details"][0]
    assert len(cell) < sql_box.CELL_CHARS + 40 and cell.endswith("more characters]")
    assert result.frame["d"].tolist() == list(DECISIONS) and result.cut_cells == 3
    assert "3 cell(s) over 2,000 characters cut" in result.notice()


def test_the_time_limit_interrupts_a_long_query_with_a_clear_message(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    started = time.perf_counter()
    with pytest.raises(sql_box.SqlLimitExceeded, match=r"longer than 0.5 s and was stopped; add a WHERE clause"):
        sql_box.run(path, "SELECT count(*) FROM range(100000000000) a, range(1000) b", timeout_s=0.5)
    assert time.perf_counter() - started < 5
    assert sql_box.run(path, "SELECT count(*) AS n FROM tool_invocation").frame["n"].tolist() == [3]


def test_a_statement_over_the_memory_limit_is_stopped_with_a_clear_message(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    with pytest.raises(sql_box.SqlLimitExceeded, match=r"more than the SQL box's 512MB of memory"):
        sql_box.run(path, "SELECT list(range) FROM range(200000000)", timeout_s=30)


def test_a_file_another_process_writes_gives_a_busy_message_then_reads_once_it_lets_go(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    holder = hold(path)
    try:
        with pytest.raises(sql_box.SqlBoxUnavailable) as refused:
            sql_box.run(path, "SELECT count(*) AS n FROM tool_invocation", busy_timeout_s=0.5)
        assert str(refused.value).startswith(f"the trace file {path} is being written by process {holder.pid} (")
        assert str(refused.value).endswith("; try again in a moment")
    finally:
        release(holder)
    assert sql_box.run(path, "SELECT count(*) AS n FROM tool_invocation").frame["n"].tolist() == [3]


def test_the_sql_box_waits_for_a_writer_that_lets_go_within_its_busy_time(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    holder = hold(path)
    letting_go = threading.Timer(0.5, release, [holder])
    letting_go.start()
    try:
        started = time.perf_counter()
        assert sql_box.run(path, "SELECT count(*) AS n FROM tool_invocation").frame["n"].tolist() == [3]
        assert 0.4 < time.perf_counter() - started < sql_box.BUSY_TIMEOUT_S
    finally:
        letting_go.join()


def test_this_process_writing_the_file_gives_a_busy_message_then_reads_once_done(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    store = TraceStore(path)
    busy = r"is being written by this app .*try again in a moment"
    # the app's own read-write connection (a lookup's drain) holds the file
    with store.connect(), pytest.raises(sql_box.SqlBoxUnavailable, match=busy):
        sql_box.run(path, "SELECT 1", busy_timeout_s=0.3)
    assert sql_box.run(path, "SELECT count(*) AS n FROM tool_invocation").frame["n"].tolist() == [3]
    store.close()


def test_a_missing_trace_file_or_table_is_named(tmp_path):
    with pytest.raises(sql_box.SqlBoxUnavailable, match="there is no trace file at .*missing.duckdb yet"):
        sql_box.run(tmp_path / "missing.duckdb", "SELECT 1")
    assert not (tmp_path / "missing.duckdb").exists()
    duckdb.connect(str(tmp_path / "bare.duckdb")).close()
    with pytest.raises(sql_box.SqlBoxUnavailable, match="bare.duckdb has no tool_invocation table yet"):
        sql_box.run(tmp_path / "bare.duckdb", "SELECT 1")
    (tmp_path / "notes.duckdb").write_bytes(b"SQLite format 3\x00" + bytes(100))
    with pytest.raises(TraceStoreError, match="it is a SQLite database, not a DuckDB database"):
        sql_box.run(tmp_path / "notes.duckdb", "SELECT 1")


def test_wrong_arguments_are_refused_with_the_fix(tmp_path):
    path = fill(tmp_path / "t.duckdb", 3)
    with pytest.raises(TypeError, match=r"pass its path \(e.g. store.path\), not a dict"):
        sql_box.run({"tool_invocation": None}, "SELECT 1")
    with pytest.raises(ValueError, match="max_rows must be a whole number of rows, at least 1; got 0"):
        sql_box.run(path, "SELECT 1", max_rows=0)


def test_traces_page_shows_the_first_page_of_rows_and_says_more_exist(tmp_path, monkeypatch):
    from tests.kb_fixture import write_kb

    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(write_kb(tmp_path / "kb")))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(fill(tmp_path / "traces.duckdb", 1_500)))
    at = ok(ok(AppTest.from_file(APP, default_timeout=60).run()).switch_page("appui/pages/traces.py").run())
    at.text_area(key="sql_text").set_value("SELECT id FROM tool_invocation")
    at = ok(at.button(key="sql_run").click().run())
    assert len(at.dataframe[-1].value) == 1_000
    assert "First 1,000 rows shown; add LIMIT/OFFSET for more." in [c.value for c in at.caption]
