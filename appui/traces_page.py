"""Traces page: filter `tool_invocation`, chart it, open a row in full, and query it with read-only SQL."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from appui import data, state, views
from retrieval import TraceStore

DEFAULT_SQL = ("SELECT retrieval_layer, l1_status, count(*) AS calls, round(avg(latency_ms), 1) AS avg_ms\n"
               "FROM tool_invocation GROUP BY ALL ORDER BY calls DESC")


@st.cache_data(show_spinner=False, max_entries=64, ttl=60)
def _filtered(traces_path: str, filters: data.TraceFilters, stamp: tuple[int, str]) -> pd.DataFrame:
    """Cached per filters and store stamp, so reruns that add no trace do not query again."""
    return data.filter_traces(state.open_store(traces_path), filters)


def _filters(store: TraceStore) -> data.TraceFilters:
    options = data.distinct_values(store)
    c1, c2, c3 = st.columns(3)
    time_range = c1.selectbox("Time range", list(data.TIME_RANGES), key="tr_time", persist_state="session")
    run = c2.selectbox("Run", [data.ANY, data.NO_RUN, *options["run_id"]], key="tr_run", persist_state="session")
    text = c3.text_input("Query contains", key="tr_search", persist_state="session")
    c4, c5, c6 = st.columns(3)
    layers = c4.multiselect("Layer", options["retrieval_layer"], key="tr_layer", persist_state="session")
    statuses = c5.multiselect("L1 status", options["l1_status"], key="tr_l1", persist_state="session")
    decisions = c6.multiselect("Filter decision", options["filter_decision"], key="tr_filter",
                               persist_state="session")
    filters = data.TraceFilters(time_range, run, tuple(layers), tuple(statuses), tuple(decisions), text)
    st.session_state["traces_filters"] = filters  # the Export page downloads exactly these rows
    return filters


def _charts(frame: pd.DataFrame) -> None:
    left, middle, right = st.columns(3)
    with left:
        st.markdown("**Layer mix**")
        mix = frame["retrieval_layer"].fillna("error").value_counts().rename_axis("layer").reset_index(name="calls")
        st.bar_chart(mix, x="layer", y="calls", height=220)
    with middle:
        st.markdown("**Fallback rate over time**")
        st.caption("share of calls answered from L0 evidence only (L1 empty, failed, disabled or unavailable)")
        span = frame["created_at"].max() - frame["created_at"].min()
        freq = "min" if span <= pd.Timedelta(hours=3) else "h" if span <= pd.Timedelta(days=3) else "D"
        fallback = (frame["retrieval_layer"] == "L0").astype(float)  # as eval's l0_only_fallback_rate
        rate = fallback.groupby(frame["created_at"].dt.floor(freq)).mean().rename("rate").reset_index()
        chart = alt.Chart(rate).mark_bar().encode(
            alt.X("created_at:T", title=f"time (UTC, per {dict(min='minute', h='hour', D='day')[freq]})"),
            alt.Y("rate:Q", title="fallback rate", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
            tooltip=["created_at:T", alt.Tooltip("rate:Q", format=".0%")])
        st.altair_chart(chart, height=220)
    with right:
        st.markdown("**Latency distribution (ms)**")
        chart = alt.Chart(frame[["latency_ms"]].dropna()).mark_bar().encode(
            alt.X("latency_ms:Q", bin=alt.Bin(maxbins=30), title="latency (ms)"), alt.Y("count():Q", title="calls"))
        st.altair_chart(chart, height=220)


def _table(frame: pd.DataFrame) -> None:
    st.markdown(f"**{len(frame)} trace(s)** — click a row to open it in full")
    shown = frame.reindex(columns=data.SUMMARY_COLUMNS)
    selection = st.dataframe(shown, hide_index=True, key="tr_table", on_select="rerun", selection_mode="single-row")
    rows = selection.selection.rows if selection else []
    if rows and rows[0] < len(frame):
        row = frame.iloc[rows[0]]
        st.markdown(f"#### Trace in full: “{row['query']}”")
        st.caption(f"id `{row['id']}` · {row['created_at']} UTC")
        views.trace_in_full(row.to_dict())


def _sql_box(store: TraceStore) -> None:
    st.subheader("SQL (read-only)")
    st.caption("One SELECT / WITH / SHOW / DESCRIBE / EXPLAIN over the trace file; it runs in a transaction "
               "that is always rolled back, and statements that change data are refused.")
    st.text_area("SQL", key="sql_text", value=DEFAULT_SQL, height=110, label_visibility="collapsed")
    if st.button("Run SQL", key="sql_run"):
        try:
            st.session_state["sql_result"] = data.read_only_query(store, st.session_state["sql_text"])
        except data.ReadOnlyError as exc:
            st.session_state.pop("sql_result", None)
            st.error(f"Refused: {exc}")
        except Exception as exc:  # noqa: BLE001 - duckdb errors (bad column, syntax) as messages
            st.session_state.pop("sql_result", None)
            st.error(f"The query failed: {exc}")
    result = st.session_state.get("sql_result")
    if result is not None:
        st.dataframe(result, hide_index=True, key="sql_table")


def render() -> None:
    ctx = state.current()
    st.title("Traces")
    store = ctx.store
    if store is None:
        return
    filters = state.guarded(lambda: _filters(store))
    if filters is None:
        return
    frame = state.guarded(lambda: _filtered(ctx.traces_path, filters, data.stamp(store)))
    if frame is None:
        return
    if frame.empty:
        st.info("No traces match these filters. Run a lookup on the Lookup page to record one.")
    else:
        _charts(frame)
        _table(frame)
    st.divider()
    _sql_box(store)


if __name__ == "__main__":
    render()
