"""The live folder: spooled rows as Parquet parts beside the trace file, written without DuckDB's file lock.

A drain (the background drainers, `flush`, the keeper) claims the spool's batches (trace_pending) and
writes each as one part, `<file>.live/<batch name>.parquet`, through the spool's strict `read_json`
statement (trace_ingest) in an in-memory DuckDB: the expensive work (parsing, checking, compressing) takes
no lock on the trace file, so readers and other writers never wait for it. A part is written under a
temporary name and renamed into place, so a reader sees all of it or none; its name is its batch's, so a
batch drained twice (its drainer killed before removing it) gives the same part again, not a second one.
While the folder holds parts, `tool_invocation` is a view over the file's rows and the parts (trace_view),
and the file `LIVE` in the folder says so; the keeper folds the parts into the file once writers are idle.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import ingest as trace_ingest
from retrieval.traces.db import CONNECT_CONFIG, TraceStoreError, one_line
from retrieval.traces.pending import Pending
from retrieval.traces.spool import Spool, TraceSpoolRejectedWarning

if TYPE_CHECKING:
    import duckdb

PART_SUFFIX = ".parquet"
MARKER = "LIVE"
GLOB_CHARACTERS = frozenset("*?[]{}")  # a folder path holding these cannot be globbed by a view (see view_pattern)
_local = threading.local()


@dataclass(frozen=True)
class LiveDrain:
    """What one drain into the live folder did: parts written and lines rejected."""

    parts: int
    rejected: int


def live_dir(path: Path) -> Path:
    """The live folder of trace file `path`."""
    return path.with_name(path.name + ".live")


def part_files(path: Path) -> list[Path]:
    """The finished parts in `path`'s live folder, by name."""
    return sorted(Path(p) for p in glob.glob(glob.escape(str(live_dir(path))) + "/*" + PART_SUFFIX))


def part_name(part: Path) -> str:
    """The name a part is known by in the ledger (`trace_batch`): its batch's name."""
    return part.name[: -len(PART_SUFFIX)]


def view_pattern(path: Path) -> str | None:
    """The absolute glob of `path`'s parts that the live view reads, or None when the folder's path holds glob
    characters (the parts then wait for the next fold)."""
    folder = os.path.abspath(live_dir(path))
    if GLOB_CHARACTERS & set(folder):
        return None
    return folder + "/*" + PART_SUFFIX


def is_marked_live(path: Path) -> bool:
    """Whether the marker says `path`'s `tool_invocation` is the live view (it names the file by device and
    inode, so a trace file made anew is not taken for the old one)."""
    try:
        return (live_dir(path) / MARKER).read_text() == _identity(path)
    except OSError:
        return False


def mark_live(path: Path) -> None:
    """Written after the commit that made the view: a marker is never there without the view."""
    marker = live_dir(path) / MARKER
    temporary = marker.with_name(f".{MARKER}.{uuid.uuid4().hex[:8]}")
    temporary.write_text(_identity(path))
    os.replace(temporary, marker)


def unmark_live(path: Path) -> None:
    """Removed before the commit that folds the parts: a missing marker only makes the next drain check."""
    (live_dir(path) / MARKER).unlink(missing_ok=True)


def drain_to_parts(path: Path, spool: Spool, memory: deque[bytes]) -> LiveDrain:
    """Move the spooled rows (and `memory`'s) into parts in the live folder; the caller holds the drain turn.
    Bad lines go to the rejected file with a TraceSpoolRejectedWarning; a failure to write a part is a
    TraceStoreError, and the rows stay in their batch files (or memory) for the next drain."""
    try:
        pending = Pending.collect(spool, memory)
    except OSError as exc:
        raise TraceStoreError(f"cannot read the spool {spool.path}: {exc}") from None
    try:
        written, bad = _write_parts(pending, live_dir(path), fsync=spool.fsync) if pending else (0, [])
        try:
            if bad:
                spool.reject(bad)
                warnings.warn(f"{len(bad)} spooled row(s) of {path} are not valid rows (first: {bad[0][1]}); "
                              f"moved to {spool.rejected_path}", TraceSpoolRejectedWarning, stacklevel=3)
            pending.finish()
        except OSError as exc:
            raise TraceStoreError(f"cannot clear the spool {spool.path}: {exc}") from None
        return LiveDrain(written, len(bad))
    finally:
        pending.release(memory)


def _write_parts(pending: Pending, folder: Path, *, fsync: bool) -> tuple[int, list[tuple[bytes, str]]]:
    import duckdb

    try:
        folder.mkdir(exist_ok=True)
        con = _memory_connection()
        bad: list[tuple[bytes, str]] = []
        written = 0
        for batch in pending.batches:
            bad += write_part(con, [batch.source], batch.lines, folder / (batch.path.name + PART_SUFFIX), fsync=fsync)
            written += 1
        if pending.memory:
            kept = pending.memory
            with trace_ingest.temporary_file(kept) as name:
                target = folder / f"memory-{os.getpid()}-{uuid.uuid4().hex[:12]}{PART_SUFFIX}"
                bad += write_part(con, [name], lambda: list(kept), target, fsync=fsync)
                written += 1
    except duckdb.Error as exc:
        _forget_connection()
        raise TraceStoreError(f"cannot write a part of the live folder {folder}: {one_line(exc)}") from None
    except OSError as exc:
        raise TraceStoreError(f"cannot write a part of the live folder {folder}: {exc}") from None
    pending.stored = True
    return written, bad


def write_part(con: duckdb.DuckDBPyConnection, sources: Sequence[str], lines: Callable[[], list[bytes]],
               target: Path, *, fsync: bool = False) -> list[tuple[bytes, str]]:
    """Write the rows of the spool-format files `sources` as part `target` (all or nothing: a temporary name,
    then a rename); lines the strict statement refuses are judged by `lines()`'s decode. Returns the bad lines."""
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        bad: list[tuple[bytes, str]] = []
        try:
            _copy(con, sources, temporary, judged=False)
        except trace_ingest.content_errors():
            good, bad = trace_ingest.judge(con, lines())
            with trace_ingest.temporary_file(good) as judged:
                _copy(con, [judged], temporary, judged=True)
        if fsync:
            fsync_file(temporary)
        os.replace(temporary, target)
        if fsync:
            fsync_file(target.parent)
        return bad
    finally:
        temporary.unlink(missing_ok=True)


def _copy(con: duckdb.DuckDBPyConnection, sources: Sequence[str], target: Path, *, judged: bool) -> None:
    con.execute(f"COPY ({trace_ingest.select(sources, judged=judged)}) TO {trace_ingest.sql_literal(str(target))} "
                "(FORMAT parquet, COMPRESSION zstd)")


def _memory_connection() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB for writing parts (one thread of DuckDB: a drain beside lookups)."""
    import duckdb

    con = getattr(_local, "con", None)
    if con is None or getattr(_local, "pid", None) != os.getpid():
        con = duckdb.connect(":memory:", config={**CONNECT_CONFIG, "threads": 1})
        _local.con, _local.pid = con, os.getpid()
    return con


def _forget_connection() -> None:
    """Drop this thread's in-memory DuckDB after an error (the next drain starts a fresh one)."""
    import duckdb

    con, _local.con = getattr(_local, "con", None), None
    if con is not None and getattr(_local, "pid", None) == os.getpid():
        with contextlib.suppress(duckdb.Error):
            con.close()


def fsync_file(path: Path) -> None:
    """Flush `path`'s data to disk (a part before its rename, a compacted file before it replaces the old)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _identity(path: Path) -> str:
    info = os.stat(path)
    return f"{info.st_dev}:{info.st_ino}"
