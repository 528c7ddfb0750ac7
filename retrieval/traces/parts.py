"""Trace rows as Parquet parts: the one writer of a part, for the live folder and for workers' run folders.

A part is written by DuckDB (`COPY (SELECT …) TO … (FORMAT parquet)`) under a hidden temporary name and
renamed into place, so a reader sees all of it or none. Spooled rows pass the spool's strict statement
(ingest.py) on their way, and only when it refuses a line does Python judge them one by one, so a part holds
exactly the rows and types `tool_invocation` takes. Two kinds of folder hold parts:

- the live folder beside a trace file (`<file>.live/<batch name>.parquet`), written by every drain
  (drain.py) and read by the live view until the fold (fold.py) puts the rows into the table;
- a run folder, for processes that cannot reach the trace file (a Dask worker on another host):
  `<folder>/run_id=<run>/<name>.parquet`, hive-partitioned by run (the columns without `run_id`, which is the
  folder's name), so DuckDB, Spark or Trino read the folder as one table. `load_parts` writes the rows of a
  run's parts that the file does not hold yet into the live folder and folds them: the same route as every
  other row, each id stored once however often it is loaded.
"""

from __future__ import annotations

import glob
import os
import re
import threading
import uuid
import warnings
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import ingest as trace_ingest
from retrieval.traces.db import CONNECT_CONFIG, TraceStoreError, one_line, quiet
from retrieval.traces.rows import encode
from retrieval.traces.schema import COLUMNS, TABLE

if TYPE_CHECKING:
    import duckdb

RUN_ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SUFFIX = ".parquet"
LOADED_PREFIX = "run-part-"  # a live part made from a run folder's part: `run-part-<run>-<its name>-<token>`
_local = threading.local()


class Store(Protocol):
    """What `load_parts` needs of a trace store (a TraceWriter): its file, and a read-write connection that folds."""

    path: Path

    def connect(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...


class TracePartWarning(UserWarning):
    """Rows of a part were not valid `tool_invocation` rows and were left out of it."""


@dataclass(frozen=True)
class LoadedParts:
    """What `load_parts` found for a run: its part files, the rows they hold and how many were new."""

    run_id: str
    parts: int
    rows: int
    inserted: int


def run_folder(folder: str | Path, run_id: str) -> Path:
    """The hive partition of `run_id` under `folder`; a run id that is not a plain name is a ValueError."""
    if not RUN_ID_SHAPE.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} cannot name a partition folder (letters, digits, '.', '_', '-')")
    return Path(folder) / f"run_id={run_id}"


def part_files(folder: str | Path, run_id: str) -> list[Path]:
    """The finished part files of `run_id` under `folder`, by name."""
    pattern = glob.escape(str(run_folder(folder, run_id))) + "/*" + SUFFIX
    return sorted(Path(p) for p in glob.glob(pattern))


def write_part(invocations: Sequence[ToolInvocation], folder: str | Path, run_id: str, name: str) -> Path | None:
    """Write the rows of `invocations` (all of run `run_id`) as one part named `name` of the run's folder; None
    when there are none. Rows the strict statement refuses are judged line by line (ingest.judge); those still
    refused are left out with a TracePartWarning."""
    if not invocations:
        return None
    import duckdb

    target = run_folder(folder, run_id)
    target.mkdir(parents=True, exist_ok=True)
    final = target / f"{name}{SUFFIX}"
    con = quiet(duckdb.connect(":memory:", config=dict(CONNECT_CONFIG)))
    try:
        lines = [encode(inv) for inv in invocations]
        with trace_ingest.temporary_file(lines) as source:
            bad = write_spooled_part(con, [source], lambda: lines, final, without_run_id=True)
        if bad:
            warnings.warn(f"{len(bad)} row(s) of part {final} are not valid rows (first: {bad[0][1]}); left out",
                          TracePartWarning, stacklevel=2)
    finally:
        con.close()
    return final


def load_parts(store: Store, folder: str | Path, run_id: str, only: Collection[str] | None = None) -> LoadedParts:
    """Store the rows of `run_id`'s parts that the trace file does not hold yet (by id): they become live parts,
    which the fold stores, so each id is stored once however often this runs.

    `only` (invocation ids) keeps the lookups a finished run scored: a task that a Dask worker died in and the
    scheduler ran again leaves the first attempt's rows in a part too, the same questions under other ids. The
    stored ids are read and the parts written while this holds the file read-write, and every later read-write
    connection folds before it reads: two loads of one run never both take the same rows."""
    import duckdb

    from retrieval.traces.view import live_dir

    files = part_files(folder, run_id)
    if not files:
        return LoadedParts(run_id, 0, 0, 0)
    live = live_dir(store.path)
    with store.connect() as con:  # the file as it is now (spool drained, parts folded), held while parts are made
        present = [row[0] for row in con.execute(f"SELECT id FROM {TABLE} WHERE run_id = ?", [run_id]).fetchall()]
        memory = quiet(duckdb.connect(":memory:", config={**CONNECT_CONFIG, "threads": 1}))
        try:
            sources = ", ".join(trace_ingest.sql_literal(str(p)) for p in files)
            total = memory.execute(f"SELECT count(*) FROM read_parquet([{sources}])").fetchone()[0]
            memory.execute("CREATE TEMP TABLE present AS SELECT unnest(?::VARCHAR[]) AS id", [present])
            memory.execute("CREATE TEMP TABLE wanted AS SELECT unnest(?::VARCHAR[]) AS id", [sorted(only or [])])
            wanted = "" if only is None else "AND p.id IN (SELECT id FROM wanted) "
            columns = ", ".join(f'p."{c}"' for c in COLUMNS)
            written = 0
            live.mkdir(exist_ok=True)
            for file in files:
                query = (f"SELECT {columns} FROM read_parquet([{trace_ingest.sql_literal(str(file))}], "
                         f"hive_partitioning = true, hive_types = {{'run_id': VARCHAR}}, union_by_name = true) AS p "
                         f"WHERE p.run_id = {trace_ingest.sql_literal(run_id)} {wanted}"
                         f"AND p.id NOT IN (SELECT id FROM present) QUALIFY row_number() OVER (PARTITION BY p.id) = 1")
                name = f"{LOADED_PREFIX}{run_id}-{file.name[: -len(SUFFIX)]}-{uuid.uuid4().hex[:12]}{SUFFIX}"
                rows = copy_part(memory, query, live / name)
                if not rows:  # every row of this part is stored already
                    (live / name).unlink(missing_ok=True)
                written += rows
        except duckdb.Error as exc:
            raise TraceStoreError(f"cannot load the parts of run {run_id} from {folder}: {one_line(exc)}") from None
        finally:
            memory.close()
    with store.connect():  # the fold: the new parts' rows go into the table
        pass
    return LoadedParts(run_id, len(files), int(total), written)


