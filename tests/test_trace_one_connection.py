"""Reads that share one connection (`TraceStore.one_connection`, eval's `one_read` loaders): a block opens the
trace file once, sees the writer's own rows, lets go of the file when it ends (a writer in another process
then opens it read-write), and reads of another file inside it are not captured. Real DuckDB files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eval import storage
from retrieval import TraceStore
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import reader as trace_reader

WRITE_IN_ANOTHER_PROCESS = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE IF NOT EXISTS other_process (n INTEGER)")
con.close()
print("opened read-write")
"""


def _rows(store: TraceStore, n: int, prefix: str) -> None:
    store.record_many([ToolInvocation("lookup_knowledge", f"{prefix}{i}", {}, "ok", 1.0, {}, {}) for i in range(n)])


def test_reads_in_one_block_open_the_file_once_and_see_the_writers_own_rows(tmp_path: Path, read_only_opens: list[str]):
    with TraceStore(tmp_path / "t.duckdb") as store:
        _rows(store, 3, "a")
        assert store.count() == 3
        _rows(store, 2, "b")
        read_only_opens.clear()
        with store.one_connection():
            counts = [store.count(), len(store.invocations()), int(store.query("SELECT count(*) AS n FROM "
                                                                             "tool_invocation")["n"][0])]
        assert counts == [5, 5, 5]  # the first read flushed the two new rows
        assert read_only_opens.count(str(tmp_path / "t.duckdb")) == 1
        read_only_opens.clear()
        store.count(), store.count()  # outside a block: one connection a read, as before
        assert read_only_opens.count(str(tmp_path / "t.duckdb")) == 2


def test_a_block_lets_go_of_the_file_when_it_ends_even_after_an_error(tmp_path: Path):
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:
        _rows(store, 1, "a")
        with pytest.raises(RuntimeError, match="in the block"), store.one_connection():
            store.count()
            raise RuntimeError("in the block")
        done = subprocess.run([sys.executable, "-c", WRITE_IN_ANOTHER_PROCESS, str(path)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0 and "opened read-write" in done.stdout, done.stderr[-2000:]


def test_nested_blocks_share_the_outer_connection_and_other_files_are_read_on_their_own(tmp_path: Path,
                                                                                       read_only_opens: list[str]):
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    with TraceStore(first) as store, TraceStore(second) as other:
        _rows(store, 2, "a")
        _rows(other, 5, "b")
        read_only_opens.clear()
        with store.one_connection():
            with store.one_connection():
                assert store.count() == 2
            assert store.count() == 2
            assert other.count() == 5 and other.count() == 5  # another file: not the block's connection
        assert read_only_opens.count(str(first)) == 1 and read_only_opens.count(str(second)) == 2


def test_a_block_over_a_path_shares_its_connection_with_every_reader_of_that_file(tmp_path: Path,
                                                                                 read_only_opens: list[str]):
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:
        _rows(store, 4, "a")
    read_only_opens.clear()
    with trace_reader.one_connection(path):
        assert trace_reader.count(path) == 4 and len(trace_reader.invocations(path)) == 4
    assert read_only_opens.count(str(path)) == 1


def test_an_evaluation_loader_opens_the_trace_file_once(run_pair, read_only_opens: list[str]):
    """`load_per_query` and `load_run_row` each run several queries (facts, kind, metrics; resolve and row)."""
    store, run_a, _ = run_pair
    path = str(store.path)
    read_only_opens.clear()
    frame = storage.load_per_query(store, run_a)
    row = storage.load_run_row(store, run_a[:-1])  # a prefix: resolved, then read
    assert not frame.empty and row["run_id"] == run_a
    assert read_only_opens.count(path) == 2, read_only_opens
