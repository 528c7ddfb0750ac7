"""Step 4 of a row's way, and the only step that puts rows into `tool_invocation`: the fold.

The fold inserts the live parts' rows into the table, records the parts' names in the ledger
(`trace_batch`) and puts the table back under its name, in one transaction; then it removes the parts while
it still holds DuckDB's lock, so no reader sees a part both folded and in the folder. **Exactly once** is
enforced here and only here: a part whose name the ledger holds is not inserted again (a fold killed after
its commit leaves the part behind; the next fold only removes it), and an id twice within one fold is
stored once. A part's name is its spool batch's (a batch drained twice gives the same part), a writer's
memory rows' (`memory-…`) or a loaded run folder's (`run-part-…`, parts.load_parts). Ledger entries are
kept LEDGER_DAYS days.

Who folds: the keeper once writers are idle (`pack`, which also checkpoints: no other process of this
project does, see keeper.py), and every read-write connection of this project (`open_folded`: eval's
tables, judgements, replays, prune), which first drains the spool into parts like any drain, so a row has
one way into the table whoever wrote it. `python -m retrieval.traces.fold FILE` packs in a process of its
own (compact.py runs it in a new session, so no kill of its caller lands inside the CHECKPOINT).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import db as trace_db
from retrieval.traces import view as trace_view
from retrieval.traces.db import TraceStoreError, TraceStoreLocked
from retrieval.traces.drain import DrainTurn, drain_to_parts
from retrieval.traces.ingest import sql_literal
from retrieval.traces.schema import (
    LEDGER,
    LEDGER_DAYS,
    TABLE,
    is_migrated,
    migrate_once,
    needs_migration,
    remember_migrated,
)
from retrieval.traces.spool import Spool, spool_path

if TYPE_CHECKING:
    import duckdb

PACK_TIMEOUT = 60.0  # seconds `python -m retrieval.traces.fold` waits for the file


@dataclass(frozen=True)
class Packed:
    """What a pack folded into the file: rows and the live parts that held them."""

    rows: int
    parts: int


def wal_path(path: Path) -> Path:
    """DuckDB's write-ahead log beside trace file `path`."""
    return path.with_name(path.name + ".wal")


def needs_fold(path: Path) -> bool:
    """Whether the file's rows are not all in the file alone: live parts, the live view, or a write-ahead log."""
    try:
        log = os.stat(wal_path(path)).st_size
    except FileNotFoundError:
        log = 0
    return bool(log or trace_view.part_files(path) or trace_view.is_marked_live(path))


def fold(con: duckdb.DuckDBPyConnection, path: Path, *, oldest: int | None = None) -> int:
    """Fold the live parts of `path` into `tool_invocation`, a table again; returns the rows inserted. With
    `oldest`, only that many of the oldest parts, and the view stays (writers are busy: a short hold of the
    lock now and then keeps the folder from growing without end). The caller holds the drain turn and `con`
    (read-write). Parts are removed after the commit, before `con` closes: no reader can be between the two."""
    parts = trace_view.part_files(path)
    live = trace_view.is_live(con)
    if not parts and not live:
        return 0
    whole = oldest is None or len(parts) <= oldest
    if whole:
        trace_view.unmark_live(path)  # before the commit: a marker without the view would hide the next parts
    else:
        parts = sorted(parts, key=_mtime)[:oldest]  # the rest stay in the live view
    target = trace_view.PACKED if live and not whole else TABLE
    names = [trace_view.part_name(part) for part in parts]
    done = trace_view.ledgered(con, names)
    todo = [part for part, name in zip(parts, names, strict=True) if name not in done]
    inserted = 0
    with trace_db.transaction(con):
        if live and whole:
            con.execute(f"DROP VIEW {TABLE}")
            con.execute(f"ALTER TABLE {trace_view.PACKED} RENAME TO {TABLE}")
        if todo:
            sources = "[" + ", ".join(sql_literal(str(part)) for part in todo) + "]"
            inserted = con.execute(f"INSERT INTO {target} BY NAME SELECT {trace_view.typed('p')} FROM "
                                   f"{trace_view.read_parts(sources)} AS p "
                                   f"QUALIFY row_number() OVER (PARTITION BY p.id) = 1").fetchone()[0]
            values = ", ".join(f"({sql_literal(trace_view.part_name(part))}, now()::TIMESTAMP)" for part in todo)
            con.execute(f"INSERT INTO {LEDGER} VALUES {values}")
            con.execute(f"DELETE FROM {LEDGER} WHERE drained_at < now()::TIMESTAMP - INTERVAL {LEDGER_DAYS} DAY")
    for part in parts:  # and the batch a killed drainer left behind after writing its part, if any
        _remove_batch(path, trace_view.part_name(part))
        part.unlink(missing_ok=True)
    if whole:
        with contextlib.suppress(OSError):  # the emptied folder (not if a temporary part is in it)
            trace_view.live_dir(path).rmdir()
    return int(inserted)


