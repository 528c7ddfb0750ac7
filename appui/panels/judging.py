"""Relevance marks on result cards: the callback a card's buttons call (recording the annotator, see
appui.widgets.annotator), the marks already made (the annotator's own, and the others'), and the Export page's
judgement downloads under a consensus rule. Storage, formats and rules live in eval.judgements,
eval.annotation and eval.agreement."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from appui.widgets import annotator, marking, state

try:
    from eval import annotation, judgements
except ImportError:  # eval/ is optional for the Lookup and Traces pages
    annotation = judgements = None

Judge = marking.Judge
EXPORTS = {"queries.jsonl (relevant)": ("queries.jsonl", "application/x-ndjson"),
           "qrels TSV": ("qrels.tsv", "text/tab-separated-values")}


@dataclass(frozen=True)
class CardMarks:
    """The marks a result's cards show: `mine` (source -> the annotator's own grade, the pressed button) and
    `others` (source -> the other annotators' marks in words, "bob: relevant"; empty while judging blind)."""

    mine: dict[str, int] = field(default_factory=dict)
    others: dict[str, list[str]] = field(default_factory=dict)


def callback(ctx: state.AppContext, result: Mapping[str, Any]) -> Judge | None:
    """What a card's Relevant / Not relevant / Clear button calls for `result` (grade None clears the block's
    marks for this query); None when marks cannot be kept."""
    if judgements is None or ctx.store is None:
        return None
    query, invocation = str(result.get("query")), result.get("invocation_id")
    fingerprint = result.get("kb_fingerprint") or (st.session_state.get("lookup_result_origin") or {}).get(
        "kb_fingerprint")

    def judge(block: Mapping[str, Any], grade: int | None) -> None:
        who = annotator.current()
        if not who:  # no silent default user: the analyst names themself first
            annotator.ask()
            return
        if grade is None:
            state.guarded(lambda: judgements.clear(ctx.store, query, str(block["source"]), who=who))
            return
        state.guarded(lambda: judgements.record(ctx.store, query, str(block["source"]), grade, who=who,
                                                invocation_id=invocation, kb_fingerprint=fingerprint))
    return judge


def marks(ctx: state.AppContext, query: str, *, blind: bool = False) -> CardMarks:
    """The marks on `query`'s pages: the current annotator's own and, unless `blind`, everyone else's (with no
    annotator named yet, every mark counts as another's). Empty when nothing is judged or eval/ is missing."""
    if annotation is None or ctx.store is None:
        return CardMarks()
    frame = state.guarded(lambda: annotation.by_annotator(ctx.store))
    if frame is None or frame.empty:
        return CardMarks()
    frame = frame[frame["query"] == query.strip()]
    me = annotator.current()
    own = frame[frame["who"] == me]
    others: dict[str, list[str]] = {}
    if not blind:
        for row in frame[frame["who"] != me].itertuples(index=False):
            others.setdefault(str(row.source), []).append(f"{row.who}: {judgements.GRADES.get(int(row.grade))}")
    return CardMarks(dict(zip(own["source"], own["grade"].astype(int), strict=True)), others)


RULE_WORDS = {"latest": "Latest mark", "adjudicated": "Adjudicated, else agreed",
              "majority": "Majority (ties: the lower grade)", "mean": "Mean grade (rounded half up)"}
RULE_HELP = ("Which grade a page gets when several annotators marked it: the latest mark of anyone; the "
             "adjudicator's grade, else the grade every annotator agrees on (disputed pages without adjudication are "
             "left out); the most common grade; or the mean grade")


def export(ctx: state.AppContext) -> None:
    """The Export page's judgements: the consensus rule, a table of the grades it gives and a download in either
    format."""
    if judgements is None:
        st.warning("Judgement exports need the evaluation package (eval/), which is not available.")
        return
    from eval import agreement

    rule = st.radio("Grades by", list(agreement.RULES), key="ex_consensus_rule", horizontal=True,
                    format_func=lambda r: RULE_WORDS.get(r, r), help=RULE_HELP)
    frame = state.guarded(lambda: agreement.consensus(ctx.store, rule))
    if frame is None:
        return
    left_out = int(frame.attrs.get("left_out", 0) or 0)
    if left_out:
        st.warning(f"{left_out} disputed page(s) without adjudication are left out: adjudicate them on the Judging "
                   "page's Agreement tab, or pick another rule.")
    if frame.empty:
        st.info("No judgements yet: mark blocks Relevant or Not relevant on the Lookup or Traces page."
                if rule == "latest" or not left_out else "No page has a grade under this rule.")
        return
    fmt = st.radio("Judgements as", list(EXPORTS), key="ex_judgement_format", horizontal=True)
    name, mime = EXPORTS[fmt]
    payload = judgements.to_queries_jsonl(frame) if fmt.startswith("queries") else judgements.to_qrels_tsv(frame)
    queries = frame["query"].nunique()
    command = f"python -m eval run --kb {shlex.quote(ctx.kb_path)} --judgements {shlex.quote(ctx.traces_path)}"
    how = (f"evaluate them with `{command}` or on the Compare page" if rule == "latest"
           else f"grades by the rule “{RULE_WORDS.get(rule, rule).lower()}”")
    note = str(frame.attrs.get("note") or "")
    st.markdown(f"**{len(frame)} judgement(s)** on {queries} quer{'y' if queries == 1 else 'ies'} · {how}"
                + (f" · {note}" if note else ""))
    st.download_button(f"Download {name}", payload.encode(), file_name=name, mime=mime, key="ex_judgements_download",
                       type="primary", on_click="ignore")
    st.dataframe(frame, hide_index=True, key="ex_judgements_preview")
