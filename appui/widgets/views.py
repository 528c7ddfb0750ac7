"""How a lookup is shown: hints, filter decision, L1 status, counts, relevance, evidence cards, timings, JSON.

Everything here reads `LookupResult.to_dict()` or a stored `retrieval_details`; nothing is recomputed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from appui.data.plain import plain_markdown
from appui.panels import domain_view
from appui.widgets import marking, parts_chart
from appui.widgets.score_parts import compare_two_blocks, parts_line

LAYER_COLOURS = {"L0": "orange", "L1": "blue", "L0+L1": "green", "none": "gray"}
L1_COLOURS = {"ok": "green", "empty": "orange", "failed": "red", "timeout": "red", "unavailable": "red",
              "disabled": "gray"}


def badge(text: str, colours: Mapping[str, str]) -> str:
    """Markdown badge coloured by value (layer or L1 status)."""
    return f":{colours.get(text, 'gray')}-badge[{text}]"


def chips(values: Sequence[Any]) -> str:
    return " ".join(f"`{v}`" for v in values) if values else "—"


def hints(details: Mapping[str, Any]) -> None:
    l0 = details.get("l0") or {}
    st.markdown(f"**L0 hints** · {l0.get('match_count', 0)} match(es)")
    columns = st.columns(5)  # each domain list labelled by where it comes from: L0's matches, or the vote
    for column, (label, name) in zip(columns, (("Matched titles", "matched_titles"),
                                               ("Keywords", "matched_keywords"),
                                               ("Domains of L0's matches", "match_domains"),
                                               ("Domains the vote carried", "domains"),
                                               ("Entities", "entities")), strict=True):
        column.markdown(f"{label}  \n{chips(l0.get(name) or [])}")


def filter_and_l1(details: Mapping[str, Any], *, key: str = "lookup") -> None:
    """The filter decision with why this domain (left) beside what L1 did (right)."""
    decision, l1 = details.get("filter") or {}, details.get("l1") or {}
    left, right = st.columns(2)
    with left:
        st.markdown(f"**Filter decision:** `{decision.get('decision')}` · domains the vote carried "
                    f"{chips(decision.get('l0_domains') or [])}")
        st.markdown(domain_view.filter_sent(decision, l1))
        domain_view.why_domain(details, key=f"{key}_domain_evidence")
    status = str(l1.get("status"))
    right.markdown(f"**L1 status:** {badge(status, L1_COLOURS)} · searched {l1.get('rows_searched', 0)} rows · "
                   f"{l1.get('dropped_below_min_score', 0)} below min score")
    if l1.get("error"):
        right.warning(f"L1 fell back to L0 evidence: {l1['error'].get('type')}: {l1['error'].get('message')}")


def counts(details: Mapping[str, Any]) -> None:
    l0, l1 = details.get("l0") or {}, details.get("l1") or {}
    values = (("L0 matches", l0.get("match_count", 0)), ("L1 candidates", l1.get("candidate_count", 0)),
              ("Candidates", details.get("candidate_count", 0)), ("Final blocks", details.get("evidence_count", 0)),
              ("Duplicates merged", details.get("duplicates_merged", 0)))
    for column, (label, value) in zip(st.columns(len(values)), values, strict=True):
        column.metric(label, value)
    shortfall = details.get("shortfall")
    if isinstance(shortfall, Mapping) and shortfall.get("reason"):
        if details.get("evidence_count", shortfall.get("returned")):
            st.info(f"Fewer blocks than asked for: {shortfall['reason']}.")
        else:  # no block at all: the lead sentence says so; the why is a footnote, not a fallback notice
            st.caption(f"Why no blocks: {shortfall['reason']}.")


NO_ANSWER = "the knowledge base does not seem to hold an answer"


def relevance(result: Mapping[str, Any]) -> None:
    """The grade, led by the plain sentence when the knowledge base holds no answer (abstained, or no block)."""
    rel = result.get("relevance") or {}
    basis = str(rel.get("basis", ""))
    why = basis.split(": ", 1)[1] if basis.startswith(NO_ANSWER + ": ") else basis
    if not result.get("evidence_blocks"):  # the clearest "nothing answers": said first and plainly
        st.markdown(f"**{NO_ANSWER.capitalize()}: nothing in it matches the question.**")
        st.caption(f"Relevance: {rel.get('level')}" + (f" · {why}" if why else ""))
        return
    if rel.get("abstain"):
        st.markdown(f"**{NO_ANSWER.capitalize()}.** The blocks below are the closest pages found, not an answer.")
    support = "with semantic support" if rel.get("semantic_support") else "without semantic support"
    layer = badge(str(result.get("retrieval_layer")), LAYER_COLOURS)
    st.markdown(f"**Relevance: {rel.get('level')}** ({support}) · layer {layer}")
    st.caption(why if rel.get("abstain") else basis)


def evidence_cards(blocks: Sequence[Mapping[str, Any]], *, full: bool = True,
                   relevant: Collection[str] = (), limit: int | None = None,
                   judge: marking.Judge | None = None,
                   marks: Mapping[str, int] | None = None, key: str = "cards", returned: int | None = None,
                   others: Mapping[str, Sequence[str]] | None = None, blind: bool = False) -> None:
    """One bordered card per block: title, source, breadcrumb, layer badge, score and its parts, hit reasons,
    content.

    Sources in `relevant` (a labelled set's relevant documents) get a green "relevant" badge; `limit` shows
    only the first blocks and says how many are left out. With `judge`, each card has Relevant / Not
    relevant buttons (see marking.judge_buttons), the annotator's own mark (`marks`) pressed, and Clear;
    `others` (source -> other annotators' marks in words, "bob: relevant") are badges by the title. `blind`
    shows only each page's title, source, breadcrumb and content, in an order not the system's (blind_card).
    """
    if not blocks:
        st.caption("No evidence blocks.")
    shown = blocks if limit is None else blocks[:limit]
    if blind:
        for position, block in enumerate(blind_order(shown), start=1):
            blind_card(block, position, (marks or {}).get(block["source"]), judge, key)
        return
    for rank, block in enumerate(shown, start=1):
        with st.container(border=True):
            mark = " :green-badge[relevant]" if block["source"] in relevant else ""
            judged = (marks or {}).get(block["source"])
            if judged is not None:
                mark += " :violet-badge[judged relevant]" if judged > 0 else " :gray-badge[judged not relevant]"
            mark += "".join(f" :blue-badge[{other}]" for other in (others or {}).get(block["source"], ()))
            st.markdown(f"**{rank}. {block.get('title') or block['source']}** "
                        f"{badge(str(block.get('retrieval_layer')), LAYER_COLOURS)} · score "
                        f"`{block.get('score', 0):.3f}`{mark}")
            crumb = block.get("breadcrumb")
            st.caption(f"`{block['source']}`" + (f" › {crumb}" if crumb else ""))
            st.caption(parts_line(block))
            if full:  # the parts as a bar: which part put this block where it is
                parts_chart.show_parts([(f"#{rank}", block)], key=f"{key}_bar_{rank}")
            if judge is not None:
                marking.judge_buttons(block, rank, judged, judge, key)
            reasons = block.get("hit_reasons") or []
            st.markdown("\n".join(f"- {r.get('layer')} · {r.get('field')}: {r.get('reason')}" for r in reasons))
            content = block.get("content", block.get("content_preview", ""))
            if full:
                with st.expander("Content", expanded=rank == 1):
                    st.text(content)
            else:
                preview = " ".join(plain_markdown(content).split())  # the words, not their Markdown marks
                st.text(preview[:160] + ("…" if len(preview) > 160 else ""))
    if len(shown) < len(blocks) or (returned or 0) > len(blocks):
        stored = (f"; the trace stores the first {len(blocks)} of the {returned} blocks the lookup returned"
                  if (returned or 0) > len(blocks) else "")
        st.caption(f"{len(blocks) - len(shown)} more stored block(s) not shown{stored}")


def blind_order(blocks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The blocks in an order fixed by their sources alone (a hash), so the position on screen says nothing of
    the system's rank."""
    return sorted(blocks, key=lambda b: hashlib.sha1(str(b["source"]).encode()).hexdigest())


def blind_card(block: Mapping[str, Any], position: int, judged: int | None, judge: marking.Judge | None,
               key: str) -> None:
    """A card for blind judging: the page's title, source, breadcrumb and content, and the annotator's own mark
    (buttons keyed by the card's position, `<key>_judge_<position>_<grade>`); no rank, score, parts, layer, hit
    reasons or anyone else's mark."""
    with st.container(border=True):
        st.markdown(f"**{block.get('title') or block['source']}**")
        crumb = block.get("breadcrumb")
        st.caption(f"`{block['source']}`" + (f" › {crumb}" if crumb else ""))
        if judge is not None:
            marking.judge_buttons(block, position, judged, judge, key)
        st.text(block.get("content", block.get("content_preview", "")))


def timings(details: Mapping[str, Any]) -> None:
    """Per-stage timings; a value that is not a number (a masked golden, an odd trace) is shown as is."""
    values = details.get("timings_ms") or {}
    st.markdown("**Timings (ms)** · " + " · ".join(
        f"{k} `{v:.1f}`" if isinstance(v, int | float) else f"{k} `{v}`" for k, v in values.items()))


def lookup_result(result: Mapping[str, Any], *, key: str = "lookup",
                  judge: marking.Judge | None = None,
                  marks: Mapping[str, int] | None = None,
                  others: Mapping[str, Sequence[str]] | None = None, blind: bool = False) -> None:
    """The whole result of one lookup (Lookup page, and a trace on the Traces page); `key` prefixes widget keys.
    `blind`: the pages only (see evidence_cards), none of the system's hints, relevance, counts or timings."""
    details = result.get("retrieval_details") or {}
    if blind:
        st.caption("Blind judging: the system's rank, scores, relevance and other annotators' marks are hidden; "
                   "the pages are in an order of their own. Turn it off in the sidebar to see them.")
        evidence_cards(result.get("evidence_blocks") or [], judge=judge, marks=marks, key=key, blind=True)
        return
    relevance(result)
    hints(details)
    filter_and_l1(details, key=key)
    counts(details)
    st.markdown(f"**Evidence** ({len(result.get('evidence_blocks') or [])} blocks)")
    evidence_cards(result.get("evidence_blocks") or [], judge=judge, marks=marks, key=key, others=others)
    compare_two_blocks(result.get("evidence_blocks") or [], key=key)
    timings(details)
    with st.expander("Raw retrieval_details JSON"):
        st.json(details, expanded=True)


def compact_details(details: Mapping[str, Any], *, title: str, relevant: Collection[str] = (),
                    limit: int | None = None) -> None:
    """A stored or live lookup in one column: hints, filter, L1, counts and evidence summaries."""
    st.subheader(title)
    l0, decision, l1 = details.get("l0") or {}, details.get("filter") or {}, details.get("l1") or {}
    st.markdown(f"Layer {badge(str(details.get('retrieval_layer')), LAYER_COLOURS)} · L1 "
                f"{badge(str(l1.get('status')), L1_COLOURS)} · filter `{decision.get('decision')}` "
                f"→ `{json.dumps(decision.get('applied'))}`")
    domain_view.why_domain_compact(details)
    st.caption(f"domains of L0's matches {chips(l0.get('match_domains') or [])} · domains the vote carried "
               f"{chips(l0.get('domains') or [])} · titles {chips(l0.get('matched_titles') or [])}")
    st.caption(f"L0 {l0.get('match_count', 0)} · L1 {l1.get('candidate_count', 0)} · candidates "
               f"{details.get('candidate_count', 0)} · blocks {details.get('evidence_count', 0)} · merged "
               f"{details.get('duplicates_merged', 0)}")
    evidence_cards(details.get("evidence") or [], full=False, relevant=relevant, limit=limit,
                   returned=int(details.get("evidence_count") or 0))


def trace_in_full(row: Mapping[str, Any], *, key: str = "trace_full") -> None:
    """One `tool_invocation` row: typed columns as a table, JSON columns expanded."""
    plain = {k: v for k, v in row.items() if k not in ("arguments", "config", "retrieval_details")}
    st.dataframe(pd.DataFrame({"column": list(plain), "value": [str(v) for v in plain.values()]}),
                 hide_index=True, key=f"{key}_{row.get('id')}")
    left, right = st.columns(2)
    with left:
        st.markdown("**arguments**")
        st.json(_loads(row.get("arguments")))
        st.markdown("**config**")
        st.json(_loads(row.get("config")), expanded=False)
    with right:
        details = _loads(row.get("retrieval_details"))
        if isinstance(details, Mapping):
            domain_view.why_domain_compact(details)
        st.markdown("**retrieval_details**")
        st.json(details, expanded=2)


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
