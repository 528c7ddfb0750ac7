"""Export page: the Traces page's filtered rows, or a run / comparison report, as a download built when it is
clicked (or, past a size the page names, written to a file on this machine)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import streamlit as st

from appui.data import file_facts, trace_export, trace_table
from appui.data import runs as runs_data
from appui.data import traces as data
from appui.panels import judging
from appui.widgets import cached_reads, state

TRACES, RUN, COMPARISON, JUDGEMENTS = "Filtered traces", "Run report", "Comparison report", "Judgements"
PREVIEW_ROWS = 20


def _traces(ctx: state.AppContext, fmt: str) -> None:
    chosen = st.session_state.get("traces_filters")
    filters = chosen or data.TraceFilters()  # the Traces page's default when it has not been opened yet
    st.caption(f"Rows: {filters.words()} ({'the Traces page’s filters' if chosen else 'the Traces page’s default'}"
               "; change them there)")
    extension, mime = data.FORMATS[fmt]
    if fmt in trace_export.REPORT_FORMATS:
        total = state.guarded(lambda: trace_table.count(cached_reads.cached(ctx.store), filters))
        if total is None:
            return
        left = f"; … and {total - trace_export.REPORT_ROWS:,} more rows not shown" \
            if total > trace_export.REPORT_ROWS else ""
        st.markdown(f"**{total:,} trace(s)** · a report of the aggregates of every row and the first "
                    f"{min(total, trace_export.REPORT_ROWS):,} in full{left}; CSV, Parquet and JSONL hold every row")
        st.download_button(f"Download traces.{extension}", partial(trace_export.report_bytes, ctx.store, filters, fmt),
                           file_name=f"traces.{extension}", mime=mime, key="ex_download", type="primary",
                           on_click="ignore")
    else:
        _data_export(ctx, filters, fmt)
    preview = state.guarded(lambda: data.filter_traces(cached_reads.cached(ctx.store),
                                                               replace(filters, limit=PREVIEW_ROWS)))
    if preview is not None and not preview.empty:
        st.caption(f"The first {min(len(preview), PREVIEW_ROWS)} rows, newest first:")
        st.dataframe(preview.reindex(columns=data.SUMMARY_COLUMNS), hide_index=True, key="ex_preview")


def _data_export(ctx: state.AppContext, filters: data.TraceFilters, fmt: str) -> None:
    """CSV, Parquet or JSONL: a download built on click, or past the limit a file written on this machine."""
    extension, mime = data.FORMATS[fmt]
    guess = state.guarded(lambda: cached_reads.estimate(ctx.store, filters, fmt))
    if guess is None:
        return
    limit = trace_export.download_limit()
    about = f"**{guess.rows:,} trace(s)** · about {file_facts.size_text(guess.bytes)} as {fmt}"
    if guess.bytes <= limit:
        st.markdown(f"{about}, built when you click")
        st.download_button(f"Download traces.{extension}", partial(trace_export.download_bytes, ctx.store, filters,
                                                                   fmt),
                           file_name=f"traces.{extension}", mime=mime, key="ex_download", type="primary",
                           on_click="ignore")
        return
    st.markdown(f"{about}: over the {file_facts.size_text(limit)} a download may hold in the app's memory, so it is "
                "written to a file on this machine")
    st.session_state.setdefault("ex_folder", str(trace_export.default_folder(ctx.store.path)))
    st.text_input("Folder", key="ex_folder", help="Made if missing; the file is named traces-<UTC time>.<format>")
    if st.button(f"Write traces.{extension} to the folder", key="ex_write", type="primary"):
        target = trace_export.file_in(st.session_state["ex_folder"], fmt)
        with st.spinner(f"Writing {guess.rows:,} rows to {target} …"):
            result = state.guarded(lambda: trace_export.write_file(ctx.store, filters, fmt, target))
        if result is not None:
            st.success(f"Wrote {result.rows:,} rows to `{result.path}` ({file_facts.size_text(result.bytes)}, "
                       f"{result.seconds:.1f} s)")


def _report_bytes(obj: object, fmt: str, store: object) -> bytes:
    """eval.reports.render in the chosen format (JSONL: the run's traces from the store)."""
    from eval import reports

    content = reports.render(obj, fmt.lower(), store=store)
    return content.encode() if isinstance(content, str) else content


def _reports(ctx: state.AppContext, what: str, fmt: str) -> None:
    try:
        from eval import compare, reports  # noqa: F401 - reports is only checked for here
        from eval.runs import list_runs, load_run
    except ImportError as exc:
        st.warning(f"Run and comparison reports need the evaluation package, which is not available ({exc}). "
                   "Filtered traces can still be exported.")
        return
    runs = state.guarded(lambda: list_runs(ctx.store))
    if runs is None or runs.empty:
        st.info("No runs stored yet: start one on the Compare settings page.")
        return
    ids = runs["run_id"].tolist()
    if what == RUN:
        run_id = st.selectbox("Run", ids, key="ex_run")
        obj, name = state.guarded(lambda: load_run(ctx.store, run_id)), run_id
    else:
        table = state.guarded(lambda: runs_data.run_table(ctx.store, runs))
        if table is None:
            return
        groups = table.set_index("run_id")["group"]
        # by default the newest pair the page can compare: B the newest run with a peer, A its newest peer
        newest_b = next((r for r in ids if (groups == groups[r]).sum() > 1), ids[0])
        peers = [r for r in ids if r != newest_b and groups[r] == groups[newest_b]]
        left, right = st.columns(2)
        run_a = left.selectbox("Run A", ids, index=ids.index(peers[0]) if peers else min(1, len(ids) - 1),
                               key="ex_run_a")
        run_b = right.selectbox("Run B", ids, index=ids.index(newest_b), key="ex_run_b")
        try:  # as the Compare page: runs of two datasets or bases have no paired queries to compare
            runs_data.check_comparable(table, run_a, run_b)
        except runs_data.IncomparableRunsError as exc:
            st.error(f"Refused: {exc}.")
            return
        obj, name = state.guarded(lambda: compare.compare_runs(ctx.store, run_a, run_b)), f"{run_a}-vs-{run_b}"
    if obj is None:
        return
    extension, mime = data.FORMATS[fmt]
    st.download_button(f"Download {name}.{extension}", partial(_report_bytes, obj, fmt, ctx.store),
                       file_name=f"{name}.{extension}", mime=mime, key="ex_report_download", type="primary",
                       on_click="ignore")


def render() -> None:
    ctx = state.current()
    st.title("Export")
    if ctx.store is None:
        return
    facts = state.guarded(lambda: file_facts.file_facts(cached_reads.cached(ctx.store)))
    if facts is not None:
        st.caption(f"Trace file {facts.words()}")
    what = st.radio("What", [TRACES, RUN, COMPARISON, JUDGEMENTS], key="ex_what", horizontal=True)
    if what == JUDGEMENTS:
        judging.export(ctx)
        return
    fmt = st.selectbox("Format", list(data.FORMATS), key="ex_format",
                       help="Markdown and HTML are reports: for traces, the aggregates of every matching row, then "
                       "the first rows in full (hints, filter rationale, every block's score parts and hit reasons); "
                       "HTML is one self-contained file")
    if what == TRACES:
        _traces(ctx, fmt)
    else:
        _reports(ctx, what, fmt)


if __name__ == "__main__":
    render()
