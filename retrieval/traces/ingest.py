"""Spooled lines as `tool_invocation` rows: DuckDB reads them itself, with one strict `read_json` statement.

The statement takes the shapes this tool writes (text as JSON strings, counts as JSON integers, the JSON
columns as nested objects, `created_at` as a naive ISO timestamp) and fails on anything else through
`error()`: it accepts a subset of what `rows.decode` accepts, with the same values. A part written from it
(parts.py) is all or nothing, and when the statement fails `decode`, the judge, reads every line in
Python: the lines it rejects go to the rejected file with its reason, and the rest are rewritten in the
canonical shape (`rows.canonical_line`) and written by the same statement. No Python row is built on the
common path, so a drain needs neither pyarrow nor pandas, and DuckDB parses outside the GIL.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval.traces.rows import RejectedLine, canonical_line, decode
from retrieval.traces.schema import COLUMN_TYPES, COLUMNS

if TYPE_CHECKING:
    import duckdb

INT32 = 2**31
MAX_LINE_BYTES = 1 << 30  # read_json's maximum_object_size: a row is never refused for its size (default 16 MB)
TIMESTAMP_SHAPE = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?"  # datetime.isoformat() of a naive UTC time
# JSON a strict reader refuses but DuckDB's reader keeps verbatim inside a nested value; `decode` turns
# these into null, so a value holding them (or a string that merely contains the words) goes to the judge
NON_STANDARD_NUMBERS = r"NaN|Infinity|[0-9][eE][+]?[0-9]{3,}"


def select(files: Sequence[str], *, judged: bool = False) -> str:
    """The strict SELECT over `files` (paths as escaped literals: a bound parameter makes DuckDB import
    pandas); an id twice in the files is kept once. It raises one of `content_errors()` when a line is outside
    the accepted shapes; `judged` lines were written by `canonical_line`, so their JSON values are standard
    whatever words they hold. The values are plain extractions and every check sits
    in one predicate: a CASE per column took half again as long to plan (11 ms against 7)."""
    sources = ", ".join(sql_literal(name) for name in files)
    columns = ", ".join(f"{_ident(name)}: 'JSON'" for name in COLUMNS)
    kinds = list(zip(COLUMNS, COLUMN_TYPES, strict=True))
    values = ", ".join(f"{_value(name, kind)} AS {_ident(name)}" for name, kind in kinds)
    checks = " AND ".join(_check(name, kind, judged) for name, kind in kinds)
    return (f"SELECT {values}\n"
            f"FROM read_json([{sources}], format = 'newline_delimited', compression = 'uncompressed', "
            f"maximum_object_size = {MAX_LINE_BYTES}, columns = {{{columns}}})\n"
            f"WHERE CASE WHEN {checks} THEN true ELSE error('a line outside the shapes this tool writes') END\n"
            f"QUALIFY row_number() OVER (PARTITION BY {_ident('id')}) = 1")


def content_errors() -> tuple[type[BaseException], ...]:
    """What the statement raises for a line it does not take (malformed JSON, a failed check or cast)."""
    import duckdb

    return (duckdb.InvalidInputException, duckdb.ConversionException, duckdb.ConstraintException,
            duckdb.OutOfRangeException)


def judge(con: duckdb.DuckDBPyConnection, lines: Iterable[bytes]) -> tuple[list[bytes], list[tuple[bytes, str]]]:
    """The fallback: `decode` judges each line, and DuckDB checks the canonical form of those it accepts
    (a read-only SELECT, so a refusal aborts no transaction). Returns the canonical lines to insert and
    the lines to reject with their reasons."""
    bad: list[tuple[bytes, str]] = []
    good: list[tuple[bytes, bytes]] = []
    for line in lines:
        try:
            good.append((line, canonical_line(decode(line))))
        except RejectedLine as exc:
            bad.append((line, str(exc)))
    if not good or _refusal(con, [canonical for _, canonical in good]) is None:
        return [canonical for _, canonical in good], bad
    accepted = []
    for line, canonical in good:
        refusal = _refusal(con, [canonical])
        if refusal is None:
            accepted.append(canonical)
        else:
            bad.append((line, f"refused by DuckDB: {refusal}"))
    return accepted, bad


def _refusal(con: duckdb.DuckDBPyConnection, lines: Sequence[bytes]) -> str | None:
    """DuckDB's reason for refusing one of `lines` (canonical), or None when it takes them all."""
    with temporary_file(lines) as name:
        try:
            con.execute(f"SELECT count(*) FROM ({select([name], judged=True)})").fetchone()
        except content_errors() as exc:
            return _first_line(exc)
    return None


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


REQUIRED = ("id", "created_at", "tool_name", "query", "status")


def _value(name: str, kind: str) -> str:
    """The SQL that yields column `name` from its JSON value (once `_check` has passed)."""
    value = _ident(name)
    if kind == "VARCHAR":
        return f"({value}->>'$')"
    if kind == "TIMESTAMP":
        return f"CAST(({value}->>'$') AS TIMESTAMP)"
    if kind in ("INTEGER", "DOUBLE", "BOOLEAN"):
        return f"CAST({value} AS {kind})"
    if kind == "JSON":
        return value
    raise ValueError(f"no ingest rule for column {name} of type {kind}")


def _check(name: str, kind: str, judged: bool) -> str:
    """The SQL that is true when column `name`'s JSON value has the shape this tool writes (null, or
    false, otherwise; the statement's error() then fails it). `->>` is parenthesised: it binds more
    loosely than comparisons."""
    value = _ident(name)
    if kind == "VARCHAR":
        shape = f"json_type({value}) = 'VARCHAR'" + (f" AND ({value}->>'$') <> ''" if name == "id" else "")
    elif kind == "TIMESTAMP":
        shape = f"json_type({value}) = 'VARCHAR' AND regexp_full_match(({value}->>'$'), '{TIMESTAMP_SHAPE}')"
    elif kind == "INTEGER":
        shape = f"json_type({value}) IN ('BIGINT', 'UBIGINT') AND abs(CAST({value} AS HUGEINT)) < {INT32}"
    elif kind == "DOUBLE":
        shape = f"json_type({value}) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND isfinite(CAST({value} AS DOUBLE))"
    elif kind == "BOOLEAN":
        shape = f"json_type({value}) = 'BOOLEAN'"
    elif kind == "JSON":
        shape = f"json_type({value}) IN ('OBJECT', 'ARRAY')"
        if not judged:
            shape += f" AND NOT regexp_matches(CAST({value} AS VARCHAR), '{NON_STANDARD_NUMBERS}')"
    else:
        raise ValueError(f"no ingest rule for column {name} of type {kind}")
    return f"({shape})" if name in REQUIRED else f"({value} IS NULL OR ({shape}))"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """`text` as a quoted SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
