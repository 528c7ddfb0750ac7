"""Give the C heap's freed memory back to the system between the stages of a large build.

glibc keeps memory that numpy frees below its mmap threshold (which grows to 32 MB as large blocks are freed)
in the heap, so a build of 1M chunks held about a gigabyte of freed blocks from its counting stage through the
rest of it (bench/build_memory.py). `malloc_trim(0)` returns the free pages; elsewhere it is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys


@functools.cache
def _trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # musl and other C libraries have no malloc_trim
        return None


TRIM_FROM_ROWS = 10_000  # below this many rows a stage frees little, and a trim of a large process's heap costs ~40 ms


def release_freed_memory(rows: int) -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim; nothing elsewhere) after a stage over
    `rows` rows, when they are many enough to have freed much (an update's small delta frees little)."""
    trim = _trim()
    if trim is not None and rows >= TRIM_FROM_ROWS:
        trim(0)
