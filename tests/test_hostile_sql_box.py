"""The SQL box against hostile statements: none reads the host, writes a file, or changes the trace file."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from appui.data import sql_sandbox as sql_box
from appui.data import traces as data
from retrieval import TraceStore
from tests.hostile_helpers import HOST_SECRET

FILE_READERS = ["read_text", "read_blob", "read_csv", "read_csv_auto", "read_json", "read_json_auto",
                "read_json_objects", "read_json_objects_auto", "read_ndjson", "read_ndjson_auto",
                "read_ndjson_objects", "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema",
                "parquet_file_metadata", "parquet_kv_metadata", "parquet_full_metadata", "sniff_csv",
                "read_duckdb", "glob"]
HOSTILE = [
    *(f"SELECT * FROM {name}('{{secret}}')" for name in FILE_READERS),
    "SELECT * FROM read_csv('/etc/passwd', sep=':')",
    "SELECT content FROM read_text('/etc/shadow')",
    "SELECT * FROM glob('{home}/*')",
    "SELECT * FROM glob('/root/**')",
    "FROM '{secret}'",
    "SELECT * FROM '{secret}'",
    "SELECT * FROM \"{secret}\"",
    "DESCRIBE '{secret}'",
    "SUMMARIZE '{secret}'",
    "SELECT * FROM \"read_text\"('{secret}')",
    "SELECT * FROM main.read_text('{secret}')",
    "SELECT * FROM system.main.read_text('{secret}')",
    "SELECT (SELECT content FROM read_text('{secret}'))",
    "WITH x AS (SELECT * FROM read_text('{secret}')) SELECT * FROM x",
    "SELECT * FROM tool_invocation WHERE query IN (SELECT content FROM read_text('{secret}'))",
    "SELECT * FROM query('SELECT * FROM read_text(''{secret}'')')",
    "SELECT * FROM query_table('tool_invocation')",
    "SELECT * FROM enable_logging(storage := 'file', storage_path := '{dir}/logs')",
    "SELECT * FROM enable_profiling()",
    "SELECT * FROM truncate_duckdb_logs()",
    "SELECT current_setting('home_directory')",
    "SELECT current_setting('secret_directory')",
    "SELECT getenv('HOME')",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM duckdb_settings",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM duckdb_databases()",
    "SELECT * FROM pragma_version()",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM pg_catalog.pg_settings",
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM which_secret('{secret}', 's3')",
    "INSTALL httpfs",
    "LOAD httpfs",
    "FORCE INSTALL sqlite",
    "ATTACH '{dir}/other.duckdb' AS other",
    "ATTACH '{trace}' AS t2",
    "DETACH memory",
    "COPY tool_invocation TO '{dir}/out.csv'",
    "COPY (SELECT 1) TO '{dir}/out.parquet' (FORMAT parquet)",
    "EXPORT DATABASE '{dir}/dump'",
    "IMPORT DATABASE '{dir}'",
    "PRAGMA enable_profiling",
    "PRAGMA database_list",
    "SET enable_external_access = true",
    "RESET enable_external_access",
    "SET lock_configuration = false",
    "SET home_directory = '/root'",
    "CALL pragma_version()",
    "CALL enable_logging()",
    "CREATE TABLE stolen AS SELECT * FROM read_text('{secret}')",
    "CREATE SECRET (TYPE s3, KEY_ID 'x', SECRET 'y')",
    "DELETE FROM tool_invocation",
    "UPDATE tool_invocation SET query = 'x'",
    "DROP TABLE tool_invocation",
    "INSERT INTO tool_invocation (id) VALUES ('x')",
    "SELECT 1; SELECT * FROM read_text('{secret}')",
    "SELECT 1; DELETE FROM tool_invocation",
    "/* SELECT */ DELETE FROM tool_invocation",
    "-- SELECT\nDELETE FROM tool_invocation",
    "/* a */ -- b\n/* c */ EXPLAIN SELECT * FROM read_text('{secret}')",
    "EXPLAIN ANALYZE SELECT * FROM read_text('{secret}')",
    "EXPLAIN ANALYZE DELETE FROM tool_invocation",
    "EXPLAIN EXPLAIN SELECT 1",
    "EXPLAIN COPY tool_invocation TO '{dir}/out.csv'",
    "SELECT * FROM read_text('{secret}') -- ; SELECT 1",
    "SELECT/**/content/**/FROM/**/read_text('{secret}')",
    "PIVOT tool_invocation ON query",
    "VACUUM",
    "CHECKPOINT",
    "USE memory",
]


def _fill(statement: str, box: dict) -> str:
    return statement.format(secret=box["secret"], dir=box["folder"], trace=box["trace"], home=Path.home())


def test_at_least_fifty_hostile_statements_are_tried():
    assert len(HOSTILE) >= 50
    assert len(set(HOSTILE)) == len(HOSTILE)


@pytest.mark.parametrize("statement", HOSTILE)
def test_hostile_statement_returns_no_host_data_and_writes_nothing(box, statement):
    sql = _fill(statement, box)
    try:
        result = sql_box.run(box["trace"], sql, timeout_s=5.0)
    except (sql_box.SqlRefused, duckdb.Error):
        result = None
    if result is not None:  # a harmless statement (e.g. EXPLAIN of a refused read) may run, but shows nothing
        rendered = result.frame.to_csv()
        assert HOST_SECRET not in rendered and "root:" not in rendered and "/root" not in rendered
    assert sorted(box["folder"].rglob("*")) == box["files"]
    assert hashlib.sha256(box["trace"].read_bytes()).hexdigest() == box["checksum"]


@pytest.mark.parametrize("name", FILE_READERS)
def test_every_file_reader_is_refused_by_the_allow_list(box, name):
    with pytest.raises(sql_box.SqlRefused, match=name):
        sql_box.check_statement(f"SELECT * FROM {name}('{box['secret']}')")


# what the sealed read-only connection refuses by itself, were the allow-list ever to let it through (it lets a
# plain ATTACH of the trace file itself through: read-only, the data the box already reads)
SANDBOX_ALONE = ["SELECT * FROM read_text('{secret}')", "SELECT * FROM '{secret}'", "SELECT * FROM glob('{dir}/*')",
                 "SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM read_parquet('/etc/passwd')",
                 "SELECT * FROM read_json('{secret}')", "SELECT * FROM sniff_csv('{secret}')",
                 "SELECT * FROM 'http://127.0.0.1:9/x.csv'", "ATTACH '{dir}/x.duckdb'", "ATTACH ':memory:' AS m",
                 "ATTACH '{trace}' AS t2 (READ_WRITE)", "INSTALL httpfs", "LOAD httpfs", "FORCE INSTALL sqlite",
                 "SET enable_external_access = true", "SET lock_configuration = false",
                 "RESET lock_configuration", "RESET enable_external_access", "SET memory_limit = '64GB'",
                 "SET threads = 64", "SET temp_directory = '{dir}/spill'", "SET python_enable_replacements = true",
                 "SET allow_community_extensions = true", "SET autoload_known_extensions = true",
                 "SET autoinstall_known_extensions = true", "SET allow_persistent_secrets = true",
                 "SET python_scan_all_frames = true", "SET extension_directory = '{dir}'",
                 "SET secret_directory = '{dir}'", "SET allowed_directories = ['/']",
                 "SET home_directory = '/root'", "SET profiling_output = '{dir}/profile.json'",
                 "COPY tool_invocation TO '{dir}/x.csv'", "COPY (SELECT 1) TO '{dir}/x.parquet' (FORMAT parquet)",
                 "EXPORT DATABASE '{dir}/dump'", "IMPORT DATABASE '{dir}'",
                 "INSERT INTO tool_invocation (id) VALUES ('x')", "UPDATE tool_invocation SET query = 'x'",
                 "DELETE FROM tool_invocation", "CREATE TABLE stolen AS SELECT 1", "DROP TABLE tool_invocation",
                 "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')", "SELECT * FROM leaked",
                 "SELECT * FROM LEAKED_FRAME"]
LEAKED_FRAME = pd.DataFrame({"secret": [HOST_SECRET]})  # a module-level frame a replacement scan would find


@pytest.mark.parametrize("sql", SANDBOX_ALONE)
def test_sealed_sandbox_alone_refuses_files_settings_writes_and_python_frames(box, sql):
    """Even a statement that slipped past the allow-list cannot reach the host, change a setting or the file."""
    leaked = pd.DataFrame({"secret": [HOST_SECRET]})  # noqa: F841 - a replacement scan would find this frame
    with sql_box.sandbox(box["trace"]) as con, pytest.raises(duckdb.Error):
        con.execute(_fill(sql, box)).fetchall()
    assert sorted(box["folder"].rglob("*")) == box["files"]
    assert hashlib.sha256(box["trace"].read_bytes()).hexdigest() == box["checksum"]


# DuckDB 1.5.0-1.5.6 take `CALL enable_logging(storage := 'file', …)` on the sealed connection (it is no SET, so
# lock_configuration does not stop it); the log cannot be written, every later statement fails, and closing the
# connection aborts the whole process (std::terminate). The allow-list alone stops it, so it is tested here and
# never run on the connection.
LOGGING = ["CALL enable_logging(storage := 'file', storage_path := '{dir}/logs')",
           "SELECT * FROM enable_logging(storage := 'file', storage_path := '{dir}/logs')", "FROM enable_logging()",
           "SELECT 1 FROM (FROM enable_logging(storage := 'file'))", "SELECT enable_logging()",
           "SELECT * FROM tool_invocation WHERE EXISTS (SELECT * FROM enable_logging())",
           "WITH x AS (FROM enable_logging(level := 'trace')) SELECT 1", "SET enable_logging = true",
           "SET logging_storage = 'file'", "RESET logging_storage", "PRAGMA enable_logging",
           "EXPLAIN SELECT * FROM enable_logging()"]


@pytest.mark.parametrize("sql", LOGGING)
def test_allow_list_refuses_every_way_to_switch_on_logging(box, sql):
    with pytest.raises(sql_box.SqlRefused):
        sql_box.check_statement(_fill(sql, box))


@pytest.mark.parametrize("sql", ["SET enable_logging = true", "SET logging_storage = 'file'",
                                 "RESET logging_storage"])
def test_sealed_sandbox_refuses_logging_settings(box, sql):
    with sql_box.sandbox(box["trace"]) as con, pytest.raises(duckdb.Error, match="locked"):
        con.execute(sql)


@pytest.mark.parametrize("sql", ["DELETE FROM tool_invocation", "UPDATE tool_invocation SET query = 'x'",
                                 "INSERT INTO tool_invocation (id) VALUES ('x')", "CREATE TABLE t AS SELECT 1",
                                 "DROP TABLE tool_invocation"])
def test_read_only_connection_names_the_read_only_mode_when_a_write_reaches_it(box, sql):
    with sql_box.sandbox(box["trace"]) as con, pytest.raises(duckdb.Error, match="read-only mode"):
        con.execute(sql)


def test_sandbox_hides_host_paths_in_settings(box):
    with sql_box.sandbox(box["trace"]) as con:
        values = " ".join(str(v) for (v,) in con.execute("SELECT value FROM duckdb_settings()").fetchall())
    assert str(Path.home()) + "/" not in values and "/root" not in values


def test_comment_before_explain_is_parsed_without_recursion(box):
    sql = "/* x */ -- y\n" * 2000 + "EXPLAIN SELECT count(*) FROM tool_invocation"
    started = time.perf_counter()
    result = sql_box.run(box["trace"], sql)
    assert len(result.frame) >= 1 and time.perf_counter() - started < 5


def test_nested_explain_is_refused_not_recursed():
    with pytest.raises(sql_box.SqlRefused):
        sql_box.check_statement("/* c */ EXPLAIN /* c */ EXPLAIN SELECT 1")


def test_strip_leading_comments_handles_many_comments_in_a_loop():
    assert sql_box.strip_leading_comments("-- a\n/* b */ " * 5000 + "SELECT 1") == "SELECT 1"


def test_ordinary_queries_still_run(box):
    frame = sql_box.run(box["trace"], "WITH x AS (SELECT query FROM tool_invocation) SELECT * FROM x").frame
    assert frame["query"].tolist() == ["rotate a token"]
    assert not sql_box.run(box["trace"], "SHOW TABLES").frame.empty
    assert not sql_box.run(box["trace"], "DESCRIBE tool_invocation").frame.empty


def test_row_limit_cuts_the_result_and_says_so(box):
    result = sql_box.run(box["trace"], "SELECT * FROM range(50)", max_rows=10)
    assert len(result.frame) == 10 and result.truncated
    assert not sql_box.run(box["trace"], "SELECT * FROM range(5)", max_rows=10).truncated


def test_time_limit_interrupts_a_runaway_query(box):
    started = time.perf_counter()
    with pytest.raises(sql_box.SqlRefused, match="longer than"):
        sql_box.run(box["trace"], "SELECT count(*) FROM range(100000000000) a, range(1000) b", timeout_s=0.3)
    assert time.perf_counter() - started < 5


def test_python_variables_are_not_visible_to_the_sandbox(box):
    leaked = pd.DataFrame({"secret": [HOST_SECRET]})  # noqa: F841 - a replacement scan would find this frame
    for name in ("leaked", "LEAKED_FRAME"):
        with pytest.raises(duckdb.CatalogException):
            sql_box.run(box["trace"], f"SELECT * FROM {name}")


def test_data_read_only_query_uses_the_sandbox(box, tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    with pytest.raises(data.ReadOnlyError):
        data.read_only_query(store, f"SELECT * FROM read_text('{box['secret']}')")
    assert data.read_only_query(store, "SELECT count(*) AS n FROM tool_invocation")["n"].tolist() == [0]


@pytest.mark.parametrize("sql", ["SELECT content FROM read_text('/etc/passwd')",
                                 "/* x */ EXPLAIN SELECT * FROM read_text('/etc/passwd')",
                                 "SELECT * FROM enable_logging(storage := 'file', storage_path := 'logs')"])
def test_traces_page_refuses_host_reads_without_a_traceback(tmp_path, monkeypatch, sql):
    from streamlit.testing.v1 import AppTest

    from tests.kb_fixture import write_kb

    monkeypatch.setenv("LOOKUP_KNOWLEDGE_KB", str(write_kb(tmp_path / "kb")))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(tmp_path / "traces.duckdb"))
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60).run()
    at = at.switch_page("appui/pages/traces.py").run()
    at.text_area(key="sql_text").set_value(sql)
    at = at.button(key="sql_run").click().run()
    assert not at.exception
    assert at.error and at.error[0].value.startswith("Refused")
    assert not any("root:" in str(frame.value) for frame in at.dataframe)
    assert not (tmp_path / "logs").exists()
