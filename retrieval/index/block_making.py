"""The update pool's blocks made on other threads, so that an update finds its memory touched already.

Behind: once a process has been quiet for RESERVE_QUIET_S (no lookup or update), a thread at the lowest priority
makes the blocks the next update will ask for (a process that follows its files does so after it opens its
index, and every update after it is made). Ahead: as an update starts, a thread makes the blocks it will ask
for, the entries' text columns first (gathered once its files are read), then from the last (the LSA and
static rows, the weights), while the update reads its files and counts on the other core; a request that a
block being made serves waits for it. A process's first one-page update at 100k chunks, which finds no free
block, then touches ~15-25% of its new memory on its own thread (docs/benchmarks.md, bench/incremental.py).
Both count the free blocks there are (only what is missing is made) and make nothing past the pool's limit
(retrieval/index/arena.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import threading
import time
from collections.abc import Callable, Sequence

from retrieval.index import arena
from retrieval.index.foreground import foreground_running

RESERVE_QUIET_S = 1.0  # the reserve starts, and goes on after a lookup or an update, only after this quiet
PIECE = 8 << 20  # bytes touched at a time: a few ms
_POLL_S = 0.05

_LOCK = threading.Lock()
_RESERVE: list[list[int]] = []  # the sizes the reserve thread is to make blocks for (the newest only)
_RESERVER: list[threading.Thread] = []
_AHEAD: list[tuple[threading.Thread, threading.Event]] = []  # each thread making blocks ahead, and its stop


def make_ahead(sizes: Sequence[int], lead: int = 0) -> None:
    """Inside an update's `arena.pooled()`, make the blocks for arrays of `sizes` bytes (the sizes it will ask
    for, in order: `update_sizes`) on another thread: the first `lead` first (the update asks for them only
    after it has read its files), then the others from the last, until the update has asked for the size next
    in line; nothing when they would pass the pool's limit."""
    requests = arena.requests_so_far()
    wanted = [int(size) for size in sizes]
    if requests is None or not _within_limit(wanted):
        return
    stop = threading.Event()
    thread = threading.Thread(target=_ahead, args=(wanted, min(lead, len(wanted)), requests, stop),
                              name="lookup-knowledge-update-ahead", daemon=True)
    with _LOCK:
        _AHEAD[:] = [(t, s) for t, s in _AHEAD if t.is_alive()] + [(thread, stop)]
    thread.start()


def stop_ahead() -> None:
    """Stop making blocks ahead (an update gave way to a full build, which takes no pooled memory) and wait
    for the threads to stop; what they made stays free in the pool."""
    with _LOCK:
        running = list(_AHEAD)
    for _, stop in running:
        stop.set()
    wait_for_ahead()


def wait_for_ahead(timeout: float | None = None) -> bool:
    """Wait until the threads making blocks ahead are done; False when `timeout` passed first."""
    with _LOCK:
        threads = [thread for thread, _ in _AHEAD]
    deadline = None if timeout is None else time.monotonic() + timeout
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() for t in threads)


def _ahead(wanted: list[int], lead: int, requests: list[int], stop: threading.Event) -> None:
    claimed: set[int] = set()
    limit = _limit()
    if limit is None:
        return
    for position in [*range(lead), *range(len(wanted) - 1, lead - 1, -1)]:
        nbytes = wanted[position]
        if stop.is_set():
            return
        if len(requests) > position:  # the update has asked for it (and every size before it) already
            if position < lead:
                continue
            return
        if nbytes < arena.MIN_BYTES or arena.claim_existing(nbytes, claimed):
            continue
        if arena.held_bytes() + arena.block_size(nbytes) > limit:  # free blocks of other sizes fill the pool
            continue
        making = arena.begin_making(nbytes)
        claimed.add(id(making))
        block = None
        try:
            made = arena.new_block(nbytes)
            claimed.add(id(made))  # free once made: not counted again for a smaller size
            if not _touched(made, lambda: not stop.is_set()):
                return
            block = made
        except (OSError, MemoryError):  # no memory to spare: the update makes its arrays itself
            return
        finally:  # a request waiting for this block makes its own if it was not made
            arena.finish_making(making, block, "ahead")


