"""Opening the DuckDB trace file: short connections, DuckDB's lock error, and one-line file errors.

DuckDB lets one process hold a file read-write, so every connection is short and retried with
jittered backoff while another process holds the lock. The lock is recognised by DuckDB's own error
(an IOException saying "Could not set lock on file"), never by a substring such as "lock", which
also matches "block" in a corrupt file's checksum error. Every connection switches off extension
autoloading and autoinstalling, so a SQLite or other foreign file never triggers a download.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # duckdb is imported where a connection is opened
    import duckdb

T = TypeVar("T")

# No checkpoint in our connections (see keeper.py): commits go to the write-ahead log only, and
# a detached process folds it into the file. A SIGKILL during a checkpoint's write of DuckDB's metadata
# block (rewritten in place, holding the old and the new metadata) left files no client could open.
CONNECT_CONFIG = {"autoload_known_extensions": False, "autoinstall_known_extensions": False,
                  "checkpoint_threshold": "1TB", "auto_checkpoint_skip_wal_threshold": 2**62}
LOCK_ERROR = re.compile(r'^IO Error: Could not set lock on file "')
OTHER_CONFIG_ERROR = "Can't open a connection to same database file with a different configuration"
# DuckDB 1.5: a connect racing another thread's close of the file's last connection in this process (the
# instance is still being torn down); transient, so retried like the lock
HANDLE_RACE_ERROR = "Unique file handle conflict"
DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file
FOREIGN_MAGIC = {b"SQLite format 3\x00": "a SQLite database", b"PAR1": "a Parquet file", b"\x89HDF": "an HDF5 file"}
ADVICE = "pass --traces with a DuckDB 1.x trace file or a new path"


class TraceStoreError(RuntimeError):
    """The trace file cannot be opened or written; the message says why and what to do, in one line."""


class TraceStoreLocked(TraceStoreError):
    """Another process held the trace file's lock for longer than the timeout; `holder` names it
    ('process 1234 (duckdb)'), or says it was this process's other connection."""

    def __init__(self, message: str, holder: str = "another process") -> None:
        super().__init__(message)
        self.holder = holder


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`con` without DuckDB's progress bar, which it draws on stdout for a statement over 2 s and which corrupted a
    command's printed report or JSON whenever the machine was slow (a session setting: set on each connection)."""
    con.execute("SET enable_progress_bar = false")
    return con


def one_line(text: object) -> str:
    """DuckDB's message on one line (its errors span several), for CLI and app messages."""
    return re.sub(r"\s+", " ", str(text)).strip()


def is_lock_error(exc: BaseException) -> bool:
    """True only for DuckDB's "Could not set lock on file" IOException: another process holds the file."""
    import duckdb

    return isinstance(exc, duckdb.IOException) and bool(LOCK_ERROR.match(str(exc)))


def is_busy_here(exc: BaseException) -> bool:
    """This process has the file open with another configuration (e.g. a test's plain duckdb.connect), or
    another of its threads is closing the file's last connection right now."""
    import duckdb

    return ((isinstance(exc, duckdb.ConnectionException) and OTHER_CONFIG_ERROR in str(exc))
            or (isinstance(exc, duckdb.BinderException) and HANDLE_RACE_ERROR in str(exc)))


def is_busy_error(exc: BaseException) -> bool:
    """True for the errors a connection waits out: another process's lock, or this process holding the file
    with another configuration (or closing it right now). Read-only openers (the app's SQL box) retry on these."""
    return is_lock_error(exc) or is_busy_here(exc)


