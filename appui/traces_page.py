"""Traces page: filter `tool_invocation`, chart it, open a row in full, and query it with read-only SQL."""

from __future__ import annotations

import altair as alt
import duckdb
import pandas as pd
import streamlit as st

from appui import data, sql_box, state, views
from retrieval import TraceStore
from retrieval.trace_store import TraceStoreError

DEFAULT_SQL = ("SELECT retrieval_layer, l1_status, count(*) AS calls, round(avg(latency_ms), 1) AS avg_ms\n"
               "FROM tool_invocation GROUP BY ALL ORDER BY calls DESC")
SQL_MAX_ROWS, SQL_TIMEOUT_S = 10_000, 5.0


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
    st.caption(f"One SELECT / WITH / SHOW / DESCRIBE / EXPLAIN over a private copy of the trace tables: no "
               f"files, no extensions, at most {SQL_MAX_ROWS:,} rows and {SQL_TIMEOUT_S:g} s.")
    st.text_area("SQL", key="sql_text", value=DEFAULT_SQL, height=110, label_visibility="collapsed")
    if st.button("Run SQL", key="sql_run"):
        st.session_state.pop("sql_result", None)
        try:
            result = sql_box.run(sql_box.snapshot(store.query), st.session_state["sql_text"],
                                 max_rows=SQL_MAX_ROWS, timeout_s=SQL_TIMEOUT_S)
            st.session_state["sql_result"] = result
        except sql_box.SqlRefused as exc:
            st.error(f"Refused: {exc}")
        except (duckdb.Error, TraceStoreError) as exc:  # bad column, syntax, sandbox refusal: a message
            st.error(f"The query failed: {str(exc).splitlines()[0]}")
    result = st.session_state.get("sql_result")
    if result is not None:
        if result.truncated:
            st.caption(f"Showing the first {SQL_MAX_ROWS:,} rows.")
        st.dataframe(result.frame, hide_index=True, key="sql_table")


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
