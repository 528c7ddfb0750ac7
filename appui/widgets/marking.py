"""A card's judgement buttons: Relevant / Not relevant with the mark already made shown pressed, and Clear.

The buttons call `judge(block, grade)`: grade 1 or 0 keeps a mark, None removes the pair's marks (Clear)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

Judge = Callable[[Mapping[str, Any], int | None], None]
GRADE_BUTTONS = ((1, "Relevant", ":material/thumb_up:"), (0, "Not relevant", ":material/thumb_down:"))


def pressed(judged: int | None, grade: int) -> bool:
    """Whether the button of `grade` shows as pressed under the mark `judged` (None: not judged)."""
    return judged is not None and (judged > 0) == (grade > 0)


def judge_buttons(block: Mapping[str, Any], rank: int, judged: int | None, judge: Judge, key: str) -> None:
    """The buttons of card `rank` (keys `<key>_judge_<rank>_<grade>` and `<key>_judge_<rank>_clear`): the
    current mark is the primary (filled) button; Clear, offered once a mark exists, removes it from storage."""
    columns = st.columns([1, 1, 1, 3])
    for column, (grade, label, icon) in zip(columns, GRADE_BUTTONS, strict=False):
        column.button(label, key=f"{key}_judge_{rank}_{grade}", on_click=judge, args=(block, grade), icon=icon,
                      type="primary" if pressed(judged, grade) else "secondary",
                      help=f"Marked {label.lower()}" if pressed(judged, grade) else f"Mark {label.lower()}")
    if judged is not None:
        columns[2].button("Clear", key=f"{key}_judge_{rank}_clear", on_click=judge, args=(block, None),
                          icon=":material/close:",
                          help="Take this mark back: the block counts as not judged again (the trace file keeps it in "
                               "judgement_cleared)")