def check_file(path: Path) -> None:
    """Refuse a file that is not a DuckDB database before DuckDB sees it (it would sniff the format)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TraceStoreError(f"cannot read trace file {path}: {one_line(exc)}") from None
    if not head:
        return  # an empty file: DuckDB initialises it
    if len(head) < 12 or head[8:12] != DUCKDB_MAGIC:
        kind = next((f"{name}, not" for magic, name in FOREIGN_MAGIC.items() if head.startswith(magic)), "not")
        raise TraceStoreError(f"cannot open trace file {path}: it is {kind} a DuckDB database; {ADVICE}")


def connect(path: Path, *, timeout: float, threads: int | None = None, read_only: bool = False,
            poll: float | None = None) -> duckdb.DuckDBPyConnection:
    """A read-write connection (or a `read_only` one), retried with jittered backoff while the lock is held, up
    to `timeout` s; with `poll`, every `poll` s (jittered) instead, to catch the gaps between readers that keep
    the file open one after another. `threads=1` keeps DuckDB's work on the calling thread (a background drain
    beside lookups). A read-write connection of this project is opened under `write_guard` (one per file and
    process at a time)."""
    import duckdb

    check_file(path)
    config: dict[str, object] = dict(CONNECT_CONFIG)
    if threads is not None:
        config["threads"] = threads

    def open_it() -> duckdb.DuckDBPyConnection:
        if read_only:
            return quiet(duckdb.connect(str(path), read_only=True, config=config))
        con = quiet(duckdb.connect(str(path), config=config))
        con.execute("PRAGMA disable_checkpoint_on_shutdown")
        return con

    return retry_while_locked(open_it, path, timeout=timeout, poll=poll)


def retry_while_locked(open_it: Callable[[], T], path: Path, *, timeout: float, poll: float | None = None) -> T:
    """`open_it()`, retried with jittered backoff while another process holds `path`'s lock (or this process is
    busy with it), up to `timeout` s, then TraceStoreLocked naming the holder; with `poll`, every `poll` s
    (jittered) instead. Any other DuckDB failure is a TraceStoreError naming the file."""
    import duckdb

    deadline, delay = time.monotonic() + timeout, poll or 0.002
    while True:
        try:
            return open_it()
        except duckdb.Error as exc:
            if not (is_lock_error(exc) or is_busy_here(exc)):
                raise file_error(path, exc) from None
            if time.monotonic() >= deadline:
                holder = lock_holder(str(exc)) if is_lock_error(exc) else "this process (another configuration)"
                raise TraceStoreLocked(f"trace file {path} is locked by {holder} for over {timeout:.1f}s",
                                       holder) from None
        time.sleep(min(delay * (0.5 + random.random()), max(deadline - time.monotonic(), 0.0)))
        delay = delay if poll else min(delay * 2, 0.1)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The block's statements in one transaction of `con`: committed at its end, rolled back if it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


_GUARDS: dict[str, threading.RLock] = {}
_GUARDS_LOCK = threading.Lock()


@contextmanager
def write_guard(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold this process's lock of trace file `path` while a read-write connection of this project is open:
    two threads' connections would share one DuckDB instance, and one's DDL (the live view, view.py) would
    break the other's transaction. With `timeout`, TraceStoreLocked when another thread keeps it longer."""
    key = os.path.abspath(path)
    with _GUARDS_LOCK:
        guard = _GUARDS.setdefault(key, threading.RLock())
    if not guard.acquire(timeout=-1 if timeout is None else timeout):
        raise TraceStoreLocked(f"trace file {path} is locked by another thread of this process for over "
                               f"{timeout:.1f}s", "this process (another thread)")
    try:
        yield
    finally:
        guard.release()


def _reset_guards() -> None:
    """After a fork, the child starts with no guard held (a parent's thread may have held one)."""
    global _GUARDS_LOCK
    _GUARDS.clear()
    _GUARDS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_reset_guards)


def file_holder(path: Path) -> str | None:
    """Which other process holds a DuckDB lock on `path` now ('process 1234 (duckdb)'), or None; asked of the
    kernel (F_GETLK), so no lock is taken. DuckDB locks the whole file with fcntl: a read-write connection
    holds a write lock, a read-only one a read lock."""
    found = _lock_in_the_way(path, fcntl.F_WRLCK)
    return None if found is None else process_name(found)


def write_held(path: Path) -> bool:
    """Whether another process holds `path` read-write now (a read lock's query meets only write locks); asked of
    the kernel, no lock taken."""
    return _lock_in_the_way(path, fcntl.F_RDLCK) is not None


def _lock_in_the_way(path: Path, kind: int) -> int | None:
    """The pid of a process whose lock on `path` would block a lock of `kind` (F_GETLK), else None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        query = struct.pack("hhqqi", kind, os.SEEK_SET, 0, 0, 0)
        found, _, _, _, pid = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, query))
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if found == fcntl.F_UNLCK else pid


def process_name(pid: int) -> str:
    """'process 1234 (its command line)', read from /proc where it can be (the one reader of it here)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    return f"process {pid} ({command[:120] or 'unknown command'})"


def file_error(path: Path, exc: BaseException) -> TraceStoreError:
    """A DuckDB failure about the file itself (corrupt, truncated, foreign) as a one-line TraceStoreError."""
    return TraceStoreError(f"cannot open trace file {path}: {one_line(exc)}; {ADVICE}")


def file_level_errors() -> tuple[type[BaseException], ...]:
    """DuckDB exception types that describe the file, not the statement (translated to TraceStoreError)."""
    import duckdb

    return (duckdb.IOException, duckdb.InternalException, duckdb.SerializationException, duckdb.FatalException,
            duckdb.PermissionException)


def lock_holder(message: str) -> str:
    """'process 1234 (python app.py)' from DuckDB's lock error, reading the command line from /proc."""
    match = re.search(r"held in (.+?) \(PID (\d+)\)", message)
    return process_name(int(match.group(2))) if match else "another process"
