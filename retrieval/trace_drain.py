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
from typing import Protocol

INTERVAL = 1.0  # seconds between background drains while rows are pending
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

    def register(self, store: Drainable) -> None:
        # The exit flush may be this process's first drain, and its imports (pyarrow imports pandas, which
        # imports concurrent.futures.thread) must not run during shutdown: that module registers a threading
        # exit hook, refused once shutdown has begun ("can't register atexit after shutdown"), and the rows
        # stayed in a batch file behind a traceback. Importing it now costs 7 ms.
        import concurrent.futures.thread  # noqa: F401

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

    def after_fork(self) -> None:
        self._thread, self._guard = None, threading.Lock()


_DRAINER = _Drainer()
register, unregister, notify = _DRAINER.register, _DRAINER.unregister, _DRAINER.notify
atexit.register(_DRAINER.close_all)
os.register_at_fork(after_in_child=_DRAINER.after_fork)
