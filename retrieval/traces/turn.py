"""The drain turn: one drainer of a trace file at a time, across processes and threads, and drains paced.

Every drain of the spool into the live folder (trace_live), every fold of the live folder into the file
(trace_view) and the keeper's pack take the turn: an exclusive `flock` on `<file>.drain.lock`. A drainer
that finds the turn taken just leaves its rows spooled (the holder's drain takes everyone's rows, or the
next turn does): writers contending is normal operation, never a warning. The lock file's modification time
is the end of the last drain, and a paced drain (the background drainers') waits until PACE seconds have
passed since then, so 4 busy writers make about one live part a second, not one each per row batch.

`flock` locks belong to an open file, so two threads of one process exclude each other as two processes do.
"""

from __future__ import annotations

import fcntl
import os
import random
import time
from pathlib import Path

PACE = 1.0  # seconds between paced drains of one trace file, by any process
POLL = 0.005  # seconds between tries of a turn that is waited for


def turn_path(path: Path) -> Path:
    """The lock file of trace file `path`'s drain turn (left in place)."""
    return path.with_name(path.name + ".drain.lock")


class DrainTurn:
    """The drain turn of one trace file, held between `take`/`try_take` and `release`."""

    def __init__(self, path: Path) -> None:
        self.path = turn_path(path)
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def try_take(self, *, paced: bool = False) -> float:
        """Take the turn if it is free (and, when `paced`, PACE seconds have passed since the last drain): 0.0;
        else the seconds to wait before trying again."""
        fd = self._open()
        if fd < 0:
            return 0.25
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return 0.05
        if paced:
            wait = os.fstat(fd).st_mtime + PACE - time.time()
            if 0 < wait <= PACE:  # (a clock set back leaves no wait longer than PACE)
                os.close(fd)
                return wait
        self._fd = fd
        return 0.0

    def take(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the turn (unpaced: a flush or a fold); False if it stayed taken."""
        deadline = time.monotonic() + timeout
        while True:
            wait = self.try_take()
            if not wait:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(POLL, max(deadline - time.monotonic(), 0.0)))

    def release(self, *, drained: bool = False) -> None:
        """Give the turn back; `drained` stamps the time of this drain for pacing."""
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            if drained:
                os.utime(fd)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing the file releases the flock

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        except OSError:
            return -1
        else:
            os.utime(fd, (0, 0))  # no drain yet: a paced drain need not wait
            return fd
        try:
            return os.open(self.path, os.O_RDWR)
        except OSError:
            return -1


class Backoff:
    """Jittered exponential backoff for background drains while the file is unavailable (0.25 s to 1 s: a
    reader holding the file for a moment must not leave the table more than ~2 s behind)."""

    def __init__(self) -> None:
        self.delay, self.until = 0.0, 0.0

    def due(self) -> bool:
        return time.monotonic() >= self.until

    def fail(self, most: float = 1.0) -> None:
        """Wait longer before the next try: twice as long as the last (from 0.25 s), up to `most` seconds."""
        self.delay = min(max(self.delay * 2, 0.25), most)
        self.until = time.monotonic() + self.delay * (0.5 + random.random())

    def wait(self, seconds: float) -> None:
        """Look again in `seconds` (another drainer has the turn, or drained a moment ago): not a failure."""
        self.until = time.monotonic() + seconds

    def reset(self) -> None:
        self.delay, self.until = 0.0, 0.0
