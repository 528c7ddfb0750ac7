"""The background drainer: one daemon thread per process moves spooled rows of every open TraceStore
into the live folder (trace_live), in batches, and `atexit` flushes what is left.

Stores register themselves weakly (a forgotten store is not kept alive), and the spool of a store that
was garbage-collected with rows waiting is drained at exit all the same. The thread wakes every
`INTERVAL` seconds, or at once when a store's batch is full.
"""

from __future__ import annotations

import atexit
import os
import threading
import warnings
import weakref
from pathlib import Path
from typing import Any, Protocol

INTERVAL = 0.5  # seconds between the drainer's looks at most; it also wakes when a store's rows fall due
MIN_WAIT = 0.02  # seconds
EXIT_TIMEOUT = 5.0  # seconds `atexit` waits for the trace file's lock before leaving rows in the spool


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
    from collections import deque

    from retrieval.traces import keeper
    from retrieval.traces.db import TraceStoreError
    from retrieval.traces.file import spool_path
    from retrieval.traces.livedrain import drain_once
    from retrieval.traces.spool import Spool

    spool = Spool(spool_path(path))
    try:
        if spool.has_rows():
            drained = drain_once(path, spool, deque(), show_wait=EXIT_TIMEOUT, turn_wait=EXIT_TIMEOUT)
            if not drained.shown:
                raise TraceStoreError(f"trace file {path} is locked by {drained.held_by}")
            keeper.ensure(path)
    except (TraceStoreError, OSError) as exc:
        warnings.warn(f"{exc}; recorded rows are kept beside it ({spool_path(path).name} or {path.name}.live/) and "
                      f"arrive when it lets go", RuntimeWarning, stacklevel=2)
    finally:
        spool.close()


def _drain_forgotten(path: Path) -> bool:
    """One paced drain of a forgotten store's spool, if rows wait in it (quiet: the exit drain warns); True when
    none wait any more."""
    from collections import deque

    from retrieval.traces import keeper
    from retrieval.traces.db import TraceStoreError
    from retrieval.traces.file import spool_path
    from retrieval.traces.livedrain import drain_once
    from retrieval.traces.spool import Spool

    spool = Spool(spool_path(path))
    try:
        if spool.has_rows() and drain_once(path, spool, deque(), show_wait=0.25, paced=True).shown:
            keeper.ensure(path)
        return not spool.has_rows()
    except (TraceStoreError, OSError):
        return False
    finally:
        spool.close()


def _lock_of(store: Drainable) -> Any:
    return getattr(store, "_lock", None)


_DRAINER = _Drainer()
register, unregister, notify = _DRAINER.register, _DRAINER.unregister, _DRAINER.notify
atexit.register(_DRAINER.close_all)
os.register_at_fork(before=_DRAINER.before_fork, after_in_parent=_DRAINER.after_fork_in_parent,
                    after_in_child=_DRAINER.after_fork)
