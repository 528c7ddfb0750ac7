"""An index that follows its knowledge base (issue 35, item 2): a process that serves lookups for hours (the MCP
server, the app) notices an edited, added or deleted page and serves the updated index, without a restart.

A watcher thread stats the knowledge base (`file_signature`: every file's path, size, inode and times; a few
milliseconds for hundreds of files) every `check_every` seconds, or every `COST_FACTOR` times what one check
costs when that is longer, so watching a large base never takes more than about 2% of a core. A changed
signature is rebuilt once it has stayed the same for `settle` seconds (an editor saving in several writes, a
`git pull` touching many files: one rebuild, not one per write). The rebuild is `open_index` with the same
options (the on-disk cache answers a signature it has seen before) and runs in the watcher's thread: lookups
meanwhile are served by the index they had, and the new one replaces it whole when it is ready. A rebuild that
fails (a page with broken front matter under `--strict`, a folder gone) keeps the old index and says why in
`last_error`; the next change tries again. Every lookup's trace records the content fingerprint of the index
that answered it (`tool_invocation.kb_fingerprint`), so an analyst sees which version answered.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.index.build import KnowledgeIndex, file_signature, open_index

CHECK_EVERY = 0.25  # seconds between two looks at the files, at least
SETTLE = 0.15  # seconds a changed signature must stay the same before it is rebuilt
COST_FACTOR = 50  # a check waits at least this many times what the last one cost


class LiveIndex:
    """The current index of a knowledge base that may change under it; `current()` is what a lookup uses."""

    def __init__(self, path: str | Path, index: KnowledgeIndex | None = None, *, check_every: float = CHECK_EVERY,
                 settle: float = SETTLE, opener: Callable[..., KnowledgeIndex] = open_index,
                 **options: Any) -> None:
        self.path = Path(path)
        self.options = options
        self.check_every, self.settle = float(check_every), float(settle)
        self._opener = opener
        self._lock = threading.Lock()
        self._signature = file_signature(self.path)
        self._index = index if index is not None else opener(self.path, **options)
        self._pending: tuple[str, float] | None = None  # a changed signature and when it was first seen
        self._wait = self.check_every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rebuilds = 0
        self.last_error: str | None = None

    def current(self) -> KnowledgeIndex:
        """The index to answer with now (the newest one built; a rebuild under way does not hold it up)."""
        return self._index

    @property
    def fingerprint(self) -> str:
        """The content fingerprint of the current index's knowledge base (what each trace row records)."""
        return self._index.kb.fingerprint

    def start(self) -> LiveIndex:
        """Start the watcher thread (a daemon: it never holds the process up); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=_watch, args=(weakref.ref(self), self._stop),
                                            name="lookup-knowledge-live-index", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the watcher thread and wait for it (a rebuild under way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def poll(self, *, now: float | None = None) -> bool:
        """Look at the files once: note a change, and rebuild one that has settled; True when the index was
        replaced. The watcher calls it; a caller without a watcher may too."""
        now = time.monotonic() if now is None else now
        started = time.perf_counter()
        signature = file_signature(self.path)
        self._wait = max(self.check_every, COST_FACTOR * (time.perf_counter() - started))
        if signature == self._signature:
            self._pending = None
            return False
        if self._pending is None or self._pending[0] != signature:
            self._pending = (signature, now)
            if self.settle > 0:
                return False
        if now - self._pending[1] < self.settle:
            return False
        return self._rebuild(signature)

    def refresh(self) -> bool:
        """Rebuild now if the files changed, without waiting for them to settle; True when the index was replaced."""
        signature = file_signature(self.path)
        return signature != self._signature and self._rebuild(signature)

    def _rebuild(self, signature: str) -> bool:
        with self._lock:  # one rebuild at a time (the watcher and a caller's refresh)
            try:
                index = self._opener(self.path, **self.options)
            except (OSError, ValueError) as exc:  # KnowledgeBaseError is a ValueError: keep serving the old index
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._signature, self._pending = signature, None  # not retried until the files change again
                return False
            self._index, self._signature, self._pending = index, signature, None
            self.rebuilds += 1
            self.last_error = None
            return True



def current_index(index: KnowledgeIndex | LiveIndex) -> KnowledgeIndex:
    """The index to look up with: a live index's current one, or the index itself."""
    return index.current() if isinstance(index, LiveIndex) else index


def _watch(ref: weakref.ref[LiveIndex], stop: threading.Event) -> None:
    """The watcher's loop; it holds its LiveIndex only weakly, so a live index nobody uses any more (an app
    cache entry evicted) is collected and its watcher ends."""
    wait = CHECK_EVERY
    while not stop.wait(wait):
        live = ref()
        if live is None:
            return
        try:
            live.poll()
        except OSError as exc:  # the folder went away for a moment: keep the index, look again later
            live.last_error = f"{type(exc).__name__}: {exc}"
        wait = live._wait
        del live
