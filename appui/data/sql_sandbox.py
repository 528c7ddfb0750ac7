"""The SQL sandbox, the app's security boundary: the Traces page's SQL box runs one read-only statement over a
private in-memory copy of the trace tables, and nowhere else.

Two layers, each enough on its own for the common attacks:
- the sandbox: a fresh in-memory DuckDB holding a copy of the trace tables, with file-system access,
  extension loading and Python replacement scans off and the configuration locked, so no statement can
  read the host, load code or touch the trace file;
- the allow-list: the text is parsed once (no recursion) into DuckDB's own syntax tree; it must be one
  SELECT-like statement (SELECT, WITH, FROM, VALUES, SHOW, DESCRIBE, SUMMARIZE, or EXPLAIN of one) whose
  table functions are in a short safe list and whose functions avoid settings, logging and file readers.
Results are cut to `max_rows` and a statement running past `timeout_s` is interrupted.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

SAFE_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest", "json_each", "json_tree"})
DENIED_FUNCTIONS = frozenset({"current_setting", "getenv", "glob", "query", "query_table", "sniff_csv",
                              "checkpoint", "force_checkpoint", "truncate_duckdb_logs", "json_execute_serialized_sql",
                              "json_deserialize_sql", "arrow_scan", "arrow_scan_dumb", "pandas_scan",
                              "python_map_function", "which_secret", "load_aws_credentials"})
DENIED_PREFIXES = ("read_", "parquet_", "duckdb_", "enable_", "disable_", "pragma_", "sqlite_", "postgres_",
                   "mysql_", "iceberg_", "delta_", "pg_")
PATH_CHARACTERS = re.compile(r"[/\\.:~*?]")
_LEADING_NOISE = re.compile(r"\s+|--[^\n]*(?:\n|$)|/\*.*?\*/", re.DOTALL)
SANDBOX_SETTINGS = {"python_enable_replacements": "false", "home_directory": "''", "temp_directory": "''",
                    "extension_directory": "'/nonexistent'", "secret_directory": "'/nonexistent'",
                    "memory_limit": "'512MB'", "threads": "1", "enable_external_access": "false",
                    "lock_configuration": "true"}


class SqlRefused(ValueError):
    """The SQL box was given text that is not one read-only statement it can run safely."""


@dataclass(frozen=True)
class SqlResult:
    """Rows of one SQL-box statement, and whether they were cut to the row limit."""

    frame: pd.DataFrame
    truncated: bool


def check_statement(sql: str) -> str:
    """The one SELECT-like statement of `sql` (EXPLAIN of one allowed once); else SqlRefused saying why."""
    if not isinstance(sql, str) or not sql.strip():
        raise SqlRefused("enter one SELECT statement")
    statement = _one_statement(sql)
    kind = statement.type.name
    select = statement.query
    if kind == "EXPLAIN":
        inner = re.sub(r"^explain\b", "", strip_leading_comments(select), count=1, flags=re.IGNORECASE)
        if re.match(r"\s*analy[sz]e\b", strip_leading_comments(inner), flags=re.IGNORECASE):
            raise SqlRefused("EXPLAIN ANALYZE runs the statement; use EXPLAIN or the SELECT itself")
        inner_statement = _one_statement(inner)
        if inner_statement.type.name != "SELECT":
            raise SqlRefused(f"EXPLAIN only of a SELECT statement, got {inner_statement.type.name}")
        select = inner_statement.query
    elif kind != "SELECT":
        raise SqlRefused(f"{kind} statements are not allowed; the SQL box only runs read-only queries "
                         f"(SELECT, WITH … SELECT, SHOW, DESCRIBE, EXPLAIN)")
    _check_tree(_syntax_tree(select))
    return statement.query


def strip_leading_comments(sql: str) -> str:
    """`sql` without the whitespace and comments before its first keyword (a loop, never recursion)."""
    position = 0
    while match := _LEADING_NOISE.match(sql, position):
        if match.end() == position:
            break
        position = match.end()
    return sql[position:]


def _one_statement(sql: str) -> Any:
    try:
        statements = duckdb.extract_statements(sql)
    except (duckdb.Error, RecursionError) as exc:
        raise SqlRefused(f"cannot parse the SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise SqlRefused(f"run exactly one statement at a time (found {len(statements)})")
    return statements[0]


def _syntax_tree(select: str) -> Any:
    """DuckDB's parse of `select` as JSON, from a throwaway connection that runs nothing."""
    with duckdb.connect(":memory:") as parser:
        try:
            serialized = parser.execute("SELECT json_serialize_sql(?::VARCHAR)", [select]).fetchone()[0]
            tree = json.loads(serialized)
        except (duckdb.Error, RecursionError, ValueError) as exc:
            raise SqlRefused(f"cannot parse the SQL: {str(exc).splitlines()[0]}") from None
    if tree.get("error"):
        raise SqlRefused(f"cannot run this statement: {tree.get('error_message')}")
    return tree


def _check_tree(tree: Any) -> None:
    """Walk the syntax tree with an explicit stack: refuse unsafe functions and file-like table names."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if node.get("type") == "TABLE_FUNCTION":
            name = str((node.get("function") or {}).get("function_name", "")).lower()
            if name not in SAFE_TABLE_FUNCTIONS:
                raise SqlRefused(f"table function {name}() is not allowed; the SQL box reads the trace tables "
                                 f"only (allowed: {', '.join(sorted(SAFE_TABLE_FUNCTIONS))})")
        if "function_name" in node:
            _check_function(str(node["function_name"]).lower())
        if node.get("type") in ("BASE_TABLE", "SHOW_REF"):
            _check_table(node)
        stack.extend(node.values())


def _check_function(name: str) -> None:
    if name in DENIED_FUNCTIONS or name.startswith(DENIED_PREFIXES):
        raise SqlRefused(f"function {name}() is not allowed in the SQL box (settings, files, logging and "
                         f"nested SQL are off limits)")


def _check_table(node: Mapping[str, Any]) -> None:
    name = str(node.get("table_name") or "").strip('"')
    if PATH_CHARACTERS.search(name) or name.lower().startswith(DENIED_PREFIXES):
        raise SqlRefused(f"table {name!r} is not allowed; query the trace tables by name (tool_invocation, …)")
    catalog, schema = str(node.get("catalog_name") or ""), str(node.get("schema_name") or "")
    if catalog.lower() not in ("", "memory") or schema.lower() not in ("", "main"):
        raise SqlRefused(f"only the trace tables can be read, not {'.'.join(p for p in (catalog, schema, name) if p)}")


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
    # tool_invocation is a view while the trace file has live parts (its rows then also in tool_invocation_packed),
    # and several trace files read as one are temporary views
    names = query("SELECT DISTINCT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                  "AND table_catalog IN (current_database(), 'temp') AND table_name <> 'tool_invocation_packed' "
                  "AND (table_type = 'BASE TABLE' OR table_catalog = 'temp' OR table_name = 'tool_invocation') "
                  "ORDER BY 1")["table_name"]
    return {str(name): query(f"SELECT * FROM {_quote(str(name))}") for name in names}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
