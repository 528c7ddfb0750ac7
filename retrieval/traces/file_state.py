"""The trace file's state as a reader sees it, from the file system alone (no DuckDB connection, no lock).

- `file_state`: a token of what a reader could see, which changes whenever a row, part, log or file is added,
  so a page can cache its reads on it and a rerun over an unchanged file opens nothing.
- `waiting`: whether rows wait because another process holds the file, and who it is (what the app and the
  CLI say instead of failing when an analyst keeps the file open in DuckDB's shell).

For the token, For each trace file it takes the size and modification time of the file,
DuckDB's log beside it and the live folder (a part is renamed into it, the keeper removes parts from it);
for each source that is a folder, the folder's own time too (a trace file copied into it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from retrieval.traces import sources as trace_sources
from retrieval.traces.db import file_holder
from retrieval.traces.view import is_marked_live, live_dir, part_files

Stat = tuple[int, int] | None  # (size, modification time in ns), None when absent
FileState = tuple[tuple[str, Stat, Stat, Stat], ...]


def file_state(targets: Sequence[str | Path]) -> FileState:
    """The state of every trace file `targets` name (files or folders of them), in a stable order."""
    folders = [(str(Path(t)), _stat(Path(t)), None, None) for t in targets if Path(t).is_dir()]
    files = [(str(f), _stat(f), _stat(f.with_name(f.name + ".wal")), _stat(live_dir(f)))
             for f in trace_sources.expand(list(targets))]
    return tuple(folders + files)


def _stat(path: Path) -> Stat:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


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
    if is_marked_live(path):
        return None
    parts = part_files(path)
    if not parts:
        return None
    holder = file_holder(path)
    return Waiting(holder, len(parts)) if holder else None
