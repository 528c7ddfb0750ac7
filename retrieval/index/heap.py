"""Give the C heap's freed memory back to the system between the stages of a large build.

glibc keeps memory that numpy frees below its mmap threshold (which grows to 32 MB as large blocks are freed)
in the heap, so a build of 1M chunks held about a gigabyte of freed blocks from its counting stage through the
rest of it (bench/build_memory.py). `malloc_trim(0)` returns the free pages; elsewhere it is a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Iterator


@functools.cache
def _trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # musl and other C libraries have no malloc_trim
        return None


def release_freed_memory() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim; nothing elsewhere)."""
    trim = _trim()
    if trim is not None:
        trim(0)


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy's huge-page advice off while held. An update allocates and drops a few hundred MB of arrays, many
    of them touched sparsely; with the advice each first touch zeroes a 2 MB page: a one-page update with the
    next lookup took 2.0-2.2 s at 100k chunks with it, 1.0 s without (bench/incremental.py)."""
    previous = huge_page_advice(False)
    try:
        yield
    finally:
        if previous is not None:
            huge_page_advice(previous)


def huge_page_advice(on: bool) -> bool | None:
    """Turn numpy's huge-page advice for new arrays on or off; the setting it replaces (None: no such switch)."""
    setter = _advice_setter()
    return None if setter is None else bool(setter(on))


@functools.cache
def _advice_setter():
    try:  # numpy's switch for the advice (NUMPY_MADVISE_HUGEPAGE at import); absent elsewhere, then a no-op
        from numpy._core import multiarray
    except ImportError:
        return None
    return getattr(multiarray, "_set_madvise_hugepage", None)
