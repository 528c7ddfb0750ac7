"""Step 1 of a row's way, and the process's drains: the trace writer records tool invocations off the
caller's critical path, shared safely by processes.

`record()` appends one JSON line to the spool beside the trace file and returns: that write is the
acknowledgement (it survives a SIGKILL; see spool.py for the fsync policy). One background thread per process,
the drainer (below), drains each writer's rows into the live folder (drain.py) within about a second, taking
its turn with the other drainers of the file and no lock on the file itself, and `close()` (or the exit of
the process) drains the rest; `tool_invocation` shows them at once (view.py), and the keeper (keeper.py)
folds them into the file when writers are idle (fold.py). A failed write never raises into the caller: it is
a warning, and the rows wait in the spool.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import keeper as trace_keeper
from retrieval.traces import view as trace_view
from retrieval.traces.db import TraceStoreError, TraceStoreLocked, check_file
from retrieval.traces.drain import Backoff, drain_once
from retrieval.traces.fold import open_checked, open_folded
from retrieval.traces.rows import encode, fallback_line
from retrieval.traces.spool import Spool, spool_path

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
        is done by its helper (command_helper.py), which also passes `background=False`: no drainer thread, no
        exit flush (`close()` drains, if called). `sources` are the trace files (or folders of them) its
        reading functions read as one (sources.py); by default its own file."""
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
            _DRAINER.register(self)

    @property
    def spool_path(self) -> Path:
        return spool_path(self.path)

    @property
    def rejected_path(self) -> Path:
        return self._spool.rejected_path

    def spool_files(self) -> list[Path]:
        """The files that hold rows `tool_invocation` does not show yet: the spool, its batch files
        (`*.draining`), and the live folder's parts while the file could not show them (it was held)."""
        hidden = [] if trace_view.is_marked_live(self.path) else trace_view.part_files(self.path)
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
        """One drain (drain.py) of the spool, everyone's rows, into the live folder, then the live view;
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
        _DRAINER.unregister(self)
        self._spool.close()

    def detach(self) -> None:
        """Stop draining without a drain: what is spooled waits for the next one (e.g. exit_drain's helper
        reported the file locked, and the exit must not wait for the lock a second time)."""
        _DRAINER.unregister(self)
        self._spool.close()

    @contextmanager
    def connect(self, timeout: float | None = None, *, drain: bool = True,
                background: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short read-write connection (for writing the file's other tables, or deleting rows) in which
        `tool_invocation` is a table holding every row: the live parts folded in and every spooled row added
        first (unless `drain` is False); retried while another process holds the lock (up to `timeout`,
        default `lock_timeout`). A `background` connection runs DuckDB on one thread, the caller's. The
        keeper checkpoints what it commits once writers are idle."""
        with self._lock, open_folded(self.path, self._spool, self._memory, drain=drain,
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
            _DRAINER.register(self)  # again after close(): a closed writer that records drains again
            _DRAINER.notify(now=self._unsent >= self.batch_size)

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
            where = ", ".join(filter(None, [where, trace_view.live_dir(self.path).name + "/"]))
        tail = "arrive when it lets go" if locked else "are added by the next write"
        text = f"{exc}; recorded rows are kept in {where or 'memory'} beside it and {tail}"
        warning = (TraceStoreLockedWarning(text, getattr(exc, "holder", "")) if locked
                   else TraceStoreWriteWarning(text))
        warnings.warn(warning, stacklevel=3)


# The drainer: one daemon thread per process moves spooled rows of every open writer into the live folder, in
# batches, and `atexit` flushes what is left. Writers register themselves weakly (a forgotten writer is not kept
# alive), and the spool of a writer garbage-collected with rows waiting is drained at exit all the same. The
# thread wakes every INTERVAL seconds at most, when a writer's rows fall due, or at once when a batch is full.

INTERVAL = 0.5  # seconds between the drainer's looks at most; it also wakes when a store's rows fall due
MIN_WAIT = 0.02  # seconds
EXIT_TIMEOUT = 5.0  # seconds `atexit` waits for the trace file's lock before leaving rows in the spool
NICE = 10  # the drainer thread's nice value: its DuckDB work yields the CPU to the lookups beside it


class Drainable(Protocol):
    def drain_in_background(self) -> None: ...

    def close(self, timeout: float | None = None) -> None: ...


class _Drainer:
    def __init__(self) -> None:
        self._stores: weakref.WeakSet[Drainable] = weakref.WeakSet()
        self._wake = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._held: list[Drainable] = []
        self._forgotten: set[str] = set()  # trace files of stores collected while registered
        self._busy = threading.Lock()  # held while the thread drains a forgotten store's rows
        self._finalizers: dict[int, weakref.finalize] = {}

    def register(self, store: Drainable) -> None:
        with self._guard:
            if store not in self._stores:
                self._stores.add(store)
                path = str(getattr(store, "path", ""))
                self._finalizers[id(store)] = weakref.finalize(store, self._forget, id(store), path)

    def unregister(self, store: Drainable) -> None:
        with self._guard:
            self._stores.discard(store)
            finalizer = self._finalizers.pop(id(store), None)
        if finalizer is not None:
            finalizer.detach()

    def _forget(self, key: int, path: str) -> None:
        self._finalizers.pop(key, None)
        if path:
            self._forgotten.add(path)

    def notify(self, *, now: bool = False) -> None:
        """Rows are pending: make sure the thread runs (started lazily, again after a fork); `now` wakes it."""
        if self._thread is None or not self._thread.is_alive():
            with self._guard:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._run, name="trace-drainer", daemon=True)
                    self._thread.start()
        if now:
            self._wake.set()

    def _run(self) -> None:
        with contextlib.suppress(AttributeError, OSError):  # on Linux a thread has its own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        while True:
            self._wake.wait(self._next_wait())
            self._wake.clear()
            for store in list(self._stores):
                store.drain_in_background()
            for path in sorted(self._forgotten):  # stores collected with rows waiting: drained all the same
                with self._busy:  # (a fork waits for it, as for a store's drain)
                    if _drain_forgotten(Path(path)):
                        self._forgotten.discard(path)

    def _next_wait(self) -> float:
        """Until the first store's rows are due (so a row is not left waiting for the next tick), at most
        INTERVAL and at least MIN_WAIT (a due store whose lock a reader holds must not make this spin)."""
        waits = [due for store in list(self._stores) if (due := getattr(store, "due_in", lambda: None)()) is not None]
        return max(MIN_WAIT, min([INTERVAL, *waits]))

    def close_all(self) -> None:
        for store in list(self._stores):
            store.close(timeout=EXIT_TIMEOUT)
        live = {str(getattr(store, "path", "")) for store in list(self._stores)}
        for path in sorted(self._forgotten - live):
            _drain_file(Path(path))

    def before_fork(self) -> None:
        """Hold every store's lock across a fork, so no child starts inside a drain's DuckDB connection."""
        self._busy.acquire()
        self._held = [store for store in list(self._stores) if _lock_of(store) is not None]
        for store in self._held:
            _lock_of(store).acquire()

    def after_fork_in_parent(self) -> None:
        for store in self._held:
            _lock_of(store).release()
        self._held = []
        self._busy.release()

    def after_fork(self) -> None:
        self.after_fork_in_parent()
        self._thread, self._guard = None, threading.Lock()


