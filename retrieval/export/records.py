"""JSON of trace rows, read and written one way for the app and eval: objects from columns, JSON lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any


def json_object(value: Any) -> dict[str, Any]:
    """A stored JSON column as a dict: text parsed, a dict as it is; anything else (None, a list) as `{}`."""
    value = json.loads(value) if isinstance(value, str) else value
    return value if isinstance(value, dict) else {}


def json_lines(rows: Iterable[Mapping[str, Any]]) -> str:
    """One JSON object per row, each on its own line ending in a newline; timestamps and the like as text."""
    return "".join(json.dumps(row, default=str, ensure_ascii=False) + "\n" for row in rows)
