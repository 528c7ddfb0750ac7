"""Step 3 of a row's way: the live folder beside the trace file, and `tool_invocation` as a view over it.

`tool_invocation` has two shapes: a table (the file alone holds every row) or, while the live folder
(`<file>.live/`) holds parts, a view: the file's rows (the table, renamed `tool_invocation_packed`), then
every part in the folder (by its absolute path, so a client started in any folder reads it), less the parts
the ledger (`trace_batch`) says were folded already. New parts need no DDL: the view globs the folder each
time it is read. The first drain of a writing session makes the view (`show_live`, the one step of a drain
that takes DuckDB's write lock), and the file `LIVE` in the folder then says so; the fold (fold.py) puts the
parts into the table and the table back under its name.
"""

from __future__ import annotations

import glob
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces import db as trace_db
from retrieval.traces.ingest import sql_literal
from retrieval.traces.schema import COLUMN_TYPES, COLUMNS, LEDGER, TABLE, migrate_once

if TYPE_CHECKING:
    import duckdb

PACKED = f"{TABLE}_packed"  # the file's rows while tool_invocation is the live view
PART_SUFFIX = ".parquet"
MARKER = "LIVE"
GLOB_CHARACTERS = frozenset("*?[]{}")  # a folder path holding these cannot be globbed by a view (see view_pattern)
SHOW_POLL = 0.004  # seconds between tries for the write lock that makes the live view: readers leave short gaps


def live_dir(path: Path) -> Path:
    """The live folder of trace file `path`."""
    return path.with_name(path.name + ".live")


def part_files(path: Path) -> list[Path]:
    """The finished parts in `path`'s live folder, by name."""
    return sorted(Path(p) for p in glob.glob(glob.escape(str(live_dir(path))) + "/*" + PART_SUFFIX))


def part_name(part: Path) -> str:
    """The name a part is known by in the ledger (`trace_batch`): its file name less `.parquet`."""
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


def is_live(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `tool_invocation` is the live view (not the table) in the file `con` holds."""
    found = con.execute("SELECT table_type FROM information_schema.tables WHERE table_schema = 'main' "
                        f"AND table_name = '{TABLE}'").fetchone()
    return found is not None and found[0] == "VIEW"


def typed(alias: str) -> str:
    """Every column of tool_invocation from the parts aliased `alias`, cast to its type, in the table's order."""
    return ", ".join(f'CAST({alias}."{name}" AS {kind}) AS "{name}"'
                     for name, kind in zip(COLUMNS, COLUMN_TYPES, strict=True))


def read_parts(sources: str) -> str:
    """The table function reading the parts `sources` (a quoted glob or a list of quoted paths)."""
    return f"read_parquet({sources}, filename = true, hive_partitioning = false, union_by_name = true)"


def view_sql(pattern: str) -> str:
    """The live view: the packed rows, then the parts `pattern` globs, less those the ledger holds."""
    names = ", ".join(f'"{name}"' for name in COLUMNS)
    return (f"SELECT {names} FROM {PACKED}\nUNION ALL\n"
            f"SELECT {typed('p')} FROM {read_parts(sql_literal(pattern))} AS p\n"
            f"WHERE parse_filename(p.filename, true) NOT IN (SELECT name FROM {LEDGER})")


def go_live(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Make `tool_invocation` the live view of `path` (again, harmlessly, if it is), unless the live folder has
    no part (a view over none would fail to read); False when the folder's path cannot be globbed (the parts
    then wait for the next fold)."""
    pattern = view_pattern(path)
    if pattern is None:
        return False
    if not part_files(path):  # folded meanwhile (parts are only removed under this lock): no view
        return True
    with trace_db.transaction(con):
        if not is_live(con):
            con.execute(f"ALTER TABLE {TABLE} RENAME TO {PACKED}")
        con.execute(f"CREATE OR REPLACE VIEW {TABLE} AS {view_sql(pattern)}")
    mark_live(path)
    return True


def show_live(path: Path, timeout: float) -> bool:
    """Make `tool_invocation` the live view if parts wait in the live folder and it is not (the caller holds the
    drain turn or is the keeper); False when the file stayed held for `timeout` seconds."""
    if is_marked_live(path) or not part_files(path):
        return True
    try:
        with trace_db.write_guard(path, timeout):
            con = trace_db.connect(path, timeout=timeout, threads=1, poll=SHOW_POLL)
            try:
                migrate_once(con, path)
                go_live(con, path)
            except trace_db.file_level_errors() as exc:
                raise trace_db.file_error(path, exc) from None
            finally:
                con.close()
    except trace_db.TraceStoreLocked:
        return False
    return True


def ledgered(con: duckdb.DuckDBPyConnection, names: list[str]) -> set[str]:
    """Which of the part `names` the ledger says were folded already (by a fold killed before it removed them)."""
    if not names:
        return set()
    found = con.execute(f"SELECT name FROM {LEDGER} WHERE name IN ({', '.join(map(sql_literal, names))})")
    return {row[0] for row in found.fetchall()}


def _identity(path: Path) -> str:
    info = os.stat(path)
    return f"{info.st_dev}:{info.st_ino}"
