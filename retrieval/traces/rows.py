"""One `tool_invocation` row as a spool line and back: encode safely, and validate strictly (the judge of lines
DuckDB's strict read does not take; see ingest.py).

A spool line is one JSON object, UTF-8, with the JSON columns nested (older lines hold them as JSON
text; both are read). Encoding never fails on odd content: lone surrogates become U+FFFD and
non-finite floats inside JSON columns become null, because DuckDB refuses both. Reading checks every
field's type, so a bad line is rejected with a reason instead of stopping the drain.
"""

from __future__ import annotations

import functools
import json
import math
import os
import socket
import time
import uuid
from datetime import datetime, timezone
from typing import Any

import orjson

from retrieval.lookup.invocation import ToolInvocation
from retrieval.traces.schema import COLUMN_TYPES, COLUMNS

Row = tuple[Any, ...]  # one value per COLUMNS entry, typed for DuckDB
REQUIRED_TEXT = ("id", "tool_name", "query", "status")
OPTIONAL_TEXT = ("error", "retrieval_layer", "filter_decision", "l1_status", "run_id", "query_id", "kb_path",
                 "kb_fingerprint", "host", "subject", "relevance_level", "category")
INTEGERS = ("l0_match_count", "l1_candidate_count", "candidate_count", "evidence_count", "kb_entries", "kb_chunks",
            "pid")
DOUBLES = ("latency_ms", "confidence")
BOOLEANS = ("abstained",)
INT32 = 2**31
JSON_COLUMNS_SET = frozenset(name for name, kind in zip(COLUMNS, COLUMN_TYPES, strict=True) if kind == "JSON")


class RejectedLine(ValueError):
    """A spool line that is not a valid `tool_invocation` row; the message is the reason."""


HOST_ENV = "LOOKUP_KNOWLEDGE_HOST"


def host_tag() -> str:
    """`$LOOKUP_KNOWLEDGE_HOST`, else this machine's host name (read on every call: cheap, and a test may set it)."""
    return os.environ.get(HOST_ENV) or _hostname()


@functools.lru_cache(maxsize=1)
def _hostname() -> str:
    return socket.gethostname() or "localhost"


def encode(invocation: ToolInvocation, entered: float | None = None) -> bytes:
    """The spool line of `invocation`. With `entered` (perf_counter at record()), the recorder's own time
    goes into `timings_ms.record` and `latency_ms` becomes the caller's latency up to the spool write."""
    row = invocation.to_dict()
    row["created_at"] = invocation.created_at.astimezone(timezone.utc).replace(tzinfo=None).isoformat()
    latency = row.pop("latency_ms")
    row["host"], row["pid"] = host_tag(), os.getpid()  # who recorded it: the process encoding the row
    details = row["retrieval_details"]
    if entered is not None and isinstance(details, dict) and isinstance(details.get("timings_ms"), dict):
        spent = (time.perf_counter() - entered) * 1000.0
        row["retrieval_details"] = {**details, "timings_ms": {**details["timings_ms"], "record": round(spent, 3)}}
    value = {name: row.get(name) for name in COLUMNS if name != "latency_ms"}
    try:
        body = orjson.dumps(value, option=FAST_OPTIONS)
    except TypeError:  # a non-plain value, a non-str key, a lone surrogate, an int past 64 bits
        body = _dumps(value)[:-1] + b',"' + STANDARD_JSON.encode() + b'":true}'
    if entered is not None and isinstance(latency, (int, float)):
        latency += (time.perf_counter() - entered) * 1000.0
    latency = latency if isinstance(latency, (int, float)) and math.isfinite(latency) else None
    return body[:-1] + b',"latency_ms":' + json.dumps(latency).encode() + b"}\n"


# A line is written by orjson when every value is plain JSON (str, int, float, bool, None, dict, list,
# tuple): 3x faster than `json` on a lookup's row, and the drain parses it 3x faster too. orjson refuses
# the rest (subclasses, dataclasses and datetimes are passed through to it as errors), and those lines are
# written by `json` (default=str) and marked, so the drain parses them with `json` as well: orjson would
# read an int past 64 bits as a float. orjson writes NaN/inf as null, as scrubbing does.
FAST_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
STANDARD_JSON = "_standard_json"  # key of the mark; not a column, so it is never stored


def _dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON by `json`; on lone surrogates or NaN/inf, the scrubbed value (rare path)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str,
                          separators=(",", ":")).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return json.dumps(scrub(value), ensure_ascii=False, default=str, separators=(",", ":")).encode("utf-8")


