"""The keeper: a detached process per trace file that drains what nobody else drains and, once writers are
idle, folds the live folder into the file and checkpoints it, so the file alone holds every row.

It is started (`ensure`) by a drain of any process and by the lookup CLI's helper (which becomes it), in a new
session: a kill of the writer that started it does not reach it, so no kill lands inside its CHECKPOINT (a
SIGKILL inside one left files no client could open; see docs/traces.md). One runs per file at a time (a lock
file). Its loop, every POLL seconds:
- spooled rows are drained into the live folder (paced by the drain turn, like every drainer), and parts a
  drain could not show yet (the file was held) are shown (the live view) as soon as the file is free;
- once nothing has changed for IDLE seconds, it folds the live parts into `tool_invocation` and checkpoints
  the file (its write-ahead log folded in): then it exits. A file held by another process (an analyst's
  shell) is tried again until it lets go, up to MAX_WAIT.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from retrieval.traces import db as trace_db
from retrieval.traces import live as trace_live
from retrieval.traces import view as trace_view
from retrieval.traces.file import migrate_once, spool_path
from retrieval.traces.keeperlock import ensure, lock_path, running, take_lock
from retrieval.traces.livedrain import SHOW_POLL, drain_once, show_live
from retrieval.traces.spool import Spool
from retrieval.traces.turn import Backoff, DrainTurn

__all__ = ["FOLD_CHUNK", "IDLE", "MAX_LIVE_PARTS", "Packed", "detach_stdio", "ensure", "lock_path", "pack", "run",
           "running", "serve", "take_lock"]

IDLE = float(os.environ.get("LOOKUP_KNOWLEDGE_PACK_IDLE") or 5.0)  # seconds without new rows before the fold
POLL = 0.1  # seconds between the keeper's looks at the spool and the live folder
MAX_WAIT = 3600.0  # seconds the keeper keeps trying a held file; the next drain starts another one
SHOW_WAIT = 0.25  # seconds a drain waits for the file to make the live view (the file is free far more often)
KEEPER_WAIT = 1.0  # seconds the keeper (holding no turn) waits for a gap between readers to take the write lock
LOCK_BACKOFF = 5.0  # seconds, at most, between the keeper's waits while readers keep the file (an analyst's shell)
MAX_LIVE_PARTS = 240  # parts (4 minutes of drains at full speed) past which the oldest are folded while writers work
FOLD_CHUNK = 60  # parts folded at a time then: the write lock held for about a minute's rows, not all of them


def run(path: Path, *, idle: float | None = None) -> int:
    """The keeper's loop for `path` (the caller holds the keeper's lock); returns when the file is folded and
    writers are idle, the file is gone, or it stayed held for MAX_WAIT."""
    idle = IDLE if idle is None else idle
    spool = Spool(spool_path(path))
    seen, changed, held_since = None, time.monotonic(), None
    lock = Backoff()  # after a wait for the write lock in vain (readers all along), the next is a while off
    try:
        while path.exists():
            now = time.monotonic()
            state = _activity(path, spool)
            if state != seen:
                seen, changed = state, now
            free = lock.due() and not trace_db.write_held(path)  # the kernel asked: no lock taken, no DuckDB
            if spool.has_rows():
                _drain(path, spool, show=free)
            elif free and trace_live.part_files(path) and not trace_live.is_marked_live(path):
                with contextlib.suppress(trace_db.TraceStoreError):  # between readers, who may follow closely
                    _tried(lock, show_live(path, KEEPER_WAIT))
            if free and len(trace_live.part_files(path)) > MAX_LIVE_PARTS:
                _tried(lock, pack(path, timeout=KEEPER_WAIT, turn_wait=1.0, oldest=FOLD_CHUNK) is not None)
            if now - changed >= idle and not spool.has_rows():
                if not _needs_fold(path):
                    return 0
                if free and _tried(lock, pack(path, timeout=KEEPER_WAIT, turn_wait=1.0) is not None):
                    held_since = None
                    continue
                held_since = held_since or now
                if now - held_since >= MAX_WAIT:
                    return 1
            time.sleep(POLL)
    finally:
        spool.close()
    return 0


@dataclass(frozen=True)
class Packed:
    """What a pack folded into the file: rows and the live parts that held them."""

    rows: int
    parts: int


def pack(path: str | Path, *, timeout: float, turn_wait: float = 10.0, oldest: int | None = None) -> Packed | None:
    """Fold the live parts (only the `oldest` so many, if given) into `tool_invocation` and checkpoint the file
    now; None when the file (within `timeout`) or the drain turn (within `turn_wait`) stayed taken."""
    path = Path(path)
    with trace_db.write_guard(path):
        try:
            con = trace_db.connect(path, timeout=timeout, poll=SHOW_POLL)
        except trace_db.TraceStoreLocked:
            return None
        try:
            turn = DrainTurn(path)
            if not turn.take(turn_wait):
                return None
            try:
                parts = min(len(trace_live.part_files(path)), oldest or 2**31)
                rows = trace_view.fold(con, path, oldest=oldest)
                migrate_once(con, path)
            finally:
                turn.release()
            con.execute("CHECKPOINT")
        except trace_db.file_level_errors() as exc:
            raise trace_db.file_error(path, exc) from None
        finally:
            con.close()
    return Packed(rows, parts)


def _drain(path: Path, spool: Spool, *, show: bool) -> None:
    """One paced drain of the spool into the live folder, then (with `show`) the live view; quiet when another
    drainer has the turn (it takes these rows too) or the file is held (tried again next time)."""
    with contextlib.suppress(trace_db.TraceStoreError, OSError):
        drain_once(path, spool, deque(), show_wait=SHOW_WAIT if show else 0.0, paced=True)


def _tried(lock: Backoff, done: bool) -> bool:
    """Note how a wait for the write lock went (in vain: back off, up to LOCK_BACKOFF); returns `done`."""
    if done:
        lock.reset()
    else:
        lock.fail(LOCK_BACKOFF)
    return done


def _needs_fold(path: Path) -> bool:
    """Whether the file's rows are not all in the file alone: live parts, or a write-ahead log."""
    wal = path.with_name(path.name + ".wal")
    return (bool(trace_live.part_files(path)) or trace_live.is_marked_live(path)
            or (wal.exists() and wal.stat().st_size > 0))


def _activity(path: Path, spool: Spool) -> tuple[object, ...]:
    """What changes when anyone records or drains: the spool's size and inode, the batch files, the parts."""
    try:
        info = os.stat(spool.path)
        live_spool = (info.st_ino, info.st_size)
    except FileNotFoundError:
        live_spool = None
    return live_spool, tuple(trace_live.part_files(path)), tuple(spool.pending_files())


def detach_stdio() -> None:
    """Point stdin, stdout and stderr at /dev/null (a keeper must not hold a caller's pipes open)."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)


def serve(path: Path, fd: int) -> int:
    """Keep `path` while holding its keeper lock `fd`, and hand over on the way out: rows spooled after the last
    look (by a writer that saw this keeper at work, and so started none) keep it, or the next keeper, going."""
    spool = Spool(spool_path(path))
    try:
        while True:
            try:
                code = run(path)
            except (trace_db.TraceStoreError, OSError):  # a broken or vanished file: nothing to keep
                code = 1
            os.close(fd)
            fd = -1
            if not spool.has_rows() or not path.exists():
                return code
            fd = take_lock(path)
            if fd < 0:
                return code  # another keeper took over
    finally:
        spool.close()
        if fd >= 0:
            os.close(fd)


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    fd = take_lock(path)
    return 0 if fd < 0 else serve(path, fd)  # (another keeper runs)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
