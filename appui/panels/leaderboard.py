"""Leaderboard tab of the Compare page: every complete run of one dataset side by side (eval.leaderboard), the
settings that differ as columns, and a chosen metric over time. This module only lays it out."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from appui.data.cells import no_none
from appui.panels import eval_runs as eval_runs_panel
from appui.widgets import state, wording

try:
    from eval import leaderboard as eval_leaderboard
    from eval import runs as eval_runs
    from eval.storage import COMPLETE
except ImportError as exc:  # eval/ is optional for the Lookup and Traces pages
    eval_leaderboard = eval_runs = COMPLETE = None
    EVAL_MISSING = f"{exc}"
else:
    EVAL_MISSING = ""

ALL_SPLITS = "all splits"


def render(ctx: state.AppContext) -> None:
    st.caption("Every complete run of one dataset side by side: the settings that differ among them, every "
               "metric (click a header to sort), and how a metric moved over time.")
    if eval_runs_panel.unavailable(ctx, EVAL_MISSING if eval_leaderboard is None else None):
        return
    runs = state.guarded(lambda: eval_runs.list_runs(ctx.store))
    complete = runs[runs["status"] == COMPLETE] if runs is not None and not runs.empty else None
    if complete is None or complete.empty:
        st.info("No complete runs stored yet: start one on the Labelled set tab.")
        return
    dataset, split = _pick(complete)
    board = state.guarded(lambda: eval_leaderboard.leaderboard(ctx.store, dataset, split=split))
    if board is None:
        return
    st.markdown(f"**{len(board.rows)} complete run(s)** of `{dataset}`"
                + (f" (split `{split}`)" if split else "") + " · settings that differ: "
                + (", ".join(f"`{s}`" for s in board.settings) or "none"))
    for note in board.notes:
        text = wording.for_page(note.removeprefix("warning: "))
        st.warning(text[0].upper() + text[1:])
    st.dataframe(shown_rows(board), hide_index=True, key="lb_table", column_config={
        "label": st.column_config.TextColumn(pinned=True, help="the settings the run changed, or the system"),
        "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
        "sweep_id": st.column_config.TextColumn(help="the sweep the run was made in; —: a single run, no sweep")})
    metric = st.selectbox("Metric over time", list(board.metrics), key="lb_metric")
    trend = board.trend(metric)
    st.altair_chart(trend_chart(trend, metric), height=240)
    summary = board.trend_lines(metric)[0]
    st.caption(summary[0].upper() + summary[1:] + ".")


def shown_rows(board: Any) -> pd.DataFrame:
    """The board's rows as the page shows them: which run (its label), then every metric and the baseline's, so
    the figures are on screen without scrolling, then the settings that differ and the run's ids; a missing cell
    (a single run's sweep_id) an em dash, never "None"."""
    rows = board.rows
    figures = [c for c in rows.columns if c in board.metrics or c.startswith(f"{eval_leaderboard.BASELINE}:")]
    first = ["label", *figures, "n_queries"]
    ordered = rows[first + [c for c in rows.columns if c not in first]]
    return no_none(ordered, keep=figures)


def _pick(complete: pd.DataFrame) -> tuple[str, str | None]:
    """The dataset (default: run B's on the Labelled set tab, else the newest run's) and the split to rank."""
    names = list(dict.fromkeys(complete["dataset"].dropna()))  # newest run's dataset first
    if st.session_state.get("lb_dataset") not in names:
        picked_b = complete.loc[complete["run_id"] == st.session_state.get("eval_run_b"), "dataset"]
        st.session_state["lb_dataset"] = picked_b.iloc[0] if not picked_b.empty else names[0]
    left, right = st.columns(2)
    dataset = left.selectbox("Dataset", names, key="lb_dataset")
    splits = [ALL_SPLITS, *sorted(complete.loc[complete["dataset"] == dataset, "split"].dropna().astype(str).unique())]
    if st.session_state.get("lb_split") not in splits:
        st.session_state["lb_split"] = ALL_SPLITS
    split = right.selectbox("Split", splits, key="lb_split")
    return dataset, None if split == ALL_SPLITS else split


def trend_chart(trend: pd.DataFrame, metric: str) -> alt.Chart:
    """`metric` per run over time, a line with a point per run; the tooltip names the run and its settings."""
    frame = trend.rename(columns={metric: "value"})  # a field name without the metric's `@`
    return alt.Chart(frame).mark_line(point=True).encode(
        alt.X("created_at:T", title="created"),
        alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
        tooltip=["run_id", "label", alt.Tooltip("created_at:T", format="%Y-%m-%d %H:%M"),
                 alt.Tooltip("value:Q", title=metric, format=".4f")])
