"""A trace report: why each lookup returned what it did, as retrieval.export sections (Markdown or HTML).

Per trace: the query and settings, the L0 hints, the filter decision and its rationale, L1 and the counts,
and every evidence block with its score, its score parts and its hit reasons. The rationale is worded by
appui.panels.domain_view, as on the page, so a report and the app say the same. Reads stored
`tool_invocation` rows; a key a trace predates (the domain vote, score parts) is said to be not recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from appui.data.plain import plain_markdown
from appui.panels import domain_view
from retrieval.config import changed_settings
from retrieval.export import Section, cell_text, html_document, json_object, markdown_document

DETAIL_LIMIT = 100  # traces shown in full in a report of many; the summary table holds every row
PARTS_NOT_RECORDED = "score parts not recorded (trace predates them)"
HINTS = (("Matched titles", "matched_titles"), ("Keywords", "matched_keywords"),
         ("Domains of L0's matches", "match_domains"), ("Domains the vote carried", "domains"),
         ("Entities", "entities"))  # labelled as the app labels them: by where each comes from
PART_COLUMNS = ["part", "value", "weight", "contribution"]
BLOCK_COLUMNS = ["rank", "title", "source", "layer", "score"]
FORMATS = {"Markdown": ("md", "text/markdown"), "HTML": ("html", "text/html"), "JSON": ("json", "application/json")}


def report_sections(title: str, summary: pd.DataFrame, rows: Sequence[Mapping[str, Any]], *,
                    limit: int = DETAIL_LIMIT, total: int | None = None, lead: Sequence[Section] = (),
                    about: str = "") -> list[Section]:
    """A report of many traces: the `lead` sections (aggregates over every matching row), the summary table of
    the rows given, then the first `limit` of them in full. `total` is how many rows matched (default: the rows
    given); the rows left out are counted in words, so a report stays readable, and quick to build, however
    many rows the filters match. `about` says which rows (the filters in words)."""
    total = len(rows) if total is None else total
    shown = min(len(rows), limit)
    lines = [f"{total:,} trace(s)" + (f" ({about})" if about else "") + "; the table sums them up, then each "
             "trace is given in full: its hints, filter rationale, L1 and counts, and every evidence block with "
             "its score parts and hit reasons"]
    if shown < total:
        lines.append(f"in full below: the first {shown:,} of {total:,} traces in the table's order (newest first); "
                     f"… and {total - shown:,} more rows not shown"
                     + ("; the aggregates cover every row" if lead else "")
                     + "; narrow the filters on the Traces page, or export CSV, Parquet or JSONL, for the rest")
    sections = [Section(title, tuple(lines)), *lead, Section(f"The first {shown:,} traces" if shown < total
                                                             else "Traces", table=summary.head(shown))]
    for number, row in enumerate(rows[:shown], start=1):
        sections += trace_sections(row, heading=f"Trace {number}: {row.get('query')}", level=2)
    return sections


def single_trace(row: Mapping[str, Any], fmt: str) -> bytes:
    """One trace as a download: a Markdown or HTML report of it, or its row as JSON (JSON columns decoded)."""
    if fmt == "JSON":
        decoded = {k: json_object(v) if k in ("arguments", "config", "retrieval_details", "index_settings") else v
                   for k, v in row.items()}
        return json.dumps(decoded, indent=2, default=str, ensure_ascii=False).encode()
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    sections = trace_sections(row, heading=f"Lookup trace: {row.get('query')}", level=1)
    return (markdown_document(sections) if fmt == "Markdown" else html_document(sections)).encode()


def trace_sections(row: Mapping[str, Any], *, heading: str, level: int) -> list[Section]:
    """One trace in full: the call (heading at `level`), then hints, filter, L1 and evidence one level down and
    each evidence block two levels down."""
    details = json_object(row.get("retrieval_details"))
    blocks = [b for b in details.get("evidence") or [] if isinstance(b, Mapping)]
    vote = domain_view.evidence_table(details)
    table = pd.DataFrame([[rank, b.get("title"), b.get("source"), b.get("retrieval_layer"), b.get("score")]
                          for rank, b in enumerate(blocks, start=1)], columns=BLOCK_COLUMNS)
    sections = [Section(heading, tuple(call_lines(row, details)), level=level),
                Section("L0 hints", tuple(hint_lines(details)), level=level + 1),
                Section("Filter decision and why", tuple(filter_lines(details)),
                        table=None if vote.empty else vote, level=level + 1),
                Section("L1 and counts", tuple(l1_lines(details)), level=level + 1),
                Section(f"Evidence ({len(blocks)} blocks)", tuple(_evidence_note(details, blocks)), table=table,
                        level=level + 1)]
    return sections + [block_section(block, rank, level=level + 2) for rank, block in enumerate(blocks, start=1)]


def call_lines(row: Mapping[str, Any], details: Mapping[str, Any]) -> list[str]:
    """The call: when, status, latency, where from, the caller's arguments, the settings, layer and relevance."""
    lines = [f"Query: {row.get('query')}",
             f"id {row.get('id')} · {cell_text(row.get('created_at'))} UTC · status {row.get('status')} · latency "
             f"{cell_text(_number(row.get('latency_ms')), ms=True)} ms"]
    if row.get("status") not in (None, "ok"):
        lines.append(f"Error: {cell_text(row.get('error'))}")
    if _given(row.get("run_id")):
        lines.append(f"From run {row['run_id']}, query {cell_text(row.get('query_id'))}")
    if _given(row.get("kb_path")):
        lines.append(f"Knowledge base {row['kb_path']} ({cell_text(row.get('kb_entries'))} pages, "
                     f"{cell_text(row.get('kb_chunks'))} sections; fingerprint {str(row.get('kb_fingerprint'))[:12]})")
    arguments, config = json_object(row.get("arguments")), json_object(row.get("config"))
    top_k = arguments.get("top_k")
    lines.append(f"Caller's category: {arguments.get('category') or 'none'} · top_k: "
                 + (str(top_k) if top_k is not None else f"{cell_text(config.get('top_k'))} (the setting)"))
    lines.append(settings_line(config))
    relevance = details.get("relevance") or {}
    support = "with" if relevance.get("semantic_support") else "without"
    lines.append(f"Layer {cell_text(details.get('retrieval_layer'))} · relevance {cell_text(relevance.get('level'))}"
                 f" ({support} semantic support): {cell_text(relevance.get('basis'))}")
    return lines