def pack(path: str | Path, *, timeout: float, turn_wait: float = 10.0, oldest: int | None = None) -> Packed | None:
    """Fold the live parts (only the `oldest` so many, if given) into `tool_invocation` and checkpoint the file
    now; None when the file (within `timeout`) or the drain turn (within `turn_wait`) stayed taken."""
    path = Path(path)
    with trace_db.write_guard(path):
        try:
            con = trace_db.connect(path, timeout=timeout, poll=trace_view.SHOW_POLL)
        except TraceStoreLocked:
            return None
        try:
            turn = DrainTurn(path)
            if not turn.take(turn_wait):
                return None
            try:
                parts = min(len(trace_view.part_files(path)), oldest or 2**31)
                rows = fold(con, path, oldest=oldest)
                migrate_once(con, path)
            finally:
                turn.release()
            con.execute("CHECKPOINT")
        except trace_db.file_level_errors() as exc:
            raise trace_db.file_error(path, exc) from None
        finally:
            con.close()
    return Packed(rows, parts)


@contextmanager
def open_folded(path: Path, spool: Spool, memory: deque[bytes], *, timeout: float, drain: bool = True,
                check: bool = False, threads: int | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection to `path` in which `tool_invocation` is a table holding every row: the spooled
    rows (and the `memory` rows) drained into parts as any drain does, unless `drain` is False, then every part
    folded in. Retried while another process holds the lock, up to `timeout`, then TraceStoreLocked. The schema
    is checked and migrated on the first open in this process, or always with `check`; `threads` caps DuckDB's
    threads. Nothing is checkpointed: the keeper does that once writers are idle."""
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
                if drain:
                    drain_to_parts(path, spool, memory)
                if not trace_view.is_live(con):  # a live file was migrated when it went live
                    migrate_once(con, path, force=check)
                fold(con, path)
                migrate_once(con, path, force=check)
            except duckdb.Error as exc:
                raise trace_db.file_error(path, exc) from None
            finally:
                turn.release(drained=drain)
            yield con
        finally:
            con.close()


def open_checked(path: Path, *, timeout: float, force: bool = False) -> None:
    """Make sure `path` is a trace file of this tool's schema: an existing, up-to-date file is only read (a
    read-only connection, which other readers share); a new or older one is made or migrated read-write.
    Retried while another process holds the lock, up to `timeout`, then TraceStoreLocked."""
    import duckdb

    if is_migrated(path) and not force:
        return
    trace_db.check_file(path)  # refuses a foreign file before DuckDB sees it
    if path.exists() and os.path.getsize(path):
        con = trace_db.connect(path, timeout=timeout, read_only=True)
        try:
            current = not needs_migration(con, path)
        except duckdb.Error as exc:
            raise trace_db.file_error(path, exc) from None
        finally:
            con.close()
        if current:
            remember_migrated(path)
            return
    with open_folded(path, Spool(spool_path(path)), deque(), timeout=timeout, drain=False, check=True):
        pass


def _mtime(part: Path) -> float:
    try:
        return part.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _remove_batch(path: Path, name: str) -> None:
    """The batch file `name` beside `path`, if a drainer killed after writing its part left it (its rows are
    in the part just folded)."""
    if name.startswith(path.name + ".pending.jsonl.") and name.endswith(".draining"):
        path.with_name(name).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """`python -m retrieval.traces.fold FILE`: fold and checkpoint in a process of its own; 1 if the file stayed
    locked."""
    try:
        return 0 if pack(Path(argv[0]), timeout=PACK_TIMEOUT) is not None else 1
    except TraceStoreError:
        return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
