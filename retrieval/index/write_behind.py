"""Cache folders of updated indexes written behind the caller: an update is served at once, and its folder
(hundreds of MB at 100k chunks: most arrays change when rows move) lands on disk a moment later.

The write runs in a non-daemon thread, so a process that exits first still finishes it (Python joins such
threads at exit); `write_cache` stays atomic (a temporary folder renamed into place), so a process killed
mid-write leaves no half folder to read. Every open of the cache waits for the writes this process started
(`wait_for_writes`): a later open finds the folder, and two writes never race for one place.
"""

from __future__ import annotations

import threading
from pathlib import Path

from retrieval.index.cache import CachedIndex, write_cache

_PENDING: list[threading.Thread] = []
_LOCK = threading.Lock()


def write_behind(folder: Path, cached: CachedIndex) -> None:
    """Start writing `cached` to `folder` in the background (a failure is write_cache's warning)."""
    thread = threading.Thread(target=write_cache, args=(folder, cached), name="lookup-knowledge-cache-write")
    with _LOCK:
        _PENDING.append(thread)
    thread.start()


def wait_for_writes() -> None:
    """Wait until every cache write this process started has finished."""
    while True:
        with _LOCK:
            if not _PENDING:
                return
            thread = _PENDING.pop(0)
        thread.join()
