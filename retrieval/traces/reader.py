"""Reading the trace file: a short read-only connection, SQL to a DataFrame, and `tool_invocation` rows.

A read never takes the write lock and never drains: it opens the file read-only (DuckDB lets any number of
readers share it), so it neither waits for writers (they record into the spool and drain into the live
folder without the file's lock) nor makes them wait. Rows of other processes appear within the ~2 s their
drain takes. Each function takes the trace file's path, a folder of trace files or several paths (read as
one, sources.py), or a TraceWriter, whose own recorded rows are made visible first (its flush) and
whose `sources` are read. When rows wait in a spool with no keeper to drain them (their writer died), a
read starts one (keeper.py); it does not drain them itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.traces import db as trace_db
from retrieval.traces import keeper as trace_keeper
from retrieval.traces import sources as trace_sources
from retrieval.traces.fold import open_checked
from retrieval.traces.schema import JSON_COLUMNS, TABLE
from retrieval.traces.spool import Spool, spool_path
from retrieval.traces.writer import TraceWriter

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

# a path, several paths (or folders) read as one, or a writer whose own rows a read shows first
Target = str | Path | TraceWriter | Sequence[str | Path]
LOCK_TIMEOUT = 10.0  # seconds a reader waits while another process holds the file read-write


@contextmanager
def connect(target: Target, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short read-only connection to the trace file (or, for several files, an in-memory one over all of
    them); retried while another process holds the file read-write, up to `timeout`, then TraceStoreLocked
    naming the holder. Inside `one_connection` over the same files, the block's connection (opened by its
    first read, which alone flushes a writer's rows)."""
    if timeout is None:  # a writer's own lock timeout (the app's: 3 s), else LOCK_TIMEOUT
        timeout = target.lock_timeout if isinstance(target, TraceWriter) else LOCK_TIMEOUT
    files = _files(target)
    shared = _SHARED.get()
    if shared is not None and shared.files == files and shared.connection is not None:
        yield shared.connection
        return
    if isinstance(target, TraceWriter) and target.has_unshown_rows():
        target.flush(timeout)  # this writer's own rows first: a read sees what its process recorded
        files = _files(target)
    nudge_keepers(files)
    if len(files) == 1:
        open_checked(files[0], timeout=timeout)  # a new file is made, an older one migrated, once per process
        con = trace_db.connect(files[0], timeout=timeout, read_only=True)
    else:
        con = trace_sources.connect_many(files, timeout=timeout)
    if shared is not None and shared.files == files:
        shared.connection = con  # closed when the block ends
        yield con
        return
    try:
        yield con
    finally:
        con.close()


class _SharedRead:
    """The files a `one_connection` block reads, and its connection once its first read has opened it."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.connection: duckdb.DuckDBPyConnection | None = None


_SHARED: ContextVar[_SharedRead | None] = ContextVar("trace_read_connection", default=None)


@contextmanager
def one_connection(target: Target) -> Iterator[None]:
    """Reads of `target` in this block (this thread) share one read-only connection: a loader running several
    queries opens the file once, not once a query (an open costs ~13 ms), and sees one state of the file.
    Only for reading: the connection stays open until the block ends, so nothing in it may write the file
    (a writer of this process waits for it, as for any reader). Nested blocks over the same files share the
    outer one's connection."""
    files = _files(target)
    outer = _SHARED.get()
    if outer is not None and outer.files == files:
        yield
        return
    shared = _SharedRead(files)
    token = _SHARED.set(shared)
    try:
        yield
    finally:
        _SHARED.reset(token)
        if shared.connection is not None:
            shared.connection.close()


def query(target: Target, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
    """Run SQL against the trace file (read-only) and return a DataFrame."""
    with connect(target) as con:
        try:
            return con.execute(sql, params or []).df()
        except trace_db.file_level_errors() as exc:
            raise trace_db.file_error(_path(target), exc) from None


def invocations(target: Target, *, run_id: str | None = None, limit: int | None = None) -> pd.DataFrame:
    """Rows of `tool_invocation`, newest first, optionally of one evaluation run."""
    sql = f"SELECT * FROM {TABLE}" + (" WHERE run_id = ?" if run_id else "") + " ORDER BY created_at DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return query(target, sql, [run_id] if run_id else None)


def count(target: Target, timeout: float | None = None) -> int:
    """How many rows `tool_invocation` holds."""
    with connect(target, timeout) as con:
        return int(con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])


def iter_rows(frame: pd.DataFrame) -> Iterable[dict[str, Any]]:
    """Rows of a `tool_invocation` frame with JSON columns decoded, for JSONL export."""
    for record in frame.to_dict(orient="records"):
        for name in JSON_COLUMNS:
            if isinstance(record.get(name), str):
                record[name] = json.loads(record[name])
        yield record


def _files(target: Target) -> list[Path]:
    """The trace files a read of `target` opens."""
    return trace_sources.expand(target.sources if isinstance(target, TraceWriter) else _targets(target))


def _targets(target: str | Path | Sequence[str | Path]) -> list[str | Path]:
    return [target] if isinstance(target, (str, Path)) else list(target)


def nudge_keepers(files: Sequence[Path]) -> None:
    """Start the keeper of each file whose spool holds rows while none runs (their writer is gone: a reader
    does not drain them itself). Every read does this; so must a cache that answers without reading."""
    for file in files:
        if Spool(spool_path(file)).has_rows() and not trace_keeper.running(file):
            trace_keeper.ensure(file)


def _path(target: Target) -> Path:
    if isinstance(target, TraceWriter):
        return target.path
    targets = _targets(target)
    return Path(targets[0]) if len(targets) == 1 else Path(", ".join(map(str, targets)))
