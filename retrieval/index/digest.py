"""The XXH3-128 digest of a cache file: what its manifest records and every load checks."""

from __future__ import annotations

from pathlib import Path

import xxhash

DIGEST_BLOCK = 8 * 2**20


def file_digest(path: Path) -> str:
    """XXH3-128 of a file's bytes, read a block at a time into one buffer: a memory map of the whole file
    counted every page of it in the process's resident memory while it was hashed (a 1 GB array, 1 GB)."""
    digest = xxhash.xxh3_128()
    buffer = bytearray(DIGEST_BLOCK)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as handle:
        while read := handle.readinto(buffer):
            digest.update(view[:read])
    return digest.hexdigest()
