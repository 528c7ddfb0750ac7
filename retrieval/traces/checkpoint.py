"""Folding the trace file's write-ahead log into the file, which only detached processes do: the keeper
(trace_keeper), and this module run by itself for a compaction (trace_compact).

DuckDB keeps its metadata in one block and a checkpoint rewrites it in place; a SIGKILL inside that write
(a large `write()` cut short) left files no client could open (`Corrupt database file: computed checksum
... in block at location 12288`, 1 file in 25 kills of the soak's first long run). So no connection of
this project checkpoints on its own (trace_db.CONNECT_CONFIG: commits go to the write-ahead log, appended,
which DuckDB replays on open), and the keeper, a detached process that kills of writers do not reach, folds
the live folder into the file and checkpoints it once writers are idle. `checkpoint` does the same now.
"""

from __future__ import annotations

import sys
from pathlib import Path

LOCK_TIMEOUT = 60.0  # seconds `checkpoint` waits for the file


def wal_path(path: Path) -> Path:
    """DuckDB's write-ahead log beside trace file `path`."""
    return path.with_name(path.name + ".wal")


def checkpoint(path: Path, timeout: float = LOCK_TIMEOUT) -> bool:
    """Fold `path`'s live parts and its log into the file now (trace_keeper.pack); False if the file stayed
    locked for `timeout`."""
    from retrieval.traces.keeper import pack

    return pack(path, timeout=timeout) is not None


def main(argv: list[str]) -> int:
    """`python -m retrieval.traces.checkpoint FILE`: the fold and checkpoint, in a process of its own (compact.py
    starts it in a new session, so no kill of its caller lands inside the CHECKPOINT); 1 if the file stayed
    locked."""
    return 0 if checkpoint(Path(argv[0])) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
