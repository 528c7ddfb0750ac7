"""`TraceStore`: the trace writer (writer.py) with the reading functions (reader.py) as methods, the
one object the CLI, the MCP server, the app and evaluation runs hold for a trace file.

Recording is the writer's job; reading is the reader's. This class only joins them, so a caller with a
store can also `query` it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from retrieval.traces import reader as trace_reader
from retrieval.traces.db import TraceStoreError, TraceStoreLocked
from retrieval.traces.reader import iter_rows
from retrieval.traces.schema import COLUMNS, JSON_COLUMNS, MIGRATIONS, SCHEMA_VERSION, TABLE
from retrieval.traces.spool import TraceSpoolRejectedWarning
from retrieval.traces.writer import TraceStoreLockedWarning, TraceStoreWriteWarning, TraceWriter

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "JSON_COLUMNS", "MIGRATIONS", "SCHEMA_VERSION", "TABLE", "TraceSpoolRejectedWarning",
           "TraceStore", "TraceStoreError", "TraceStoreLocked", "TraceStoreLockedWarning", "TraceStoreWriteWarning",
           "TraceWriter", "iter_rows"]


class TraceStore(TraceWriter):
    """A TraceWriter that also reads its file (every read adds the spooled rows first)."""

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        return trace_reader.query(self, sql, params)

    def one_connection(self) -> AbstractContextManager[None]:
        """A block whose reads of this store share one connection (reader.one_connection)."""
        return trace_reader.one_connection(self)

    def invocations(self, *, run_id: str | None = None, limit: int | None = None) -> pd.DataFrame:
        return trace_reader.invocations(self, run_id=run_id, limit=limit)

    def count(self) -> int:
        return trace_reader.count(self)
