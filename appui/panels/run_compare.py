"""Comparing two stored runs on the Compare page: group and run pickers, deltas coloured with significance in
words, the per-query table led by what matters, the sorted per-query delta chart, and both lookups of a query
side by side with the labelled relevant documents marked; a warning when the two runs were made with different
library versions (eval.versions).

The comparison itself comes from eval.compare.compare_runs; this module lays it out.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from appui.data import runs as runs_data
from appui.data.cells import DASH, no_none
from appui.panels import answerability, facets, holes
from appui.widgets import state, views

TOP_DEFAULT = 5


@st.cache_data(show_spinner="Comparing runs…", max_entries=16)
def _comparison(traces_path: str, run_a: str, run_b: str, labels: str) -> Any:
    """The comparison; `labels` (the judgements' version) keys the cache: judged runs follow the judgements."""
    from eval import compare as eval_compare
    return eval_compare.compare_runs(state.open_store(traces_path), run_a, run_b)


@st.cache_data(show_spinner=False, max_entries=16)
def _truth(traces_path: str, run_id: str, labels: str) -> pd.DataFrame:
    from eval import storage
    return storage.load_per_query(state.open_store(traces_path), run_id)


def _labels(ctx: state.AppContext) -> str:
    """The judgements' version: a saved replay of interactive lookups is scored against them as they are now."""
    from eval import judged
    return judged.version(ctx.store)


def _select(table: pd.DataFrame) -> None:
    """A pair chosen elsewhere (a saved replay and what it replayed) becomes the pickers' group, A and B."""
    chosen = st.session_state.pop("eval_select", None) or {}
    groups = table.set_index("run_id")["group"]
    a, b = chosen.get("a"), chosen.get("b")
    if b not in groups.index:
        return
    st.session_state["eval_group"], st.session_state["eval_run_b"] = groups[b], b
    if a in groups.index and groups[a] == groups[b]:
        st.session_state["eval_run_a"] = a
    elif a:
        st.warning(f"Run {b} is not compared with {a}: {a} is on {groups.get(a, 'no stored run')}, {b} on "
                   f"{groups[b]}; runs are compared only within one dataset and knowledge base.")


def _other_run(table: pd.DataFrame) -> None:
    """Callback of "Compare A with run id": the typed run becomes B if it shares A's dataset and base."""
    text, run_a = st.session_state.get("eval_run_other", ""), st.session_state.get("eval_run_a")
    if not text.strip():
        return
    try:
        other = runs_data.resolve_run(table, text)
        runs_data.check_comparable(table, run_a, other)
    except runs_data.IncomparableRunsError as exc:
        st.session_state["eval_other_note"] = ("error", f"Refused: {exc}.")
        return
    st.session_state["eval_run_b"] = other
    st.session_state["eval_other_note"] = ("success", f"Run B is now {other}.")


def pickers(table: pd.DataFrame) -> tuple[str, str] | None:
    """Dataset-and-base group, then runs A and B of that group only, or B typed by id (refused unless it shares
    A's dataset and base); None when there is nothing to compare."""
    _select(table)
    groups = list(dict.fromkeys(table["group"]))
    focus = st.session_state.get("eval_focus") or {}
    picked = (st.session_state.get("eval_run_a"), st.session_state.get("eval_run_b"))
    if focus.get("run_id") in set(table["run_id"]) and focus["run_id"] not in picked:
        # opened from a trace: its run becomes B, in its group
        group = table.loc[table["run_id"] == focus["run_id"], "group"].iloc[0]
        others = [r for r in table.loc[table["group"] == group, "run_id"] if r != focus["run_id"]]
        st.session_state["eval_group"] = group
        st.session_state["eval_run_b"] = focus["run_id"]
        if others and picked[0] not in others:
            st.session_state["eval_run_a"] = others[0]
    if st.session_state.get("eval_group") not in groups:  # the newest group that has two runs to compare
        sizes = table["group"].value_counts()
        st.session_state["eval_group"] = next((g for g in groups if sizes[g] > 1), groups[0])
    group = st.selectbox("Dataset and knowledge base", groups, key="eval_group",
                         help="Runs are compared only within one dataset and one knowledge base")
    members = table[table["group"] == group]
    ids = members["run_id"].tolist()
    labels = {r.run_id: f"{r.run_id} · {runs_data.settings_label(r.overrides, 'defaults')}"
              for r in members.itertuples()}
    for key, fallback in (("eval_run_a", min(1, len(ids) - 1)), ("eval_run_b", 0)):
        if st.session_state.get(key) not in ids:
            st.session_state[key] = ids[fallback]
    left, right = st.columns(2)
    run_a = left.selectbox("Run A", ids, key="eval_run_a", format_func=labels.get)
    run_b = right.selectbox("Run B", ids, key="eval_run_b", format_func=labels.get)
    st.text_input("Compare A with run id", key="eval_run_other", on_change=_other_run, args=(table,),
                  placeholder="a run id from the stored runs (e.g. of another dataset): Enter",
                  help="B becomes that run if it shares A's dataset and knowledge base; otherwise it is refused")
    kind, note = st.session_state.pop("eval_other_note", (None, None))
    if kind == "error":
        st.error(note)
    elif kind == "success":
        st.success(note)
    if len(ids) < 2:
        st.info(f"Only one run on {group}: start another (or a sweep) to compare.")
        return None
    if run_a == run_b:
        st.info("Pick two different runs to compare them.")
        return None
    return run_a, run_b


def render(ctx: state.AppContext, table: pd.DataFrame) -> None:
    """The comparison of the picked runs; its panels read the trace file through one connection (they only
    read: a judgement is written by its button's callback, before the page runs)."""
    with ctx.store.one_connection() if ctx.store is not None else contextlib.nullcontext():
        _render(ctx, table)


def _render(ctx: state.AppContext, table: pd.DataFrame) -> None:
    from eval.compare import SIGNIFICANCE

    picked = pickers(table)
    if picked is None:
        return
    run_a, run_b = picked
    if state.guarded(lambda: runs_data.check_comparable(table, run_a, run_b) or True) is None:
        return
    comparison = state.guarded(lambda: _comparison(ctx.traces_path, run_a, run_b, _labels(ctx)))
    if comparison is None:
        return
    _library_notes(comparison)
    st.markdown(f"**Metric deltas (B − A)** on {len(comparison.per_query)} paired queries; significance from a "
                f"paired randomisation test at p < {SIGNIFICANCE}")
    deltas = runs_data.deltas_table(comparison.metrics)
    st.dataframe(deltas.style.apply(runs_data.colour_significant, axis=1).format(precision=4),
                 hide_index=True, key="eval_metrics")
    if comparison.config_diff:
        st.caption("Settings: " + ", ".join(f"`{k}` {a} → {b}" for k, (a, b) in comparison.config_diff.items()))
    answerability.comparison_panel(comparison)
    for sentence in (comparison.stage_moves or {}).get("sentences", []):
        st.caption(sentence)
    facets.panel(comparison)
    _delta_chart(comparison)
    _pairs(ctx, comparison)
    holes.render(ctx, comparison, _labels(ctx))  # the judging queue and what its marks change


def _library_notes(comparison: Any) -> None:
    """A warning when the two runs were made with different library versions, or with other weights for a model
    both name (they are still compared: the settings may have moved the metrics, or the libraries or the
    weights), a note when a run did not record its versions."""
    for note in [*comparison.library_notes(), *comparison.model_notes()]:
        text = note.text[0].upper() + note.text[1:]
        if note.level == "warning":
            st.warning(text)
        else:
            st.caption(text)


def _delta_chart(comparison: Any) -> None:
    tied = runs_data.tied_note(comparison.per_query, comparison.primary_metric)
    if tied:
        st.caption(tied)
        return
    frame = runs_data.sorted_deltas(comparison.per_query, comparison.primary_metric)
    st.markdown(f"**Per-query Δ {comparison.primary_metric}, sorted** (losses left, gains right)")
    chart = alt.Chart(frame).mark_bar().encode(
        alt.X("order:O", title="queries, sorted by Δ", axis=alt.Axis(labels=False, ticks=False)),
        alt.Y("delta:Q", title=f"Δ {comparison.primary_metric} (B − A)"),
        color=alt.condition("datum.delta < 0", alt.value("#cf222e"), alt.value("#1a7f37")),
        tooltip=["query_id", "query", alt.Tooltip("delta:Q", format="+.3f")])
    st.altair_chart(chart, height=200)


def _pairs(ctx: state.AppContext, comparison: Any) -> None:
    truth = _truth(ctx.traces_path, comparison.run_a, _labels(ctx))
    table = runs_data.pair_table(comparison.per_query, comparison.primary_metric, truth)
    rest = [c for c in table.columns if c not in runs_data.LEAD and c not in ("relevant", "categories")
            and not c.startswith("relevant_stages")]  # shown per question, below
    extra = st.multiselect("More columns", rest, key="eval_pairs_columns",
                           help="Metrics of A and B, layers, the query id…")
    st.markdown(f"**Per query, largest loss on {comparison.primary_metric} first** (click a row to open both "
                "lookups)")
    shown = table[runs_data.LEAD + extra]
    selection = st.dataframe(no_none(shown, keep=("Δ",)).style.map(runs_data.colour_delta, subset=["Δ"])
                             .format(precision=3, subset=["Δ"]),
                             hide_index=True, key="eval_pairs", on_select="rerun", selection_mode="single-row")
    rows = selection.selection.rows if selection else []
    focus = st.session_state.pop("eval_focus", None) or {}
    focused = table.index[table["query_id"].astype(str) == str(focus.get("query_id"))].tolist()
    if rows:
        _pair_lookups(ctx, comparison, table.iloc[rows[0]])
    elif focused:  # opened from a trace: its query, without a click
        _pair_lookups(ctx, comparison, table.iloc[focused[0]])


def _pair_lookups(ctx: state.AppContext, comparison: Any, row: pd.Series) -> None:
    """The stored lookups of one query in both runs, side by side, labelled relevant documents marked."""
    relevant = set(row["relevant"]) if isinstance(row.get("relevant"), list) else set()
    st.markdown(f"#### Query `{row['query_id']}`: “{row['query']}”")
    st.caption("Labelled relevant: " + views.chips(sorted(relevant)) + f" · first relevant rank {row['rank A → B']}")
    pages = runs_data.relevant_pages(row)
    if not pages.empty:  # where each relevant page stood in A and in B (docs/explain.md: the stages)
        st.dataframe(pages, hide_index=True, key="eval_pair_stages")
        if (pages == DASH).any().any():
            st.caption("—: a rank, the page was not in that run's results (its stage says where it was lost); a "
                       "stage, not recorded for that run (an imported run, or one stored before pages were "
                       "attributed).")
    top = st.number_input("Blocks per side", min_value=1, max_value=50, value=TOP_DEFAULT, key="eval_pair_top")
    columns = st.columns(2)
    for column, run_id, side in ((columns[0], comparison.run_a, "A"), (columns[1], comparison.run_b, "B")):
        frame = _stored_lookup(ctx, run_id, str(row["query_id"]))
        with column:
            if frame.empty:
                st.warning(f"No stored lookup of this query in {run_id}")
                continue
            views.compact_details(json.loads(frame["retrieval_details"][0]), title=f"Run {side}: {run_id}",
                                  relevant=relevant, limit=int(top))
            if st.button(f"Open the trace of run {side}", key=f"eval_open_trace_{side.lower()}"):
                st.session_state["tr_open_id"] = str(frame["id"][0])  # a run's query links to its trace
                st.switch_page("appui/pages/traces.py")


def _stored_lookup(ctx: state.AppContext, run_id: str, query_id: str) -> pd.DataFrame:
    """The lookup a run's query row points at (`eval_query.invocation_id`: a replay's `recorded-…` run points at
    the recorded calls), else the run's latest lookup of that query."""
    truth = _truth(ctx.traces_path, run_id, _labels(ctx))
    ids = truth.loc[truth["query_id"].astype(str) == query_id, "invocation_id"].dropna().tolist() \
        if "invocation_id" in truth else []
    if ids:
        frame = ctx.store.query("SELECT id, retrieval_details FROM tool_invocation WHERE id = ?", [str(ids[0])])
        if not frame.empty:
            return frame
    return ctx.store.query("SELECT id, retrieval_details FROM tool_invocation WHERE run_id = ? AND query_id = ? "
                           "ORDER BY created_at DESC LIMIT 1", [run_id, query_id])