def scrub(value: Any) -> Any:
    """`value` with lone surrogates replaced by U+FFFD and non-finite floats by None, recursively."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {scrub(str(k)): scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def decode(line: bytes) -> Row:
    """A validated row from one spool line, or RejectedLine saying what is wrong with it."""
    try:
        data = _loads(line)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RejectedLine(f"not a JSON line ({exc})") from None
    if not isinstance(data, dict):
        raise RejectedLine(f"a {type(data).__name__}, not a JSON object")
    return tuple(_field(name, data.get(name), name in data) for name in COLUMNS)


def _loads(line: bytes) -> Any:
    """orjson's parse, or `json`'s for lines marked as written by it and for what orjson refuses: NaN
    literals, escaped lone surrogates (scrubbed later), and lines that are not JSON (`json`'s message)."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)
    return json.loads(line) if isinstance(data, dict) and data.get(STANDARD_JSON) is True else data


def _field(name: str, value: Any, present: bool) -> Any:
    if name == "created_at":
        return _timestamp(value)
    if name in REQUIRED_TEXT or name in OPTIONAL_TEXT:
        if value is None and name in OPTIONAL_TEXT:
            return None
        if not isinstance(value, str) or (name == "id" and not value):
            raise RejectedLine(f"{name} must be a {'non-empty ' if name == 'id' else ''}string, "
                               f"got {'nothing' if not present else type(value).__name__}")
        return scrub(value)
    if name in INTEGERS:
        if value is None:
            return None
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or (isinstance(value, float) and not value.is_integer()) or abs(value) >= INT32):
            raise RejectedLine(f"{name} must be a 32-bit integer or null, got {value!r:.40}")
        return int(value)
    if name in DOUBLES:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RejectedLine(f"{name} must be a number or null, got {type(value).__name__}")
        return float(value)
    if name in BOOLEANS:
        if value is None or isinstance(value, bool):
            return value
        raise RejectedLine(f"{name} must be true, false or null, got {type(value).__name__}")
    return _json_column(name, value)


def _timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise RejectedLine(f"created_at must be an ISO timestamp string, got {type(value).__name__}")
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise RejectedLine(f"created_at is not an ISO timestamp: {value!r:.40}") from None
    return stamp.astimezone(timezone.utc).replace(tzinfo=None) if stamp.tzinfo else stamp


def _json_column(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):  # older lines: the column's JSON text
        try:
            value = json.loads(value)
        except ValueError:
            raise RejectedLine(f"{name} holds text that is not JSON: {value!r:.40}") from None
    if not isinstance(value, (dict, list)):
        raise RejectedLine(f"{name} must be a JSON object, got {type(value).__name__}")
    try:  # the stored text keeps json.dumps' default layout (ASCII, ", " and ": ")
        text = json.dumps(value, allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(scrub(value), default=str)
    if "\\ud" in text:  # a surrogate escape: a lone one (DuckDB refuses it) or half of a valid pair
        text = json.dumps(scrub(value), default=str)
    return text


def canonical_line(row: Row) -> bytes:
    """A decoded row as a spool line in the shape ingest.py's statement takes (ASCII JSON, the JSON
    columns nested, a naive ISO `created_at`, a non-finite latency as null)."""
    value: dict[str, Any] = {}
    for name, kind, item in zip(COLUMNS, COLUMN_TYPES, row, strict=True):
        if kind == "JSON" and item is not None:
            item = json.loads(item)
        elif kind == "TIMESTAMP":
            item = item.isoformat(timespec="microseconds")
        elif kind == "DOUBLE" and item is not None and not math.isfinite(item):
            item = None
        value[name] = item
    return json.dumps(value, allow_nan=False).encode("ascii") + b"\n"


def fallback_line(invocation: Any, exc: BaseException) -> bytes:
    """A minimal spool line for an invocation that could not be encoded: its identity and the error."""
    created = getattr(invocation, "created_at", None)
    row = {"id": str(getattr(invocation, "id", "") or uuid.uuid4()),
           "created_at": (created if isinstance(created, datetime) else datetime.now(timezone.utc))
           .astimezone(timezone.utc).replace(tzinfo=None).isoformat(),
           "tool_name": str(getattr(invocation, "tool_name", "unknown")), "query": str(getattr(invocation, "query",
                                                                                               "")),
           "status": "error", "error": f"not recorded in full: {type(exc).__name__}: {exc}", "host": host_tag(),
           "pid": os.getpid()}
    return json.dumps(scrub(row), ensure_ascii=False).encode("utf-8") + b"\n"
