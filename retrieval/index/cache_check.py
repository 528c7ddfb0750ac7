"""Checking a cache folder's files against its manifest, possibly begun before the folder is asked for.

Every file's size, then the XXH3-128 hash of all its bytes (retrieval/index/cache.py says why). At 1M chunks
that is 3.3 GB hashed in ~0.31 s on two cores, and opening the cached index first walks the corpus to find
its folder (~0.25-0.5 s of `lstat` for 66k files). `prefetch` starts the check of the folder a walk will most
likely name (the newest of the base's lineage) on a thread before the walk, so the two overlap; `check`
then takes the prefetched verdict when it is for the same files of the same manifest (its inode, size and
modification time unchanged: a folder replaced meanwhile is checked again) and begun within the last minute,
else checks now.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval.index import cache_stamp
from retrieval.index.digest import file_digest

HASH_THREADS = 4
MANIFEST = "manifest.json"
FRESH_SECONDS = 60.0  # a verdict begun longer ago (a guess no read took at the time) is not taken: checked again


def check_bytes(files: Sequence[tuple[Path, dict[str, Any]]], folder: Path | None = None) -> None:
    """Every file's size, then the hash of every file `folder`'s stamp does not vouch for (cache_stamp.py),
    against the manifest: the hashes on a few threads (XXH3 and the reads release the GIL; at 1M chunks 3.3 GB
    hashed in 0.31 s on two cores against 0.66 s on one), the largest files first so no thread is left with
    one at the end. ValueError naming the first bad file; when files were hashed and all match, the stamp is
    refreshed."""
    at, now = cache_stamp.states(path for path, _ in files)
    for path, spec in files:
        size = now[path.name][1]
        if size != spec["bytes"]:
            raise ValueError(f"{path.name} holds {size} bytes, the manifest says {spec['bytes']}")
    trusted = cache_stamp.vouched(folder, now) if folder is not None else set()
    largest_first = sorted((file for file in files if file[0].name not in trusted), key=lambda file: -file[1]["bytes"])
    if not largest_first:
        return
    with ThreadPoolExecutor(max(1, min(HASH_THREADS, os.cpu_count() or 1))) as pool:
        digests = list(pool.map(file_digest, [path for path, _ in largest_first]))
    for (path, spec), digest in zip(largest_first, digests, strict=True):
        if digest != spec["xxh3_128"]:
            raise ValueError(f"{path.name} does not match its checksum")
    if folder is not None:  # vouched for now: the next open need not read them (states taken before hashing)
        cache_stamp.record(folder, now, at, cache_stamp.fine_clock(folder))


@dataclass
class _Prefetched:
    """A check begun ahead: for which manifest and files, and its verdict once `done` is set."""

    manifest: tuple[int, int, int]
    files: list[tuple[str, dict[str, Any]]]
    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    passed: bool = False
    error: Exception | None = None


_PREFETCHED: dict[str, _Prefetched] = {}
_LOCK = threading.Lock()


def prefetch(folder: Path) -> None:
    """Begin checking `folder`'s files on a daemon thread (nothing when it has no readable manifest, or a
    check of it is already under way); `check` collects the verdict."""
    try:
        stamp = _stamp(folder / MANIFEST)
        files = _listed(folder, json.loads((folder / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return  # the read that follows reports a bad folder; a guess that fails costs nothing
    ahead = _Prefetched(stamp, [(str(path), spec) for path, spec in files])
    with _LOCK:
        if str(folder) in _PREFETCHED:
            return
        _PREFETCHED[str(folder)] = ahead
    threading.Thread(target=_run, args=(ahead, files, folder), name="cache-check", daemon=True).start()


def check(folder: Path, files: Sequence[tuple[Path, dict[str, Any]]]) -> None:
    """`check_bytes(files)` of `folder`, or the verdict of its prefetched check when that was of these very
    files under the manifest as it is now."""
    with _LOCK:
        ahead = _PREFETCHED.pop(str(folder), None)
    if ahead is not None and ahead.files == [(str(path), spec) for path, spec in files] \
            and time.monotonic() - ahead.started <= FRESH_SECONDS:
        ahead.done.wait()
        if _same_manifest(folder, ahead.manifest):
            if ahead.error is not None:
                raise ahead.error
            if ahead.passed:
                return
    check_bytes(files, folder)


def _run(ahead: _Prefetched, files: list[tuple[Path, dict[str, Any]]], folder: Path) -> None:
    try:
        check_bytes(files, folder)
        ahead.passed = True
    except (OSError, ValueError) as exc:  # the verdict, raised by `check` in the caller's thread
        ahead.error = exc
    finally:  # anything else leaves the check neither passed nor failed: `check` checks again
        ahead.done.set()


def _listed(folder: Path, manifest: Any) -> list[tuple[Path, dict[str, Any]]]:
    """The (path, spec) of every file a manifest names, as the cache's reader lists them."""
    files = manifest["files"]
    if not isinstance(files, dict):
        raise ValueError("manifest names no files")
    names = [spec["file"] for spec in files.values()]
    if not all(isinstance(name, str) and Path(name).name == name and name not in ("", ".", "..") for name in names):
        raise ValueError("manifest names a file outside its folder")  # never read: the cache's reader refuses it
    return [(folder / name, spec) for name, spec in zip(names, files.values(), strict=True)]


def _stamp(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _same_manifest(folder: Path, stamp: tuple[int, int, int]) -> bool:
    try:
        return _stamp(folder / MANIFEST) == stamp
    except OSError:
        return False
