"""The Trends page's "Content gaps": the topics of the production questions the sidebar's knowledge base did not
answer in the picked window (retrieval.traces.gaps), as a table; picking a topic lists its questions, each of
which opens its traces on the Traces page (filtered by the question's text)."""

from __future__ import annotations

import streamlit as st

from appui.data import traces as traces_filters
from appui.data import trends as data
from appui.widgets import cached_reads, state, trend_reads
from retrieval import LookupConfig


def render(ctx: state.AppContext, store: cached_reads.CachedReads, window: data.Window) -> None:
    """The topics table for `window` on the sidebar's knowledge base, and the picked topic's questions."""
    st.subheader("Content gaps")
    st.caption("The production questions the knowledge base did not answer in the window (it abstained, or graded "
               "them low or none), grouped into topics on the base's own L1 vectors: each topic's terms, size, "
               "trend against the window before, example questions, and the nearest pages the base does have.")
    index = ctx.index(LookupConfig().svd_dims)
    if index is None:
        return
    gaps = state.guarded(lambda: trend_reads.content_gaps(store, index, window=window.span, until=window.end))
    if gaps is None:
        return
    if not gaps.questions:
        st.info(f"No unanswered questions in the window {window.words()}: every production lookup in it was "
                "answered (graded high or medium, no abstention)"
                + (f" ({gaps.empty_reason})." if gaps.empty_reason else "."))
        return
    if not gaps.topics:
        st.info(f"{gaps.questions:,} unanswered question(s) in the window, but no topic: "
                f"{gaps.empty_reason or 'too few or too scattered to group'}.")
        return
    st.caption(f"{data.gaps_words(gaps)} · knowledge base `{index.kb.root}` · window {window.words()}")
    table = data.gaps_table(gaps)
    picked = st.dataframe(table, hide_index=True, key="trn_gaps_table", on_select="rerun",
                          selection_mode="single-row")
    rows = picked.selection.rows if picked else []
    if rows and rows[0] < len(gaps.topics):
        _questions(gaps.topics[rows[0]])
    else:
        st.caption("Click a topic's row to list its questions and open their traces.")


def _questions(topic: object) -> None:
    """A topic's questions, most asked first, each with a button that opens its traces on the Traces page."""
    questions = data.topic_questions(topic)
    st.markdown(f"#### {topic.label}")
    shown = "all of them" if len(questions) >= topic.distinct else f"the {len(questions)} most asked"
    st.caption(f"{topic.size:,} question(s) asked in the window, {topic.distinct:,} distinct; {shown}, most asked "
               "first, each opening its traces on the Traces page")
    term = data.common_term(topic, [q for q, _ in questions])
    if term and st.button(f"Open the topic's traces (queries containing “{term}”) on the Traces page",
                          key="trn_gap_open_topic"):
        _open_traces(term)
    for n, (question, count) in enumerate(questions):
        text, button = st.columns([5, 1], vertical_alignment="center")
        text.text(f"{question}  ·  asked {count}×")
        if button.button("Open its traces", key=f"trn_gap_q_{n}"):
            _open_traces(question)


def _open_traces(text: str) -> None:
    """The Traces page, its filters set to the production lookups whose query contains `text`, at any time."""
    keep = st.session_state
    keep["tr_time"], keep["tr_run"], keep["tr_search"] = "All time", traces_filters.NO_RUN, text
    keep["tr_layer"], keep["tr_l1"], keep["tr_filter"], keep["tr_host"] = [], [], [], []
    st.switch_page("appui/pages/traces.py")
