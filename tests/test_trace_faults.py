"""Trace-file faults: DuckDB's lock error recognised by type and message; corrupt, truncated, foreign or
wrong-schema files refused in one line naming the file, fast, and without touching the network."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import duckdb
import pytest

from retrieval import TraceStore, TraceStoreError
from retrieval.cli import main as lookup_main
from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import pack
from retrieval.traces import reader as trace_reader
from retrieval.traces.db import CONNECT_CONFIG, is_lock_error
from retrieval.traces.writer import TraceStoreLockedWarning
from tests.conftest import held_trace_file


def _filled(path: Path, rows: int = 300) -> Path:
    """A trace file with `rows` rows in the file itself (checkpointed: our connections write to the log)."""
    with TraceStore(path) as store:
        store.record_many([ToolInvocation("lookup_knowledge", f"query {i}", {}, "ok", 1.0, {}, {"pad": "x" * 500})
                           for i in range(rows)])
    assert pack(path, timeout=60)
    assert not path.with_name(path.name + ".wal").exists()
    return path


def _refused(path: Path) -> str:
    started = time.monotonic()
    with pytest.raises(TraceStoreError) as caught:
        TraceStore(path, lock_timeout=10).count()
    message = str(caught.value)
    assert time.monotonic() - started < 5, "a broken file must not be waited on like a locked one"
    assert "\n" not in message and str(path) in message and "--traces" in message
    return message


def test_lock_error_detection_uses_duckdbs_lock_error_only():
    lock = duckdb.IOException('IO Error: Could not set lock on file "/t.duckdb": Conflicting lock is held in '
                              '/usr/bin/python3 (PID 7). See also https://duckdb.org/docs/stable/connect/concurrency')
    corrupt = duckdb.IOException("IO Error: Corrupt database file: computed checksum 1 does not match stored "
                                 "checksum 2 in block at location 12288")
    assert is_lock_error(lock)
    assert not is_lock_error(corrupt)
    assert not is_lock_error(duckdb.CatalogException("the lock table does not exist"))
    assert not is_lock_error(RuntimeError(str(lock)))


def test_garbled_file_whose_error_says_block_is_not_treated_as_locked(tmp_path):
    path = _filled(tmp_path / "garbled.duckdb")
    data = bytearray(path.read_bytes())
    data[12288 + 100:12288 + 116] = bytes(range(16))  # inside the first data block: a checksum mismatch
    path.write_bytes(bytes(data))
    message = _refused(path)
    assert "block" in message and "locked" not in message


def test_truncated_file_gives_a_one_line_error(tmp_path):
    path = _filled(tmp_path / "truncated.duckdb")
    path.write_bytes(path.read_bytes()[:10_000])
    assert "cannot open trace file" in _refused(path)


def test_wrong_tool_invocation_schema_gives_a_one_line_error(tmp_path):
    path = tmp_path / "foreign.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE tool_invocation (id INTEGER, payload VARCHAR)")
    message = _refused(path)
    assert "not this tool's" in message and "created_at" in message


def test_sqlite_file_is_refused_without_loading_an_extension(tmp_path):
    path = tmp_path / "traces.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE tool_invocation (id TEXT)")
    assert "a SQLite database, not a DuckDB database" in _refused(path)
    assert sqlite3.connect(path).execute("SELECT count(*) FROM tool_invocation").fetchone() == (0,)


def test_every_store_connection_has_extension_autoload_off(tmp_path):
    with TraceStore(tmp_path / "t.duckdb").connect() as con:
        settings = {name: con.execute(f"SELECT current_setting('{name}')").fetchone()[0] for name in CONNECT_CONFIG}
    assert settings["autoload_known_extensions"] is False and settings["autoinstall_known_extensions"] is False


def test_no_store_connection_checkpoints(tmp_path):
    """Commits stay in DuckDB's log: a read-write connection of a writer never checkpoints, at commit or at
    close (the keeper does it, detached), so a SIGKILL of a writer never lands in the middle of one."""
    path = tmp_path / "t.duckdb"
    store = TraceStore(path)
    store.record_many([ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {"pad": "x" * 5000})
                       for i in range(500)])
    with store.connect():  # the spooled rows inserted into the table by this connection
        pass
    wal = path.with_name(path.name + ".wal")
    assert wal.stat().st_size > 2_000_000  # 500 rows went to the log, none folded in by a commit or a close
    assert trace_reader.count(path) == 500
    assert pack(path, timeout=60) and not wal.exists()
    assert duckdb.connect(str(path),
                          read_only=True).execute("SELECT count(*) FROM tool_invocation").fetchone() == (500,)


def _alone(path: Path) -> bool:
    """Whether the file alone holds its rows: no log beside it, no live parts, no keeper at work."""
    from retrieval.traces import keeper

    return not (path.with_name(path.name + ".wal").exists() or keeper.running(path)
                or list(path.with_name(path.name + ".live").glob("*.parquet")))


def test_once_writers_are_idle_the_keeper_leaves_every_row_in_the_file_alone(tmp_path, monkeypatch):
    """A writer's drains put rows in the live folder and start the keeper, which folds them (and the log) into
    the file once nothing has been recorded for a moment, then exits: the file alone holds every row."""
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_PACK_IDLE", "0.5")  # the keeper's moment: 0.5 s, not 5 s
    path = tmp_path / "t.duckdb"
    with TraceStore(path) as store:
        store.record_many([ToolInvocation("lookup_knowledge", f"q{i}", {}, "ok", 1.0, {}, {"pad": "x" * 5000})
                           for i in range(200)])
    assert list(path.with_name(path.name + ".live").glob("*.parquet")), "the rows were drained into a part"
    deadline = time.monotonic() + 30
    while not _alone(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alone(path), "the keeper did not fold the rows into the file within 30 s"
    copy = tmp_path / "elsewhere" / "copy.duckdb"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    with duckdb.connect(str(copy), read_only=True) as con:
        assert con.execute("SELECT count(*), count(DISTINCT id) FROM tool_invocation").fetchone() == (200, 200)
        assert con.execute("SELECT table_type FROM information_schema.tables "
                           "WHERE table_name = 'tool_invocation'").fetchone() == ("BASE TABLE",)


def test_cli_prints_one_line_for_a_broken_trace_file(tmp_path, capsys):
    path = tmp_path / "t.duckdb"
    path.write_bytes(b"\0" * 8 + b"DUCK" + b"\x07" * 5000)
    assert lookup_main(["lookup", "PagerDuty", "--traces", str(path), "--kb", "data/kb"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot open trace file") and "\n" not in err


def test_a_held_lock_is_waited_for_and_then_named(tmp_path):
    path = tmp_path / "held.duckdb"
    TraceStore(path).close()
    with held_trace_file(path) as holder:
        with pytest.raises(TraceStoreError, match=rf"locked by process {holder.pid} .* for over 0.5s"):
            trace_reader.count(path, timeout=0.5)
        with pytest.raises(TraceStoreError, match=rf"locked by process {holder.pid} .* for over 0.5s"):
            TraceStore(path, lock_timeout=0.5)
        store = TraceStore(path, lock_timeout=0.5, defer_if_locked=True)  # a CLI's: rows wait in the spool
        store.record(ToolInvocation("lookup_knowledge", "q", {}, "ok", 1.0, {}, {}))
        with pytest.warns(TraceStoreLockedWarning, match=rf"locked by process {holder.pid} .* for over 0.5s"):
            assert store.flush() is False


def test_the_cli_helper_makes_a_new_trace_files_folder(tmp_path):
    """`lookup --traces new/t.duckdb`: the helper forked before the command's imports may open the file before
    the command has made its folder (1 run in 6 failed with 'No such file or directory'); it makes the folder."""
    from retrieval.traces.command_helper import CommandHelper

    path = tmp_path / "new" / "t.duckdb"
    outcome = CommandHelper(path, 1.0).finish()  # the helper as the console script spawns it, on its own first
    assert outcome.status == "ok", outcome.message
    assert path.exists()
