"""DuckDB trace store: records tool invocations off the caller's critical path, shared safely by processes.

`record()` appends one JSON line to the spool beside the trace file and returns: that write is the
acknowledgement (it survives a SIGKILL; see trace_spool for the fsync policy). A background thread
(trace_drain) moves spooled rows into `tool_invocation` in batches, holding the DuckDB file only for
the insert; readers (`query`, `connect`) drain first, so they see every acknowledged row. A failed
write never raises into the caller: it is a warning, and the rows wait in the spool.
"""

from __future__ import annotations

import random
import threading
import time
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import trace_db, trace_drain
from .invocation import ToolInvocation
from .trace_db import TraceStoreError, TraceStoreLocked
from .trace_pending import Pending
from .trace_rows import encode, fallback_line
from .trace_schema import COLUMNS, JSON_COLUMNS, MIGRATIONS, SCHEMA_VERSION, TABLE, migrate
from .trace_spool import Spool

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = ["COLUMNS", "JSON_COLUMNS", "MIGRATIONS", "SCHEMA_VERSION", "TABLE", "TraceSpoolRejectedWarning",
           "TraceStore", "TraceStoreError", "TraceStoreLocked", "TraceStoreLockedWarning", "TraceStoreWriteWarning",
           "iter_rows"]

MAX_MEMORY_ROWS = 10_000  # rows kept in memory when even the spool cannot be written
MAX_AGE = 2.0  # seconds spooled rows wait for a background drain (readers drain at once); fewer, larger batches


class TraceStoreWriteWarning(UserWarning):
    """Rows could not be written to the trace file yet; they are kept in the spool (or memory)."""


class TraceStoreLockedWarning(TraceStoreWriteWarning):
    """Rows wait in the spool because another process held the trace file's lock for too long."""


class TraceSpoolRejectedWarning(UserWarning):
    """Spool lines that are not valid rows were moved to the rejected file."""


