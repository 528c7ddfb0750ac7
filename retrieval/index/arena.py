"""An update's large arrays made in memory this process has touched before, not in memory new to it.

A one-page update at 100k chunks makes ~440 MB of new arrays (the entries' text, the LSA and static rows, the
term counts and their BM25 weights): ~105,000 first touches of a 4 KB page. On a virtual machine whose free
memory goes back to its host (a balloon's free page reporting, seconds after it was freed), each touch may
wait for the host, and the same update took 0.4-0.6 s or 1.5-1.9 s by how quick the host was (docs/l1.md,
docs/benchmarks.md). Memory a process holds is never handed back that way, so the arrays an update makes come
from blocks of anonymous memory that return here, not to the system, when the last array over them goes (the
index they served was replaced): the next update reuses them. At most `retained_limit()` bytes of free blocks
are kept (the oldest go first); arrays are pooled only inside `pooled()` (updates), never in a build, whose
peak memory is bounded.

A process's first updates find no such blocks (the index it started from lies in its cache files' maps, and
the one an update made is served while the next is made), so `reserve_behind` makes the blocks the next update
will ask for on a thread at the lowest priority, once no lookup or update has run for RESERVE_QUIET_S: a
process that follows its files reserves after it opens its index, and every update after it is made (the
blocks an update frees by replacing an index count: only what is missing is made).
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import math
import mmap
import os
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from retrieval.index.foreground import foreground_running

MIN_BYTES = 1 << 20  # smaller arrays come from the C heap, which reuses its own memory
HEADROOM = 1 / 16  # a new block is this much larger than asked for: the next version's arrays grow a little
MAX_WASTE = 1.25  # a free block serves a request at least 1 / MAX_WASTE of its size
LIMIT_ENV = "LOOKUP_KNOWLEDGE_UPDATE_POOL_MB"
DEFAULT_LIMIT_MB = 1024

RESERVE_QUIET_S = 1.0  # the reserve starts, and goes on after a lookup or an update, only after this quiet
RESERVE_PIECE = 8 << 20  # bytes touched at a time: a few ms
_POLL_S = 0.05

_POOLING: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("lookup_knowledge_pooling", default=None)
_LOCK = threading.RLock()  # reentrant: a collection inside a locked section may run a block's finalizer
_FREE: list[mmap.mmap] = []  # free blocks, oldest first
_COUNTS = {"reused": 0, "made": 0, "reserved": 0}
_RESERVE: list[list[int]] = []  # the sizes the reserve thread is to make blocks for (the newest only)
_RESERVER: list[threading.Thread] = []
_LAST: list[list[int]] = [[]]  # the sizes the last pooled block asked for, in order


@contextlib.contextmanager
def pooled() -> Iterator[None]:
    """Inside this block (and this thread or task only), `empty` and `zeros` take large arrays from the pool;
    `last_sizes()` is then what it asked for."""
    sizes: list[int] = []
    token = _POOLING.set(sizes)
    try:
        yield
    finally:
        _POOLING.reset(token)
        _LAST[0] = sizes


def empty(shape: int | tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """`np.empty(shape, dtype)`, over a pooled block when pooling and the array is large."""
    dtype = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = math.prod(dims)
    nbytes = count * dtype.itemsize
    session = _POOLING.get()
    if session is None or nbytes < MIN_BYTES or retained_limit() == 0:
        return np.empty(dims, dtype=dtype)
    session.append(nbytes)
    block = _take(nbytes)
    flat = np.frombuffer(block, dtype=dtype, count=count)
    # the memoryview numpy made over the block is the base of every view of `flat`: when the last goes, so does it
    weakref.finalize(flat.base, _give, block)
    return flat.reshape(dims)


def zeros(shape: int | tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """`np.zeros(shape, dtype)`, over a pooled block when pooling and the array is large."""
    array = empty(shape, dtype)
    array.fill(0)
    return array


def retained_limit() -> int:
    """Bytes of free blocks kept for the next update: LOOKUP_KNOWLEDGE_UPDATE_POOL_MB (0 turns pooling off)."""
    raw = os.environ.get(LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_LIMIT_MB << 20
    try:
        megabytes = int(raw)
    except ValueError:
        raise ValueError(f"{LIMIT_ENV}={raw!r} is not a whole number of megabytes (0 turns the pool off)") from None
    if megabytes < 0:
        raise ValueError(f"{LIMIT_ENV}={raw!r} is negative: give megabytes >= 0 (0 turns the pool off)")
    return megabytes << 20


def pool_facts() -> dict[str, int]:
    """Blocks reused and made since the process started, and the free blocks and bytes held now."""
    with _LOCK:
        return dict(_COUNTS, free_blocks=len(_FREE), free_bytes=sum(len(b) for b in _FREE))


def last_sizes() -> list[int]:
    """The sizes of the pooled arrays the last `pooled()` block of this process asked for, in order."""
    return list(_LAST[0])


def reserve_behind(sizes: Sequence[int]) -> None:
    """Make free blocks for arrays of `sizes` bytes on a background thread, once the process has been quiet for
    RESERVE_QUIET_S, counting the free blocks there are (nothing when they would pass the limit). A newer call
    replaces what an earlier one has not made yet."""
    wanted = [int(size) for size in sizes if size >= MIN_BYTES]
    try:
        limit = retained_limit()
    except ValueError:
        return  # the update that follows says what is wrong with the variable
    if not wanted or sum(block_size(size) for size in wanted) > limit:
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
    is quiet (a lookup or an update that starts meanwhile waits for no more than one piece)."""
    try:
        limit = retained_limit()
    except ValueError:
        return
    claimed: set[int] = set()
    settled = False  # the process has been quiet since the last wait
    for nbytes in wanted:
        with _LOCK:
            if _RESERVE:  # a newer request replaced this one
                return
            found = _smallest_serving(nbytes, claimed)
            if found is not None:
                claimed.add(id(found))
                continue
            if sum(len(b) for b in _FREE) + block_size(nbytes) > limit:
                return
        block = mmap.mmap(-1, block_size(nbytes), flags=mmap.MAP_PRIVATE)
        for start in range(0, len(block), RESERVE_PIECE):
            if not (settled and not foreground_running()):
                if not _await_quiet():
                    return
                settled = True
            _touch(block, start, min(RESERVE_PIECE, len(block) - start))
        with _LOCK:
            _FREE.append(block)
            claimed.add(id(block))
            _COUNTS["reserved"] += 1


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


