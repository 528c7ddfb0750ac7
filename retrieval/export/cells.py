"""Cells made safe for exports, since traces and reports carry text typed by anyone: CSV, Markdown."""

from __future__ import annotations

import html
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


def markdown_cell(value: Any) -> str:
    """Text for one Markdown table cell: backslash and `|` escaped, line breaks as spaces, HTML as entities."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    text = " ".join(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return html.escape(text, quote=False)
