"""The trace writer: records tool invocations off the caller's critical path, shared safely by processes.

`record()` appends one JSON line to the spool beside the trace file and returns: that write is the
acknowledgement (it survives a SIGKILL; see trace_spool for the fsync policy). A background thread
(trace_drain) moves spooled rows into the live folder (trace_live) within about a second, taking its turn
with the other drainers of the file (trace_turn) and no lock on the file itself, and `close()` (or the exit
of the process) moves the rest; `tool_invocation` shows them at once (trace_view), and the keeper
(trace_keeper) folds them into the file when writers are idle. A failed write never raises into the
caller: it is a warning, and the rows wait in the spool.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import drain as trace_drain
from retrieval.traces import keeper as trace_keeper
from retrieval.traces import live as trace_live
from retrieval.traces.db import TraceStoreError, TraceStoreLocked, check_file
from retrieval.traces.file import open_checked, open_drained, spool_path
from retrieval.traces.livedrain import drain_once
from retrieval.traces.rows import encode, fallback_line
from retrieval.traces.spool import Spool
from retrieval.traces.turn import Backoff

if TYPE_CHECKING:
    import duckdb

MAX_MEMORY_ROWS = 10_000  # rows kept in memory when even the spool cannot be written
MAX_AGE = 0.75  # seconds a recorded row waits for a background drain (the drainer wakes when it falls due)
BACKGROUND_LOCK_WAIT = 0.25  # seconds a background drain retries while another process holds the file
SHOW_RETRY = 0.25  # seconds between a flush's tries to show its parts while the file is held


class TraceStoreWriteWarning(UserWarning):
    """Rows could not be written to the trace file yet; they are kept in the spool (or memory)."""


class TraceStoreLockedWarning(TraceStoreWriteWarning):
    """Rows wait (spooled, or drained but not shown) because another process held the trace file's lock for too
    long; `holder` names it ('process 1234 (duckdb)') when known."""

    def __init__(self, message: str, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class TraceWriter:
    """Records tool invocations into a DuckDB file; safe across threads and processes.

    Use as a context manager, or call `close()`, to drain at a known point; `atexit` drains the rest.
    """

    def __init__(self, path: str | Path, *, lock_timeout: float = 10.0, batch_size: int = 500,
                 fsync: bool = False, defer_if_locked: bool = False, open_now: bool = True,
                 background: bool = True, sources: Sequence[str | Path] | None = None) -> None:
        """Opens (checks, and migrates if it must) the file now, so a broken or foreign one is named before any
        lookup; an up-to-date file is only read. A file another process holds raises TraceStoreLocked, or with
        `defer_if_locked` is left to the first drain, the rows waiting in the spool meanwhile. Without
        `open_now` only the file's first bytes are checked (DuckDB is not loaded): for a command whose drain
        is done by exit_drain's helper, which also passes `background=False`: no drainer thread, no exit
        flush (`close()` drains, if called). `sources` are the trace files (or folders of them) its reading
        functions read as one (trace_sources); by default its own file."""
        self.path = Path(path)
        self.sources = tuple(Path(p) for p in sources) if sources else (self.path,)
        self.lock_timeout, self.batch_size = lock_timeout, batch_size
        if self.path.is_dir():
            raise TraceStoreError(f"trace file {self.path} is a folder; pass --traces with a file path "
                                  f"such as traces.duckdb")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TraceStoreError(f"cannot create the folder of trace file {self.path}: {exc}") from None
        self._spool = Spool(self.spool_path, fsync=fsync)
        self._lock = threading.RLock()  # one connection (and drain) at a time per writer
        self._memory: deque[bytes] = deque()  # rows the spool could not take
        self._waiting: float | None = None  # when this writer's oldest undrained row was recorded
        self._unsent = 0  # rows recorded since the last drain
        self._retry = Backoff()
        self._warned = ""
        self._background = background
        self._hidden = False  # rows in the live folder that the file could not show yet (it was held)
        self._held_by = ""  # who held it then
        try:
            if open_now:
                with self._lock:
                    open_checked(self.path, timeout=lock_timeout, force=True)
            else:
                check_file(self.path)
        except TraceStoreLocked:
            if not defer_if_locked:
                raise
        if background:
            trace_drain.register(self)

    @property
    def spool_path(self) -> Path:
        return spool_path(self.path)

    @property
    def rejected_path(self) -> Path:
        return self._spool.rejected_path

    def spool_files(self) -> list[Path]:
        """The files that hold rows `tool_invocation` does not show yet: the spool, its batch files
        (`*.draining`), and the live folder's parts while the file could not show them (it was held)."""
        hidden = [] if trace_live.is_marked_live(self.path) else trace_live.part_files(self.path)
        return self._spool.pending_files() + hidden

    def __call__(self, invocation: ToolInvocation) -> None:
        """A writer is a recorder: `lookup_knowledge(..., recorder=store)`."""
        self.record(invocation)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, invocation: ToolInvocation) -> None:
        """Spool one row and return (never raises). `latency_ms` gains the time spent here, and
        `retrieval_details.timings_ms.record` says how much that was."""
        self._append([self._encode(invocation, time.perf_counter())])

    def record_many(self, invocations: Sequence[ToolInvocation]) -> None:
        """Spool rows as they are (latencies untouched) in one write; never raises."""
        if invocations:
            self._append([self._encode(inv, None) for inv in invocations])

    def flush(self, timeout: float | None = None) -> bool:
        """Make every row recorded so far visible in `tool_invocation` now: drained into the live folder (waiting
        for the drain turn if another drainer has it) and shown by the live view. False, with a warning naming
        the holder, when the file stayed held for `timeout` (default `lock_timeout`): the rows then wait in the
        live folder (or the spool) and arrive when it lets go."""
        if not (self._memory or self._spool.has_rows() or self._hidden):
            return True  # nothing waits: the file is not opened (at exit, its folder may be gone)
        limit = self.lock_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        try:
            with self._lock:
                while True:
                    left = max(deadline - time.monotonic(), 0.0)
                    if self._drain_live(turn_wait=left, show_wait=min(left, SHOW_RETRY)):
                        return True
                    if time.monotonic() >= deadline:
                        raise TraceStoreLocked(f"trace file {self.path} is locked by {self._held_by} for over "
                                               f"{limit:.1f}s", self._held_by)
                    time.sleep(min(SHOW_RETRY, max(deadline - time.monotonic(), 0.0)))
        except (TraceStoreError, OSError) as exc:
            self._warn_once(exc, force=True)
            return False

    def _drain_live(self, *, turn_wait: float | None = None, show_wait: float, paced: bool = False) -> bool:
        """One drain (trace_livedrain) of the spool, everyone's rows, into the live folder, then the live view;
        True when every row drained is visible. Without `turn_wait` the turn is only tried (and `paced`):
        False then means another drainer has it, and `self._retry` says when to look again."""
        unsent = self._unsent
        drained = drain_once(self.path, self._spool, self._memory, show_wait=show_wait, turn_wait=turn_wait,
                             paced=paced)
        if not drained.taken:
            if drained.wait:
                self._retry.wait(drained.wait)
            self._held_by = drained.held_by or self._held_by
            return False
        self._unsent = max(self._unsent - unsent, 0)
        if self._unsent == 0:
            self._waiting = None
        self._hidden, self._held_by = not drained.shown, drained.held_by
        if drained.shown:
            self._warned = ""
            self._retry.reset()
            trace_keeper.ensure(self.path)  # it folds the parts into the file when writers are idle
        return drained.shown

    def close(self, timeout: float | None = None) -> None:
        """Drain what was recorded and stop draining in the background; rows recorded later still go to
        the spool (and restart the background drain)."""
        self.flush(timeout)
        trace_drain.unregister(self)
        self._spool.close()

    def detach(self) -> None:
        """Stop draining without a drain: what is spooled waits for the next one (e.g. exit_drain's helper
        reported the file locked, and the exit must not wait for the lock a second time)."""
        trace_drain.unregister(self)
        self._spool.close()

    @contextmanager
    def connect(self, timeout: float | None = None, *, drain: bool = True,
                background: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short read-write connection (for writing the file's other tables, or deleting rows) in which
        `tool_invocation` is a table holding every row: the live parts folded in and every spooled row added
        first (unless `drain` is False); retried while another process holds the lock (up to `timeout`,
        default `lock_timeout`). A `background` connection runs DuckDB on one thread, the caller's. The
        keeper checkpoints what it commits once writers are idle."""
        with self._lock, open_drained(self.path, self._spool, self._memory, drain=drain,
                                      timeout=self.lock_timeout if timeout is None else timeout,
                                      threads=1 if background else None) as con:
            self._hidden = False
            if drain:
                self._unsent, self._waiting, self._warned = 0, None, ""
                self._retry.reset()
            yield con
        trace_keeper.ensure(self.path)

    def due_in(self) -> float | None:
        """Seconds until this writer's rows are due for a background drain (0 when they are), or None."""
        if self._waiting is None and not self._hidden:
            return None
        since = time.monotonic() if self._waiting is None else self._waiting
        return max(0.0, since + MAX_AGE - time.monotonic(), self._retry.until - time.monotonic())

    def drain_in_background(self) -> None:
        """Called by the drainer thread: drain the spool into the live folder once this writer's rows are due,
        in its turn with the other drainers of the file (paced: when another drained a moment ago, later; never
        a warning), and show them (the live view), retrying for a moment while another process holds the file.
        It never waits for this writer's own lock: a reader or flush of this process draining does the job."""
        if (self._waiting is None and not self._hidden) or not self._retry.due():
            return
        due = (self._hidden or self._memory or self._unsent >= self.batch_size
               or (self._waiting is not None and time.monotonic() - self._waiting >= MAX_AGE))
        if not due or not self._lock.acquire(blocking=False):
            return  # a reader or flush is draining right now
        try:
            if not self._drain_live(show_wait=BACKGROUND_LOCK_WAIT, paced=True) and self._hidden:
                self._retry.fail()
                self._warn_once(TraceStoreLocked(f"trace file {self.path} is locked by {self._held_by}",
                                                 self._held_by))
        except (TraceStoreError, OSError) as exc:
            self._retry.fail()
            self._warn_once(exc)
        finally:
            self._lock.release()

    def has_unshown_rows(self) -> bool:
        """Whether rows this writer recorded may not be visible in `tool_invocation` yet (spooled, in memory,
        or in parts the file could not show)."""
        return self._waiting is not None or bool(self._memory) or self._hidden

    def _encode(self, invocation: ToolInvocation, entered: float | None) -> bytes:
        try:
            return encode(invocation, entered)
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            warnings.warn(f"invocation could not be encoded in full ({type(exc).__name__}: {exc}); "
                          f"recorded with its error only", TraceStoreWriteWarning, stacklevel=3)
            return fallback_line(invocation, exc)

    def _append(self, lines: list[bytes]) -> None:
        try:
            self._spool.append(b"".join(lines))
        except OSError as exc:
            kept = min(len(lines), MAX_MEMORY_ROWS - len(self._memory))
            self._memory.extend(lines[:kept])
            lost = f"; {len(lines) - kept} row(s) dropped (memory full)" if kept < len(lines) else ""
            warnings.warn(f"cannot write the spool {self.spool_path} ({exc}); {kept} row(s) kept in memory "
                          f"until the next drain{lost}", TraceStoreWriteWarning, stacklevel=3)
        self._unsent += len(lines)
        if self._waiting is None:
            self._waiting = time.monotonic()
        if self._background:
            trace_drain.register(self)  # again after close(): a closed writer that records drains again
            trace_drain.notify(now=self._unsent >= self.batch_size)

    def _warn_once(self, exc: BaseException, *, force: bool = False) -> None:
        """One warning per kind of failure while it lasts; a lock only once rows waited `lock_timeout`."""
        locked = isinstance(exc, TraceStoreLocked)
        waited = self._waiting is not None and time.monotonic() - self._waiting >= self.lock_timeout
        if locked and not (force or waited):
            return
        key = "locked" if locked else str(exc)
        if key == self._warned and not force:
            return
        self._warned = key
        where = ", ".join(str(p.name) for p in self._spool.pending_files())
        if self._hidden:
            where = ", ".join(filter(None, [where, trace_live.live_dir(self.path).name + "/"]))
        tail = "arrive when it lets go" if locked else "are added by the next write"
        text = f"{exc}; recorded rows are kept in {where or 'memory'} beside it and {tail}"
        warning = (TraceStoreLockedWarning(text, getattr(exc, "holder", "")) if locked
                   else TraceStoreWriteWarning(text))
        warnings.warn(warning, stacklevel=3)
