"""Opening the trace file: checked (read-only when it is up to date), migrated once per process, and, for a
read-write connection of this project, folded (the live parts put into the table) with every spooled row
moved into its tables first. The writer, the keeper and the reading functions open it here.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import db as trace_db
from retrieval.traces import view as trace_view
from retrieval.traces.db import TraceStoreError, TraceStoreLocked
from retrieval.traces.pending import Pending
from retrieval.traces.schema import migrate, needs_migration
from retrieval.traces.spool import Spool, TraceSpoolRejectedWarning
from retrieval.traces.turn import DrainTurn

if TYPE_CHECKING:
    import duckdb

__all__ = ["TraceSpoolRejectedWarning", "drain_into", "migrate_once", "open_checked", "open_drained", "spool_path"]

_MIGRATED: set[tuple[str, int, int]] = set()  # (path, device, inode) of files checked and migrated here
_MIGRATED_GUARD = threading.Lock()


def spool_path(path: Path) -> Path:
    """The spool beside trace file `path`."""
    return path.with_name(path.name + ".pending.jsonl")


def open_checked(path: Path, *, timeout: float, force: bool = False) -> None:
    """Make sure `path` is a trace file of this tool's schema: an existing, up-to-date file is only read (a
    read-only connection, which other readers share); a new or older one is made or migrated read-write.
    Retried while another process holds the lock, up to `timeout`, then TraceStoreLocked."""
    import duckdb

    key = _key(path)
    if key is not None and key in _MIGRATED and not force:
        return
    trace_db.check_file(path)  # refuses a foreign file before DuckDB sees it
    if key is not None and os.path.getsize(path):
        con = trace_db.connect(path, timeout=timeout, read_only=True)
        try:
            current = not needs_migration(con, path)
        except duckdb.Error as exc:
            raise trace_db.file_error(path, exc) from None
        finally:
            con.close()
        if current:
            _remember(key)
            return
    with open_drained(path, Spool(spool_path(path)), deque(), timeout=timeout, drain=False, check=True):
        pass


@contextmanager
def open_drained(path: Path, spool: Spool, memory: deque[bytes], *, timeout: float,
                 drain: bool = True, check: bool = False, threads: int | None = None
                 ) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection to `path` in which `tool_invocation` is a table holding every row: the live
    parts folded in, and every spooled row (and the `memory` rows) inserted, unless `drain` is False. Retried
    while another process holds the lock, up to `timeout`, then TraceStoreLocked. The schema is checked and
    migrated on the first open in this process, or always with `check`; `threads` caps DuckDB's threads."""
    import duckdb

    deadline = time.monotonic() + timeout
    with trace_db.write_guard(path):
        con = trace_db.connect(path, timeout=timeout, threads=threads)  # refuses a foreign file before DuckDB sees it
        try:
            turn = DrainTurn(path)
            if not turn.take(max(deadline - time.monotonic(), 1.0)):
                raise TraceStoreLocked(f"trace file {path} is locked by another drainer of it for over "
                                       f"{timeout:.1f}s", "another drainer of this file")
            try:
                trace_view.fold(con, path)  # before a migration: it alters the table
                migrate_once(con, path, force=check)
                if drain:
                    drain_into(con, path, spool, memory)
            except duckdb.Error as exc:
                raise trace_db.file_error(path, exc) from None
            finally:
                turn.release()
            yield con
        finally:
            con.close()


def drain_into(con: duckdb.DuckDBPyConnection, path: Path, spool: Spool, memory: deque[bytes]) -> None:
    """Move the spooled rows (and `memory`'s) into the file `con` holds; bad lines go to the rejected file."""
    import duckdb

    try:
        pending = Pending.collect(spool, memory)
    except OSError as exc:
        raise TraceStoreError(f"cannot read the spool {spool.path}: {exc}") from None
    try:
        try:
            bad = pending.store(con)
        except duckdb.Error as exc:
            raise trace_db.file_error(path, exc) from None
        except OSError as exc:
            raise TraceStoreError(f"cannot stage spooled rows of {path} for DuckDB: {exc}") from None
        try:
            if bad:
                spool.reject(bad)
                warnings.warn(f"{len(bad)} spooled row(s) of {path} are not valid rows (first: {bad[0][1]}); "
                              f"moved to {spool.rejected_path}", TraceSpoolRejectedWarning, stacklevel=4)
            pending.finish()
        except OSError as exc:
            raise TraceStoreError(f"cannot clear the spool {spool.path}: {exc}") from None
    finally:
        pending.release(memory)


def migrate_once(con: duckdb.DuckDBPyConnection, path: Path, *, force: bool = False) -> None:
    """Check and migrate `path` the first time this process opens this file (a file made anew is migrated again)."""
    key = _key(path)
    if key is not None and key in _MIGRATED and not force:
        return
    import duckdb

    try:
        migrate(con, path)
    except duckdb.Error as exc:
        raise trace_db.file_error(path, exc) from None
    if key is not None:
        _remember(key)


def _key(path: Path) -> tuple[str, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return str(path.resolve()), info.st_dev, info.st_ino


def _remember(key: tuple[str, int, int]) -> None:
    with _MIGRATED_GUARD:
        _MIGRATED.add(key)
