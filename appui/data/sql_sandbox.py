"""The SQL sandbox, the app's security boundary: the Traces page's SQL box runs one read-only statement on the
trace file itself, in place, and nowhere else. No table is copied: DuckDB reads the columns a statement needs
from the file, within the sandbox's memory limit.

Two layers, each enough on its own for the common attacks:
- the sealed connection (`sandbox`): the trace file opened read-only, with extension autoloading and
  installing, community extensions, persistent secrets, Python replacement scans and spilling to disk off,
  memory and threads capped, then external access off (no other file, no network, no ATTACH, COPY or
  EXPORT) and the configuration locked; the settings are read back before any statement runs;
- the allow-list (appui.data.sql_allow_list): the text is parsed once (no recursion) into DuckDB's own
  syntax tree; it must be one SELECT-like statement (SELECT, WITH, FROM, VALUES, SHOW, DESCRIBE, SUMMARIZE,
  or EXPLAIN of one) whose table functions are in a short safe list and whose functions avoid settings,
  logging and file readers.
Results are fetched in one page of at most `max_rows` rows (the rest never leave DuckDB), text cells longer
than CELL_CHARS are cut for display, and a statement running past `timeout_s` is interrupted.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from appui.data.sql_allow_list import (
    DENIED_FUNCTIONS,
    DENIED_PREFIXES,
    SAFE_TABLE_FUNCTIONS,
    SqlRefused,
    check_statement,
    strip_leading_comments,
)
from retrieval.traces import (
    TABLE,
    TraceStoreError,
    check_file,
    is_busy_error,
    is_lock_error,
    live_dir,
    lock_holder,
    one_line,
)

__all__ = ["DENIED_FUNCTIONS", "DENIED_PREFIXES", "SAFE_TABLE_FUNCTIONS", "SqlBoxUnavailable", "SqlLimitExceeded",
           "SqlRefused", "SqlResult", "check_statement", "run", "sandbox", "strip_leading_comments"]

MAX_ROWS = 1_000  # rows a statement shows; the rest stay in DuckDB (LIMIT/OFFSET reaches them)
TIMEOUT_S = 5.0  # a statement running longer is interrupted
MEMORY_LIMIT = "512MB"  # DuckDB's buffer pool for the SQL box: file pages, hash tables, sorts (no spilling)
THREADS = 2
BUSY_TIMEOUT_S = 3.0  # how long a run waits for a writer to let go of the file (as the app's LOCK_TIMEOUT)
CELL_CHARS = 2_000  # longer text cells (a whole retrieval_details) are cut for display
# Set at connect time; DuckDB applies a config dict in no fixed order, so nothing here depends on another
CONNECT_SETTINGS: dict[str, Any] = {
    "autoload_known_extensions": False, "autoinstall_known_extensions": False, "allow_community_extensions": False,
    "allow_persistent_secrets": False, "python_enable_replacements": False, "python_scan_all_frames": False,
    "memory_limit": MEMORY_LIMIT, "threads": THREADS, "temp_directory": "", "home_directory": "",
    "extension_directory": "/nonexistent", "secret_directory": "/nonexistent"}
# Then in this order (temp_directory cannot change once external access is off, nothing once locked)
SEAL_SETTINGS = (("enable_progress_bar", "false"),  # DuckDB draws it on the server's stdout past 2 s
                 ("enable_external_access", "false"), ("lock_configuration", "true"))
# Read back before any statement runs: a setting missing or different keeps the SQL box closed
SEALED = {**{name: str(value).lower() for name, value in CONNECT_SETTINGS.items()
             if name not in ("memory_limit", "home_directory", "extension_directory", "secret_directory")},
          **dict(SEAL_SETTINGS)}


class SqlLimitExceeded(SqlRefused):
    """The statement ran past the SQL box's time or memory limit and was stopped."""


class SqlBoxUnavailable(TraceStoreError):
    """The trace file cannot be read now (missing, no table yet, held by a writer); the message says why."""


@dataclass(frozen=True)
class SqlResult:
    """The first page of one SQL-box statement's rows: whether more rows exist, and how many cells were cut."""

    frame: pd.DataFrame
    truncated: bool
    cut_cells: int = 0
    max_rows: int = MAX_ROWS

    def notice(self) -> str:
        """What the page says under the rows: more rows exist, long cells were cut; empty if neither."""
        parts = [f"First {self.max_rows:,} rows shown; add LIMIT/OFFSET for more."] if self.truncated else []
        if self.cut_cells:
            parts.append(f"{self.cut_cells:,} cell(s) over {CELL_CHARS:,} characters cut; extract parts of a JSON "
                         f"column with -> or ->>.")
        return " ".join(parts)


