""""Why not…?" under a result: pick a page of the knowledge base (type to search) and see the stage of the lookup
that lost it, why in words, its numbers, and its score parts beside the last returned block's as bars
(retrieval.lookup.explain; docs/explain.md). On the Traces page the call is replayed under its recorded
settings, and a knowledge base that changed since, or a lookup that no longer returns what was recorded, is
said ("could not reproduce"), not guessed at."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import streamlit as st

from appui.widgets import parts_chart
from retrieval import KnowledgeIndex, LookupConfig, explain_missing

STAGE_COLOURS = {"returned": "green", "below_top_k": "orange", "not_in_pool": "orange", "below_min_score": "red",
                 "filtered_out": "violet", "not_in_kb": "gray", "merged": "blue", "could_not_reproduce": "gray"}


def render(result: Mapping[str, Any], index: KnowledgeIndex, config: LookupConfig, *, category: str | None,
           top_k: int | None, key: str, recorded_fingerprint: str | None = None) -> None:
    """The box under one result (`result` as `LookupResult.to_dict()` or a trace as one); `key` keeps each
    place's picks apart."""
    query = str(result.get("query") or "").strip()
    if not query:
        return
    sources = sorted(e.source for e in index.kb.entries)
    with st.container(key=f"{key}_why_not_box"):
        picked = st.selectbox("Why not…? a page you expected", sources, index=None, key=f"{key}_why_not",
                              placeholder="type part of a page's path, e.g. now.md",
                              help="The stage of the lookup that lost the page, with its numbers (docs/explain.md)")
        if picked is not None:
            _answer(result, index, config, picked, category=category, top_k=top_k, key=key,
                    recorded_fingerprint=recorded_fingerprint)


def _answer(result: Mapping[str, Any], index: KnowledgeIndex, config: LookupConfig, picked: str, *,
            category: str | None, top_k: int | None, key: str, recorded_fingerprint: str | None) -> None:
    """The stage, the reason, the L0 fact, the parts beside the last returned block's, and the numbers."""
    query = str(result.get("query") or "").strip()
    returned = [b.get("source") for b in result.get("evidence_blocks") or []]
    report = explain_missing(query, [picked], index=index, config=config, category=category, top_k=top_k,
                             recorded_fingerprint=recorded_fingerprint, recorded_sources=returned)
    found = report.explanations[0]
    colour = STAGE_COLOURS.get(found.stage, "gray")
    st.markdown(f"`{found.source}` :{colour}-badge[{found.stage}] {found.reason}")
    st.caption("L0 matched it (L0 never gates: its match is a fact, not a stage)" if found.l0_matched
               else "L0 did not match it (L0 never gates: a miss there is a fact, not a stage)")
    answer = found.to_dict()
    rows = []
    if answer["score_parts"]:
        rows.append((f"{found.source} (why not)", {"score_parts": answer["score_parts"]}))
    last = report.returned[:report.cutoff or report.top_k][-1:] if report.returned else []
    if answer["last_returned_score_parts"] and last:
        rows.append((f"#{len(report.returned[:report.cutoff or report.top_k])} {last[0]} (last returned)",
                     {"score_parts": answer["last_returned_score_parts"]}))
    parts_chart.show_parts(rows, key=f"{key}_why_not_parts")
    with st.expander("The numbers"):
        st.code(json.dumps(found.numbers, indent=2, default=str), language="json")
