"""Tables as the app shows them: Streamlit draws every missing cell as the word "None" (whatever its type, and a
Styler's `na_rep` does not change that), which reads as a value. Here a missing cell becomes an em dash, whose
meaning the caption under the table gives."""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any

import pandas as pd

DASH = "—"


def no_none(frame: pd.DataFrame, *, keep: Collection[str] = (), digits: int = 4) -> pd.DataFrame:
    """`frame` with each missing cell an em dash, never "None". A column with a gap becomes text (its numbers
    to `digits` places, whole numbers as such); columns in `keep` (numbers to sort or colour) and date columns
    are left as they are."""
    shown = frame.copy()
    for name in shown.columns:
        column = shown[name]
        if name in keep or pd.api.types.is_datetime64_any_dtype(column) or not column.isna().any():
            continue
        values = [v for v in column if not _missing(v)]
        whole = all(_is_number(v) and float(v).is_integer() for v in values)
        shown[name] = [DASH if _missing(v) else _text(v, digits, whole) for v in column]
    return shown


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, numbers.Real) and math.isnan(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _text(value: Any, digits: int, whole: bool) -> str:
    if _is_number(value):
        return str(int(value)) if whole else f"{float(value):.{digits}f}"
    return str(value)
