"""JSON laid out for a page: a value stays on one line when it fits the width, else its items go one per line,
indented two spaces deeper (as `json.dumps(indent=2)` would). Valid JSON: json.loads gives the value back."""

from __future__ import annotations

import json
from typing import Any

WIDTH = 116
INDENT = 2


def dumps(value: Any, width: int = WIDTH) -> str:
    """`value` as JSON (UTF-8 text, not escaped), broken into lines only where it does not fit `width`."""
    return _render(value, 0, 0, width)


def _render(value: Any, indent: int, column: int, width: int) -> str:
    """`value` starting at `column` of a line indented by `indent`."""
    flat = json.dumps(value, ensure_ascii=False)
    if column + len(flat) <= width or not isinstance(value, dict | list) or not value:
        return flat
    inner = indent + INDENT
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            head = json.dumps(key, ensure_ascii=False) + ": "
            parts.append(head + _render(item, inner, inner + len(head), width))
        opening, closing = "{", "}"
    else:
        parts = [_render(item, inner, inner, width) for item in value]
        opening, closing = "[", "]"
    pad = " " * inner
    return f"{opening}\n{pad}" + f",\n{pad}".join(parts) + f"\n{' ' * indent}{closing}"
