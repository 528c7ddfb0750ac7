"""The trace file in three facts, for the Traces and Export pages' headers: its size on disk (with DuckDB's log),
how many rows `tool_invocation` holds, and when the oldest was made (what `traces prune` would cut)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from retrieval import TRACE_TABLE as TABLE
from retrieval import TraceStore
from retrieval.traces import file_size


@dataclass(frozen=True)
class FileFacts:
    """The file, its bytes (file and log), its rows and its oldest and newest row's time (None when empty)."""

    path: Path
    bytes: int
    rows: int
    oldest: datetime | None
    newest: datetime | None

    def words(self) -> str:
        """'traces.duckdb · 641.7 MB · 1,000,000 rows · oldest 2026-01-01 00:00 UTC'."""
        oldest = f"oldest {self.oldest:%Y-%m-%d %H:%M} UTC" if self.oldest is not None else "no rows yet"
        return f"`{self.path.name}` · {size_text(self.bytes)} · {self.rows:,} rows · {oldest}"


def file_facts(store: TraceStore) -> FileFacts:
    """The facts of `store`'s file: two aggregates DuckDB answers from one column (quick at a million rows)."""
    frame = store.query(f"SELECT count(*) AS n, min(created_at) AS oldest, max(created_at) AS newest FROM {TABLE}")
    return FileFacts(store.path, file_size(store.path), int(frame["n"][0]), _moment(frame["oldest"][0]),
                     _moment(frame["newest"][0]))


def size_text(size: int) -> str:
    """Bytes for reading: '812 bytes', '3.4 kB', '641.7 MB', '2.1 GB' (powers of 1000)."""
    if size < 1000:
        return f"{size} bytes"
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            return f"{size:.1f} {unit}"
    return f"{size:.1f} TB"


def _moment(value: object) -> datetime | None:
    return None if value is None or pd.isna(value) else pd.Timestamp(value).to_pydatetime()