def settings_line(config: Mapping[str, Any]) -> str:
    """The settings that differ from the real defaults, `name = value`; the defaults said as such."""
    if not config:
        return "Settings: not recorded"
    changed = changed_settings(config)
    if not changed:
        return "Settings: the defaults"
    return "Settings changed from the defaults: " + ", ".join(f"{k} = {cell_text(v)}" for k, v in changed.items())


def hint_lines(details: Mapping[str, Any]) -> list[str]:
    """L0's hints, each list labelled by where it comes from, and the pages L0 matched with their scores."""
    l0 = details.get("l0") or {}
    lines = [f"L0 matches: {cell_text(l0.get('match_count'))}"]
    lines += [f"{label}: {cell_text(l0.get(name))}" for label, name in HINTS]
    matches = [m for m in l0.get("matches") or [] if isinstance(m, Mapping)]
    if matches:
        lines.append("Pages L0 matched: " + "; ".join(f"{m.get('title') or m.get('source')} ({m.get('source')}, "
                                                        f"score {cell_text(_number(m.get('score')))})"
                                                        for m in matches))
    return lines


def filter_lines(details: Mapping[str, Any]) -> list[str]:
    """The decision, why (as the page words it), the domains, the exact filter sent, widening and its effect."""
    decision, l1 = details.get("filter") or {}, details.get("l1") or {}
    lines = [f"Decision: {cell_text(decision.get('decision'))}",
             f"Why: {_plain(domain_view.outcome_line(details))}",
             f"Domains the vote carried: {cell_text(decision.get('l0_domains'))}",
             _plain(domain_view.filter_sent(decision, l1))]
    for note in (domain_view.widen_note(decision), domain_view.effect_note(details)):
        if note:
            lines.append(_plain(note))
    rule = domain_view.rule_caption(details)
    lines += [_plain(part) for part in rule.split("  \n")] if rule else \
        ["No domain evidence in this trace (recorded before the domain vote)."]
    return lines


