"""Cache folders of updated indexes written behind the caller: an update is served at once, and its folder
(hundreds of MB at 100k chunks: most arrays change when rows move) lands on disk a moment later.

One writer thread per process (at the lowest CPU priority) writes the folders in the order they were asked for, so
two writes never race (a write prunes the cache root, leftovers of interrupted writes included). It yields to
updates and lookups: before each folder, and between the blocks of every file it writes, it waits while one runs
(retrieval/index/foreground.py), so an update never shares the process with a write. A folder not yet started when
a newer index of the same lineage is queued is dropped: it caches files that have changed since; one being written
is abandoned at its next checkpoint (its arrays, held only for the write, are freed for the next update to reuse).
The thread is not a daemon, so a process that exits first still finishes (Python joins such threads at exit);
`write_cache` stays atomic (a temporary folder renamed into place), so a process killed mid-write leaves no half
folder to read. The last index this process built or updated is kept in memory (`remember`, `recalled`): the next
update of the same lineage starts from it, without waiting for its folder or reading it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from retrieval.index.cache import CachedIndex, write_cache
from retrieval.index.foreground import wake_writer, writer_awaited, yield_to_foreground


@dataclass(frozen=True, eq=False)
class Recent:
    """The last index this process built or updated: its cache folder and what the folder holds (or will)."""

    folder: Path
    cached: CachedIndex


_QUEUE: list[tuple[Path, CachedIndex]] = []
_WRITING: set[Path] = set()  # folders queued or being written
_LOCK = threading.Lock()
_IDLE = threading.Condition(_LOCK)
_WORKER: list[threading.Thread] = []
_CURRENT: list[tuple[str | None, threading.Event]] = []  # the folder being written: its lineage, superseded?
_RECENT: list[Recent] = []  # at most one: the last index (its arrays are shared with what was served)


def write_behind(folder: Path, cached: CachedIndex) -> None:
    """Queue `cached` to be written to `folder` (a failure is write_cache's warning), dropping the queued
    writes of the same lineage that have not started and giving up the one being written."""
    key = cached.lineage.key if cached.lineage else None
    with _LOCK:
        if key is not None:
            for stale in [job for job in _QUEUE if job[1].lineage and job[1].lineage.key == key]:
                _QUEUE.remove(stale)
                _WRITING.discard(stale[0])
            for writing_key, superseded in _CURRENT:
                if writing_key == key:
                    superseded.set()
        _QUEUE.append((folder, cached))
        _WRITING.add(folder)
        if not _WORKER:
            worker = threading.Thread(target=_write_all, name="lookup-knowledge-cache-write")
            _WORKER.append(worker)
            worker.start()
    wake_writer()  # a writer waiting for foreground work looks at once whether its folder was superseded


def _write_all() -> None:
    with contextlib.suppress(AttributeError, OSError):  # on Linux a thread has its own nice value: the writer
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # yields the CPU to updates and lookups
    while True:
        yield_to_foreground()  # a folder not yet started can still be dropped for a newer one meanwhile
        superseded = threading.Event()
        with _LOCK:
            if not _QUEUE:
                _WORKER.clear()
                _IDLE.notify_all()
                return
            folder, cached = _QUEUE.pop(0)
            _CURRENT[:] = [(cached.lineage.key if cached.lineage else None, superseded)]
        try:
            write_cache(folder, cached, checkpoint=functools.partial(_checkpoint, superseded))
        except Superseded:
            pass  # its temporary folder is gone (write_cache cleans up on any error); the newer one follows
        finally:
            del cached  # not held while the writer waits for the next folder: an update reuses its memory
            with _LOCK:
                _CURRENT.clear()
                if not any(job[0] == folder for job in _QUEUE):
                    _WRITING.discard(folder)


class Superseded(Exception):
    """A folder being written was superseded by a newer index of its lineage: abandoned at a checkpoint."""


def _checkpoint(superseded: threading.Event) -> None:
    """The writer's checkpoint: wait for foreground work (no longer once the folder is superseded), then give
    up a superseded folder: its arrays are freed at once, and an update needs the memory they hold
    (retrieval/index/arena.py)."""
    yield_to_foreground(give_up=superseded.is_set)
    if superseded.is_set():
        raise Superseded


def wait_for_writes() -> None:
    """Wait until every cache write this process asked for has finished; the writer stops yielding to
    foreground work meanwhile (some may be the caller's own: `open_index` waits from inside its own)."""
    with writer_awaited(), _LOCK:
        while _WORKER:
            _IDLE.wait()


def writing(folder: Path) -> bool:
    """Whether this process has `folder` queued or being written."""
    with _LOCK:
        return folder in _WRITING


def remember(folder: Path, cached: CachedIndex) -> None:
    """Keep `cached` (cached or to be cached in `folder`) as this process's last index."""
    with _LOCK:
        _RECENT[:] = [Recent(folder, cached)]


def recalled(cache_root: Path, lineage_key: str) -> Recent | None:
    """This process's last index when it is of lineage `lineage_key` under `cache_root`, else None."""
    with _LOCK:
        recent = _RECENT[0] if _RECENT else None
    if recent is None or recent.cached.lineage is None or recent.cached.lineage.key != lineage_key:
        return None
    return recent if recent.folder.parent == cache_root else None


def forget() -> None:
    """Drop the last index kept in memory (its memory is freed once nothing else holds it)."""
    with _LOCK:
        _RECENT.clear()