def reserve_behind(sizes: Sequence[int]) -> None:
    """Make free blocks for arrays of `sizes` bytes on a background thread, once the process has been quiet for
    RESERVE_QUIET_S, counting the free blocks there are (nothing when they would pass the limit). A newer call
    replaces what an earlier one has not made yet."""
    wanted = [int(size) for size in sizes]
    if not _within_limit(wanted):
        return
    with _LOCK:
        _RESERVE[:] = [wanted]
        if not _RESERVER:
            thread = threading.Thread(target=_reserve_all, name="lookup-knowledge-update-pool", daemon=True)
            _RESERVER.append(thread)
            thread.start()


def wait_for_reserve(timeout: float | None = None) -> bool:
    """Wait until the reserve thread has made what it was asked for; False when `timeout` passed first."""
    with _LOCK:
        thread = _RESERVER[0] if _RESERVER else None
    if thread is not None:
        thread.join(timeout)
        return not thread.is_alive()
    return True


def _limit() -> int | None:
    """The pool's limit in bytes; None when the variable is malformed (the update says what is wrong with it)."""
    try:
        return arena.retained_limit()
    except ValueError:
        return None


def _within_limit(wanted: list[int]) -> bool:
    """Whether blocks for the large ones of `wanted` fit the pool's limit."""
    limit = _limit()
    large = [size for size in wanted if size >= arena.MIN_BYTES]
    return limit is not None and bool(large) and sum(arena.block_size(size) for size in large) <= limit


def _reserve_all() -> None:
    with contextlib.suppress(AttributeError, OSError):  # Linux: this thread alone at the lowest priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    while True:
        with _LOCK:
            if not _RESERVE:
                _RESERVER.clear()
                return
            wanted = _RESERVE.pop()
        _reserve(wanted)


def _reserve(wanted: list[int]) -> None:
    """Blocks for the sizes in `wanted` that no free block serves, touched a piece at a time while the process
    is quiet (a lookup or an update that starts meanwhile waits for no more than one piece). Not registered as
    being made: an update that starts meanwhile would wait for a block that waits for it to end."""
    limit = _limit()
    if limit is None:
        return
    claimed: set[int] = set()
    settled = False  # the process has been quiet since the last wait

    def quiet() -> bool:  # before each piece: wait for quiet unless the process has stayed quiet since the last
        nonlocal settled
        if not (settled and not foreground_running()):
            settled = _await_quiet()
        return settled

    for nbytes in wanted:
        if nbytes < arena.MIN_BYTES:
            continue
        with _LOCK:
            if _RESERVE:  # a newer request replaced this one
                return
        if arena.claim_existing(nbytes, claimed):
            continue
        if arena.held_bytes() + arena.block_size(nbytes) > limit:
            return
        block = arena.new_block(nbytes)
        if not _touched(block, quiet):
            return
        claimed.add(id(block))
        arena.add_free(block, "reserved")


def _touched(block: mmap.mmap, go_on: Callable[[], bool]) -> bool:
    """Fault in every page of `block` a PIECE at a time, asking `go_on()` before each; False when it said no."""
    for start in range(0, len(block), PIECE):
        if not go_on():
            return False
        _touch(block, start, min(PIECE, len(block) - start))
    return True


def _touch(block: mmap.mmap, start: int, length: int) -> None:
    """Fault in `length` bytes of `block` from `start` by a C memset, which lets other threads run (an mmap
    with MAP_POPULATE faults its pages in while holding the GIL, stalling every lookup meanwhile)."""
    view = ctypes.c_char.from_buffer(block, start)
    address = ctypes.addressof(view)
    del view  # no export left on the block; the address holds while the block does
    ctypes.memset(address, 0, length)


def _await_quiet() -> bool:
    """Wait until no lookup or update has run for RESERVE_QUIET_S; False when the process is ending."""
    quiet_since = time.monotonic()
    while threading.main_thread().is_alive():
        now = time.monotonic()
        if foreground_running():
            quiet_since = now
        elif now - quiet_since >= RESERVE_QUIET_S:
            return True
        time.sleep(_POLL_S)
    return False
