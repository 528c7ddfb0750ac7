"""Spooled lines into `tool_invocation`: DuckDB reads them itself, with one strict `read_json` statement.

The statement takes the shapes this tool writes (text as JSON strings, counts as JSON integers, the JSON
columns as nested objects, `created_at` as a naive ISO timestamp) and fails on anything else through
`error()`: it accepts a subset of what `trace_rows.decode` accepts, with the same values. A failed
INSERT stores nothing (one statement is atomic), and then `decode`, the judge, reads every line in
Python: the lines it rejects go to the rejected file with its reason, and the rest are rewritten in the
canonical shape (`trace_rows.canonical_line`) and inserted by the same statement. No Python row is
built on the common path, so a drain needs neither pyarrow nor pandas, and DuckDB parses outside the GIL.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .trace_rows import RejectedLine, canonical_line, decode
from .trace_schema import COLUMN_TYPES, COLUMNS, TABLE

if TYPE_CHECKING:
    import duckdb

INT32 = 2**31
MAX_LINE_BYTES = 1 << 30  # read_json's maximum_object_size: a row is never refused for its size (default 16 MB)
TIMESTAMP_SHAPE = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?"  # datetime.isoformat() of a naive UTC time
# JSON a strict reader refuses but DuckDB's reader keeps verbatim inside a nested value; `decode` turns
# these into null, so a value holding them (or a string that merely contains the words) goes to the judge
NON_STANDARD_NUMBERS = r"NaN|Infinity|[0-9][eE][+]?[0-9]{3,}"


def insert(con: duckdb.DuckDBPyConnection, files: Sequence[str], *, judged: bool = False) -> None:
    """Insert every line of `files` (ids already stored are ignored) in one statement, or insert nothing
    and raise one of `content_errors()` when a line is outside the accepted shapes. `judged` lines were
    written by `canonical_line`, so their JSON values are standard whatever words they hold."""
    if files:
        con.execute(statement(files, judged=judged))


def statement(files: Sequence[str], *, judged: bool = False) -> str:
    """The strict INSERT over `files` (paths as escaped literals: a bound parameter makes DuckDB import pandas)."""
    sources = ", ".join(_literal(name) for name in files)
    columns = ", ".join(f"{_ident(name)}: 'JSON'" for name in COLUMNS)
    select = ",\n  ".join(f"{_check(name, kind, judged)} AS {_ident(name)}" for name, kind in zip(COLUMNS, COLUMN_TYPES, strict=True))
    return (f"INSERT OR IGNORE INTO {TABLE} BY NAME SELECT\n  {select}\n"
            f"FROM read_json([{sources}], format = 'newline_delimited', compression = 'uncompressed', "
            f"maximum_object_size = {MAX_LINE_BYTES}, columns = {{{columns}}})")


def content_errors() -> tuple[type[BaseException], ...]:
    """What the statement raises for a line it does not take (malformed JSON, a failed check or cast)."""
    import duckdb

    return (duckdb.InvalidInputException, duckdb.ConversionException, duckdb.ConstraintException,
            duckdb.OutOfRangeException)


def insert_judged(con: duckdb.DuckDBPyConnection, lines: Iterable[bytes]) -> list[tuple[bytes, str]]:
    """The fallback: `decode` judges each line; the good ones go in (canonical form, one statement, or line
    by line if DuckDB refuses one of them). Returns the lines to reject with their reasons."""
    bad: list[tuple[bytes, str]] = []
    good: list[tuple[bytes, bytes]] = []
    for line in lines:
        try:
            good.append((line, canonical_line(decode(line))))
        except RejectedLine as exc:
            bad.append((line, str(exc)))
    try:
        _insert_lines(con, [canonical for _, canonical in good])
    except content_errors():
        for line, canonical in good:
            try:
                _insert_lines(con, [canonical])
            except content_errors() as exc:
                bad.append((line, f"refused by DuckDB: {_first_line(exc)}"))
    return bad


def _insert_lines(con: duckdb.DuckDBPyConnection, lines: Sequence[bytes]) -> None:
    """Insert lines held in memory, through a temporary file DuckDB reads."""
    if not lines:
        return
    with temporary_file(lines) as name:
        insert(con, [name], judged=True)


class temporary_file:
    """A private temporary JSONL file holding `lines`, removed on exit."""

    def __init__(self, lines: Sequence[bytes]) -> None:
        self.lines = lines
        self.name = ""

    def __enter__(self) -> str:
        fd, self.name = tempfile.mkstemp(prefix="trace-rows-", suffix=".jsonl")
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in self.lines))
        return self.name

    def __exit__(self, *exc: object) -> None:
        Path(self.name).unlink(missing_ok=True)


def _check(name: str, kind: str, judged: bool) -> str:
    """The SQL that yields column `name` from its JSON value, or fails through error() naming the column."""
    value = _ident(name)
    text = f"({value}->>'$')"  # parenthesised: ->> binds more loosely than comparisons
    fail = f"error('{name}: ' || coalesce(json_type({value}), 'missing'))"
    nullable = f"WHEN {value} IS NULL THEN NULL " if name not in ("id", "created_at", "tool_name", "query", "status") else ""
    if kind == "VARCHAR":
        nonempty = f" AND {text} <> ''" if name == "id" else ""
        return f"CASE {nullable}WHEN json_type({value}) = 'VARCHAR'{nonempty} THEN {text} ELSE {fail} END"
    if kind == "TIMESTAMP":
        return (f"CASE WHEN json_type({value}) = 'VARCHAR' AND regexp_full_match({text}, '{TIMESTAMP_SHAPE}') "
                f"THEN CAST({text} AS TIMESTAMP) ELSE {fail} END")
    if kind == "INTEGER":
        return (f"CASE {nullable}WHEN json_type({value}) IN ('BIGINT', 'UBIGINT') AND abs(CAST({value} AS HUGEINT)) < {INT32} "
                f"THEN CAST({value} AS INTEGER) ELSE {fail} END")
    if kind == "DOUBLE":
        return (f"CASE {nullable}WHEN json_type({value}) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND isfinite(CAST({value} AS DOUBLE)) "
                f"THEN CAST({value} AS DOUBLE) ELSE {fail} END")
    if kind == "JSON":
        standard = "" if judged else f"AND NOT regexp_matches(CAST({value} AS VARCHAR), '{NON_STANDARD_NUMBERS}') "
        return f"CASE {nullable}WHEN json_type({value}) IN ('OBJECT', 'ARRAY') {standard}THEN {value} ELSE {fail} END"
    raise ValueError(f"no ingest rule for column {name} of type {kind}")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
