"""A cache folder's integrity: every file's XXH3-128 digest (what its manifest records), the folder's stamp, and
the check a load makes against the manifest before any array is used.

The digest guards against damage, not against an attacker (retrieval/index/cache.py says why a fast
non-cryptographic one). The stamp records each file's inode, size and change times when its bytes were last known
to match the manifest's hash (written by the cache's writer, refreshed by a reader that hashed them): a file whose
state still equals its stamp has not been written since, so its hash need not be read again (3.3 GB at 1M
chunks, 0.31 s of a ~0.9 s open; git trusts its index's stat data the same way). Every write changes a file's
change time (`ctime`, which no call can set back), so a flipped, truncated or rewritten file no longer matches and
is hashed, and fails. What a stamp cannot see is damage below the filesystem (the disk's own errors). The "racy"
case git handles is a write in the same clock tick as the stamp's look: on a filesystem whose change times are
fine-grained once read (Linux 6.13+ multigrain timestamps: the writer probes it), a later write always gets a new
time; on a coarse one, only files changed at least RACY_NS before the stamp are trusted.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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


STAMP = "verified.json"
RACY_NS = 2_000_000_000
State = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


def state_of(path: Path) -> State:
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def vouched(folder: Path, states: Mapping[str, State]) -> set[str]:
    """The files (by name) whose state equals the folder's stamp, and may be trusted under its clock."""
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
        at, fine, recorded = int(stamp["at_ns"]), bool(stamp["fine_clock"]), stamp["files"]
        return {name for name, state in states.items()
                if tuple(recorded.get(name) or ()) == state and (fine or state[3] < at - RACY_NS)}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()  # no stamp, or not one we wrote: every file is hashed


def record(folder: Path, states: Mapping[str, State], at_ns: int, fine_clock: bool) -> None:
    """Write the stamp of `states` (taken at or after `at_ns`, before the hashing that vouched for them)
    atomically; a folder that cannot be written keeps hashing, nothing else."""
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".stamp-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"at_ns": at_ns, "fine_clock": fine_clock, "files": {n: list(s) for n, s in states.items()}}, out)
        os.replace(temporary, folder / STAMP)
    except OSError:
        return


def fine_clock(folder: Path, tries: int = 3) -> bool:
    """Whether a write right after a stat always gets a new change time in `folder`'s filesystem."""
    probe = folder / f".clock-probe-{os.getpid()}"
    try:
        for _ in range(tries):
            probe.write_bytes(b"a")
            before = probe.stat().st_ctime_ns
            with probe.open("r+b") as out:
                out.write(b"b")
            if probe.stat().st_ctime_ns == before:
                return False
        return True
    except OSError:
        return False
    finally:
        probe.unlink(missing_ok=True)


def states(paths: Iterable[Path]) -> tuple[int, dict[str, State]]:
    """The time now, then the state of each of `paths` by name."""
    at = time.time_ns()
    return at, {path.name: state_of(path) for path in paths}


HASH_THREADS = 4
MANIFEST = "manifest.json"


def check_bytes(files: Sequence[tuple[Path, dict[str, Any]]], folder: Path) -> None:
    """Every file's size, then the hash of every file `folder`'s stamp does not vouch for (py),
    against the manifest: the hashes on a few threads (XXH3 and the reads release the GIL; at 1M chunks 3.3 GB
    hashed in 0.31 s on two cores against 0.66 s on one), the largest files first so no thread is left with
    one at the end. ValueError naming the first bad file; when files were hashed and all match, the stamp is
    refreshed."""
    at, now = states(path for path, _ in files)
    for path, spec in files:
        size = now[path.name][1]
        if size != spec["bytes"]:
            raise ValueError(f"{path.name} holds {size} bytes, the manifest says {spec['bytes']}")
    trusted = vouched(folder, now)
    largest_first = sorted((file for file in files if file[0].name not in trusted), key=lambda file: -file[1]["bytes"])
    if not largest_first:
        return
    with ThreadPoolExecutor(max(1, min(HASH_THREADS, os.cpu_count() or 1))) as pool:
        digests = list(pool.map(file_digest, [path for path, _ in largest_first]))
    for (path, spec), digest in zip(largest_first, digests, strict=True):
        if digest != spec["xxh3_128"]:
            raise ValueError(f"{path.name} does not match its checksum")
    # vouched for now: the next open need not read them (the states were taken before hashing)
    record(folder, now, at, fine_clock(folder))
