"""The Traces and Export pages cache their reads on the trace file's state (issue 31, item 4): a rerun over an
unchanged file opens no DuckDB connection, and a new row, however it arrives, is read on the next rerun."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces.file_state import file_state
from tests.app_helpers import APP, ok

START = datetime(2026, 1, 5, 15, 0, tzinfo=timezone.utc)


def _record(path: Path, first: int, n: int) -> None:
    """`n` interactive calls from a writer that closes (its rows in `tool_invocation` when it returns)."""
    with TraceStore(path) as store:
        store.record_many([ToolInvocation("lookup_knowledge", f"query {i}", {}, "ok", 3.0, {},
                                          {"retrieval_layer": "L1"}, id=f"id-{i:05d}",
                                          created_at=START + timedelta(seconds=i)) for i in range(first, first + n)])


def _matches(at: AppTest) -> str:
    return next(m.value for m in at.markdown if "trace(s)** match" in m.value)


@pytest.mark.parametrize("page", ["appui/pages/traces.py", "appui/pages/export.py"])
def test_a_rerun_over_an_unchanged_trace_file_opens_no_connection(env, opened, page):
    _record(env["traces"], 0, 30)
    at = ok(AppTest.from_file(APP, default_timeout=60).run().switch_page(page).run())
    opened.clear()
    at = ok(at.run())
    assert opened == [], f"a rerun over the same file opened {len(opened)} connection(s)"


def test_a_new_row_is_read_on_the_next_rerun(env, opened):
    _record(env["traces"], 0, 30)
    at = ok(AppTest.from_file(APP, default_timeout=60).run().switch_page("appui/pages/traces.py").run())
    assert "**30 trace(s)** match" in _matches(at)
    _record(env["traces"], 30, 1)  # another process's row: the file's state changes
    opened.clear()
    at = ok(at.run())
    assert "**31 trace(s)** match" in _matches(at) and opened, "the changed file was not read again"


def test_the_file_state_changes_with_every_kind_of_write_and_not_with_reads(tmp_path):
    path = tmp_path / "t.duckdb"
    _record(path, 0, 3)
    before = file_state([path])
    with TraceStore(path) as store:
        store.query("SELECT count(*) FROM tool_invocation")  # a read changes nothing
    assert file_state([path]) == before
    _record(path, 3, 1)  # a drain: a part in the live folder, or the table itself
    after_row = file_state([path])
    assert after_row != before
    with TraceStore(path) as store, store.connect() as con:  # a write through DuckDB (a judgement, a run)
        con.execute("CREATE TABLE scratch AS SELECT 1 AS x")
    assert file_state([path]) != after_row
    folder = tmp_path / "hosts"
    folder.mkdir()
    empty = file_state([folder])
    _record(folder / "b.duckdb", 0, 1)  # a trace file added to a folder of them
    assert file_state([folder]) != empty
