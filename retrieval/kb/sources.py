"""What a knowledge base was read from, record by record, so a later load reads only what changed.

A Markdown base records, per file it listed, the file's stat line (size, inode, modification and change
times: a stat is cheap) and the XXH3-128 of its bytes (or of the marker of an unreadable file); a JSONL
corpus records, per usable line, the XXH3-128 of the line's bytes and its `_id`. Each record names the entry
it gave (-1: none, a skipped file or an excluded record). A file whose stat line is unchanged is not read
again; one whose stat line changed but whose bytes hash the same (a `touch`, a checkout rewriting the same
bytes) keeps its entry; only what hashes differently is parsed (retrieval/kb/delta.py).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xxhash


@dataclass(frozen=True, eq=False)
class SourceTable:
    """One row per file (Markdown) or usable line (JSONL): its name (path or `_id`), stat line (Markdown
    only), XXH3-128 digest (two uint64) and the position of the entry it gave (-1: none)."""

    names: Sequence[str]
    stats: Sequence[str]
    digests: np.ndarray  # uint64 (rows, 2)
    entries: np.ndarray  # int64 (rows,)

    def __len__(self) -> int:
        return len(self.entries)

    def name_list(self) -> list[str]:
        """Every row's name, decoded in one pass (a cached table holds them as a text column)."""
        names = self.names
        take = getattr(names, "take", None)
        return take(np.arange(len(names))) if take is not None else list(names)

    @classmethod
    def of(cls, rows: Sequence[tuple[str, str, tuple[int, int], int]]) -> SourceTable:
        """A table from (name, stat line, digest, entry) rows."""
        digests = np.asarray([r[2] for r in rows], dtype=np.uint64).reshape(len(rows), 2)
        return cls(tuple(r[0] for r in rows), tuple(r[1] for r in rows), digests,
                   np.asarray([r[3] for r in rows], dtype=np.int64))


def digest(data: bytes) -> tuple[int, int]:
    """XXH3-128 of `data` as two 64-bit halves (high, low): what a source table stores."""
    value = xxhash.xxh3_128_intdigest(data)
    return value >> 64, value & 0xFFFF_FFFF_FFFF_FFFF


def digest_hex(pair: tuple[int, int]) -> str:
    """A digest pair as 32 hex digits (what the base's fingerprint hashes)."""
    return f"{pair[0]:016x}{pair[1]:016x}"


def stat_line(full: str, relative: str) -> bytes:
    """The facts of the link itself and of what it points to; a file that is not a link is stat-ed once
    (the second stat gave the same facts: the line is unchanged, and on a base of many files it slowed every
    open)."""
    try:
        st = os.lstat(full)
        link = f"{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    except OSError as exc:
        st, link = None, type(exc).__name__
    if st is not None and not stat.S_ISLNK(st.st_mode):
        return f"{relative}|{link}|{link}\n".encode("utf-8", "surrogatepass")
    try:
        target_st = os.stat(full)
        target = f"{target_st.st_size}:{target_st.st_ino}:{target_st.st_mtime_ns}:{target_st.st_ctime_ns}"
    except OSError as exc:
        target = type(exc).__name__
    return f"{relative}|{link}|{target}\n".encode("utf-8", "surrogatepass")