class TraceStore:
    """Records tool invocations into a DuckDB file; safe across threads and processes.

    Use as a context manager, or call `close()`, to flush at a known point; `atexit` flushes the rest.
    """

    def __init__(self, path: str | Path, *, lock_timeout: float = 10.0, batch_size: int = 500,
                 fsync: bool = False) -> None:
        self.path = Path(path)
        self.lock_timeout, self.batch_size = lock_timeout, batch_size
        if self.path.is_dir():
            raise TraceStoreError(f"trace file {self.path} is a folder; pass --traces with a file path "
                                  f"such as traces.duckdb")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TraceStoreError(f"cannot create the folder of trace file {self.path}: {exc}") from None
        self._spool = Spool(self.spool_path, fsync=fsync)
        self._lock = threading.RLock()  # one DuckDB connection (and drain) at a time per store
        self._memory: deque[bytes] = deque()
        self._ready, self._closed, self._unsent = False, False, 0
        self._since: float | None = None  # when undrained rows were first seen
        self._generation = -1  # the live spool's inode when last looked at: it changes when anyone drains
        self._retry_at, self._backoff, self._warned = 0.0, 0.0, ""
        with self.connect(drain=False):  # checks and migrates the file; spooled rows wait for a drain, so
            pass  # opening a store never loads DuckDB's Arrow path (a one-shot CLI stays under a second)
        trace_drain.register(self)

    @property
    def spool_path(self) -> Path:
        return self.path.with_name(self.path.name + ".pending.jsonl")

    @property
    def rejected_path(self) -> Path:
        return self._spool.rejected_path

    def spool_files(self) -> list[Path]:
        """The spool and its batch files (`*.draining`) that still hold rows not yet in the table."""
        return self._spool.pending_files()

    def __call__(self, invocation: ToolInvocation) -> None:
        """A TraceStore is a recorder: `lookup_knowledge(..., recorder=store)`."""
        self.record(invocation)

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, invocation: ToolInvocation) -> None:
        """Spool one row and return (never raises). `latency_ms` gains the time spent here, and
        `retrieval_details.timings_ms.record` says how much that was."""
        self._append([self._encode(invocation, time.perf_counter())])

    def record_many(self, invocations: Sequence[ToolInvocation]) -> None:
        """Spool rows as they are (latencies untouched) in one write; never raises."""
        if invocations:
            self._append([self._encode(inv, None) for inv in invocations])

    def flush(self, timeout: float | None = None) -> bool:
        """Move every spooled row into the table now; False (with a warning) if the file stayed unavailable."""
        if not (self._memory or self._spool.has_rows()):
            return True  # nothing waits: the file is not opened (at exit, its folder may be gone)
        try:
            with self.connect(timeout=timeout):
                return True
        except TraceStoreError as exc:
            self._warn_once(exc, force=True)
            return False

    def close(self, timeout: float | None = None, *, drain: bool = True) -> None:
        """Flush and stop draining in the background; rows recorded later still go to the spool.
        `drain=False` leaves spooled rows (acknowledged, durable) for the next reader or writer to move: a
        one-shot process then never loads DuckDB's Arrow and pandas path (half a second of start-up)."""
        if drain:
            self.flush(timeout)
        self._closed = True
        trace_drain.unregister(self)
        self._spool.close()

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """Run SQL against the trace file, after adding spooled rows, and return a DataFrame."""
        with self.connect() as con:
            try:
                return con.execute(sql, params or []).df()
            except trace_db.file_level_errors() as exc:
                raise trace_db.file_error(self.path, exc) from None

    def invocations(self, *, run_id: str | None = None, limit: int | None = None) -> pd.DataFrame:
        """Rows of `tool_invocation`, newest first, optionally of one evaluation run."""
        sql = f"SELECT * FROM {TABLE}" + (" WHERE run_id = ?" if run_id else "") + " ORDER BY created_at DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.query(sql, [run_id] if run_id else None)

    def count(self) -> int:
        return int(self.query(f"SELECT count(*) AS n FROM {TABLE}")["n"][0])

    def connect(self, timeout: float | None = None, *, drain: bool = True) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A short read-write connection with every spooled row added (unless `drain` is False); retried
        while another process holds the lock (up to `timeout`, default `lock_timeout`), then TraceStoreLocked."""
        return self._connect(timeout, drain=drain, background=False)

    @contextmanager
    def _connect(self, timeout: float | None, *, drain: bool, background: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        """`connect`; a `background` drain is paced so it takes a small share of the GIL (trace_pending._Pacer)."""
        with self._lock:
            trace_db.check_file(self.path)  # a foreign file is refused before the spool is touched
            try:
                pending = (Pending.collect(self._spool, self._memory, self.batch_size, background=background) if drain
                           else Pending([], []))
            except OSError as exc:
                raise TraceStoreError(f"cannot read the spool {self.spool_path}: {exc}") from None
            try:
                con = trace_db.connect(self.path, timeout=self.lock_timeout if timeout is None else timeout)
                try:
                    self._prepare(con, pending)
                    yield con
                finally:
                    con.close()
            finally:
                pending.release(self._memory)

    def drain_in_background(self) -> None:
        """Called by the drainer thread: drain if rows wait, backing off while the file is unavailable."""
        if self._closed or time.monotonic() < self._retry_at:
            return
        if not (self._memory or self._spool.has_rows()):
            self._since = None
            return
        generation = self._spool.generation()
        if generation != self._generation or self._since is None:  # someone drained: rows start ageing anew
            self._generation, self._since = generation, time.monotonic()
        due = self._memory or self._unsent >= self.batch_size or time.monotonic() - self._since >= MAX_AGE
        if not due or not self._lock.acquire(blocking=False):
            return  # a reader or flush is draining right now
        try:  # one attempt: a background drain never queues for the lock ahead of readers
            with self._connect(0, drain=True, background=True):
                pass
        except (TraceStoreError, OSError) as exc:
            self._backoff = min(max(self._backoff * 2, 0.25), 4.0)
            self._retry_at = time.monotonic() + self._backoff * (0.5 + random.random())
            self._warn_once(exc)
        finally:
            self._lock.release()

    def _prepare(self, con: duckdb.DuckDBPyConnection, pending: Pending) -> None:
        """Check and migrate the file once, then insert the pending rows and set bad lines aside."""
        import duckdb

        self._unsent = 0
        try:
            if not self._ready:
                migrate(con, self.path)
                self._ready = True
            bad = pending.store(con)
        except duckdb.Error as exc:
            raise trace_db.file_error(self.path, exc) from None
        try:
            if bad:
                self._spool.reject(bad)
                warnings.warn(f"{len(bad)} spooled row(s) of {self.path} are not valid rows (first: {bad[0][1]}); "
                              f"moved to {self.rejected_path}", TraceSpoolRejectedWarning, stacklevel=4)
            pending.finish()
        except OSError as exc:
            raise TraceStoreError(f"cannot clear the spool {self.spool_path}: {exc}") from None
        self._since, self._backoff, self._warned = None, 0.0, ""

    def _encode(self, invocation: ToolInvocation, entered: float | None) -> bytes:
        try:
            return encode(invocation, entered)
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            warnings.warn(f"invocation could not be encoded in full ({type(exc).__name__}: {exc}); "
                          f"recorded with its error only", TraceStoreWriteWarning, stacklevel=3)
            return fallback_line(invocation, exc)

    def _append(self, lines: list[bytes]) -> None:
        try:
            self._spool.append(b"".join(lines))
        except OSError as exc:
            kept = min(len(lines), MAX_MEMORY_ROWS - len(self._memory))
            self._memory.extend(lines[:kept])
            lost = f"; {len(lines) - kept} row(s) dropped (memory full)" if kept < len(lines) else ""
            warnings.warn(f"cannot write the spool {self.spool_path} ({exc}); {kept} row(s) kept in memory "
                          f"until the next drain{lost}", TraceStoreWriteWarning, stacklevel=3)
        self._unsent += len(lines)
        if self._closed:
            self._closed = False
            trace_drain.register(self)
        trace_drain.notify(now=self._unsent >= self.batch_size)

    def _warn_once(self, exc: BaseException, *, force: bool = False) -> None:
        """One warning per kind of failure while it lasts; a lock only once rows waited `lock_timeout`."""
        locked = isinstance(exc, TraceStoreLocked)
        waited = self._since is not None and time.monotonic() - self._since >= self.lock_timeout
        if locked and not (force or waited):
            return
        key = "locked" if locked else str(exc)
        if key == self._warned and not force:
            return
        self._warned = key
        where = ", ".join(str(p.name) for p in self.spool_files()) or "memory"
        kind = TraceStoreLockedWarning if locked else TraceStoreWriteWarning
        warnings.warn(f"{exc}; recorded rows are kept in {where} beside it and added by the next write",
                      kind, stacklevel=3)


def iter_rows(frame: pd.DataFrame) -> Iterable[dict[str, Any]]:
    """Rows of a `tool_invocation` frame with JSON columns decoded, for JSONL export."""
    import json

    for record in frame.to_dict(orient="records"):
        for name in JSON_COLUMNS:
            if isinstance(record.get(name), str):
                record[name] = json.loads(record[name])
        yield record
