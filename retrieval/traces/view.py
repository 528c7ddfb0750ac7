"""`tool_invocation`'s two shapes: a table (folded: the file alone holds every row) or, while the live folder
holds parts, a view over the file's rows and the parts.

Going live (`go_live`, by the drain that wrote the first part) renames the table to `tool_invocation_packed`
and makes `tool_invocation` a view: those rows, then every part in the live folder (by its absolute path, so
a client started in any folder reads it), less the parts the ledger (`trace_batch`) says were folded already.
New parts need no DDL: the view globs the folder each time it is read. Folding (`fold`, by the keeper when
writers are idle, and by every read-write connection of this project before it hands the file over)
inserts the parts' rows into the table in one transaction that also puts the table back under its name and
records the parts in the ledger, then removes the parts while it still holds DuckDB's lock, so no reader
sees a part both folded and in the folder. Both run with the drain turn held (trace_turn).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import live as trace_live
from retrieval.traces.ingest import sql_literal
from retrieval.traces.pending import LEDGER, LEDGER_DAYS
from retrieval.traces.schema import COLUMN_TYPES, COLUMNS, TABLE

if TYPE_CHECKING:
    import duckdb

PACKED = f"{TABLE}_packed"  # the file's rows while tool_invocation is the live view


def is_live(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `tool_invocation` is the live view (not the table) in the file `con` holds."""
    found = con.execute("SELECT table_type FROM information_schema.tables WHERE table_schema = 'main' "
                        f"AND table_name = '{TABLE}'").fetchone()
    return found is not None and found[0] == "VIEW"


def _typed(alias: str) -> str:
    """Every column of tool_invocation from the parts aliased `alias`, cast to its type, in the table's order."""
    return ", ".join(f'CAST({alias}."{name}" AS {kind}) AS "{name}"'
                     for name, kind in zip(COLUMNS, COLUMN_TYPES, strict=True))


def _parts(sources: str) -> str:
    return f"read_parquet({sources}, filename = true, hive_partitioning = false, union_by_name = true)"


def view_sql(pattern: str) -> str:
    """The live view: the packed rows, then the parts `pattern` globs, less those the ledger holds."""
    names = ", ".join(f'"{name}"' for name in COLUMNS)
    return (f"SELECT {names} FROM {PACKED}\nUNION ALL\n"
            f"SELECT {_typed('p')} FROM {_parts(sql_literal(pattern))} AS p\n"
            f"WHERE parse_filename(p.filename, true) NOT IN (SELECT name FROM {LEDGER})")


def go_live(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Make `tool_invocation` the live view of `path` (again, harmlessly, if it is), unless the live folder has
    no part (a view over none would fail to read); False when the folder's path cannot be globbed (the parts
    then wait for the next fold)."""
    pattern = trace_live.view_pattern(path)
    if pattern is None:
        return False
    if not trace_live.part_files(path):  # folded meanwhile (parts are only removed under this lock): no view
        return True
    con.execute("BEGIN TRANSACTION")
    try:
        if not is_live(con):
            con.execute(f"ALTER TABLE {TABLE} RENAME TO {PACKED}")
        con.execute(f"CREATE OR REPLACE VIEW {TABLE} AS {view_sql(pattern)}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    trace_live.mark_live(path)
    return True


def fold(con: duckdb.DuckDBPyConnection, path: Path, *, oldest: int | None = None) -> int:
    """Fold the live parts of `path` into `tool_invocation`, a table again; returns the rows inserted. With
    `oldest`, only that many of the oldest parts, and the view stays (writers are busy: a short hold of the
    lock now and then keeps the folder from growing without end). The caller holds the drain turn and `con`
    (read-write). Parts are removed after the commit, before `con` closes: no reader can be between the two."""
    parts = trace_live.part_files(path)
    live = is_live(con)
    if not parts and not live:
        return 0
    whole = oldest is None or len(parts) <= oldest
    if whole:
        trace_live.unmark_live(path)  # before the commit: a marker without the view would hide the next parts
    else:
        parts = sorted(parts, key=_mtime)[:oldest]  # the rest stay in the live view
    target = PACKED if live and not whole else TABLE
    names = [trace_live.part_name(part) for part in parts]
    done = _ledgered(con, names)
    todo = [part for part, name in zip(parts, names, strict=True) if name not in done]
    inserted = 0
    con.execute("BEGIN TRANSACTION")
    try:
        if live and whole:
            con.execute(f"DROP VIEW {TABLE}")
            con.execute(f"ALTER TABLE {PACKED} RENAME TO {TABLE}")
        if todo:
            sources = "[" + ", ".join(sql_literal(str(part)) for part in todo) + "]"
            inserted = con.execute(f"INSERT INTO {target} BY NAME SELECT {_typed('p')} FROM {_parts(sources)} AS p "
                                   f"QUALIFY row_number() OVER (PARTITION BY p.id) = 1").fetchone()[0]
            values = ", ".join(f"({sql_literal(trace_live.part_name(part))}, now()::TIMESTAMP)" for part in todo)
            con.execute(f"INSERT INTO {LEDGER} VALUES {values}")
            con.execute(f"DELETE FROM {LEDGER} WHERE drained_at < now()::TIMESTAMP - INTERVAL {LEDGER_DAYS} DAY")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    for part in parts:  # and the batch a killed drainer left behind after writing its part, if any
        _remove_batch(path, trace_live.part_name(part))
        part.unlink(missing_ok=True)
    if whole:
        with contextlib.suppress(OSError):  # the emptied folder (not if a temporary part is in it)
            trace_live.live_dir(path).rmdir()
    return int(inserted)


def _mtime(part: Path) -> float:
    try:
        return part.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _remove_batch(path: Path, name: str) -> None:
    """The batch file `name` beside `path`, if a drainer killed after writing its part left it (its rows are
    in the part just folded)."""
    if name.startswith(path.name + ".pending.jsonl.") and name.endswith(".draining"):
        path.with_name(name).unlink(missing_ok=True)


def _ledgered(con: duckdb.DuckDBPyConnection, names: list[str]) -> set[str]:
    if not names:
        return set()
    found = con.execute(f"SELECT name FROM {LEDGER} WHERE name IN ({', '.join(map(sql_literal, names))})")
    return {row[0] for row in found.fetchall()}