def release_pool() -> None:
    """Drop every free block (their memory goes back to the system once unmapped)."""
    with _LOCK:
        _FREE.clear()


def _take(nbytes: int) -> mmap.mmap:
    """The smallest free block that holds `nbytes` without wasting more than MAX_WASTE, else a new one."""
    with _LOCK:
        block = _smallest_serving(nbytes)
        if block is not None:
            _FREE.remove(block)
            _COUNTS["reused"] += 1
            return block
        _COUNTS["made"] += 1
    return mmap.mmap(-1, block_size(nbytes), flags=mmap.MAP_PRIVATE)


def _smallest_serving(nbytes: int, claimed: AbstractSet[int] = frozenset()) -> mmap.mmap | None:
    """The smallest free block that serves `nbytes`, of those whose id is not in `claimed` (under _LOCK)."""
    fits = [b for b in _FREE if id(b) not in claimed and serves(len(b), nbytes)]
    return min(fits, key=len) if fits else None


def block_size(nbytes: int) -> int:
    """The size of a block made for `nbytes`: HEADROOM more, in whole pages."""
    return -(-int(nbytes * (1 + HEADROOM)) // mmap.PAGESIZE) * mmap.PAGESIZE


def serves(block_bytes: int, nbytes: int) -> bool:
    """Whether a free block of `block_bytes` serves a request for `nbytes`: it holds them and is at most
    MAX_WASTE times as large, or no larger than a block made for them would be."""
    return nbytes <= block_bytes <= max(nbytes * MAX_WASTE, block_size(nbytes))


def _give(block: mmap.mmap) -> None:
    """A block whose arrays are gone: kept for reuse, the oldest free ones dropped past the limit."""
    try:
        limit = retained_limit()
    except ValueError:  # a finalizer must not raise: with a malformed limit nothing is kept
        limit = 0
    with _LOCK:
        _FREE.append(block)
        held = sum(len(b) for b in _FREE)
        while _FREE and held > limit:
            held -= len(_FREE.pop(0))
