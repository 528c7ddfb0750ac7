"""Per-lookup progress from local worker processes: each worker appends one byte to a shared file per
question it finishes, and a thread in the parent reads the file's size. One `write` with O_APPEND per
lookup costs microseconds and needs no pipe, manager process or lock; a Dask run (workers on other hosts)
counts whole shards instead, as they come back."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.2  # seconds between the parent's reads of the file's size


class Ticker:
    """A worker's side: `tick()` once per finished question (a no-op without a file)."""

    def __init__(self, path: str | None) -> None:
        self.fd = None if path is None else os.open(path, os.O_WRONLY | os.O_APPEND)

    def tick(self) -> None:
        if self.fd is not None:
            os.write(self.fd, b".")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class TickWatcher:
    """The parent's side: a temporary tick file, and a thread that reports `progress(done, total)` whenever
    its size grows, until `stop()` (which reports the last count once more)."""

    def __init__(self, total: int, progress: Callable[[int, int], None]) -> None:
        handle, name = tempfile.mkstemp(prefix="lookup-eval-ticks-")
        os.close(handle)
        self.path, self.total, self.progress = Path(name), total, progress
        self._stop, self._reported = threading.Event(), -1
        self._thread = threading.Thread(target=self._watch, name="eval-progress", daemon=True)
        self._thread.start()

    def done(self) -> int:
        """Questions finished so far, across every worker."""
        try:
            return min(self.path.stat().st_size, self.total)
        except FileNotFoundError:
            return self._reported

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._report()
        self.path.unlink(missing_ok=True)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            self._report()

    def _report(self) -> None:
        done = self.done()
        if done != self._reported:
            self._reported = done
            self.progress(done, self.total)
