"""Several trace files, or folders of them, read as one: each file attached read-only to an in-memory DuckDB,
and every table (`tool_invocation`, the evaluation tables, `judgement`, ...) a view over all of them,
`UNION ALL BY NAME` (a file of an older schema reads null in the columns it lacks). The rows' `host` and
`pid` columns say where each came from.

Sources are named by `$LOOKUP_KNOWLEDGE_TRACES` (one file, a folder of `*.duckdb` files, or several of either
separated by the path separator, `:`), by a `--traces` that names a folder, or by `TraceStore(sources=...)`.
Writers write one file: `default_traces()` (retrieval/paths.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import db as trace_db
from retrieval.traces.db import TraceStoreError
from retrieval.traces.ingest import sql_literal
from retrieval.traces.view import PACKED

if TYPE_CHECKING:
    import duckdb

SUFFIX = ".duckdb"
INTERNAL = frozenset({PACKED, "trace_batch", "schema_version"})  # the files' own bookkeeping, not read as one


def split(value: str) -> list[Path]:
    """The entries of a sources string (`a.duckdb:folder/`), blanks dropped."""
    return [Path(entry) for entry in value.split(os.pathsep) if entry.strip()]


def expand(targets: Sequence[str | Path]) -> list[Path]:
    """The trace files `targets` name: a folder stands for its `*.duckdb` files (sorted); each file once."""
    files: list[Path] = []
    seen: set[str] = set()
    for target in targets:
        path = Path(target)
        found = sorted(path.glob("*" + SUFFIX)) if path.is_dir() else [path]
        for file in found:
            key = os.path.realpath(file)
            if key not in seen:
                seen.add(key)
                files.append(file)
    return files


def connect_many(files: Sequence[Path], *, timeout: float) -> duckdb.DuckDBPyConnection:
    """An in-memory connection in which every table of `files` (attached read-only) is one view over all of
    them. Retried while a file is held read-write by another process, up to `timeout`; a file that is not
    a readable trace file is a TraceStoreError naming it."""
    import duckdb

    if not files:
        raise TraceStoreError("no trace files to read: the folder holds no *.duckdb file")
    con = trace_db.quiet(duckdb.connect(":memory:", config=dict(trace_db.CONNECT_CONFIG)))
    try:
        deadline = time.monotonic() + timeout
        aliases = [_attach(con, file, f"source{i}", deadline) for i, file in enumerate(files)]
        tables: dict[str, list[str]] = {}
        found = con.execute("SELECT table_catalog, table_name FROM information_schema.tables "
                            "WHERE table_schema = 'main' ORDER BY table_name").fetchall()
        for catalog, name in found:
            if catalog in aliases and name not in INTERNAL:
                tables.setdefault(name, []).append(catalog)
        for name, catalogs in tables.items():
            union = "\nUNION ALL BY NAME\n".join(f'SELECT * FROM {catalog}.main."{name}"' for catalog in catalogs)
            con.execute(f'CREATE TEMP VIEW "{name}" AS {union}')
        return con
    except BaseException:
        con.close()
        raise


def _attach(con: duckdb.DuckDBPyConnection, file: Path, alias: str, deadline: float) -> str:
    trace_db.check_file(file)
    if not file.is_file():
        raise TraceStoreError(f"cannot open trace file {file}: no such file")
    # attached read-only, retried like any open of this project while another process holds the file
    trace_db.retry_while_locked(lambda: con.execute(f"ATTACH {sql_literal(str(file))} AS {alias} (READ_ONLY)"), file,
                                timeout=max(deadline - time.monotonic(), 0.0))
    return alias
