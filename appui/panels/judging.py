"""Relevance marks on result cards: the callback a card's buttons call, the marks already made, and the
Export page's judgement downloads. Storage and formats live in eval.judgements."""

from __future__ import annotations

import getpass
import shlex
from collections.abc import Mapping
from typing import Any

import streamlit as st

from appui.widgets import marking, state

try:
    from eval import judgements
except ImportError:  # eval/ is optional for the Lookup and Traces pages
    judgements = None

Judge = marking.Judge
EXPORTS = {"queries.jsonl (relevant)": ("queries.jsonl", "application/x-ndjson"),
           "qrels TSV": ("qrels.tsv", "text/tab-separated-values")}


def who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "analyst"


def callback(ctx: state.AppContext, result: Mapping[str, Any]) -> Judge | None:
    """What a card's Relevant / Not relevant / Clear button calls for `result` (grade None clears the block's
    marks for this query); None when marks cannot be kept."""
    if judgements is None or ctx.store is None:
        return None
    query, invocation = str(result.get("query")), result.get("invocation_id")
    fingerprint = result.get("kb_fingerprint") or (st.session_state.get("lookup_result_origin") or {}).get(
        "kb_fingerprint")

    def judge(block: Mapping[str, Any], grade: int | None) -> None:
        if grade is None:
            state.guarded(lambda: judgements.clear(ctx.store, query, str(block["source"])))
            return
        state.guarded(lambda: judgements.record(ctx.store, query, str(block["source"]), grade, who=who(),
                                                invocation_id=invocation, kb_fingerprint=fingerprint))
    return judge


def marks(ctx: state.AppContext, query: str) -> dict[str, int]:
    """source -> latest grade for `query` (empty when nothing is judged or eval/ is missing)."""
    if judgements is None or ctx.store is None:
        return {}
    frame = state.guarded(lambda: judgements.latest(ctx.store))
    if frame is None or frame.empty:
        return {}
    mine = frame[frame["query"] == query.strip()]
    return dict(zip(mine["source"], mine["grade"].astype(int), strict=True))


def export(ctx: state.AppContext) -> None:
    """The Export page's judgements: a table of the marks that count and a download in either format."""
    if judgements is None:
        st.warning("Judgement exports need the evaluation package (eval/), which is not available.")
        return
    frame = state.guarded(lambda: judgements.latest(ctx.store))
    if frame is None:
        return
    if frame.empty:
        st.info("No judgements yet: mark blocks Relevant or Not relevant on the Lookup or Traces page.")
        return
    fmt = st.radio("Judgements as", list(EXPORTS), key="ex_judgement_format", horizontal=True)
    name, mime = EXPORTS[fmt]
    payload = judgements.to_queries_jsonl(frame) if fmt.startswith("queries") else judgements.to_qrels_tsv(frame)
    queries = frame["query"].nunique()
    command = f"python -m eval run --kb {shlex.quote(ctx.kb_path)} --judgements {shlex.quote(ctx.traces_path)}"
    st.markdown(f"**{len(frame)} judgement(s)** on {queries} quer{'y' if queries == 1 else 'ies'} · evaluate them "
                f"with `{command}` or on the Compare page")
    st.download_button(f"Download {name}", payload.encode(), file_name=name, mime=mime, key="ex_judgements_download",
                       type="primary", on_click="ignore")
    st.dataframe(frame, hide_index=True, key="ex_judgements_preview")
