"""Whether rows wait because another process holds the trace file, and who holds it: what the app and the
CLI say instead of failing when an analyst keeps the file open in DuckDB's shell."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from retrieval.traces import live as trace_live
from retrieval.traces.db import file_holder


@dataclass(frozen=True)
class Waiting:
    """Rows drained into the live folder that `tool_invocation` cannot show yet, because `holder` (another
    process: 'process 1234 (duckdb)') holds the file; they arrive when it lets go."""

    holder: str
    parts: int

    def message(self) -> str:
        return held_message(self.holder)


def held_message(holder: str) -> str:
    """The one line the app shows when another process holds the trace file."""
    return f"the trace file is held by {holder}; new rows are waiting and will arrive when it lets go"


def waiting(path: Path) -> Waiting | None:
    """The rows waiting for `path`'s holder to let go, or None when none wait for that (asked of the kernel and
    the live folder: no lock taken, DuckDB not opened)."""
    if trace_live.is_marked_live(path):
        return None
    parts = trace_live.part_files(path)
    if not parts:
        return None
    holder = file_holder(path)
    return Waiting(holder, len(parts)) if holder else None
