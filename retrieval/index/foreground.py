"""The cache writer yields to foreground work: an update or a lookup never shares the process with a folder write.

A cache folder written behind an update (retrieval/index/write_behind.py) is hundreds of MB at 100k chunks, and
its writer thread hashes, copies and writes them in Python and numpy: at the lowest CPU priority it still holds
the GIL and the memory bandwidth an update or a lookup in the same process needs (a one-page delete took 1.8 s
beside a write, 0.8 s alone). So `open_index` and `lookup_knowledge` run as `Foreground` work, and the writer
calls `yield_to_foreground()` before each folder and between the blocks of every file it writes: while any
foreground work runs, and for its `settle` seconds after (updates in a row do not let the writer in between),
the writer waits. Holding costs a lookup one uncontended lock, twice.

The writer never waits forever: not while someone waits for its writes (`writer_awaited`, as `wait_for_writes`
does, even from inside foreground work of its own thread), nor once the main thread has ended (Python joins
the writer at exit: a daemon thread still holding foreground work must not hang the exit). Held back for
`PATIENCE_S`, it takes every gap between foreground work without waiting for the settle, until a real quiet
(back-to-back updates for minutes still get their folders written); held back for `MAX_PAUSE_S` with no gap at
all (lookups overlapping on several threads), it writes one block beside them and waits again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ContextDecorator, contextmanager
from dataclasses import dataclass

SETTLE_S = 0.2  # after an update, the writer waits this long for the next foreground work before going on
PATIENCE_S = 1.0  # held back this long, the writer takes any gap between foreground work
MAX_PAUSE_S = 5.0  # held back this long at one point, the writer goes on beside foreground work
_POLL_S = 0.1  # a waiting writer looks again this often (the main thread's end wakes no one)


@dataclass
class _State:
    busy: int = 0  # foreground work running now
    quiet_at: float = 0.0  # monotonic time from which the writer may go on, once nothing is busy
    awaited: int = 0  # threads in `writer_awaited`
    held_since: float | None = None  # when the writer was first held back since it last found a quiet
    paused: bool = False  # the writer is waiting at a checkpoint


_LOCK = threading.Lock()
_CHANGED = threading.Condition(_LOCK)
_STATE = _State()


class Foreground(ContextDecorator):
    """Foreground work (a context manager or a decorator): while any runs, and for `settle` seconds after it
    ends, the cache writer waits at its next checkpoint."""

    def __init__(self, settle: float = SETTLE_S) -> None:
        if settle < 0:
            raise ValueError(f"settle must be 0 or more seconds, got {settle!r}")
        self.settle = float(settle)

    def __enter__(self) -> Foreground:
        with _LOCK:
            _STATE.busy += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with _LOCK:
            _STATE.busy -= 1
            _STATE.quiet_at = max(_STATE.quiet_at, time.monotonic() + self.settle)
            if _STATE.busy == 0 and _STATE.paused:
                _CHANGED.notify_all()


@contextmanager
def writer_awaited() -> Iterator[None]:
    """While held, the writer does not wait for foreground work: someone waits for its writes."""
    with _LOCK:
        _STATE.awaited += 1
        _CHANGED.notify_all()
    try:
        yield
    finally:
        with _LOCK:
            _STATE.awaited -= 1


def yield_to_foreground(give_up: Callable[[], bool] | None = None) -> None:
    """The writer's checkpoint: return at once when nothing holds it back, else wait until foreground work
    has ended and settled (or the writer has been held back too long, is awaited, the process is ending, or
    `give_up()` is true: it is checked on each wake, `wake_writer` wakes it)."""
    with _LOCK:
        started = time.monotonic()
        while True:
            now = time.monotonic()
            if _STATE.awaited or not threading.main_thread().is_alive() or (give_up is not None and give_up()):
                return
            if _STATE.busy == 0 and now >= _STATE.quiet_at:
                _STATE.held_since = None
                return
            if _STATE.held_since is None:
                _STATE.held_since = now
            if _STATE.busy == 0 and now - _STATE.held_since >= PATIENCE_S:
                return  # impatient: a gap will do
            if now - started >= MAX_PAUSE_S:
                return
            wait = _POLL_S if _STATE.busy else min(_POLL_S, _STATE.quiet_at - now)
            _STATE.paused = True
            try:
                _CHANGED.wait(min(wait, max(MAX_PAUSE_S - (now - started), 0.0)))
            finally:
                _STATE.paused = False


def wake_writer() -> None:
    """Wake a writer waiting at its checkpoint, to look again whether it should give up."""
    with _LOCK:
        _CHANGED.notify_all()


def writer_paused() -> bool:
    """Whether the writer is waiting for foreground work now."""
    with _LOCK:
        return _STATE.paused


def foreground_running() -> int:
    """How many pieces of foreground work run now (the writer waits while any does)."""
    with _LOCK:
        return _STATE.busy
