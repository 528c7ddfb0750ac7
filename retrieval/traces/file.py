"""Opening the trace file for one short read-write connection: checked, migrated once, and with every
spooled row moved into its tables first. The writer and the reading functions both open it here.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import db as trace_db
from retrieval.traces.checkpoint import maybe_checkpoint
from retrieval.traces.db import TraceStoreError
from retrieval.traces.pending import Pending
from retrieval.traces.schema import migrate
from retrieval.traces.spool import Spool

if TYPE_CHECKING:
    import duckdb

_MIGRATED: set[tuple[str, int, int]] = set()  # (path, device, inode) of files checked and migrated here
_MIGRATED_GUARD = threading.Lock()


class TraceSpoolRejectedWarning(UserWarning):
    """Spool lines that are not valid rows were moved to the rejected file."""


def spool_path(path: Path) -> Path:
    """The spool beside trace file `path`."""
    return path.with_name(path.name + ".pending.jsonl")


@contextmanager
def open_drained(path: Path, spool: Spool, memory: deque[bytes], *, timeout: float,
                 drain: bool = True, check: bool = False, threads: int | None = None
                 ) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to `path` with every spooled row (and the `memory` rows) inserted, unless `drain` is
    False. Retried while another process holds the lock, up to `timeout`, then TraceStoreLocked. The
    schema is checked and migrated on the first open in this process, or always with `check`; `threads`
    caps DuckDB's threads (trace_db.connect)."""
    con = trace_db.connect(path, timeout=timeout, threads=threads)  # refuses a foreign file before DuckDB sees it
    try:
        migrate_once(con, path, force=check)
        if drain:
            drain_into(con, path, spool, memory)
        yield con
    finally:
        con.close()
    maybe_checkpoint(path)


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
    try:
        info = os.stat(path)
        key = (str(path.resolve()), info.st_dev, info.st_ino)
    except OSError:
        key = None
    if key is not None and key in _MIGRATED and not force:
        return
    import duckdb

    try:
        migrate(con, path)
    except duckdb.Error as exc:
        raise trace_db.file_error(path, exc) from None
    if key is not None:
        with _MIGRATED_GUARD:
            _MIGRATED.add(key)