def l1_lines(details: Mapping[str, Any]) -> list[str]:
    """L1's status and what it searched, its error, the embedder, the counts, a shortfall and the timings."""
    l1 = details.get("l1") or {}
    lines = [f"L1 status: {cell_text(l1.get('status'))} · searched {cell_text(l1.get('rows_searched'))} rows · "
             f"scored {cell_text(l1.get('rows_scored'))} · {cell_text(l1.get('dropped_below_min_score'))} below "
             "min score"]
    error = l1.get("error")
    if isinstance(error, Mapping):
        lines.append(f"L1 fell back to L0 evidence: {error.get('type')}: {error.get('message')}")
    embedder = l1.get("embedder")
    if isinstance(embedder, Mapping):
        lines.append(f"Static embedder: {embedder.get('name')} ({cell_text(embedder.get('dimensions'))} dimensions)")
    l0 = details.get("l0") or {}
    lines.append(f"Counts: L0 matches {cell_text(l0.get('match_count'))} · L1 candidates "
                 f"{cell_text(l1.get('candidate_count'))} · candidates {cell_text(details.get('candidate_count'))} · "
                 f"final blocks {cell_text(details.get('evidence_count'))} · duplicates merged "
                 f"{cell_text(details.get('duplicates_merged'))}")
    shortfall = details.get("shortfall")
    if isinstance(shortfall, Mapping) and shortfall.get("reason"):
        lines.append(f"{'Fewer blocks than asked for' if details.get('evidence_count') else 'Why no blocks'}: "
                     f"{shortfall['reason']}")
    timings = details.get("timings_ms")
    if isinstance(timings, Mapping) and timings:
        lines.append("Timings (ms): " + " · ".join(f"{k} {cell_text(_number(v), ms=True)}" for k, v in timings.items()))
    return lines


def block_section(block: Mapping[str, Any], rank: int, *, level: int) -> Section:
    """One evidence block: source, layer, score as the sum of its parts (a table), every hit reason, preview."""
    parts, score = score_parts(block), cell_text(_number(block.get("score")))
    lines = [f"Source: {block.get('source')} · layer {cell_text(block.get('retrieval_layer'))} · score {score}",
             parts_sum(block, parts) if parts else f"Score {score}: {PARTS_NOT_RECORDED}"]
    for reason in block.get("hit_reasons") or []:
        if isinstance(reason, Mapping):
            lines.append(f"Hit reason ({reason.get('layer')} · {reason.get('field')}): {reason.get('reason')} "
                         f"(score {cell_text(_number(reason.get('score')))})")
    preview = block.get("content_preview", block.get("content"))
    if preview:  # the page's words, without its Markdown marks (a report shows them as text)
        lines.append(f"Preview: {plain_markdown(str(preview))}")
    table = pd.DataFrame([[p.get("part"), *(_number(p.get(c)) for c in PART_COLUMNS[1:])] for p in parts],
                         columns=PART_COLUMNS) if parts else None
    return Section(f"Block {rank}: {block.get('title') or block.get('source')}", tuple(lines), table=table,
                   level=level)


def score_parts(block: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The block's recorded `score_parts` ({part, value, weight, contribution}); [] when the trace has none."""
    parts = block.get("score_parts")
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def parts_sum(block: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> str:
    """'Score 1.565 = L1 lexical 0.612 + L1 LSA 0.068 + … (value × weight each)'."""
    terms = " + ".join(f"{p.get('part')} {cell_text(_number(p.get('contribution')))}" for p in parts)
    return f"Score {cell_text(_number(block.get('score')))} = {terms} (each part's value × weight, below)"


def _evidence_note(details: Mapping[str, Any], blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    count = details.get("evidence_count")
    if isinstance(count, int) and count > len(blocks):
        return [f"The trace keeps summaries of the first {len(blocks)} of {count} blocks"]
    return []


def _plain(text: str) -> str:
    """The page's Markdown wording as plain text for a report line (its code spans and bold marks dropped)."""
    return text.replace("`", "").replace("**", "")


def _number(value: Any) -> Any:
    """A number as a float (so it is rounded as one); anything else as it is."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and value != value) and value is not pd.NaT