def write_spooled(folder: Path, batches: Sequence[tuple[Sequence[str], Callable[[], list[bytes]], str]],
                  memory: Sequence[bytes], *, fsync: bool = False) -> list[tuple[bytes, str]]:
    """Write each spool batch `(sources, lines, name)` as part `<folder>/<name>.parquet`, and the `memory` rows
    as one more, on this thread's in-memory DuckDB (one thread: a drain beside lookups). Returns the bad lines
    (with their reasons); a failure to write is a TraceStoreError."""
    import duckdb

    try:
        folder.mkdir(exist_ok=True)
        con = _memory_connection()
        bad: list[tuple[bytes, str]] = []
        for sources, lines, name in batches:
            bad += write_spooled_part(con, sources, lines, folder / (name + SUFFIX), fsync=fsync)
        if memory:
            kept = list(memory)
            with trace_ingest.temporary_file(kept) as source:
                target = folder / f"memory-{os.getpid()}-{uuid.uuid4().hex[:12]}{SUFFIX}"
                bad += write_spooled_part(con, [source], lambda: kept, target, fsync=fsync)
    except duckdb.Error as exc:
        _forget_connection()
        raise TraceStoreError(f"cannot write a part of the live folder {folder}: {one_line(exc)}") from None
    except OSError as exc:
        raise TraceStoreError(f"cannot write a part of the live folder {folder}: {exc}") from None
    return bad


def write_spooled_part(con: duckdb.DuckDBPyConnection, sources: Sequence[str], lines: Callable[[], list[bytes]],
                       target: Path, *, fsync: bool = False, without_run_id: bool = False) -> list[tuple[bytes, str]]:
    """Write the rows of the spool-format files `sources` as part `target`; lines the strict statement refuses
    are judged by `lines()`'s decode and left out. Returns the bad lines. `without_run_id` for a run folder."""
    def query(files: Sequence[str], judged: bool) -> str:
        select = trace_ingest.select(files, judged=judged)
        return f"SELECT * EXCLUDE (run_id) FROM ({select})" if without_run_id else select

    try:
        copy_part(con, query(sources, False), target, fsync=fsync)
        return []
    except trace_ingest.content_errors():
        good, bad = trace_ingest.judge(con, lines())
        with trace_ingest.temporary_file(good) as judged:
            copy_part(con, query([judged], True), target, fsync=fsync)
        return bad


def copy_part(con: duckdb.DuckDBPyConnection, query: str, target: Path, *, fsync: bool = False) -> int:
    """The one writer of a part: `query`'s rows as Parquet file `target`, all or nothing (a temporary name in
    the same folder, then a rename); returns the rows written."""
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        found = con.execute(f"COPY ({query}) TO {trace_ingest.sql_literal(str(temporary))} "
                            "(FORMAT parquet, COMPRESSION zstd)").fetchone()
        if fsync:
            fsync_file(temporary)
        os.replace(temporary, target)
        if fsync:
            fsync_file(target.parent)
        return int(found[0]) if found else 0
    finally:
        temporary.unlink(missing_ok=True)


def fsync_file(path: Path) -> None:
    """Flush `path`'s data to disk (a part before its rename, a compacted file before it replaces the old)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def warm_up() -> None:
    """Open this thread's in-memory DuckDB for parts now (~20 ms), so a drain that is waited for does not."""
    _memory_connection().execute("SELECT 1").fetchall()


def _memory_connection() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB for writing parts (one thread of DuckDB: a drain beside lookups)."""
    import duckdb

    con = getattr(_local, "con", None)
    if con is None or getattr(_local, "pid", None) != os.getpid():
        con = quiet(duckdb.connect(":memory:", config={**CONNECT_CONFIG, "threads": 1}))
        _local.con, _local.pid = con, os.getpid()
    return con


def _forget_connection() -> None:
    """Drop this thread's in-memory DuckDB after an error (the next drain starts a fresh one)."""
    import duckdb

    con, _local.con = getattr(_local, "con", None), None
    if con is not None and getattr(_local, "pid", None) == os.getpid():
        with suppress(duckdb.Error):
            con.close()
