"""Cells made safe for exports, since traces and reports carry text typed by anyone: CSV, Markdown, HTML."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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


def cell_text(value: Any) -> str:
    """A value as a table shows it: blank if missing, a float to 4 decimals (a whole one as an integer),
    a list or tuple joined with `, `, anything else as `str`."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return str(value)
        return str(int(value)) if value.is_integer() else f"{value:.4f}".rstrip("0").rstrip(".")
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def markdown_cell(value: Any) -> str:
    """Text for one Markdown table cell: `cell_text` with backslash and `|` escaped, then `markdown_text`."""
    return markdown_text(cell_text(value).replace("\\", "\\\\").replace("|", "\\|"))


def markdown_text(value: Any) -> str:
    """Text for a Markdown heading, list item or cell: one line (CR LF, CR, LF as spaces), HTML escaped."""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n")
    return html.escape(" ".join(text.split("\n")), quote=False)


def html_cell(value: Any) -> str:
    """Text for one HTML table cell: `cell_text`, escaped."""
    return html.escape(cell_text(value))
