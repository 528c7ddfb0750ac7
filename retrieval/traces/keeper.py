"""The keeper: a detached process per trace file that drains what nobody else drains and, once writers are
idle, folds the live folder into the file and checkpoints it, so the file alone holds every row.

It is started (`ensure`) by a drain of any process and by the lookup command's helper (which becomes it), in a
new session (detached.py): a kill of the writer that started it does not reach it, so no kill lands inside its
CHECKPOINT (a SIGKILL inside one left files no client could open; see docs/traces.md). One runs per file at a
time: it holds the keeper's lock file (`<file>.keeper.lock`). A writer that spools a row and then sees no
keeper starts one; a keeper that lets go of its lock looks at the spool once more (`serve`), so one of the two
always sees the other. Its loop, every POLL seconds:
- spooled rows are drained into the live folder (paced by the drain turn, like every drainer), and parts a
  drain could not show yet (the file was held) are shown (the live view) as soon as the file is free;
- once nothing has changed for IDLE seconds, it folds the live parts into `tool_invocation` and checkpoints
  the file (its write-ahead log folded in): then it exits. A file held by another process (an analyst's
  shell) is tried again until it lets go, up to MAX_WAIT.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from retrieval.traces import db as trace_db
from retrieval.traces import view as trace_view
from retrieval.traces.detached import launch
from retrieval.traces.drain import Backoff, drain_once
from retrieval.traces.fold import needs_fold, pack
from retrieval.traces.spool import Spool, spool_path

__all__ = ["FOLD_CHUNK", "IDLE", "MAX_LIVE_PARTS", "ensure", "lock_path", "run", "running", "serve", "started_here",
           "take_lock"]

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
            elif free and trace_view.part_files(path) and not trace_view.is_marked_live(path):
                with contextlib.suppress(trace_db.TraceStoreError):  # between readers, who may follow closely
                    _tried(lock, trace_view.show_live(path, KEEPER_WAIT))
            if free and len(trace_view.part_files(path)) > MAX_LIVE_PARTS:
                _tried(lock, pack(path, timeout=KEEPER_WAIT, turn_wait=1.0, oldest=FOLD_CHUNK) is not None)
            if now - changed >= idle and not spool.has_rows():
                if not needs_fold(path):
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


def _activity(path: Path, spool: Spool) -> tuple[object, ...]:
    """What changes when anyone records or drains: the spool's size and inode, the batch files, the parts."""
    try:
        info = os.stat(spool.path)
        live_spool = (info.st_ino, info.st_size)
    except FileNotFoundError:
        live_spool = None
    return live_spool, tuple(trace_view.part_files(path)), tuple(spool.pending_files())


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


_started: list[subprocess.Popen] = []  # keepers this process started, not yet collected (polled on each start)


def lock_path(path: Path) -> Path:
    """The keeper's lock file beside trace file `path` (left in place)."""
    return path.with_name(path.name + ".keeper.lock")


def running(path: Path) -> bool:
    """Whether a keeper of `path` runs now (it holds the lock file)."""
    try:
        fd = os.open(lock_path(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def ensure(path: Path) -> bool:
    """Start a keeper for `path` unless one runs; True if one was started."""
    if running(path):
        return False
    for child in list(_started):
        if child.poll() is not None:
            _started.remove(child)
    try:
        _started.append(launch("retrieval.traces.keeper", str(path)))
    except OSError:
        return False  # the next drain tries again
    return True


def started_here(path: Path) -> list[subprocess.Popen]:
    """The keepers of `path` this process started that may still run (a caller that must see the file settle
    waits for them: a keeper only takes its lock some time after it is started)."""
    return [child for child in _started if child.args[-1] == str(path) and child.poll() is None]


def take_lock(path: Path) -> int:
    """The keeper's lock of `path` as an open descriptor, or -1 when another keeper holds it."""
    try:
        fd = os.open(lock_path(path), os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError:
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return -1
    return fd


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    fd = take_lock(path)
    return 0 if fd < 0 else serve(path, fd)  # (another keeper runs)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
