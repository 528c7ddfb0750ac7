"""Trace rows as Parquet parts, hive-partitioned by run, for processes that cannot reach the trace file.

A worker on another host (a Dask worker) writes its rows to `<folder>/run_id=<run>/<name>.parquet`: the
columns of `tool_invocation` without `run_id`, which is the partition's folder name, so DuckDB, Spark or
Trino read the folder as one table (`read_parquet('<folder>/*/*.parquet', hive_partitioning = true)`). The
rows pass the spool's strict statement (trace_ingest) on their way, so a part holds exactly what a drain
would have stored. A part is written under a hidden temporary name and renamed into place: a reader never
sees half of one. `load_parts` inserts a run's parts into the trace file, each id once, however often it
runs (the parts stay where they are).
"""

from __future__ import annotations

import glob
import os
import re
import uuid
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces import ingest as trace_ingest
from retrieval.traces.db import CONNECT_CONFIG
from retrieval.traces.rows import encode
from retrieval.traces.schema import COLUMNS, TABLE
from retrieval.traces.writer import TraceWriter

if TYPE_CHECKING:
    import duckdb

RUN_ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SUFFIX = ".parquet"


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
    """Write the rows of `invocations` (all of run `run_id`) as one part named `name`; None when there are none.

    Rows the strict statement refuses are judged line by line (trace_ingest.judge); those still refused are
    left out with a TracePartWarning.
    """
    if not invocations:
        return None
    import duckdb

    target = run_folder(folder, run_id)
    target.mkdir(parents=True, exist_ok=True)
    final = target / f"{name}{SUFFIX}"
    temporary = target / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
    con = duckdb.connect(":memory:", config=dict(CONNECT_CONFIG))
    try:
        with trace_ingest.temporary_file([encode(inv) for inv in invocations]) as lines:
            try:
                _copy(con, [lines], temporary, judged=False)
            except trace_ingest.content_errors():
                good, bad = trace_ingest.judge(con, _read_lines(lines))
                if bad:
                    warnings.warn(f"{len(bad)} row(s) of part {final} are not valid rows (first: {bad[0][1]}); "
                                  f"left out", TracePartWarning, stacklevel=2)
                with trace_ingest.temporary_file(good) as judged:
                    _copy(con, [judged], temporary, judged=True)
        os.replace(temporary, final)
    finally:
        con.close()
        temporary.unlink(missing_ok=True)
    return final


def load_parts(store: TraceWriter, folder: str | Path, run_id: str, only: Collection[str] | None = None) -> LoadedParts:
    """Insert the rows of `run_id`'s parts that the trace file does not hold yet (by id), in one transaction.

    `only` (invocation ids) keeps the lookups a finished run scored: a task that a Dask worker died in and the
    scheduler ran again leaves the first attempt's rows in a part too, the same questions under other ids."""
    files = part_files(folder, run_id)
    if not files:
        return LoadedParts(run_id, 0, 0, 0)
    sources = ", ".join(trace_ingest.sql_literal(str(p)) for p in files)
    names = ", ".join(f'"{c}"' for c in COLUMNS)
    parts = (f"read_parquet([{sources}], hive_partitioning = true, hive_types = {{'run_id': VARCHAR}}, "
             f"union_by_name = true)")
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            total = con.execute(f"SELECT count(*) FROM {parts}").fetchone()[0]
            inserted = con.execute(
                f"INSERT INTO {TABLE} ({names}) SELECT {names} FROM {parts} AS p "
                f"WHERE p.run_id = {trace_ingest.sql_literal(run_id)} AND NOT EXISTS "
                f"(SELECT 1 FROM {TABLE} AS t WHERE t.run_id = p.run_id AND t.id = p.id) "
                + ("" if only is None else "AND list_contains(?::VARCHAR[], p.id) ")
                + "QUALIFY row_number() OVER (PARTITION BY p.id) = 1", [] if only is None else [sorted(only)]
            ).fetchone()[0]
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return LoadedParts(run_id, len(files), int(total), int(inserted))


def _copy(con: duckdb.DuckDBPyConnection, files: list[str], target: Path, *, judged: bool) -> None:
    query = f"SELECT * EXCLUDE (run_id) FROM ({trace_ingest.select(files, judged=judged)})"
    con.execute(f"COPY ({query}) TO {trace_ingest.sql_literal(str(target))} (FORMAT parquet)")


def _read_lines(path: str) -> list[bytes]:
    with open(path, "rb") as handle:
        return [line for line in handle.read().split(b"\n") if line.strip()]
