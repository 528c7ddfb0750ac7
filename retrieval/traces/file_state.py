"""A token of what a reader of trace files could see: it changes whenever a row, part, log or file is added.

Built from `os.stat` alone (no DuckDB connection), so a page can cache its reads on it and a rerun over an
unchanged file opens nothing. For each trace file it takes the size and modification time of the file,
DuckDB's log beside it and the live folder (a part is renamed into it, the keeper removes parts from it);
for each source that is a folder, the folder's own time too (a trace file copied into it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from retrieval.traces import sources as trace_sources
from retrieval.traces.live import live_dir

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
