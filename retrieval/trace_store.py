"""DuckDB trace store: the `tool_invocation` table, its schema migrations, and safe shared writes.

DuckDB lets one process hold a file read-write, so connections are short (open, write, close) and
retried while another process holds the lock. If the lock is still held after `lock_timeout`, rows go
to a pending spool file beside the trace file (never dropped) and are added by the next write that
gets the lock; the warning names the process holding it.
"""

from __future__ import annotations

import fcntl
import json
import random
import re
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from .invocation import ToolInvocation
from .provenance import COLUMNS as PROVENANCE_COLUMNS

TABLE = "tool_invocation"
COLUMNS = ("id", "created_at", "tool_name", "query", "arguments", "status", "error", "latency_ms",
           "retrieval_layer", "filter_decision", "l1_status", "l0_match_count", "l1_candidate_count",
           "candidate_count", "evidence_count", "run_id", "query_id", "config", "retrieval_details",
           *PROVENANCE_COLUMNS)
JSON_COLUMNS = ("arguments", "config", "retrieval_details", "index_settings")

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, (
        f"""CREATE TABLE {TABLE} (
            id VARCHAR PRIMARY KEY, created_at TIMESTAMP NOT NULL, tool_name VARCHAR NOT NULL,
            query VARCHAR NOT NULL, arguments JSON, status VARCHAR NOT NULL, error VARCHAR,
            latency_ms DOUBLE, retrieval_layer VARCHAR, filter_decision VARCHAR, l1_status VARCHAR,
            l0_match_count INTEGER, l1_candidate_count INTEGER, candidate_count INTEGER,
            evidence_count INTEGER, run_id VARCHAR, query_id VARCHAR, config JSON, retrieval_details JSON)""",
        f"CREATE INDEX IF NOT EXISTS tool_invocation_run ON {TABLE} (run_id)",
    )),
    # v2 (analyst provenance): which knowledge base answered; added, never renamed, so v1 files upgrade in place
    (2, (
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_path VARCHAR",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_fingerprint VARCHAR",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_entries INTEGER",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS kb_chunks INTEGER",
        f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS index_settings JSON",
    )),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


class TraceStoreError(RuntimeError):
    """The trace file cannot be opened or written; the message says why and what to do."""


class TraceStoreLockedWarning(UserWarning):
    """Rows were spooled beside the trace file because another process held its lock."""


class TraceStore:
    """Records tool invocations into a DuckDB file; safe across threads and processes."""

    def __init__(self, path: str | Path, *, lock_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise TraceStoreError(f"trace file {self.path} is a folder; pass --traces with a file path "
                                  f"such as traces.duckdb")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TraceStoreError(f"cannot create the folder of trace file {self.path}: {exc}") from None
        with self.connect() as con:
            _migrate(con, self.path)

    @property
    def spool_path(self) -> Path:
        return self.path.with_name(self.path.name + ".pending.jsonl")

    def __call__(self, invocation: ToolInvocation) -> None:
        """A TraceStore is a recorder: `lookup_knowledge(..., recorder=store)`."""
        self.record(invocation)

    def record(self, invocation: ToolInvocation) -> None:
        self.record_many([invocation])

    def record_many(self, invocations: Sequence[ToolInvocation]) -> None:
        """Insert rows in one statement; if the file stays locked, spool them instead of losing them."""
        rows = [_row(inv) for inv in invocations]
        if not rows:
            return
        try:
            with self.connect() as con:
                _insert(con, rows)
        except TraceStoreLocked as exc:
            self._spool(rows)
            warnings.warn(f"{exc}; {len(rows)} invocation(s) kept in {self.spool_path} and added by the "
                          f"next write", TraceStoreLockedWarning, stacklevel=2)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """Run SQL against the trace file and return a DataFrame (callers guard what SQL they allow)."""
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    def invocations(self, *, run_id: str | None = None, limit: int | None = None) -> pd.DataFrame:
        """Rows of `tool_invocation`, newest first, optionally of one evaluation run."""
        sql = f"SELECT * FROM {TABLE}" + (" WHERE run_id = ?" if run_id else "") + " ORDER BY created_at DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.query(sql, [run_id] if run_id else None)

    def count(self) -> int:
        return int(self.query(f"SELECT count(*) AS n FROM {TABLE}")["n"][0])

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short read-write connection, retried while another process holds the lock; adds spooled rows."""
        with self._lock:
            con = self._open()
            try:
                self._drain_spool(con)
                yield con
            finally:
                con.close()

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.005
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                message = str(exc)
                if "lock" not in message.lower():
                    raise TraceStoreError(f"cannot open trace file {self.path}: {message}; pass --traces "
                                          f"with a DuckDB 1.x file or a new path") from None
                if time.monotonic() >= deadline:
                    raise TraceStoreLocked(f"trace file {self.path} is locked by {_lock_holder(message)} "
                                           f"for over {self.lock_timeout:.0f}s") from None
            except duckdb.Error as exc:
                raise TraceStoreError(f"cannot open trace file {self.path}: {exc}") from None
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)

    def _spool(self, rows: list[dict[str, Any]]) -> None:
        with self.spool_path.open("a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.writelines(json.dumps(r, default=str) + "\n" for r in rows)

    def _drain_spool(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self.spool_path.exists():
            return
        with self.spool_path.open("r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            rows = [json.loads(line) for line in handle if line.strip()]
            if rows and _has_table(con):
                for row in rows:
                    row["created_at"] = datetime.fromisoformat(row["created_at"])
                _insert(con, rows)
                handle.truncate(0)


class TraceStoreLocked(TraceStoreError):
    """Another process held the trace file's lock for longer than the timeout."""


def _row(invocation: ToolInvocation) -> dict[str, Any]:
    row = invocation.to_dict()
    created = invocation.created_at.astimezone(timezone.utc).replace(tzinfo=None)
    row["created_at"] = created.isoformat()
    for name in JSON_COLUMNS:
        row[name] = json.dumps(row[name], default=str)
    return {name: row.get(name) for name in COLUMNS}


def _insert(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["created_at"] = pd.to_datetime(frame["created_at"])
    con.register("_incoming", frame)
    try:
        con.execute(f"INSERT OR IGNORE INTO {TABLE} BY NAME SELECT * FROM _incoming")
    finally:
        con.unregister("_incoming")


def _has_table(con: duckdb.DuckDBPyConnection) -> bool:
    found = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [TABLE])
    return bool(found.fetchone()[0])


def _migrate(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TIMESTAMP)")
    current = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise TraceStoreError(f"trace file {path} has schema v{current}, newer than this tool's "
                              f"v{SCHEMA_VERSION}; upgrade lookup-knowledge or use another --traces file")
    for version, statements in MIGRATIONS:
        if version <= current:
            continue
        con.execute("BEGIN TRANSACTION")
        for statement in statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_version VALUES (?, now()::TIMESTAMP)", [version])
        con.execute("COMMIT")


def _lock_holder(message: str) -> str:
    """'process 1234 (python app.py)' from DuckDB's lock error, reading the command line from /proc."""
    match = re.search(r"held in (.+?) \(PID (\d+)\)", message)
    if not match:
        return "another process"
    pid = match.group(2)
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        command = match.group(1)
    return f"process {pid} ({command[:120]})"


def iter_rows(frame: pd.DataFrame) -> Iterable[dict[str, Any]]:
    """Rows of a `tool_invocation` frame with JSON columns decoded, for JSONL export."""
    for record in frame.to_dict(orient="records"):
        for name in JSON_COLUMNS:
            if isinstance(record.get(name), str):
                record[name] = json.loads(record[name])
        yield record
