"""Traces page: filter `tool_invocation`, chart it, open a row in full, and query it with read-only SQL."""

from __future__ import annotations

from typing import Any

import altair as alt
import duckdb
import pandas as pd
import streamlit as st

from appui.data import file_facts
from appui.data import sql_sandbox as sql_box
from appui.data import trace_table as traces_data
from appui.data import traces as data
from appui.panels import judging, why_not
from appui.widgets import annotator, cached_reads, state, trace_download, views
from retrieval import TraceStore, TraceStoreError
from retrieval.traces import waiting as rows_waiting

DEFAULT_SQL = ("SELECT retrieval_layer, l1_status, count(*) AS calls, round(avg(latency_ms), 1) AS avg_ms\n"
               "FROM tool_invocation GROUP BY ALL ORDER BY calls DESC")
SQL_MAX_ROWS, SQL_TIMEOUT_S = sql_box.MAX_ROWS, sql_box.TIMEOUT_S


def _filters(store: TraceStore) -> data.TraceFilters:
    options = data.distinct_values(store)
    c1, c2, c3 = st.columns(3)
    time_range = c1.selectbox("Time range", list(data.TIME_RANGES), key="tr_time", persist_state="session")
    # interactive calls by default (data.DEFAULT_RUN, the Export page's default too): a sweep's hundreds of rows
    # would otherwise bury the analyst's own lookups
    runs = [data.NO_RUN, data.ANY, *options["run_id"]]
    run = c2.selectbox("Run", runs, index=runs.index(data.DEFAULT_RUN), key="tr_run", persist_state="session",
                       help="Evaluation runs record every lookup; pick (all) or a run to see them")
    text = c3.text_input("Query contains", key="tr_search", persist_state="session")
    c4, c5, c6, c7 = st.columns(4)
    layers = c4.multiselect("Layer", options["retrieval_layer"], key="tr_layer", persist_state="session")
    statuses = c5.multiselect("L1 status", options["l1_status"], key="tr_l1", persist_state="session")
    decisions = c6.multiselect("Filter decision", options["filter_decision"], key="tr_filter",
                               persist_state="session")
    hosts = c7.multiselect("Host", options["host"], key="tr_host", persist_state="session",
                           help="The host that recorded each call ($LOOKUP_KNOWLEDGE_HOST, else its name); the trace "
                                "files $LOOKUP_KNOWLEDGE_TRACES names are read as one")
    filters = data.TraceFilters(time_range, run, tuple(layers), tuple(statuses), tuple(decisions), text,
                                hosts=tuple(hosts))
    st.session_state["traces_filters"] = filters  # the Export page downloads exactly these rows
    return filters


def _charts(store: TraceStore, filters: data.TraceFilters) -> None:
    """Aggregated in DuckDB over every matching row (not only the page on screen)."""
    left, middle, right = st.columns(3)
    with left:
        st.markdown("**Layer mix**")
        st.bar_chart(traces_data.layer_mix(store, filters), x="layer", y="calls", height=220)
    with middle:
        st.markdown("**Fallback rate over time**")
        st.caption("share of calls answered from L0 evidence only (L1 empty, failed, disabled or unavailable)")
        rate, unit = traces_data.fallback_rate(store, filters)
        if rate.empty or not (rate["rate"] > 0).any():  # a blank 0% chart reads as a broken one
            st.info(_no_fallbacks(store, filters) if not rate.empty else "No calls match the filters.")
        else:
            st.altair_chart(_fallback_chart(rate, unit), height=220)
    _latency(store, filters, right)


def _no_fallbacks(store: TraceStore, filters: data.TraceFilters) -> str:
    """No call fell back to L0 alone; says so without claiming L1 answered calls that returned nothing."""
    empty = traces_data.no_evidence_calls(store, filters)
    if not empty:
        return "No fallbacks: every call here was answered with L1's evidence."
    return (f"No fallbacks to L0's evidence alone; {empty:,} call(s) here returned no evidence at all "
            "(layer `none` or a failed call): see the layer mix.")


# per bucket unit: the UTC time unit the bars sit on and the axis labels' format (24-hour). A `format` with
# formatType "utc" is ignored by the Vega-Lite Streamlit draws with (it fell back to 12-hour "05:22" for 17:22);
# a utc timeUnit makes Vega-Lite format the labels in UTC itself
TIME_AXIS = {"minute": ("utcyearmonthdatehoursminutes", "%H:%M", "%Y-%m-%d %H:%M"),
             "hour": ("utcyearmonthdatehours", "%d %b %H:%M", "%Y-%m-%d %H:%M"),
             "day": ("utcyearmonthdate", "%d %b", "%Y-%m-%d")}


