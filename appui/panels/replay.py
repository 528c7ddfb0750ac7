"""Replay tab of the Compare page: pick recorded lookups, re-run them under configuration B, see per call
what changed, and keep the replay as an evaluation run (appui/data/replay.py, eval/replays.py) that the run
pickers select beside what it replayed."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from appui.data import replay
from appui.data import trace_table as traces_data
from appui.data import traces as data
from appui.widgets import origin, state, views
from retrieval import LookupConfig

INTERACTIVE, RUN = "Interactive lookups", "A run's lookups"


def _start(ctx: state.AppContext, config_b: LookupConfig) -> None:
    index = ctx.index(config_b.svd_dims)
    if index is None:
        return
    run = st.session_state.get("rp_run") if st.session_state.get("rp_source") == RUN else None
    calls = replay.recorded_calls(ctx.store, run_id=run, text=st.session_state.get("rp_text", ""),
                                  limit=int(st.session_state.get("rp_limit", 20)))
    if calls.empty:
        st.info("No recorded lookups match: run some on the Lookup page first.")
        return
    calls, note = replay.on_this_base(calls, index.kb.fingerprint,
                                      include_others=bool(st.session_state.get("rp_other_bases", False)))
    if calls.empty:
        st.info(f"Nothing to replay: {note}")
        return
    run_id = replay.new_run_id()
    bar = st.progress(0.0, text=f"Replaying {len(calls)} lookups under B")
    diffs = replay.replay(calls, index=index, config=config_b,
                          store=ctx.store if st.session_state.get("rp_save", True) else None, run_id=run_id,
                          progress=lambda done, total: bar.progress(done / total, text=f"{done} / {total} lookups"))
    bar.empty()
    frame = pd.DataFrame([d.to_row() for d in diffs])
    saved = run_id if st.session_state.get("rp_save", True) and ctx.store is not None else None
    pair = None
    if saved:
        from eval.replays import ReplayNotSaved, save_or_discard

        try:
            pair = save_or_discard(ctx.store, saved, calls, index=index, config=config_b.to_dict(), source_run=run)
        except ReplayNotSaved as exc:
            st.error(f"Replay not saved: {exc}")
            return
        st.session_state["eval_select"] = {"a": pair[0], "b": pair[1]}  # the run pickers move to it
    origin.store("rp_result", {"frame": frame, "run_id": saved, "compare": pair, "note": note}, index,
                 {"B": config_b.to_dict()})
    st.rerun()  # the Labelled set tab, drawn above, lists the new run


def render(ctx: state.AppContext, config_b: LookupConfig | None) -> None:
    st.caption("Re-run recorded lookups under configuration B and see, per call, what changed — no labels needed.")
    if ctx.store is None:
        st.error("Recorded lookups live in the trace file, which could not be opened.")
        return
    left, middle, right = st.columns([2, 2, 1])
    source = left.radio("Replay", [INTERACTIVE, RUN], key="rp_source", horizontal=True)
    if source == RUN:
        runs = [r for r in data.distinct_values(ctx.store)["run_id"]]
        middle.selectbox("Run", runs, key="rp_run", placeholder="no runs recorded yet")
    else:
        middle.text_input("Query contains (blank: any)", key="rp_text")
    right.number_input("Calls", min_value=1, max_value=1000, value=20, step=1, key="rp_limit")
    st.toggle("Save the replay as a run", value=True, key="rp_save",
              help="Store the replay as an evaluation run (run id replay-…) to compare with the run it replayed "
                   "(interactive lookups: with their recorded calls, stored as run recorded-…), scored against "
                   "that run's labels or this trace file's judgements")
    st.toggle("Include calls recorded on another knowledge base", value=False, key="rp_other_bases",
              help="Off: they are left out (replayed here, their changes would be the base's, not B's)")
    if st.button("Replay under B", key="rp_start", type="primary", disabled=config_b is None):
        state.guarded(lambda: _start(ctx, config_b))
    if "rp_result" not in st.session_state:
        return
    index = ctx.index(config_b.svd_dims) if config_b else None
    shown = origin.keep("rp_result", index, {"B": config_b.to_dict()} if config_b else None)
    if shown is None:
        return
    if shown.get("note"):  # said with the result, not only before a rerun
        st.warning(shown["note"])
    frame = shown["frame"]
    changed = frame[frame["changed"]]
    counts = {"calls": len(frame), "results changed": len(changed),
              "labels only changed": int(frame["labels only"].sum()),
              "filter changed": int(frame["filter"].str.contains("→").sum()),
              "layer changed": int(frame["layer"].str.contains("→").sum()),
              "primary changed": int(frame["primary"].str.contains("→").sum())}
    for column, (label, value) in zip(st.columns(len(counts)), counts.items(), strict=True):
        column.metric(label, value)
    if shown["run_id"]:
        pair = shown.get("compare")
        versus = f"; the Labelled set tab compares it with `{pair[0]}`" if pair else ""
        st.success(f"Saved as run `{shown['run_id']}`{versus} (its lookups: Traces page → Run filter)")
    only = st.toggle("Only calls whose results changed", value=False, key="rp_only_changed")
    table = (changed if only else frame).reset_index(drop=True)
    selection = st.dataframe(table, hide_index=True, key="rp_table", on_select="rerun", selection_mode="single-row")
    rows = selection.selection.rows if selection else []
    if rows and rows[0] < len(table):
        _both(ctx, table.iloc[rows[0]])


def _both(ctx: state.AppContext, row: pd.Series) -> None:
    """The recorded call and its replay side by side."""
    st.markdown(f"#### “{row['query']}”")
    for column, (title, invocation_id) in zip(st.columns(2), (("Recorded", row["original_id"]),
                                                             ("Replayed under B", row["replay_id"])), strict=True):
        with column:
            found = traces_data.by_id(ctx.store, invocation_id) if isinstance(invocation_id, str) else None
            if found is None:
                st.info(f"{title}: not recorded (the replay was not saved)")
                continue
            views.compact_details(traces_data.as_result(found)["retrieval_details"], title=title, limit=5)
