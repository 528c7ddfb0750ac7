"""Trace reports carry the why of each lookup: the hints, the filter decision and its rationale, L1 and the
counts, every evidence block with its score parts and hit reasons; read as a CommonMark renderer shows them.

Each trace is a real lookup recorded through TraceStore and read back from DuckDB."""

from __future__ import annotations

import json
import re

import pytest

from appui.data import trace_export, trace_report
from appui.data import traces as data
from retrieval import LookupConfig, TraceStore, lookup_knowledge
from tests.markdown_helpers import Rendered, render_markdown

PART_HEADERS = ("part", "value", "weight", "contribution")


def recorded(store: TraceStore, query: str, index, config: LookupConfig | None = None) -> dict:
    """The stored `tool_invocation` row of one real lookup, as the Traces page reads it."""
    result = lookup_knowledge(query, index=index, config=config, recorder=store)
    frame = store.query("SELECT * FROM tool_invocation WHERE id = ?", [result.invocation_id])
    return frame.iloc[0].to_dict()


def with_details(row: dict, change) -> dict:
    """The row with its stored retrieval_details changed by `change(details)` (a trace of another vintage)."""
    details = json.loads(row["retrieval_details"])
    change(details)
    return {**row, "retrieval_details": json.dumps(details)}


def contract_parts(details: dict) -> None:
    """Score parts by the contract ({part, value, weight, contribution}, summing to the score) for blocks that
    have none: only needed while the lookup does not record them itself."""
    for block in details["evidence"]:
        if "score_parts" not in block:
            score = block["score"]
            block["score_parts"] = [{"part": "L1 lexical", "value": score * 0.6 / 0.9, "weight": 0.9,
                                     "contribution": score * 0.6},
                                    {"part": "page", "value": score * 0.4 / 0.5, "weight": 0.5,
                                     "contribution": score * 0.4}]


def single(row: dict) -> Rendered:
    return render_markdown(trace_report.single_trace(row, "Markdown").decode())


def test_single_trace_report_renders_hints_filter_rationale_and_every_blocks_parts_and_reasons(store, index):
    row = with_details(recorded(store, "download invoices", index), contract_parts)
    details = json.loads(row["retrieval_details"])
    shown = single(row)
    blocks = details["evidence"]
    assert shown.headings[:5] == [(1, "Lookup trace: download invoices"), (2, "L0 hints"),
                                  (2, "Filter decision and why"), (2, "L1 and counts"),
                                  (2, f"Evidence ({len(blocks)} blocks)")]
    l0 = details["l0"]  # the hints, each list labelled by where it comes from
    assert f"Matched titles: {', '.join(l0['matched_titles'])}" in shown.items
    assert f"Domains of L0's matches: {', '.join(l0['match_domains'])}" in shown.items
    assert f"Domains the vote carried: {', '.join(l0['domains'])}" in shown.items
    assert f"Entities: {', '.join(l0['entities']) or 'none'}" in shown.items
    assert "Decision: applied" in shown.items and 'Exact filter sent to L1: {"category": "billing"}' in shown.items
    assert any(item.startswith("Why: One domain carried (billing, ") for item in shown.items)
    assert any(item.startswith("Rule: the top ") for item in shown.items)
    vote = shown.table("domain", "vote share", "best score", "L0 coverage", "accepted", "supporting pages")
    assert {"domain": "billing", "accepted": "yes"}.items() <= vote[0].items()
    assert any(item.startswith("L1 status: ok · searched ") for item in shown.items)
    assert [r["source"] for r in shown.table("rank", "title", "source", "layer", "score")] == \
        [b["source"] for b in blocks]
    parts_tables = shown.tables_with(*PART_HEADERS)
    assert len(parts_tables) == len(blocks) and [h for h in shown.headings if h[0] == 3] == \
        [(3, f"Block {rank}: {b['title']}") for rank, b in enumerate(blocks, start=1)]
    for block, parts in zip(blocks, parts_tables, strict=True):
        assert [p["part"] for p in parts] == [p["part"] for p in block["score_parts"]]
        assert sum(float(p["contribution"]) for p in parts) == pytest.approx(block["score"], abs=2e-3)
        for reason in block["hit_reasons"]:
            assert any(reason["reason"] in item for item in shown.items), reason
    assert "{" not in shown.text.replace('{"category": "billing"}', "") and not re.search(r"\bNone\b", shown.text)


