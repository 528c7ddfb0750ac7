"""Rewriting a trace file so it shrinks: every table copied into a new file, which then takes the old one's name.

DuckDB reuses the blocks deleted rows free but does not give them back (a DELETE, CHECKPOINT or VACUUM left
the file its size, docs/traces.md), so only a new file is smaller. The swap must never pair the new file
with the old one's log (`traces.duckdb.wal`): DuckDB would replay it onto the new file (it did, deleting the
wrong rows, when tried), so:

1. a fold (fold.py, run detached in its own session, as every checkpoint of this project) puts the live
   parts and the log into the file, and this waits for it;
2. holding the file (other processes spool meanwhile), with no log left, every table is copied into
   `<file>.compact`, checkpointed and closed there;
3. the new file is renamed over the old one while the old one is still held, so nothing writes between.

A kill before 3 leaves the old file whole and a stray `.compact` file (removed by the next compaction); after
it, the new file is whole.

The new file keeps the old one's storage format unless asked for another: `v1.5.0` compresses long strings
with ZSTD and about halves a row of `retrieval_details` (bench/trace_bytes.py), but only DuckDB 1.5 and later
open it; `v1.0.0`, DuckDB's default for new files, opens in every DuckDB 1.x.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces.db import TraceStoreError
from retrieval.traces.detached import launch
from retrieval.traces.fold import needs_fold, wal_path
from retrieval.traces.parts import fsync_file
from retrieval.traces.store import TraceStore

if TYPE_CHECKING:
    import duckdb

ATTEMPTS = 3  # checkpoint-then-hold rounds before giving up on a file other processes keep writing
FOLD_WAIT = 120.0  # seconds the fold before a compaction may take
COMPACT_MEMORY = "256MB"  # DuckDB's memory limit while it copies (measured in docs/traces.md)
STORAGE_VERSIONS = ("v1.0.0", "v1.5.0")  # the file formats a compaction writes (DuckDB's STORAGE_VERSION)


def compact_path(path: Path) -> Path:
    return path.with_name(path.name + ".compact")


def compact(path: str | Path, storage_version: str | None = None) -> None:
    """Rewrite the trace file at `path` into a new file of only its live rows, and put it in its place; in
    `storage_version`'s format (one of STORAGE_VERSIONS), else in the old file's."""
    path = Path(path)
    if storage_version is not None and storage_version not in STORAGE_VERSIONS:
        raise ValueError(f"unknown storage version {storage_version!r}; use one of {', '.join(STORAGE_VERSIONS)} "
                         "(v1.5.0 about halves the file, and only DuckDB 1.5 or later opens it)")
    target = compact_path(path)
    for attempt in range(ATTEMPTS):
        _fold_log(path)
        store = TraceStore(path, background=False)
        try:
            with store.connect(drain=False) as con:
                if _log_bytes(path):
                    continue  # another process committed after the checkpoint: fold it again
                for stray in (target, wal_path(target)):
                    stray.unlink(missing_ok=True)
                name = con.execute("SELECT current_database()").fetchone()[0]
                literal = "'" + str(target).replace("'", "''") + "'"
                con.execute(f"SET memory_limit = '{COMPACT_MEMORY}'")
                con.execute("SET threads = 1")
                version = storage_version or storage_version_of(con)
                con.execute(f"ATTACH {literal} AS lookup_compact (STORAGE_VERSION '{version}')")
                try:
                    con.execute(f'COPY FROM DATABASE "{name}" TO lookup_compact')
                    con.execute("CHECKPOINT lookup_compact")
                finally:
                    con.execute("DETACH lookup_compact")
                fsync_file(target)
                os.replace(target, path)  # still holding the old file: no process writes in between
                return
        finally:
            store.detach()
            if attempt == ATTEMPTS - 1:
                target.unlink(missing_ok=True)
    raise TraceStoreError(f"trace file {path} kept being written while it was compacted ({ATTEMPTS} tries); "
                          "try the compaction again when it is quieter")


def storage_version_of(con: duckdb.DuckDBPyConnection) -> str:
    """The storage format of `con`'s database, as STORAGE_VERSION takes it ('v1.0.0'; DuckDB tags it 'v1.0.0+')."""
    tags = con.execute("SELECT tags FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    version = str(((tags or [{}])[0] or {}).get("storage_version", STORAGE_VERSIONS[0])).rstrip("+")
    return version if version in STORAGE_VERSIONS else STORAGE_VERSIONS[0]


def _fold_log(path: Path) -> None:
    """Fold the live parts and the log into the file in a process of its own session (fold.py; a kill of this
    one does not land inside its CHECKPOINT), and wait for it."""
    if not needs_fold(path):
        return
    child = launch("retrieval.traces.fold", str(path))
    try:
        code = child.wait(timeout=FOLD_WAIT)
    except subprocess.TimeoutExpired:
        code = None  # it goes on by itself; the check below says whether the file is folded
    if code != 0 and needs_fold(path):
        raise TraceStoreError(f"could not fold the log of trace file {path} into it before compacting (another "
                              "process held it); try the compaction again")


def _log_bytes(path: Path) -> int:
    try:
        return os.stat(wal_path(path)).st_size
    except FileNotFoundError:
        return 0
