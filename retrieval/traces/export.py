"""Exports of `tool_invocation` that stream: DuckDB's `COPY (SELECT …) TO` writes the matching rows to a file
as Parquet, CSV or JSON lines, without a Python row or a DataFrame, in bounded memory.

- Parquet keeps every column's type; the JSON columns (`arguments`, `config`, `retrieval_details`,
  `index_settings`, `tags`) are strings with Parquet's JSON logical type (pyarrow reads them as
  `extension<arrow.json>`, pandas as text).
- JSON lines hold the JSON columns as nested objects (DuckDB writes its JSON type unquoted), one row a line.
- CSV is made safe for spreadsheets in SQL: a text or JSON cell starting like a formula (= + - @ tab CR,
  retrieval.export's FORMULA_STARTS) gets a leading `'`.

Rows come newest first (as the Traces page lists them; `oldest_first` for time order). The file is written
beside `out` under a temporary name and renamed when complete, so a failed export leaves no half file. DuckDB
works on one thread within EXPORT_MEMORY.

DuckDB's sort does not spill wide rows: ordering 50,000 rows of 8.8 kB (440 MB) failed within 256 MB and
512 MB and needed 1 GB. So an ordered export sorts only the times, cuts them into slices of about
SLICE_BYTES of rows (from the table's mean row size), and copies each slice, sorted within itself, to a part
file; the parts are then joined in order (Parquet by DuckDB reading them in sequence, CSV and JSON lines by
concatenation). A slice is a half-open time range, so rows with equal times never straddle two slices, and a
trace file written in time order (as drains write it) lets each slice skip the row groups outside its range.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.traces import reader as trace_reader
from retrieval.traces.db import TraceStoreError
from retrieval.traces.filters import TraceFilter
from retrieval.traces.schema import TABLE

if TYPE_CHECKING:
    import duckdb

FORMATS = {"parquet": "FORMAT parquet, ROW_GROUP_SIZE 10000", "csv": "FORMAT csv, HEADER true",
           "jsonl": "FORMAT json"}  # a Parquet row group of 10,000 rows keeps the writer's buffers small
EXPORT_MEMORY = "256MB"  # DuckDB's memory limit while it exports (it spills past it); measured in docs/traces.md
EXPORT_THREADS = 1  # the app's process serves pages on the other core
SAMPLE_ROWS = 1000  # rows an estimate exports to measure the bytes of a row in a format
SLICE_BYTES = 64 * 2**20  # rows an ordered export sorts at once: a quarter of EXPORT_MEMORY
UNKNOWN_ROW_BYTES = 32 * 1024  # a row's size when the file's cannot be read: an evaluation row's, and more
TEXT_TYPES = ("VARCHAR", "JSON")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: the file, its format, the rows, its size and the time it took."""

    path: Path
    format: str
    rows: int
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"output": str(self.path), "format": self.format, "rows": self.rows, "bytes": self.bytes,
                "seconds": round(self.seconds, 2)}


@dataclass(frozen=True)
class ExportEstimate:
    """How many rows match, and about how many bytes their export in a format takes (from a sample)."""

    rows: int
    bytes: int


def export_traces(target: trace_reader.Target, out: str | Path, fmt: str, filters: TraceFilter | None = None, *,
                  oldest_first: bool = False, overwrite: bool = False) -> ExportResult:
    """Write the `tool_invocation` rows `filters` selects (default: every row) to `out` as `fmt` (parquet, csv
    or jsonl). `target` is the trace file or its TraceStore; an existing `out` is refused unless `overwrite`."""
    fmt = check_format(fmt)
    path = Path(out)
    if path.is_dir():
        raise ValueError(f"the export's output {path} is a folder; pass a file path such as traces.{fmt}")
    if path.exists() and not overwrite:
        raise ValueError(f"the export's output {path} exists; choose another path, or overwrite it")
    if not path.parent.is_dir():
        raise ValueError(f"the folder of the export's output {path} does not exist")
    started = time.perf_counter()
    handle, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(handle)
    try:
        with trace_reader.connect(target) as con:
            rows = _copy(con, Path(partial), fmt, filters or TraceFilter(), oldest_first=oldest_first)
        os.replace(partial, path)
    finally:
        Path(partial).unlink(missing_ok=True)
    return ExportResult(path, fmt, rows, path.stat().st_size, time.perf_counter() - started)


def estimate(target: trace_reader.Target, fmt: str, filters: TraceFilter | None = None, *,
             sample: int = SAMPLE_ROWS) -> ExportEstimate:
    """The matching rows and the bytes their export would take: the first `sample` of them exported to a
    temporary file, scaled by the count (a small Parquet sample overstates it a little: its footer)."""
    fmt = check_format(fmt)
    filters = filters or TraceFilter()
    where, params = filters.where()
    with tempfile.TemporaryDirectory(prefix="trace-estimate-") as folder, trace_reader.connect(target) as con:
        total = int(con.execute(f"SELECT count(*) FROM {TABLE}{where}", params).fetchone()[0])
        if not total:
            return ExportEstimate(0, 0)
        out = Path(folder) / f"sample.{fmt}"
        sampled = _copy(con, out, fmt, filters, limit=sample, ordered=False)
        return ExportEstimate(total, int(out.stat().st_size * total / max(sampled, 1)))


def check_format(fmt: str) -> str:
    """`fmt` in lower case if it is an export format; a ValueError naming the formats otherwise."""
    name = str(fmt).lower()
    if name not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return name


