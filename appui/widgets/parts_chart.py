"""Score parts as a picture: one horizontal stacked bar per block (L1 lexical, LSA and static, page, L0), positive
parts stacked right of zero and negative ones left of it, so the eye sees at once which part put one page above
another. Used on every evidence card and in the "Why not…?" answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from appui.widgets.score_parts import parts_of

ORDER = ("L1 lexical", "L1 LSA", "L1 static", "L1 floor", "L1", "page", "L0")
COLOURS = ("#1f77b4", "#9467bd", "#17becf", "#7f7f7f", "#08306b", "#ff7f0e", "#2ca02c")  # one per part
# the legend's words for the parts whose names say little on their own
LABELS = {"L1 floor": "L1 cut back to 0 (a section's score never goes below 0)",
          "L1": "L1 (not split: its parts were not recorded)"}
ROW_HEIGHT = 26


def bar_frame(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """(label, block) pairs as bar segments: label, part, contribution, and where each segment starts and ends
    (positives from 0 rightwards, negatives from 0 leftwards, in ORDER)."""
    segments = []
    for label, block in rows:
        right = left = 0.0
        parts = sorted(parts_of(block), key=lambda p: ORDER.index(p["part"]) if p["part"] in ORDER else len(ORDER))
        for part in parts:
            value = float(part["contribution"])
            if value >= 0:
                start, right = right, right + value
                end = right
            else:
                start, left = left, left + value
                end = left
            name = str(part["part"])
            segments.append({"block": label, "part": name, "legend": LABELS.get(name, name),
                             "contribution": round(value, 4), "start": start, "end": end})
    return pd.DataFrame(segments, columns=["block", "part", "legend", "contribution", "start", "end"])


def legend_scale(frame: pd.DataFrame) -> alt.Scale:
    """The colour of each part drawn, in ORDER, and only of those: the legend lists no part the bars lack."""
    drawn = set(frame["part"])
    shown = [(LABELS.get(part, part), colour) for part, colour in zip(ORDER, COLOURS, strict=True) if part in drawn]
    shown += [(part, "#bcbd22") for part in sorted(drawn - set(ORDER))]  # a part this app does not know yet
    return alt.Scale(domain=[label for label, _ in shown], range=[colour for _, colour in shown])


def parts_chart(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> alt.Chart | None:
    """The stacked bars of `rows` (None when no block has parts)."""
    frame = bar_frame(rows)
    if frame.empty:
        return None
    labels = list(dict.fromkeys(label for label, _ in rows))
    return alt.Chart(frame).mark_bar().encode(
        alt.X("start:Q", title="score parts (contribution)"), alt.X2("end:Q"),
        alt.Y("block:N", sort=labels, title=None, axis=alt.Axis(labelLimit=320)),
        alt.Color("legend:N", scale=legend_scale(frame), title="part",
                  legend=alt.Legend(orient="bottom", labelLimit=360)),
        tooltip=["block", "part", alt.Tooltip("contribution:Q", format="+.3f")],
    ).properties(height=alt.Step(ROW_HEIGHT))  # a band per block; axis and legend come on top


def show_parts(rows: Sequence[tuple[str, Mapping[str, Any]]], *, key: str) -> None:
    """The bars of `rows`, one row each (nothing when no block has parts)."""
    chart = parts_chart(rows)
    if chart is not None:
        st.altair_chart(chart, key=key)
