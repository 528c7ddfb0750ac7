"""Retention: removing old rows from a trace file, and (asked for) rewriting it so it shrinks.

What goes, for a cut time:
- interactive lookups (`run_id` null) created before it, except those a kept run's query rows point at (a
  replay's `recorded-…` run scores the lookups it recorded; its rows keep them);
- with `include_runs`, also every evaluation run created before it, whole: its `eval_run`, `eval_query` and
  `eval_query_metric` rows and all its lookups, and lookups of runs the file no longer holds, created before it.
A run is never cut in half. Judgements, cleared judgements and the drain ledger are left alone.

A DELETE does not make a DuckDB file smaller: the freed blocks are reused by later rows (measured in
docs/traces.md). `compact` rewrites the file (compact.py), the only thing that shrinks it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval.traces import reader as trace_reader
from retrieval.traces.compact import compact
from retrieval.traces.db import TraceStoreError, transaction
from retrieval.traces.fold import wal_path
from retrieval.traces.schema import TABLE
from retrieval.traces.store import TraceStore

if TYPE_CHECKING:
    import duckdb

RUN_TABLES = ("eval_query_metric", "eval_query", "eval_run")
DOOMED_RUNS = "SELECT run_id FROM eval_run WHERE created_at < ?"  # with include_runs: the runs that go


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed (or, dry, would remove), per table, and the file's size (with its log) before and
    after."""

    cut: datetime
    removed: dict[str, int]
    runs: tuple[str, ...]
    size_before: int
    size_after: int
    dry_run: bool
    compacted: bool

    def to_dict(self) -> dict[str, Any]:
        return {"cut": self.cut.isoformat(sep=" "), "dry_run": self.dry_run, "removed": self.removed,
                "runs_removed": list(self.runs), "size_before": self.size_before, "size_after": self.size_after,
                "compacted": self.compacted}


def prune(path: str | Path, cut: datetime, *, include_runs: bool = False, dry_run: bool = False,
          compact_file: bool = False) -> PruneReport:
    """Remove what is older than `cut` (naive UTC) from the trace file at `path` (see the module's doc)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no trace file at {path}; pass the DuckDB file the lookups were recorded in (--traces)")
    before = file_size(path)
    if dry_run:
        with trace_reader.connect(path) as con:
            runs, counts = _plan(con, cut, include_runs)
        return PruneReport(cut, counts, runs, before, before, True, False)
    store = TraceStore(path, background=False)
    try:
        with store.connect() as con, transaction(con):
            runs, counts = _plan(con, cut, include_runs)
            _delete(con, cut, include_runs)
    finally:
        store.detach()
    if compact_file:
        try:
            compact(path)
        except TraceStoreError as exc:
            raise TraceStoreError(f"the rows were pruned, but the file was not compacted: {exc}") from None
    return PruneReport(cut, counts, runs, before, file_size(path), False, compact_file)


def file_size(path: Path) -> int:
    """The bytes of the trace file and its DuckDB log (what a copy of it takes)."""
    total = 0
    for part in (path, wal_path(path)):
        with contextlib.suppress(FileNotFoundError):  # the log comes and goes with checkpoints
            total += part.stat().st_size
    return total


def _plan(con: duckdb.DuckDBPyConnection, cut: datetime, include_runs: bool) -> tuple[tuple[str, ...], dict[str, int]]:
    """The runs that go (created before `cut`, when asked) and the rows each table loses."""
    runs: tuple[str, ...] = ()
    if include_runs:
        runs = tuple(r for (r,) in con.execute(f"{DOOMED_RUNS} ORDER BY created_at", [cut]).fetchall())
    where, params = _doomed_lookups(cut, include_runs)
    counts = {TABLE: int(con.execute(f"SELECT count(*) FROM {TABLE} WHERE {where}", params).fetchone()[0])}
    for table in RUN_TABLES:
        counts[table] = len(runs) if table == "eval_run" else int(con.execute(
            f"SELECT count(*) FROM {table} WHERE run_id IN ({DOOMED_RUNS})", [cut]).fetchone()[0]) if runs else 0
    return runs, counts


def _delete(con: duckdb.DuckDBPyConnection, cut: datetime, include_runs: bool) -> None:
    where, params = _doomed_lookups(cut, include_runs)
    con.execute(f"DELETE FROM {TABLE} WHERE {where}", params)  # first: it reads the run tables
    if include_runs:
        for table in RUN_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id IN ({DOOMED_RUNS})", [cut])


def _doomed_lookups(cut: datetime, include_runs: bool) -> tuple[str, list[Any]]:
    """The WHERE (and its parameters) of the lookups that go: old interactive ones no kept run's query rows
    point at, and with runs, the lookups of the runs that go and old ones of runs the file no longer holds."""
    kept = f"SELECT run_id FROM eval_run WHERE NOT (run_id IN ({DOOMED_RUNS}))" if include_runs else \
        "SELECT run_id FROM eval_run"
    referenced = f"SELECT invocation_id FROM eval_query WHERE invocation_id IS NOT NULL AND run_id IN ({kept})"
    interactive = f"(run_id IS NULL AND created_at < ? AND id NOT IN ({referenced}))"
    if not include_runs:
        return interactive, [cut]
    return (f"{interactive} OR run_id IN ({DOOMED_RUNS}) OR (run_id IS NOT NULL AND created_at < ? AND run_id NOT IN "
            "(SELECT run_id FROM eval_run))"), [cut, cut, cut, cut]
