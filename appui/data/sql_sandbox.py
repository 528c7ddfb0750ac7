"""The SQL sandbox, the app's security boundary: the Traces page's SQL box runs one read-only statement over a
private in-memory copy of the trace tables, and nowhere else.

Two layers, each enough on its own for the common attacks:
- the sandbox: a fresh in-memory DuckDB holding a copy of the trace tables, with file-system access,
  extension loading and Python replacement scans off and the configuration locked, so no statement can
  read the host, load code or touch the trace file;
- the allow-list (appui.data.sql_allow_list): the text is parsed once (no recursion) into DuckDB's own
  syntax tree; it must be one SELECT-like statement (SELECT, WITH, FROM, VALUES, SHOW, DESCRIBE, SUMMARIZE,
  or EXPLAIN of one) whose table functions are in a short safe list and whose functions avoid settings,
  logging and file readers.
Results are cut to `max_rows` and a statement running past `timeout_s` is interrupted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

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

__all__ = ["DENIED_FUNCTIONS", "DENIED_PREFIXES", "SAFE_TABLE_FUNCTIONS", "SqlRefused", "SqlResult", "check_statement",
           "run", "sandbox", "snapshot", "strip_leading_comments"]
SANDBOX_SETTINGS = {"python_enable_replacements": "false", "home_directory": "''", "temp_directory": "''",
                    "extension_directory": "'/nonexistent'", "secret_directory": "'/nonexistent'",
                    "memory_limit": "'512MB'", "threads": "1", "enable_external_access": "false",
                    "lock_configuration": "true"}


@dataclass(frozen=True)
class SqlResult:
    """Rows of one SQL-box statement, and whether they were cut to the row limit."""

    frame: pd.DataFrame
    truncated: bool


def sandbox(tables: Mapping[str, pd.DataFrame]) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory connection holding copies of `tables`, then sealed (no files, no extensions)."""
    con = duckdb.connect(":memory:", config={"autoload_known_extensions": False,
                                             "autoinstall_known_extensions": False,
                                             "allow_community_extensions": False})
    for name, frame in tables.items():
        con.register("_snapshot", frame)
        con.execute(f"CREATE TABLE {_quote(name)} AS SELECT * FROM _snapshot")
        con.unregister("_snapshot")
    for setting, value in SANDBOX_SETTINGS.items():
        con.execute(f"SET {setting} = {value}")
    return con


def run(tables: Mapping[str, pd.DataFrame], sql: str, *, max_rows: int = 10_000,
        timeout_s: float = 5.0) -> SqlResult:
    """Check `sql`, then run it on a sealed copy of `tables`, at most `max_rows` rows and `timeout_s` seconds."""
    statement = check_statement(sql)
    with sandbox(tables) as con:
        timer = threading.Timer(timeout_s, con.interrupt)
        timer.start()
        try:
            relation = con.execute(statement)
            rows = relation.fetchmany(max_rows + 1) if relation.description else []
            columns = [d[0] for d in relation.description or []]
        except duckdb.InterruptException:
            raise SqlRefused(f"the statement ran longer than {timeout_s:g} s and was stopped; add a LIMIT or "
                             f"a WHERE clause") from None
        finally:
            timer.cancel()
    return SqlResult(pd.DataFrame(rows[:max_rows], columns=columns), len(rows) > max_rows)


def snapshot(query: Callable[[str], pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Every table of the trace file's main schema, read through `query` (e.g. `TraceStore.query`)."""
    names = query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                  "AND table_type = 'BASE TABLE' ORDER BY 1")["table_name"]
    return {str(name): query(f"SELECT * FROM {_quote(str(name))}") for name in names}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
