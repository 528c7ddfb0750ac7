"""Checkpoints of the trace file, done by a detached process that no kill of a writer or drainer reaches.

DuckDB rewrites its metadata block in place at a checkpoint, and that block holds the old metadata as
well as the new: a process SIGKILLed in the middle of writing it (a kill can cut a large `write()` short)
left a file no client could open (`Corrupt database file: computed checksum ... in block at location
12288`, 1 file in 25 kills of the soak's first long run). So no connection of this project checkpoints
(trace_db.CONNECT_CONFIG: commits go to the write-ahead log, appended, which DuckDB replays on open),
and once the log passes CHECKPOINT_WAL_BYTES, the process that drained starts this module in a new
session: it waits for the file, runs CHECKPOINT and exits. One runs at a time (a lock file).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

# the log a connection replays when it opens (its cost grows with its size);
# $LOOKUP_KNOWLEDGE_CHECKPOINT_WAL overrides it
CHECKPOINT_WAL_BYTES = int(os.environ.get("LOOKUP_KNOWLEDGE_CHECKPOINT_WAL") or 4 << 20)
LOCK_TIMEOUT = 60.0  # seconds the checkpointer waits for the file
_started: list[subprocess.Popen] = []  # children not yet collected (polled on each start)


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".checkpoint.lock")


def maybe_checkpoint(path: Path, *, threshold: int | None = None) -> bool:
    """Start the checkpointer when `path`'s log has grown past `threshold` and none runs; True if started."""
    try:
        if os.stat(wal_path(path)).st_size < (CHECKPOINT_WAL_BYTES if threshold is None else threshold):
            return False
    except FileNotFoundError:
        return False
    if _running(path):
        return False
    for child in list(_started):
        if child.poll() is not None:
            _started.remove(child)
    paths = [str(Path(__file__).resolve().parents[2]), *(p for p in sys.path if p)]  # the folder holding `retrieval`
    try:
        _started.append(subprocess.Popen(
            [sys.executable, "-S", "-m", "retrieval.traces.checkpoint", str(path)], start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)}))
    except OSError:
        return False  # the log waits for the next drain to try again
    return True


def _running(path: Path) -> bool:
    """Whether a checkpointer holds `path`'s lock file now."""
    try:
        fd = os.open(lock_path(path), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def checkpoint(path: Path, timeout: float = LOCK_TIMEOUT) -> bool:
    """Fold `path`'s log into the file (what the detached process runs); False if another checkpointer runs
    or the file stayed locked."""
    from retrieval.traces import db as trace_db

    fd = os.open(lock_path(path), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            con = trace_db.connect(path, timeout=timeout)
        except trace_db.TraceStoreError:
            return False
        try:
            con.execute("CHECKPOINT")
        finally:
            con.close()
        return True
    finally:
        os.close(fd)


if __name__ == "__main__":
    raise SystemExit(0 if checkpoint(Path(sys.argv[1])) else 1)