def test_the_lookups_own_score_parts_reach_the_report(store, index):
    row = recorded(store, "download invoices", index)
    blocks = json.loads(row["retrieval_details"])["evidence"]
    if not all("score_parts" in block for block in blocks):
        pytest.skip("this checkout's lookup records no score_parts yet (retrieval/lookup/evidence.py, issue 22 "
                    "item 2); the contract's parts are rendered by the test above")
    for block, parts in zip(blocks, single(row).tables_with(*PART_HEADERS), strict=True):
        assert [(p["part"], float(p["contribution"])) for p in parts] == \
            [(p["part"], pytest.approx(p["contribution"], abs=5e-4)) for p in block["score_parts"]]


def test_a_trace_that_predates_score_parts_says_so_per_block(store, index):
    row = with_details(recorded(store, "download invoices", index),
                       lambda d: [b.pop("score_parts", None) for b in d["evidence"]])
    shown = single(row)
    blocks = json.loads(row["retrieval_details"])["evidence"]
    said = [i for i in shown.items if i.endswith("score parts not recorded (trace predates them)")]
    assert len(said) == len(blocks) >= 1 and not shown.tables_with(*PART_HEADERS)


def test_a_widened_filter_and_its_settings_are_in_the_rationale(store, widen_index):
    row = recorded(store, "widget reset", widen_index, LookupConfig(filter_widen_ratio=0.9))
    shown = single(row)
    assert "Settings changed from the defaults: filter_widen_ratio = 0.900" in shown.items
    assert any("so the lookup widened to every category" in item for item in shown.items)
    kept = single(recorded(store, "widget reset", widen_index, LookupConfig(filter_widen_ratio=0.0)))
    assert any(item.startswith("The filter changed") for item in kept.items)  # filter_effect, in words


def test_an_old_or_failed_trace_reports_what_it_has_without_crashing(store, index):
    row = recorded(store, "download invoices", index)
    old = {**row, "retrieval_details": json.dumps({"retrieval_layer": "L0"}), "config": None, "kb_path": None}
    shown = single(old)
    assert "No domain evidence in this trace (recorded before the domain vote)." in shown.items
    assert "Settings: not recorded" in shown.items and "Matched titles: —" in shown.items
    failed = single({**row, "status": "error", "error": "ValueError: boom", "retrieval_details": None})
    assert "Error: ValueError: boom" in failed.items and (2, "Evidence (0 blocks)") in failed.headings


def test_a_report_of_many_traces_sums_them_up_then_gives_each_in_full(store, index):
    for query in ("download invoices", "rotate an API token", "silence an alert"):
        recorded(store, query, index)
    frame = data.filter_traces(store, data.TraceFilters())
    filters = data.TraceFilters()
    shown = render_markdown(trace_export.report_bytes(store, filters, "Markdown", title="lookup_knowledge traces")
                            .decode())
    summary = shown.table("created_at", "status", "latency_ms", "id", "query")
    assert [r["query"] for r in summary] == frame["query"].tolist()
    assert all(re.fullmatch(r"\d+(\.\d)?", r["latency_ms"]) for r in summary)  # ms to 1 decimal
    assert [h for h in shown.headings if h[0] == 2 and h[1].startswith("Trace ")] == \
        [(2, f"Trace {n}: {q}") for n, q in enumerate(frame["query"], start=1)]
    assert shown.table("retrieval_layer", "calls", "share")  # the aggregates of every matching row
    assert "3 call(s), from " in " ".join(shown.items)
    page = trace_export.report_bytes(store, filters, "HTML", title="t").decode()
    assert page.count("<h2>Trace ") == 3 and page.count("<h3>Filter decision and why</h3>") == 3
    capped = render_markdown(trace_export.report_bytes(store, filters, "Markdown", rows=2).decode())
    assert [h for h in capped.headings if h[1].startswith("Trace ")] == \
        [(2, f"Trace {n}: {q}") for n, q in enumerate(frame["query"][:2], start=1)]
    assert any("the first 2 of 3 traces" in item and "… and 1 more rows not shown" in item for item in capped.items)
    assert len(capped.table("created_at", "status", "latency_ms", "id", "query")) == 2
    assert capped.table("l1_status", "calls", "share")[0]["calls"] == "3"  # the aggregates still count every row


def test_a_single_trace_downloads_as_json_too(store, index):
    row = recorded(store, "download invoices", index)
    decoded = json.loads(trace_report.single_trace(row, "JSON"))
    assert decoded["id"] == row["id"] and decoded["retrieval_details"]["filter"]["decision"] == "applied"
    page = trace_report.single_trace(row, "HTML").decode()
    assert page.startswith("<!DOCTYPE html>") and "<h1>Lookup trace: download invoices</h1>" in page
    with pytest.raises(ValueError, match="Markdown"):
        trace_report.single_trace(row, "PDF")
