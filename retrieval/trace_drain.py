"""The background drainer: one daemon thread per process moves spooled rows of every open TraceStore
into DuckDB, in batches, and `atexit` flushes what is left.

Stores register themselves (weakly: a forgotten store is not kept alive; its rows stay in the spool
for the next drain). The thread wakes every `INTERVAL` seconds, or at once when a store's batch is full.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import Any, Protocol

INTERVAL = 0.5  # seconds between the drainer's looks; with trace_writer.MAX_AGE, rows reach the table in ~1.5 s
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

    def register(self, store: Drainable) -> None:
        with self._guard:
            self._stores.add(store)

    def unregister(self, store: Drainable) -> None:
        with self._guard:
            self._stores.discard(store)

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
            self._wake.wait(INTERVAL)
            self._wake.clear()
            for store in list(self._stores):
                store.drain_in_background()

    def close_all(self) -> None:
        for store in list(self._stores):
            store.close(timeout=EXIT_TIMEOUT)

    def before_fork(self) -> None:
        """Hold every store's lock across a fork, so no child starts inside a drain's DuckDB connection."""
        self._held = [store for store in list(self._stores) if _lock_of(store) is not None]
        for store in self._held:
            _lock_of(store).acquire()

    def after_fork_in_parent(self) -> None:
        for store in self._held:
            _lock_of(store).release()
        self._held = []

    def after_fork(self) -> None:
        self.after_fork_in_parent()
        self._thread, self._guard = None, threading.Lock()


def _lock_of(store: Drainable) -> Any:
    return getattr(store, "_lock", None)


_DRAINER = _Drainer()
register, unregister, notify = _DRAINER.register, _DRAINER.unregister, _DRAINER.notify
atexit.register(_DRAINER.close_all)
os.register_at_fork(before=_DRAINER.before_fork, after_in_parent=_DRAINER.after_fork_in_parent,
                    after_in_child=_DRAINER.after_fork)
