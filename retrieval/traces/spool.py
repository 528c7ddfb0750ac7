"""The spool: the durable log of recorded rows beside the trace file, shared by every process.

- Writers append one line per row with a single `write()` under an exclusive `flock`; a row is
  acknowledged when that write returns. It is then in the OS page cache, which survives a SIGKILL of
  the process (not a power cut: `fsync=True` adds an fsync per row for that).
- A drainer (retrieval/traces/drain.py) *rotates* the live spool (renames it to
  `<spool>.<pid>-<token>.draining`; the next append makes a new one), then *claims* batch files with a
  non-blocking `flock`, writes each as a Parquet part named after it, and unlinks them. A writer checks,
  under its lock, that its handle is still the live spool, so no row lands in a renamed file. A drainer
  killed mid-batch releases its lock with its life; the next drainer claims the orphaned batch and writes
  the same part again (same name: the part replaces itself, and the fold's ledger stores a name once).
- Lines that are not valid rows go to `<spool>.rejected.jsonl`, one JSON object with the reason each.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT
READ_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT  # the live spool: appends, and reads its last byte
LOCK_SPIN = 0.0002  # seconds between non-blocking lock attempts; writers hold the lock for microseconds


def spool_path(path: Path) -> Path:
    """The spool beside trace file `path`."""
    return path.with_name(path.name + ".pending.jsonl")


class TraceSpoolRejectedWarning(UserWarning):
    """Spool lines that are not valid rows were moved to the rejected file."""


@dataclass
class Batch:
    """A claimed batch file and the locked handle that keeps other drainers off it."""

    path: Path
    fd: int

    @property
    def source(self) -> str:
        """A name DuckDB can open for this very file: the handle's /proc entry (immune to renames and free
        of glob characters, which read_json would expand), or the path where /proc is missing."""
        proc = f"/proc/self/fd/{self.fd}"
        return proc if os.path.exists(proc) else str(self.path)

    def lines(self) -> list[bytes]:
        """The batch's non-blank lines, read through the locked handle."""
        with os.fdopen(os.dup(self.fd), "rb") as handle:
            handle.seek(0)
            return [line for line in handle.read().split(b"\n") if line.strip()]

    def done(self) -> None:
        """The batch is stored: remove the file, then let go of it."""
        try:
            self.path.unlink(missing_ok=True)
        finally:
            self.release()

    def release(self) -> None:
        """Let go of the batch without removing it (it is drained later)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Spool:
    """Append rows durably; rotate and claim them in batches for the drainer."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._fd, self._pid = -1, os.getpid()
        self._lock = threading.Lock()

    @property
    def rejected_path(self) -> Path:
        return self.path.with_name(self.path.name + ".rejected.jsonl")

    def append(self, data: bytes) -> None:
        """Write `data` (whole lines) to the live spool in one locked write; OSError if that fails."""
        with self._lock:
            while True:
                fd = self._writer()
                if _lock_live(fd, self.path):
                    break
                self._close_writer()
            try:
                size = os.fstat(fd).st_size  # a writer SIGKILLed inside a long write() can leave half a line:
                if size and os.pread(fd, 1, size - 1) != b"\n":  # start on a new line, so only that half
                    data = b"\n" + data  # is rejected, never the row written after it
                _write_all(fd, data)
                if self.fsync:
                    os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def rotate(self) -> None:
        """Move the live spool's rows into a batch file, if it has any; writers carry on in a new one."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            if not _lock_live(fd, self.path):
                return  # another drainer rotated it a moment ago
            try:
                if os.fstat(fd).st_size:  # writers make a new live spool when they next append
                    os.rename(self.path, self.path.with_name(f"{self.path.name}.{os.getpid()}-"
                                                            f"{uuid.uuid4().hex[:12]}.draining"))
                else:  # an empty spool is removed, so a drained trace file leaves no file beside it
                    self.path.unlink()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def claim(self) -> list[Batch]:
        """Every batch file no other drainer holds, oldest first, each locked until done or released."""
        batches = []
        pattern = glob.escape(str(self.path)) + ".*.draining"
        for name in sorted(glob.glob(pattern), key=_mtime):
            try:
                fd = os.open(name, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if os.fstat(fd).st_nlink == 0:  # finished by another drainer between glob and lock
                os.close(fd)
                continue
            batches.append(Batch(Path(name), fd))
        return batches

    def reject(self, items: Iterable[tuple[bytes, str]]) -> int:
        """Append bad lines, with their reasons, to the rejected file; returns how many."""
        now = datetime.now(timezone.utc).isoformat()
        records = [json.dumps({"rejected_at": now, "reason": reason,
                               "line": line.decode("utf-8", "backslashreplace")}) + "\n" for line, reason in items]
        if records:
            fd = os.open(self.rejected_path, APPEND, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                _write_all(fd, "".join(records).encode("utf-8"))
            finally:
                os.close(fd)
        return len(records)

    def has_rows(self) -> bool:
        """Whether any row waits: a non-empty live spool or a batch file (a cheap stat and glob)."""
        try:
            if os.stat(self.path).st_size:
                return True
        except FileNotFoundError:
            pass
        return bool(glob.glob(glob.escape(str(self.path)) + ".*.draining"))

    def generation(self) -> int:
        """The live spool's inode number: a new one after every rotation (by any process)."""
        try:
            return os.stat(self.path).st_ino
        except FileNotFoundError:
            return -1

    def pending_files(self) -> list[Path]:
        """The live spool and every batch file not yet drained."""
        batches = glob.glob(glob.escape(str(self.path)) + ".*.draining")
        return [p for p in (self.path, *map(Path, batches)) if p.exists()]

    def close(self) -> None:
        with self._lock:
            self._close_writer()

    def _writer(self) -> int:
        if self._fd >= 0 and self._pid != os.getpid():  # a forked child must not share the parent's lock
            self._fd = -1
        if self._fd < 0:
            self._fd, self._pid = os.open(self.path, READ_APPEND, 0o644), os.getpid()
        return self._fd

    def _close_writer(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = -1


def _lock_live(fd: int, path: Path) -> bool:
    """Lock `fd` if it is still the live spool at `path`; False (unlocked) once it was rotated away.

    Non-blocking attempts only: a rotated file may be held by a drainer for a whole batch insert.
    """
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not _is_live(fd, path):
                return False
            time.sleep(LOCK_SPIN)
            continue
        if _is_live(fd, path):
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False


def _is_live(fd: int, path: Path) -> bool:
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_ino, mine.st_dev) == (current.st_ino, current.st_dev)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _mtime(name: str) -> float:
    try:
        return os.stat(name).st_mtime
    except FileNotFoundError:
        return 0.0
