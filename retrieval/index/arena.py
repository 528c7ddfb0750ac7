"""A pool for the large arrays an update makes, so that they lie in memory this process has touched before.

Why: memory new to a process costs a page fault at the first touch of each of its pages, and an update makes
arrays in proportion to the corpus (the entries' text, the LSA and static rows, the term counts and their
BM25 weights). On a virtual machine whose host takes freed memory back, each of those faults may wait for
the host, so the same update can take several times as long from one moment to the next; memory a process
still holds is never taken back. The measured cost and the command that reproduces it (bench/incremental.py)
are in docs/l1.md (Memory an update reuses) and docs/benchmarks.md.

How: inside `pooled()` (an update; never a build, whose peak memory is bounded), `empty` and `zeros` put each
array of MIN_BYTES or more over a block of anonymous memory. When the last array over a block goes (the index
it served was replaced), the block returns here, not to the system, and the next update's arrays are made
over it. At most `retained_limit()` bytes of free blocks are kept (the oldest go first).

A process's first updates find no such blocks (the index it started from lies in its cache files' maps, and
the one an update made is served while the next is made): retrieval/index/block_making.py makes them on other
threads, behind (while the process is quiet, for the next update) and ahead (while an update runs, its later
arrays' blocks made on the other core as it computes its first ones). A block being made is registered here
(`begin_making`), and a request it serves waits for it instead of making a second one.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import mmap
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come from the C heap, which reuses its own memory
HEADROOM = 1 / 16  # a new block is this much larger than asked for: the next version's arrays grow a little
MAX_WASTE = 1.25  # a free block serves a request at least 1 / MAX_WASTE of its size
LIMIT_ENV = "LOOKUP_KNOWLEDGE_UPDATE_POOL_MB"
DEFAULT_LIMIT_MB = 1024

_POOLING: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("lookup_knowledge_pooling", default=None)
_LOCK = threading.RLock()  # reentrant: a collection inside a locked section may run a block's finalizer
_FREE: list[mmap.mmap] = []  # free blocks, oldest first
_COUNTS = {"reused": 0, "made": 0, "reserved": 0, "ahead": 0, "waited": 0}
_LAST: list[list[int]] = [[]]  # the sizes the last pooled block asked for, in order


@dataclass(eq=False)
class Making:
    """A block another thread is making (touching its pages): the request it serves waits for it."""

    size: int
    done: threading.Event = field(default_factory=threading.Event)
    block: mmap.mmap | None = None  # handed to the request that waited, once made
    wanted: bool = False  # a request waits for it


_MAKING: list[Making] = []
_Block = mmap.mmap | Making  # a free block, or one being made


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
    """Blocks reused (free when asked for), made (by the request), reserved (behind), made ahead and waited for
    (being made ahead when asked for) since the process started, and the free blocks and bytes held now."""
    with _LOCK:
        return dict(_COUNTS, free_blocks=len(_FREE), free_bytes=sum(len(b) for b in _FREE))


def last_sizes() -> list[int]:
    """The sizes of the pooled arrays the last `pooled()` block of this process asked for, in order."""
    return list(_LAST[0])


def requests_so_far() -> list[int] | None:
    """The sizes the running `pooled()` block of this thread or task has asked for so far (the same list
    object as it grows), or None outside one."""
    return _POOLING.get()


def held_bytes() -> int:
    """Bytes of free blocks and of blocks being made."""
    with _LOCK:
        return sum(len(b) for b in _FREE) + sum(m.size for m in _MAKING)


def claim_existing(nbytes: int, claimed: set[int]) -> bool:
    """Whether a free block, or one being made that no request waits for, serves `nbytes` and its id is not in
    `claimed`; the smallest such is added to `claimed`."""
    with _LOCK:
        found = _smallest_serving(nbytes, [*_FREE, *(m for m in _MAKING if not m.wanted)], claimed)
    if found is not None:
        claimed.add(id(found))
    return found is not None


def add_free(block: mmap.mmap, counter: str) -> None:
    """A block made ahead of the requests it serves, free for them; counted under `counter`."""
    with _LOCK:
        _FREE.append(block)
        _COUNTS[counter] += 1


def new_block(nbytes: int) -> mmap.mmap:
    """A block of anonymous memory for an array of `nbytes` (`block_size`), its pages not yet touched."""
    return mmap.mmap(-1, block_size(nbytes), flags=mmap.MAP_PRIVATE)


def begin_making(nbytes: int) -> Making:
    """Register a block for `nbytes` that the caller is about to make; `finish_making` hands it over."""
    making = Making(block_size(nbytes))
    with _LOCK:
        _MAKING.append(making)
    return making


def finish_making(making: Making, block: mmap.mmap | None, counter: str) -> None:
    """The block registered as `making`, made (None: given up): to the request waiting for it, else free."""
    with _LOCK:
        _MAKING.remove(making)
        if block is not None:
            _COUNTS[counter] += 1
            if making.wanted:
                making.block = block
            else:
                _FREE.append(block)
        making.done.set()


def release_pool() -> None:
    """Drop every free block (their memory goes back to the system once unmapped)."""
    with _LOCK:
        _FREE.clear()


def _take(nbytes: int) -> mmap.mmap:
    """The smallest free block that holds `nbytes` without wasting more than MAX_WASTE, else the smallest one
    being made that will (waiting for it: its pages are being touched already), else a new one."""
    with _LOCK:
        block = _smallest_serving(nbytes, _FREE)
        if block is not None:
            _FREE.remove(block)
            _COUNTS["reused"] += 1
            return block
        making = _smallest_serving(nbytes, [m for m in _MAKING if not m.wanted])
        if making is not None:
            making.wanted = True
    if making is not None:
        making.done.wait()
        if making.block is not None:
            with _LOCK:
                _COUNTS["waited"] += 1
            return making.block
    with _LOCK:
        _COUNTS["made"] += 1
    return new_block(nbytes)


def _smallest_serving(nbytes: int, blocks: Sequence[_Block], claimed: AbstractSet[int] = frozenset()) -> _Block | None:
    """The smallest of `blocks` (free or being made) that serves `nbytes`, of those whose id is not in `claimed`
    (under _LOCK)."""
    fits = [b for b in blocks if id(b) not in claimed and serves(_size(b), nbytes)]
    return min(fits, key=_size) if fits else None


def _size(block: _Block) -> int:
    return block.size if isinstance(block, Making) else len(block)


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
