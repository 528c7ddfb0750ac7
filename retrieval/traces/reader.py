"""Reading the trace file: a short connection, SQL to a DataFrame, and `tool_invocation` rows.

Each function takes the trace file's path (or a TraceWriter, whose lock and in-memory rows it then
shares) and moves every spooled row into the table before reading, so it sees every acknowledged row.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.traces import db as trace_db
from retrieval.traces.file import open_drained, spool_path
from retrieval.traces.schema import JSON_COLUMNS, TABLE
from retrieval.traces.spool import Spool
from retrieval.traces.writer import TraceWriter

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

Target = str | Path | TraceWriter  # a path, or a writer whose lock and memory rows a read shares
LOCK_TIMEOUT = 10.0  # seconds a reader waits for another process's lock


@contextmanager
def connect(target: Target, timeout: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short read-write connection to the trace file with every spooled row added first."""
    if isinstance(target, TraceWriter):
        with target.connect(timeout) as con:
            yield con
        return
    path = Path(target)
    spool = Spool(spool_path(path))
    try:
        with open_drained(path, spool, deque(), timeout=LOCK_TIMEOUT if timeout is None else timeout) as con:
            yield con
    finally:
        spool.close()


def query(target: Target, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
    """Run SQL against the trace file, after adding spooled rows, and return a DataFrame."""
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


def _path(target: Target) -> Path:
    return target.path if isinstance(target, TraceWriter) else Path(target)