def select_sql(fmt: str, columns: list[tuple[str, str]], filters: TraceFilter, *, oldest_first: bool = False,
               ordered: bool = True, limit: int | None = None) -> tuple[str, list[Any]]:
    """The SELECT an export copies, and its parameters: for CSV, every text and JSON column (`columns`:
    name and DuckDB type) guarded against spreadsheet formulas."""
    from retrieval.export.cells import FORMULA_STARTS  # with pandas: loaded when an export runs, not for --help

    where, params = filters.where()
    listed = "*"
    if fmt == "csv":
        starts = ", ".join(f"chr({ord(c)})" for c in FORMULA_STARTS)
        guarded = [f'CASE WHEN left(CAST("{n}" AS VARCHAR), 1) IN ({starts}) THEN \'\'\'\' || CAST("{n}" AS VARCHAR) '
                   f'ELSE CAST("{n}" AS VARCHAR) END AS "{n}"' for n, kind in columns if kind in TEXT_TYPES]
        listed = f"* REPLACE ({', '.join(guarded)})" if guarded else "*"
    order = f" ORDER BY created_at {'ASC' if oldest_first else 'DESC'}, id" if ordered else ""
    cap = f" LIMIT {int(limit)}" if limit is not None else ""
    return f"SELECT {listed} FROM {TABLE}{where}{order}{cap}", params


def _copy(con: duckdb.DuckDBPyConnection, out: Path, fmt: str, filters: TraceFilter, *, oldest_first: bool = False,
          ordered: bool = True, limit: int | None = None) -> int:
    """COPY the selected rows to `out` within EXPORT_MEMORY on EXPORT_THREADS; the rows written."""
    columns = [(str(n), str(t)) for n, t in con.execute(
        f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{TABLE}' "
        "AND table_schema = 'main' ORDER BY ordinal_position").fetchall()]
    if not columns:
        raise TraceStoreError(f"the trace file has no {TABLE} table")
    con.execute(f"SET memory_limit = '{EXPORT_MEMORY}'")
    con.execute(f"SET threads = {EXPORT_THREADS}")
    try:
        if ordered and limit is None:
            return _copy_in_slices(con, out, fmt, columns, filters, oldest_first=oldest_first)
        select, params = select_sql(fmt, columns, filters, oldest_first=oldest_first, ordered=ordered, limit=limit)
        return _copy_to(con, select, params, out, FORMATS[fmt])
    finally:
        con.execute("RESET memory_limit")
        con.execute("RESET threads")


def _copy_to(con: duckdb.DuckDBPyConnection, select: str, params: list[Any], out: Path, options: str) -> int:
    literal = "'" + str(out).replace("'", "''") + "'"  # COPY takes no parameter for its file
    written = con.execute(f"COPY ({select}) TO {literal} ({options})", params).fetchone()
    return int(written[0]) if written else 0


def _copy_in_slices(con: duckdb.DuckDBPyConnection, out: Path, fmt: str, columns: list[tuple[str, str]],
                    filters: TraceFilter, *, oldest_first: bool) -> int:
    """The ordered export, slice by slice of time (see the module's doc), joined into `out`."""
    where, params = filters.where()
    total = con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
    row_bytes = _mean_row_bytes(con, int(total or 0))
    per_slice = max(100, SLICE_BYTES // max(row_bytes, 1))
    direction = "ASC" if oldest_first else "DESC"
    cuts = [row[0] for row in con.execute(
        f"SELECT created_at FROM (SELECT created_at, row_number() OVER (ORDER BY created_at {direction}) AS n "
        f"FROM {TABLE}{where}) WHERE n % {per_slice} = 1 ORDER BY n", params).fetchall()]
    cuts = sorted(set(cuts), reverse=not oldest_first)  # equal times start one slice, never two
    base, _ = select_sql(fmt, columns, filters, oldest_first=oldest_first)
    if not cuts:  # no matching row: the format's empty file (a header, or a schema)
        return _copy_to(con, base, params, out, FORMATS[fmt])
    select, order = base.split(" ORDER BY ")
    joiner = " AND " if where else " WHERE "
    with tempfile.TemporaryDirectory(prefix=".export-", dir=out.parent) as folder:
        parts, rows = [], 0
        for number, start in enumerate(cuts):
            end = cuts[number + 1] if number + 1 < len(cuts) else None
            bounds = ("created_at >= ?" + (" AND created_at < ?" if end is not None else "")) if oldest_first \
                else ("created_at <= ?" + (" AND created_at > ?" if end is not None else ""))
            part = Path(folder) / f"part-{number:06d}.{fmt}"
            options = FORMATS[fmt] if fmt != "csv" or number == 0 else "FORMAT csv, HEADER false"
            rows += _copy_to(con, f"{select}{joiner}{bounds} ORDER BY {order}",
                             [*params, start, *([end] if end is not None else [])], part, options)
            parts.append(part)
        _join(con, parts, out, fmt)
    return rows


def _mean_row_bytes(con: duckdb.DuckDBPyConnection, total: int) -> int:
    """The table's mean row size on disk (the file's used blocks over its rows): cheap, and close enough to
    size a slice."""
    used = con.execute("SELECT sum(used_blocks * block_size) FROM pragma_database_size()").fetchone() \
        if total else None
    measured = int(used[0] or 0) // total if used else 0
    return measured if measured >= 256 else UNKNOWN_ROW_BYTES  # several files read as one: attached, summed


def _join(con: duckdb.DuckDBPyConnection, parts: list[Path], out: Path, fmt: str) -> None:
    """The part files, in order, as the one file `out`."""
    if fmt == "parquet":
        listed = ", ".join("'" + str(p).replace("'", "''") + "'" for p in parts)
        con.execute("SET preserve_insertion_order = true")
        _copy_to(con, f"SELECT * FROM read_parquet([{listed}])", [], out, FORMATS[fmt])
        return
    with out.open("wb") as joined:
        for part in parts:
            with part.open("rb") as piece:
                while chunk := piece.read(1 << 20):
                    joined.write(chunk)
