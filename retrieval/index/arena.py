"""An update's large arrays made in memory this process has touched before, not in memory new to it.

A one-page update at 100k chunks writes ~350 MB of new arrays (the LSA rows, the static vectors, the postings
and their weights): ~90,000 first touches of a 4 KB page. On a warm host that is ~0.1 s; on a virtual machine
whose free memory went back to its host (a balloon's free page reporting, minutes after it was freed) each
touch waits for the host, and the same update took 1.6 s instead of 0.5 s (docs/performance.md). Memory a
process holds is never handed back that way, so the arrays an update makes come from blocks of anonymous
memory that return here, not to the system, when the last array over them goes (the index they served was
replaced): the next update reuses them. At most `retained_limit()` bytes of free blocks are kept (the oldest
go first); arrays are pooled only inside `pooled()` (updates), never in a build, whose peak memory is bounded.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import mmap
import os
import threading
import weakref
from collections.abc import Iterator

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come from the C heap, which reuses its own memory
HEADROOM = 1 / 16  # a new block is this much larger than asked for: the next version's arrays grow a little
MAX_WASTE = 1.25  # a free block serves a request at least 1 / MAX_WASTE of its size
LIMIT_ENV = "LOOKUP_KNOWLEDGE_UPDATE_POOL_MB"
DEFAULT_LIMIT_MB = 1024

_POOLING: contextvars.ContextVar[bool] = contextvars.ContextVar("lookup_knowledge_pooling", default=False)
_LOCK = threading.RLock()  # reentrant: a collection inside a locked section may run a block's finalizer
_FREE: list[mmap.mmap] = []  # free blocks, oldest first
_COUNTS = {"reused": 0, "made": 0}


@contextlib.contextmanager
def pooled() -> Iterator[None]:
    """Inside this block (and this thread or task only), `empty` and `zeros` take large arrays from the pool."""
    token = _POOLING.set(True)
    try:
        yield
    finally:
        _POOLING.reset(token)


def empty(shape: int | tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """`np.empty(shape, dtype)`, over a pooled block when pooling and the array is large."""
    dtype = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = math.prod(dims)
    nbytes = count * dtype.itemsize
    if not _POOLING.get() or nbytes < MIN_BYTES or retained_limit() == 0:
        return np.empty(dims, dtype=dtype)
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


def release_pool() -> None:
    """Drop every free block (their memory goes back to the system once unmapped)."""
    with _LOCK:
        _FREE.clear()


def _take(nbytes: int) -> mmap.mmap:
    """The smallest free block that holds `nbytes` without wasting more than MAX_WASTE, else a new one."""
    with _LOCK:
        fits = [b for b in _FREE if nbytes <= len(b) <= nbytes * MAX_WASTE]
        if fits:
            block = min(fits, key=len)
            _FREE.remove(block)
            _COUNTS["reused"] += 1
            return block
        _COUNTS["made"] += 1
    size = -(-int(nbytes * (1 + HEADROOM)) // mmap.PAGESIZE) * mmap.PAGESIZE
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)


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