def _fallback_chart(rate: Any, unit: str) -> alt.Chart:
    """Bars of the fallback rate per `unit`, on a UTC time axis with 24-hour labels, drawn as SVG (text in the page)."""
    time_unit, label, when = TIME_AXIS[unit]
    title = f"time (UTC, 24-hour, per {unit})" if unit != "day" else "day (UTC)"
    return alt.Chart(rate).mark_bar().encode(
        alt.X("created_at:T", timeUnit=time_unit, title=title, axis=alt.Axis(format=label, labelOverlap=True)),
        alt.Y("rate:Q", title="fallback rate", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        tooltip=[alt.Tooltip("created_at:T", timeUnit=time_unit, title="UTC", format=when),
                 alt.Tooltip("rate:Q", format=".0%"), "calls:Q"],
    ).properties(usermeta={"embedOptions": {"renderer": "svg"}})


def _latency(store: TraceStore, filters: data.TraceFilters, right: Any) -> None:
    """The latency histogram over every matching row, in the right-hand column."""
    with right:
        st.markdown("**Latency distribution (ms)**")
        chart = alt.Chart(traces_data.latency_histogram(store, filters)).mark_bar().encode(
            alt.X("start:Q", bin="binned", title="latency (ms)", axis=alt.Axis(format=",.6~g")),
            alt.X2("end:Q"), alt.Y("calls:Q", title="calls"))
        st.altair_chart(chart, height=220)


def _table(store: TraceStore, filters: data.TraceFilters, total: int) -> None:
    """One page of the matching rows; the pager reaches every row, nothing is capped."""
    size_col, page_col, info_col = st.columns([1, 1, 3])
    size = size_col.selectbox("Rows per page", traces_data.PAGE_SIZES, key="tr_page_size")
    pages = max(1, -(-total // size))
    if st.session_state.get("tr_page", 1) > pages:
        st.session_state["tr_page"] = pages
    number = page_col.number_input(f"Page (of {pages})", min_value=1, max_value=pages, step=1, key="tr_page")
    frame = traces_data.page(store, filters, int(number), size)
    first = (int(number) - 1) * size + 1
    info_col.markdown(f"**{total} trace(s)** match · rows {first}–{first + len(frame) - 1} on this page — click "
                      "a row to open it")
    shown = traces_data.table_view(frame)
    selection = st.dataframe(shown, hide_index=True, key="tr_table", on_select="rerun", selection_mode="single-row")
    rows = selection.selection.rows if selection else []
    if rows and rows[0] < len(frame):
        row = traces_data.by_id(store, str(frame["id"].iloc[rows[0]]))  # the whole row, read for this one
        if row is not None:
            _trace(row)


def _trace(row: dict, *, key: str = "tr_row") -> None:
    """One trace as the Lookup page shows a result: cards, hit reasons, hints, filter, counts, timings."""
    st.markdown(f"#### Trace in full: “{row['query']}”")
    created = pd.Timestamp(row["created_at"]).strftime("%Y-%m-%d %H:%M:%S")
    where = f" · knowledge base `{row['kb_path']}`" if isinstance(row.get("kb_path"), str) else ""
    st.caption(f"id `{row['id']}` · {created} UTC · status {row['status']}{where}")
    settings, side = traces_data.settings_label(row.get("config")), traces_data.comparison_label(row.get("tags"))
    st.caption(("Compare page: side " + side + " · " if side else "") + f"settings: {settings or 'not recorded'}")
    trace_download.buttons(row, key=key)
    if isinstance(row.get("run_id"), str):
        st.caption(f"From run `{row['run_id']}`, query `{row.get('query_id')}`")
        if st.button("Open this run's query on the Compare page", key=f"{key}_open_run"):
            # plain keys (not widget keys, which a page switch clears) that the Compare page takes up
            st.session_state["eval_focus"] = {"run_id": row["run_id"], "query_id": row.get("query_id")}
            st.switch_page("appui/pages/compare.py")
    if row.get("status") != "ok":
        st.error(f"This call failed: {row.get('error')}")
    result, blind = traces_data.as_result(row), annotator.blind()
    marks = judging.marks(state.current(), str(row["query"]), blind=blind)
    views.lookup_result(result, key=key, judge=judging.callback(state.current(), result), marks=marks.mine,
                        others=marks.others, blind=blind)
    if blind:  # "Why not…?" and the raw row name ranks and scores
        return
    if row.get("status") == "ok":
        _why_not(row, result, key)
    with st.expander("Raw row (every column, JSON as stored)"):
        views.trace_in_full(row, key=f"{key}_full")


def _why_not(row: dict, result: dict, key: str) -> None:
    """"Why not…?" for this trace, replayed under its recorded settings on the sidebar's knowledge base (a base
    that changed since the call is said, not guessed at)."""
    config, arguments = traces_data.recorded_settings(row)
    index = state.current().index(config.svd_dims)
    if index is not None:
        why_not.render(result, index, config, category=arguments.get("category"), top_k=arguments.get("top_k"),
                       key=key, recorded_fingerprint=row.get("kb_fingerprint"))


def _nothing_matches(store: TraceStore, filters: data.TraceFilters) -> None:
    """No row matches: say how many rows the filters hide (a file of evaluation runs has no interactive
    lookups, the page's default) and offer them, rather than suggesting the file is empty."""
    hidden = traces_data.count(store, data.TraceFilters(run=data.ANY))
    if not hidden:
        st.info("No traces yet. Run a lookup on the Lookup page to record one.")
        return
    runs = traces_data.count(store, data.TraceFilters(run=data.NO_RUN))
    st.info(f"No traces match these filters; they hide {hidden:,} trace(s) in this file"
            + (f", {hidden - runs:,} of them from evaluation runs." if hidden > runs else "."))
    st.button("Show every trace (all runs, all time, no other filter)", key="tr_show_all", on_click=_show_all)


def _show_all() -> None:
    """Clear the filters (a callback: widget values change before the page reruns)."""
    state_ = st.session_state
    state_["tr_time"], state_["tr_run"], state_["tr_search"] = next(iter(data.TIME_RANGES)), data.ANY, ""
    state_["tr_layer"], state_["tr_l1"], state_["tr_filter"], state_["tr_host"] = [], [], [], []


@st.fragment
def _sql_box(store: TraceStore) -> None:
    """The SQL tab, a fragment: Run SQL reruns this box alone, not the page's counts, charts and table."""
    st.subheader("SQL (read-only)")
    st.caption(f"One SELECT / WITH / SHOW / DESCRIBE / EXPLAIN on the trace file itself, opened read-only and "
               f"sealed: no other file, no extensions, the first {SQL_MAX_ROWS:,} rows shown, at most "
               f"{sql_box.MEMORY_LIMIT} of memory and {SQL_TIMEOUT_S:g} s.")
    st.text_area("SQL", key="sql_text", value=DEFAULT_SQL, height=110, label_visibility="collapsed")
    if st.button("Run SQL", key="sql_run"):
        st.session_state.pop("sql_result", None)
        try:
            result = sql_box.run(store.path, st.session_state["sql_text"], max_rows=SQL_MAX_ROWS,
                                 timeout_s=SQL_TIMEOUT_S)
            st.session_state["sql_result"] = result
        except sql_box.SqlRefused as exc:
            st.error(f"Refused: {exc}")
        except sql_box.SqlBoxUnavailable as exc:  # no file or table yet, or a writer holds it: try again
            st.warning(str(exc))
        except (duckdb.Error, TraceStoreError) as exc:  # bad column, syntax, sandbox refusal: a message
            st.error(f"The query failed: {str(exc).splitlines()[0]}")
    result = st.session_state.get("sql_result")
    if result is not None:
        if result.notice():
            st.caption(result.notice())
        st.dataframe(result.frame, hide_index=True, key="sql_table")


def render() -> None:
    ctx = state.current()
    st.title("Traces")
    store = cached_reads.cached(ctx.store)  # every read cached on the file's state: a rerun over it opens nothing
    if store is None:
        return
    facts = state.guarded(lambda: file_facts.file_facts(store))
    if facts is not None:
        st.caption(f"Trace file {facts.words()}")
    waiting = rows_waiting(store.path)
    if waiting is not None:  # the file is readable, but another process keeps new rows from showing
        st.info(waiting.message())
    filters = state.guarded(lambda: _filters(store))
    if filters is None:
        return
    table_tab, sql_tab = st.tabs(["Traces", "SQL"])
    with table_tab:
        _opened(store)
        total = state.guarded(lambda: traces_data.count(store, filters))
        if total == 0:
            _nothing_matches(store, filters)
        elif total is not None:
            state.guarded(lambda: _charts(store, filters))
            state.guarded(lambda: _table(store, filters, total))
    with sql_tab:
        _sql_box(store)


def _opened(store: TraceStore) -> None:
    """A trace opened from elsewhere (a run's query on the Compare page), shown above the table."""
    opened = st.session_state.get("tr_open_id")
    if not opened:
        return
    row = state.guarded(lambda: traces_data.by_id(store, opened))
    if row is None:
        st.warning(f"Trace {opened} is not in this trace file.")
        return
    with st.container(border=True):
        st.button("Close", key="tr_close", on_click=st.session_state.pop, args=("tr_open_id", None))
        _trace(row, key="tr_opened")


if __name__ == "__main__":
    render()
