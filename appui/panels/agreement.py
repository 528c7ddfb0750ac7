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


def _ci(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def pairs_table(result: Any) -> pd.DataFrame:
    """One row per pair of annotators: pages both judged, κ and its confidence interval."""
    return pd.DataFrame([{"annotator A": p.a, "annotator B": p.b, "pages both judged": p.n,
                          "Cohen's κ": round(p.kappa, 3), "CI": _ci(p.ci_low, p.ci_high)} for p in result.pairs],
                        columns=["annotator A", "annotator B", "pages both judged", "Cohen's κ", "CI"])


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
    st.markdown(result.sentence())
    if len(result.annotators) < 2:
        st.info("Agreement needs two annotators who marked the same pages: assign a queue to a second annotator "
                "on the Assign tab.")
        return
    left, right = st.columns([1, 2])
    low, high = result.alpha_ci
    left.metric("Krippendorff's α (ordinal)", f"{result.alpha:.3f}", help=f"CI {_ci(low, high)} (bootstrap over "
                f"pages); 1 is perfect agreement, 0 what chance gives", border=True)
    left.caption(f"α {result.alpha:.3f}, CI {_ci(low, high)} · {len(result.annotators)} annotators · "
                 f"{result.pages} page(s)")
    with right:
        st.markdown("**Cohen's κ per pair** (pages both judged)")
        st.dataframe(pairs_table(result), hide_index=True, key="jg_pairs")
    per_set = _per_set_table(result)
    if per_set is not None and picked == OVERALL:
        st.markdown("**Per question set**")
        st.dataframe(per_set, hide_index=True, key="jg_per_set")
    _disagreements(ctx, result)


def _per_set_table(result: Any) -> pd.DataFrame | None:
    """α and its interval per question set (a queue, or "(no queue)")."""
    sets = result.per_set
    if not sets:
        return None
    items = sets.items() if isinstance(sets, dict) else ((s.name, s) for s in sets)
    return pd.DataFrame([{"question set": name, "pages": part.pages, "annotators": len(part.annotators),
                          "α": round(part.alpha, 3), "CI": _ci(*part.alpha_ci)} for name, part in items])


def _disagreements(ctx: state.AppContext, result: Any) -> None:
    """The pages the annotators grade differently and, for the one picked, the adjudicator's grade buttons."""
    frame = result.disagreements if isinstance(result.disagreements, pd.DataFrame) else pd.DataFrame(
        result.disagreements)
    said = st.session_state.pop("jg_adjudicated", None)
    if said:
        st.success(said)
    st.markdown(f"**Disagreements** ({len(frame)} page(s) graded differently)")
    if frame.empty:
        st.caption("Every page judged by two or more annotators got the same grade.")
        return
    st.dataframe(frame, hide_index=True, key="jg_disagreements")
    labels = [f"“{q}” · {s}" for q, s in zip(frame["query"], frame["source"], strict=True)]
    chosen = st.selectbox("Adjudicate", range(len(labels)), format_func=labels.__getitem__, key="jg_dispute")
    query, source = str(frame["query"].iloc[chosen]), str(frame["source"].iloc[chosen])
    note = st.text_input("Note (optional)", key="jg_note", placeholder="why this grade")
    for column, (grade, label, icon) in zip(st.columns(len(GRADE_BUTTONS)), GRADE_BUTTONS, strict=True):
        column.button(label, key=f"jg_adjudicate_{grade}", icon=icon, on_click=_adjudicate,
                      args=(ctx, query, source, grade, note))


def _adjudicate(ctx: state.AppContext, query: str, source: str, grade: int, note: str) -> None:
    from eval import agreement

    who = annotator.current()
    if not who:
        annotator.ask()
        return
    done = state.guarded(lambda: agreement.adjudicate(ctx.store, query, source, grade, who=who, note=note) or True)
    if done:
        st.session_state["jg_adjudicated"] = f"“{query}” · `{source}` adjudicated by `{who}`: {GRADE_WORDS[grade]}"
