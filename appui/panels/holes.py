"""The Compare page's hole loop: the judging queue of two runs (the unjudged pages their changed top 10s brought
up, with the judgement buttons of the result cards) and, once marks are made, the comparison's conclusions
before and after them.

The queue and the re-scoring come from eval.holes and eval.what_if; the marks are kept by eval.judgements
through the cards' callback (appui.panels.judging); this module lays them out.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from appui.panels import judging, queues
from appui.widgets import annotator, marking, state

SHOWN = 10  # questions of the queue shown at once; judging them brings the next ones up


@st.cache_data(show_spinner="Finding unjudged pages…", max_entries=16)
def _queue(traces_path: str, run_a: str, run_b: str, labels: str) -> Any:
    """The judging queue; `labels` (the judgements' version) keys the cache: a mark takes its page out."""
    from eval import holes
    return holes.judging_queue(state.open_store(traces_path), run_a, run_b)


@st.cache_data(show_spinner="Scoring both runs again with the marks…", max_entries=16)
def _what_if(traces_path: str, run_a: str, run_b: str, labels: str, _comparison: Any) -> Any:
    from eval import what_if
    return what_if.what_if_judged(state.open_store(traces_path), _comparison)


def render(ctx: state.AppContext, comparison: Any, labels: str) -> None:
    """The queue grouped by question, each page with Relevant / Not relevant, then the conclusions table."""
    with st.container(key="holes_panel"):
        st.markdown("**Judging queue**: pages in a top 10 that changed between A and B that nobody judged (no "
                    "label, no mark); they count as not relevant in both runs until judged")
        queue = state.guarded(lambda: _queue(ctx.traces_path, comparison.run_a, comparison.run_b, labels))
        if queue is None:
            return
        st.caption(queue.sentence()[0].upper() + queue.sentence()[1:] + ".")
        queues.assign_holes(ctx, comparison.run_a, comparison.run_b)
        if queue.labels_warning:  # the labels fell back to the stored relevant pages: said, not silent
            st.warning(queue.labels_warning)
        _conclusions(ctx, comparison, labels)  # above the queue: what the marks made so far changed
        _flips(ctx, comparison, labels)
        grouped = list(queue.by_query().items())
        if not grouped:
            st.success("Nothing to judge: every page in the top 10s that changed carries a judgement.")
        blind = annotator.blind()
        for number, (query_id, found) in enumerate(grouped[:SHOWN]):
            _question(ctx, number, query_id, found, blind)
        if len(grouped) > SHOWN:
            st.caption(f"{len(grouped) - SHOWN} more question(s) in the queue: judge these to bring them up.")


def _question(ctx: state.AppContext, number: int, query_id: str, found: list[Any], blind: bool) -> None:
    """One question's unjudged pages with their ranks in A and B (not when judging `blind`) and the judgement
    buttons (keys `holes_<number>_judge_<row>_<grade>`)."""
    query = found[0].query
    judge = judging.callback(ctx, {"query": query, "invocation_id": found[0].invocation_id})
    with st.container(border=True):
        st.markdown(f"**{query_id}**: “{query}”")
        for row, hole in enumerate(found, start=1):
            st.caption(f"`{hole.source}`" if blind else
                       f"`{hole.source}` · rank in A {hole.rank_a or '—'} · rank in B {hole.rank_b or '—'}")
            if judge is not None:
                marking.judge_buttons({"source": hole.source}, row, None, judge, f"holes_{number}")


def _conclusions(ctx: state.AppContext, comparison: Any, labels: str) -> None:
    """Once marks touch the paired questions: each metric's delta and p before and after them."""
    result = state.guarded(lambda: _what_if(ctx.traces_path, comparison.run_a, comparison.run_b, labels, comparison))
    if result is None or not result.rescored:
        return
    st.markdown("**Conclusions before and after the new marks** (both runs scored again with the labels and "
                f"the marks; {result.rescored} of {result.paired} paired question(s) have marks; nothing stored)")
    st.dataframe(result.table(), hide_index=True, key="holes_conclusions")
    changed = result.changed()
    if changed:
        st.warning("The marks changed the conclusion on " + ", ".join(changed) + ".")
    else:
        st.caption("No conclusion changed: every significant win, loss and tie holds.")


@st.cache_data(show_spinner="Scoring both runs under each annotator's marks…", max_entries=16)
def _annotator_flips(traces_path: str, run_a: str, run_b: str, labels: str, _comparison: Any) -> Any:
    from eval import agreement
    return agreement.flips(state.open_store(traces_path), _comparison)


def _flips(ctx: state.AppContext, comparison: Any, labels: str) -> None:
    """When two or more annotators marked the paired questions: which verdicts flip with the annotator
    (eval.agreement.flips), a line per flipped metric."""
    try:
        from eval import agreement  # noqa: F401 - only checked for here
    except ImportError:
        return
    result = state.guarded(lambda: _annotator_flips(ctx.traces_path, comparison.run_a, comparison.run_b, labels,
                                                    comparison))
    if result is None or len(result.annotators) < 2:
        return
    sentence = result.sentence()
    with st.container(key="holes_flips"):
        if result.flipped():
            st.warning(sentence[0].upper() + sentence[1:] + ".")
            st.markdown("\n".join(f"- {line}" for line in result.lines()))
        else:
            st.caption(sentence[0].upper() + sentence[1:] + ".")
