"""The keeper's lock file: whether a keeper of a trace file runs, taking its place, and starting one.

Light on purpose (no DuckDB, nothing of the trace store's heavier modules): the lookup CLI asks before its own
imports whether a keeper is at work, and every drain asks after it. A writer that spools a row and then sees
no keeper starts one; a keeper that lets go of its lock looks at the spool once more (trace_keeper.serve), so
one of the two always sees the other.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

_started: list[subprocess.Popen] = []  # children not yet collected (polled on each start)


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
    holder = str(Path(__file__).resolve().parents[2])  # the folder holding `retrieval`
    paths = [holder, *(p for p in sys.path if p)]  # -S skips `site`: the child gets this process's sys.path
    try:
        _started.append(subprocess.Popen(
            [sys.executable, "-S", "-m", "retrieval.traces.keeper", str(path)], start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)}))
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