def sandbox(path: str | os.PathLike[str], *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> duckdb.DuckDBPyConnection:
    """The trace file at `path` opened read-only and sealed, retried for up to `busy_timeout_s` s while a writer
    holds it (another process's lock, or this process's read-write connection); SqlBoxUnavailable if it is
    missing, has no trace table or stays busy."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the SQL box reads the trace file in place: pass its path (e.g. store.path), "
                        f"not a {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise SqlBoxUnavailable(f"there is no trace file at {path} yet; it is made when a lookup is first recorded")
    check_file(path)  # a foreign file is named before DuckDB sniffs it
    deadline, delay = time.monotonic() + busy_timeout_s, 0.002
    while True:
        try:
            con = duckdb.connect(str(path), read_only=True, config=CONNECT_SETTINGS)
            break
        except duckdb.Error as exc:
            if not is_busy_error(exc):
                raise SqlBoxUnavailable(f"cannot open trace file {path} read-only: {one_line(exc)}") from None
            if time.monotonic() >= deadline:
                holder = lock_holder(str(exc)) if is_lock_error(exc) else "this app (a lookup or a drain)"
                raise SqlBoxUnavailable(f"the trace file {path} is being written by {holder}; try again in a "
                                        f"moment") from None
        time.sleep(min(delay * (0.5 + random.random()), max(deadline - time.monotonic(), 0.0)))
        delay = min(delay * 2, 0.1)
    try:
        _allow_live_parts(con, path)
        _seal(con)
        _require_table(con, path)
    except BaseException:
        con.close()
        raise
    return con


def _allow_live_parts(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """While writers work, `tool_invocation` is a view over the file's rows and the Parquet parts in its live
    folder (retrieval.traces.view): the one folder the sealed connection may still read, by DuckDB's
    `allowed_directories` (set before external access goes off, then locked with the rest). A second SQL-box
    connection to the file shares the first's DuckDB instance, already locked: its SET is refused, and the
    setting read back must be the same folder."""
    folder = f"{live_dir(path).resolve()}/"
    with contextlib.suppress(duckdb.Error):
        con.execute("SET allowed_directories = ['{}']".format(folder.replace("'", "''")))
    allowed = con.execute("SELECT current_setting('allowed_directories')").fetchone()[0]
    if list(allowed or []) != [folder]:
        raise SqlBoxUnavailable(f"the SQL box stays closed: DuckDB {duckdb.__version__} did not limit file reads "
                                f"to {folder} (allowed_directories is {allowed})")


def _seal(con: duckdb.DuckDBPyConnection) -> None:
    # a session setting (not in the connect dict): else DuckDB draws a bar on the server's terminal for statements
    # over 2 s; a PRAGMA, which DuckDB 1.5 takes even once the configuration is locked (a second connection)
    con.execute("PRAGMA disable_progress_bar")
    for name, value in SEAL_SETTINGS:
        # refused only when another SQL-box connection to this file sealed the shared instance first: read back below
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET {name} = {value}")
    current = dict(con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN "
                               f"({', '.join('?' * len(SEALED))})", list(SEALED)).fetchall())
    wrong = {name: current.get(name, "(no such setting)") for name, value in SEALED.items()
             if current.get(name) != value}
    if wrong:
        raise SqlBoxUnavailable(f"the SQL box stays closed: DuckDB {duckdb.__version__} did not apply "
                                f"{', '.join(f'{k}={v}' for k, v in wrong.items())}")


def _require_table(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                        "AND schema_name = 'main' AND table_name = ?", [TABLE]).fetchone()[0]
    if not found:
        raise SqlBoxUnavailable(f"trace file {path} has no {TABLE} table yet; it is made when a lookup is first "
                                f"recorded there")


def run(path: str | os.PathLike[str], sql: str, *, max_rows: int = MAX_ROWS, timeout_s: float = TIMEOUT_S,
        busy_timeout_s: float = BUSY_TIMEOUT_S) -> SqlResult:
    """Check `sql` (the allow-list), then run it on the sealed trace file at `path` (waiting up to
    `busy_timeout_s` for a writer): the first `max_rows` rows, within `timeout_s` s and MEMORY_LIMIT.
    SqlRefused (SqlLimitExceeded for the limits), SqlBoxUnavailable, or duckdb.Error for a statement DuckDB
    rejects (a wrong column name)."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be a whole number of rows, at least 1; got {max_rows!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be a positive number of seconds; got {timeout_s!r}")
    statement = check_statement(sql)
    with sandbox(path, busy_timeout_s=busy_timeout_s) as con:
        rows, columns = _fetch(con, statement, max_rows + 1, timeout_s)
    cells = [[_shorten(value) for value in row] for row in rows[:max_rows]]
    cut = sum(isinstance(value, str) and len(value) > CELL_CHARS for row in rows[:max_rows] for value in row)
    return SqlResult(pd.DataFrame(cells, columns=columns), len(rows) > max_rows, cut, max_rows)


def _fetch(con: duckdb.DuckDBPyConnection, statement: str, limit: int,
           timeout_s: float) -> tuple[list[tuple[Any, ...]], list[str]]:
    """At most `limit` rows of `statement` (DuckDB streams them: the rest are never made), interrupted after
    `timeout_s`."""
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        cursor = con.execute(statement)
        if not cursor.description:
            return [], []
        return cursor.fetchmany(limit), [column[0] for column in cursor.description]
    except duckdb.InterruptException:
        raise SqlLimitExceeded(f"the statement ran longer than {timeout_s:g} s and was stopped; add a WHERE clause "
                               f"or a LIMIT, or group by the plain columns (filter_decision, retrieval_layer, "
                               f"l1_status) instead of JSON paths") from None
    except duckdb.OutOfMemoryException:
        raise SqlLimitExceeded(f"the statement needed more than the SQL box's {MEMORY_LIMIT} of memory and was "
                               f"stopped; aggregate, add a WHERE clause or a LIMIT, or select fewer columns (an "
                               f"ORDER BY without LIMIT holds every row)") from None
    finally:
        timer.cancel()


def _shorten(value: Any) -> Any:
    if isinstance(value, str) and len(value) > CELL_CHARS:
        return f"{value[:CELL_CHARS]}… [{len(value) - CELL_CHARS:,} more characters]"
    return value
