"""Reading a BEIR-style `corpus.jsonl` line by line: a bad line is skipped and named, never fatal.

Each line must be UTF-8 JSON holding an object with a non-empty `_id` (string or number) and, when
present, an object `metadata`. Lines that are null, arrays, strings, latin-1, broken JSON or repeat an
earlier `_id` (the first is kept) become LoadProblems with their line number. Lone surrogates written
as `\\ud800` escapes are replaced by U+FFFD, since no trace store could hold them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from retrieval.kb.files import LoadProblem
from retrieval.text.surrogates import replace_surrogates

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def record_lines(raw: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every non-blank line, a leading BOM and a trailing CR dropped."""
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if number == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        if line.strip():
            yield number, line.rstrip(b"\r")


def duplicate_problem(name: str, number: int, record_id: str, first: int) -> LoadProblem:
    """The problem of a line repeating an earlier line's `_id` (the first is kept)."""
    return LoadProblem(name, number, f"duplicate _id {record_id!r} (first on line {first}); kept the first")


def parse_record(line: bytes) -> dict[str, Any]:
    """One line as a checked record; ValueError saying what is wrong with it."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}); save the "
                         f"file as UTF-8") from None
    try:
        record = json.loads(text)
    except RecursionError:
        raise ValueError("bad JSONL record: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"bad JSONL record: {exc}") from None
    if not isinstance(record, dict):
        kind = "null" if record is None else type(record).__name__
        raise ValueError(f"bad JSONL record: a line must be a JSON object, got {kind}")
    if _SURROGATE_ESCAPE.search(text):
        record = json.loads(replace_surrogates(json.dumps(record, ensure_ascii=False))[0])
    record_id = record.get("_id")
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)) or not str(record_id).strip():
        raise ValueError(f"bad JSONL record: `_id` must be a non-empty string or number, got {record_id!r}")
    if record.get("metadata") is not None and not isinstance(record["metadata"], dict):
        raise ValueError(f"bad JSONL record: `metadata` must be an object, got {type(record['metadata']).__name__}")
    return record
