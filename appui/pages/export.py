"""Export page: the Traces page's filtered rows, or a run / comparison report, as a download."""

from __future__ import annotations

from dataclasses import fields, replace

import streamlit as st

from appui.data import traces as data
from appui.panels import judging
from appui.widgets import state

TRACES, RUN, COMPARISON, JUDGEMENTS = "Filtered traces", "Run report", "Comparison report", "Judgements"


def _traces(ctx: state.AppContext, fmt: str) -> None:
    filters = st.session_state.get("traces_filters") or data.TraceFilters()
    default = data.TraceFilters()
    active = {f.name: getattr(filters, f.name) for f in fields(filters)
              if f.name not in ("limit", "now") and getattr(filters, f.name) != getattr(default, f.name)}
    st.caption("Filters from the Traces page: " + (", ".join(f"{k} = {v}" for k, v in active.items()) or "none"))
    frame = state.guarded(lambda: data.filter_traces(ctx.store, replace(filters, limit=None)))  # every row
    if frame is None:
        return
    extension, mime = data.FORMATS[fmt]
    payload = state.guarded(lambda: data.export_traces(frame, fmt, title="lookup_knowledge traces"))
    if payload is None:
        return
    st.markdown(f"**{len(frame)} trace(s)** · {len(payload):,} bytes as {fmt}")
    st.download_button(f"Download traces.{extension}", payload, file_name=f"traces.{extension}", mime=mime,
                       key="ex_download", type="primary", on_click="ignore")
    st.dataframe(frame.reindex(columns=data.SUMMARY_COLUMNS).head(20), hide_index=True, key="ex_preview")


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
        left, right = st.columns(2)
        run_a = left.selectbox("Run A", ids, index=min(1, len(ids) - 1), key="ex_run_a")
        run_b = right.selectbox("Run B", ids, key="ex_run_b")
        obj, name = state.guarded(lambda: compare.compare_runs(ctx.store, run_a, run_b)), f"{run_a}-vs-{run_b}"
    if obj is None:
        return
    extension, mime = data.FORMATS[fmt]
    payload = state.guarded(lambda: _report_bytes(obj, fmt, ctx.store))
    if payload is not None:
        st.download_button(f"Download {name}.{extension}", payload, file_name=f"{name}.{extension}", mime=mime,
                           key="ex_report_download", type="primary", on_click="ignore")


def render() -> None:
    ctx = state.current()
    st.title("Export")
    if ctx.store is None:
        return
    what = st.radio("What", [TRACES, RUN, COMPARISON, JUDGEMENTS], key="ex_what", horizontal=True)
    if what == JUDGEMENTS:
        judging.export(ctx)
        return
    fmt = st.selectbox("Format", list(data.FORMATS), key="ex_format",
                       help="Markdown and HTML are reports: for traces, a summary table, then each trace in full "
                       "(hints, filter rationale, every block's score parts and hit reasons); HTML is one "
                       "self-contained file")
    if what == TRACES:
        _traces(ctx, fmt)
    else:
        _reports(ctx, what, fmt)


if __name__ == "__main__":
    render()