def _drain_file(path: Path) -> None:
    """Move what waits in `path`'s spool into the live folder and show it (a forgotten store's rows); a warning
    if it cannot."""
    spool = Spool(spool_path(path))
    try:
        if spool.has_rows():
            drained = drain_once(path, spool, deque(), show_wait=EXIT_TIMEOUT, turn_wait=EXIT_TIMEOUT)
            if not drained.shown:
                raise TraceStoreError(f"trace file {path} is locked by {drained.held_by}")
            trace_keeper.ensure(path)
    except (TraceStoreError, OSError) as exc:
        warnings.warn(f"{exc}; recorded rows are kept beside it ({spool_path(path).name} or {path.name}.live/) and "
                      f"arrive when it lets go", RuntimeWarning, stacklevel=2)
    finally:
        spool.close()


def _drain_forgotten(path: Path) -> bool:
    """One paced drain of a forgotten store's spool, if rows wait in it (quiet: the exit drain warns); True when
    none wait any more."""
    spool = Spool(spool_path(path))
    try:
        if spool.has_rows() and drain_once(path, spool, deque(), show_wait=0.25, paced=True).shown:
            trace_keeper.ensure(path)
        return not spool.has_rows()
    except (TraceStoreError, OSError):
        return False
    finally:
        spool.close()


def _lock_of(store: Drainable) -> Any:
    return getattr(store, "_lock", None)


_DRAINER = _Drainer()
atexit.register(_DRAINER.close_all)
os.register_at_fork(before=_DRAINER.before_fork, after_in_parent=_DRAINER.after_fork_in_parent,
                    after_in_child=_DRAINER.after_fork)
