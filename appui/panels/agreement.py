"""The Judging page's Agreement tab: how far annotators agree (Cohen's κ per pair, Krippendorff's α across all,
with confidence intervals; per queue and overall), the pages they disagree on, and adjudicating one of them.

The figures come from eval.agreement.compute and the adjudication is eval.agreement.adjudicate; this module lays
them out."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from appui.panels.queues import GRADE_BUTTONS
from appui.widgets import annotator, state

OVERALL = "(every mark)"
GRADE_WORDS = {grade: label.lower() for grade, label, _ in GRADE_BUTTONS}


@st.cache_data(show_spinner="Measuring agreement…", max_entries=16)
def _agreement(traces_path: str, queue: str | None, version: str) -> Any:
    """eval.agreement.compute; `version` (the judgements' and adjudications' state) keys the cache."""
    from eval import agreement
    return agreement.compute(state.open_store(traces_path), queue=queue)


def _version(ctx: state.AppContext) -> str:
    """What the agreement depends on: the count and latest time of marks, assignments and adjudications."""
    frame = ctx.store.query(
        "SELECT (SELECT count(*) || '/' || coalesce(max(created_at)::VARCHAR, '') FROM judgement) || ' ' || "
        "(SELECT count(*) || '/' || coalesce(max(assigned_at)::VARCHAR, '') FROM judgement_assignment) || ' ' || "
        "(SELECT count(*) || '/' || coalesce(max(created_at)::VARCHAR, '') FROM judgement_adjudication) AS v")
    return str(frame["v"].iloc[0])


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def disagreements_table(result: Any) -> pd.DataFrame:
    """One row per disputed page: query, source, each annotator's grade, and the adjudicated grade (if any)."""
    rows = [{"query": d.query, "source": d.source, **{who: grade for who, grade in d.grades},
             "adjudicated": d.adjudicated_grade} for d in result.disagreements]
    return pd.DataFrame(rows, columns=["query", "source", *result.annotators, "adjudicated"])


def render(ctx: state.AppContext) -> None:
    """The queue picker, the figures in words and tables, the disagreements and the adjudication buttons."""
    from eval import annotation

    names = state.guarded(lambda: annotation.queue_names(ctx.store)) or []
    picked = st.selectbox("Question set", [OVERALL, *names], key="jg_queue",
                          help="A queue's pages, or every mark in the trace file (marks outside any queue included)")
    version = state.guarded(lambda: _version(ctx))
    if version is None:
        return
    result = state.guarded(lambda: _agreement(ctx.traces_path, None if picked == OVERALL else picked, version))
    if result is None:
        return
    with st.container(key="jg_sentence"):
        st.markdown(result.sentence() + ".")
    if result.reason:
        st.info("Agreement needs two annotators who marked the same pages: assign a queue to a second annotator "
                "on the Assign tab.")
        return
    left, right = st.columns([1, 2])
    left.metric(f"Krippendorff's α ({result.metric})", _num(result.alpha), border=True,
                help=f"{result.level:.0%} CI {_ci(result.alpha_ci)} (bootstrap over pages, {result.resamples} "
                     "resamples); 1 is perfect agreement, 0 what chance gives" if result.alpha is not None
                else result.alpha_reason)
    left.caption(f"α {_num(result.alpha)}, {result.level:.0%} CI {_ci(result.alpha_ci)} · "
                 f"{len(result.annotators)} annotators · {result.pairable} of {result.pages} page(s) judged by two "
                 "or more")
    with right:
        st.markdown("**Cohen's κ per pair** (on the pages both judged)")
        st.dataframe(result.pairs_frame(), hide_index=True, key="jg_pairs")
    if result.per_set:
        st.markdown("**Per question set** (a queue's pages; marks outside every queue form “(no queue)”)")
        st.dataframe(result.sets_frame(), hide_index=True, key="jg_per_set")
    _disagreements(ctx, result)


def _disagreements(ctx: state.AppContext, result: Any) -> None:
    """The pages the annotators grade differently and, for the one picked, the adjudicator's grade buttons."""
    said = st.session_state.pop("jg_adjudicated", None)
    if said:
        st.success(said)
    frame = disagreements_table(result)
    st.markdown(f"**Disagreements**: {len(frame)} page(s) graded differently, {result.adjudicated} adjudicated")
    if frame.empty:
        st.caption("Every page judged by two or more annotators got the same grade.")
        return
    st.dataframe(frame, hide_index=True, key="jg_disagreements")
    labels = [f"“{d.query}” · {d.source}" + (" (adjudicated)" if d.adjudicated else "")
              for d in result.disagreements]
    chosen = st.selectbox("Adjudicate", range(len(labels)), format_func=labels.__getitem__, key="jg_dispute",
                          help="Your grade settles the page: the “adjudicated” export rule uses it")
    dispute = result.disagreements[min(chosen, len(labels) - 1)]
    note = st.text_input("Note (optional)", key="jg_note", placeholder="why this grade")
    for column, (grade, label, icon) in zip(st.columns(len(GRADE_BUTTONS)), GRADE_BUTTONS, strict=True):
        column.button(label, key=f"jg_adjudicate_{grade}", icon=icon, on_click=_adjudicate,
                      args=(ctx, dispute.query, dispute.source, grade, note))


def _adjudicate(ctx: state.AppContext, query: str, source: str, grade: int, note: str) -> None:
    from eval import agreement

    who = annotator.current()
    if not who:
        annotator.ask()
        return
    done = state.guarded(lambda: agreement.adjudicate(ctx.store, query, source, grade, who=who, note=note) or True)
    if done:
        st.session_state["jg_adjudicated"] = f"“{query}” · `{source}` adjudicated by `{who}`: {GRADE_WORDS[grade]}"
