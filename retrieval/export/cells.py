"""Cells made safe for exports, since traces and reports carry text typed by anyone: CSV, Markdown, HTML.

Values read the same in every exported table and line: floats rounded (3 decimals; milliseconds to 1), a
missing value as `MISSING`, lists and mappings as text rather than Python or JSON reprs.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
MISSING = "—"  # a value not recorded (None, NaN); an empty list or mapping reads "none"
MARKDOWN_INLINE = re.compile(r"[\\`*\[\]~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|(?:^|(?<=\s))#")
MARKDOWN_BLOCK_START = re.compile(r"^(?:[+-]|\d{1,9}(?=[.)]))(?=[.)]?(?:\s|$))")  # a list marker


def csv_cell(value: Any) -> Any:
    """A string starting like a formula (= + - @ tab CR) gets a leading `'`; other values are unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells and column names cannot run as spreadsheet formulas."""
    safe = frame.copy()
    for position in range(safe.shape[1]):  # by position: column names may repeat
        column = safe.iloc[:, position]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            safe.isetitem(position, column.map(csv_cell))
    safe.columns = [csv_cell(str(c)) for c in safe.columns]
    return safe


def is_ms(name: Any) -> bool:
    """Whether a column or key names milliseconds (`latency_ms`, `timings_ms`, `time (ms)`)."""
    text = str(name)
    return text.endswith("_ms") or text == "ms" or text.endswith("(ms)")


def number_text(value: float, *, ms: bool = False) -> str:
    """A float for reading: a whole one as an integer, else 3 decimals (scores, metrics) or 1 (milliseconds)."""
    if math.isnan(value):
        return MISSING
    if math.isinf(value):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    text = f"{value:.{1 if ms else 3}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.000"


def cell_text(value: Any, *, ms: bool = False) -> str:
    """A value as a table or a line shows it: `MISSING` if not recorded, a float by `number_text`, a time to the
    second, a list as `a, b`, a mapping as `key value, key value` (nested ones in parentheses), an empty one as
    `none`."""
    if value is None or value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, float):
        return number_text(value, ms=ms)
    if isinstance(value, datetime):  # pandas' Timestamp too: to the second, as the app shows times
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, Mapping):
        parts = [f"{k} {_nested(v, ms=ms or is_ms(k))}" for k, v in value.items()]
        return ", ".join(parts) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_nested(v, ms=ms) for v in value) or "none"
    return str(value)


def _nested(value: Any, *, ms: bool) -> str:
    text = cell_text(value, ms=ms)
    return f"({text})" if isinstance(value, (Mapping, list, tuple)) and len(value) > 1 else text


def markdown_cell(value: Any, *, ms: bool = False) -> str:
    """Text for one Markdown table cell: `cell_text`, then `markdown_text`, with `|` escaped."""
    return markdown_text(cell_text(value, ms=ms)).replace("|", "\\|")


def markdown_text(value: Any) -> str:
    """Text for a Markdown heading, list item or cell, shown as typed: one line (CR LF, CR, LF as spaces), HTML
    escaped, and the characters that would start emphasis, code, links or a nested block backslash-escaped."""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    text = " ".join(text.split("\n")).strip()
    text = MARKDOWN_INLINE.sub(lambda m: "\\" + m.group(0), html.escape(text, quote=False))
    return MARKDOWN_BLOCK_START.sub(lambda m: m.group(0) + "\\" if m.group(0)[0].isdigit() else "\\" + m.group(0),
                                    text)


def html_cell(value: Any, *, ms: bool = False) -> str:
    """Text for one HTML table cell: `cell_text`, escaped."""
    return html.escape(cell_text(value, ms=ms))
