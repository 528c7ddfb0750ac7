"""Step 2 of a row's way: one drain moves the spool's rows into Parquet parts in the live folder.

A drainer takes the file's *drain turn* (an exclusive `flock` on `<file>.drain.lock`: one drainer of a file
at a time, across processes and threads), rotates the spool and claims its batch files (spool.py), writes
each batch as one part, `<file>.live/<batch name>.parquet` (parts.py, without any lock on the trace file),
removes the batch, and, if `tool_invocation` is not the live view yet, makes it so (view.py: the one step
that takes DuckDB's write lock, once per writing session). A batch drained twice (its drainer killed before
removing it) gives the same part again, not a second one; the fold (fold.py) stores a part's name once.

Every drain takes the turn: a writer's background drain, `flush()`, the keeper, the lookup command's helper,
and a read-write connection of this project (fold.py). A drainer that finds the turn taken just leaves its
rows spooled (the holder takes everyone's rows, or the next turn does): writers contending is normal, never a
warning. The lock file's modification time is the end of the last drain, and a paced drain (the background
drains) waits until PACE seconds have passed since then, so four busy writers make about one part a second.
"""

from __future__ import annotations

import fcntl
import os
import random
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from retrieval.traces import db as trace_db
from retrieval.traces import parts as trace_parts
from retrieval.traces import view as trace_view
from retrieval.traces.db import TraceStoreError
from retrieval.traces.spool import Batch, Spool, TraceSpoolRejectedWarning

PACE = 1.0  # seconds between paced drains of one trace file, by any process
POLL = 0.005  # seconds between tries of a turn that is waited for
ANOTHER_DRAINER = "another drainer of this file"


def turn_path(path: Path) -> Path:
    """The lock file of trace file `path`'s drain turn (left in place)."""
    return path.with_name(path.name + ".drain.lock")


class DrainTurn:
    """The drain turn of one trace file, held between `take`/`try_take` and `release`. `flock` locks belong to
    an open file, so two threads of one process exclude each other as two processes do."""

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
            if not self.try_take():
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


@dataclass
class Pending:
    """One drain's worth of rows: the spool's claimed batch files and the rows a writer kept in memory (its
    spool could not be written)."""

    batches: list[Batch]
    memory: list[bytes]
    written: bool = False

    @classmethod
    def collect(cls, spool: Spool, memory: deque[bytes]) -> Pending:
        """Claim the spooled rows (nothing is read yet: DuckDB reads the files when it writes the parts)."""
        spool.rotate()
        taken = [memory.popleft() for _ in range(len(memory))]
        return cls(spool.claim(), taken)

    def __bool__(self) -> bool:
        return bool(self.batches or self.memory)

    def finish(self) -> None:
        """The rows are in parts: remove their batch files."""
        for batch in self.batches:
            batch.done()

    def release(self, memory: deque[bytes]) -> None:
        """Let go of unfinished batch files (drained later) and give back memory rows not written."""
        for batch in self.batches:
            batch.release()
        if not self.written:
            memory.extendleft(reversed(self.memory))


def drain_to_parts(path: Path, spool: Spool, memory: deque[bytes]) -> int:
    """Move the spooled rows (and `memory`'s) into parts in the live folder; the caller holds the drain turn.
    Returns the parts written. Bad lines go to the rejected file with a TraceSpoolRejectedWarning; a failure to
    write a part is a TraceStoreError, and the rows stay in their batch files (or memory) for the next drain."""
    try:
        pending = Pending.collect(spool, memory)
    except OSError as exc:
        raise TraceStoreError(f"cannot read the spool {spool.path}: {exc}") from None
    try:
        if not pending:
            return 0
        folder = trace_view.live_dir(path)
        sources = [([batch.source], batch.lines, batch.path.name) for batch in pending.batches]
        bad = trace_parts.write_spooled(folder, sources, pending.memory, fsync=spool.fsync)
        pending.written = True
        try:
            if bad:
                spool.reject(bad)
                warnings.warn(f"{len(bad)} spooled row(s) of {path} are not valid rows (first: {bad[0][1]}); "
                              f"moved to {spool.rejected_path}", TraceSpoolRejectedWarning, stacklevel=3)
            pending.finish()
        except OSError as exc:
            raise TraceStoreError(f"cannot clear the spool {spool.path}: {exc}") from None
        return len(sources) + bool(pending.memory)
    finally:
        pending.release(memory)


@dataclass(frozen=True)
class Drained:
    """How a drain went: `taken` (it had the turn; else try again in `wait` seconds), `shown` (every row it
    drained is in `tool_invocation`; else `held_by` names who held the file)."""

    taken: bool
    shown: bool = False
    wait: float = 0.0
    held_by: str = ""


def drain_once(path: Path, spool: Spool, memory: deque[bytes], *, show_wait: float, turn_wait: float | None = None,
               paced: bool = False) -> Drained:
    """Drain the spool (everyone's rows) and `memory` into the live folder and show them. Without `turn_wait`
    the turn is only tried (`paced`: not within PACE seconds of the last drain); with it, waited for."""
    turn = DrainTurn(path)
    if turn_wait is None:
        wait = turn.try_take(paced=paced)
        if wait:
            return Drained(False, wait=wait)
    elif not turn.take(turn_wait):
        return Drained(False, held_by=ANOTHER_DRAINER)
    try:
        drain_to_parts(path, spool, memory)
        shown = trace_view.show_live(path, show_wait)
    finally:
        turn.release(drained=True)
    return Drained(True, shown, held_by="" if shown else trace_db.file_holder(path) or "another process")
