"""The names other code depends on: result keys, `retrieval_details` keys, `tool_invocation` columns.

Adding is fine; renaming or dropping breaks agents, the app and analysts' SQL, so these tests pin them.
"""

from __future__ import annotations

from pathlib import Path

from retrieval import lookup_knowledge

DETAILS_DOC = (Path(__file__).resolve().parents[1] / "docs" / "retrieval-details.md").read_text()

RESULT_KEYS = {"query", "primary", "supplement", "evidence_blocks", "relevance", "retrieval_layer",
               "retrieval_details"}
DETAIL_KEYS = {"retrieval_layer", "l0", "filter", "l1", "candidate_count", "evidence_count", "evidence",
               "evidence_sources", "evidence_scores", "timings_ms"}
L0_KEYS = {"matched_titles", "matched_keywords", "domains", "entities", "match_count"}
FILTER_KEYS = {"decision", "l0_domains", "applied"}
L1_KEYS = {"status", "error", "candidate_count"}
SUMMARY_KEYS = {"source", "title", "retrieval_layer", "score", "hit_reasons", "content_preview"}
BLOCK_KEYS = {"source", "title", "breadcrumb", "retrieval_layer", "content", "hit_reasons", "score"}
COLUMNS = {"id", "created_at", "tool_name", "query", "arguments", "status", "error", "latency_ms",
           "retrieval_layer", "filter_decision", "l1_status", "candidate_count", "evidence_count", "run_id",
           "query_id", "config", "retrieval_details"}


def test_result_and_details_keep_their_contract_keys(index):
    payload = lookup_knowledge("PagerDuty escalation routing", index=index).to_dict()
    details = payload["retrieval_details"]
    assert RESULT_KEYS <= set(payload)
    assert DETAIL_KEYS <= set(details)
    assert L0_KEYS <= set(details["l0"])
    assert FILTER_KEYS <= set(details["filter"])
    assert L1_KEYS <= set(details["l1"])
    assert all(SUMMARY_KEYS <= set(s) for s in details["evidence"])
    assert all(BLOCK_KEYS <= set(b) for b in payload["evidence_blocks"])
    assert {"level", "semantic_support", "basis"} <= set(payload["relevance"])
    assert all({"layer", "reason"} <= set(r) for b in payload["evidence_blocks"] for r in b["hit_reasons"])


def test_tool_invocation_keeps_its_columns(store):
    columns = set(store.query("SELECT * FROM tool_invocation LIMIT 0").columns)
    assert columns >= COLUMNS


def test_every_details_key_is_documented(index):
    details = lookup_knowledge("invoice", index=index).retrieval_details
    nested = [f"{key}.{inner}" for key, value in details.items() if isinstance(value, dict) for inner in value]
    nested += [f"evidence[].{inner}" for summary in details["evidence"] for inner in summary]
    for key in [*details, *nested]:
        name = key.rsplit(".", 1)[-1]
        assert f"`{name}`" in DETAILS_DOC, f"retrieval_details key {key!r} is not in docs/retrieval-details.md"
