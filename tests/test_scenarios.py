"""The 14 scenarios of the lookup_knowledge specification, each checked on the returned result and on
the `tool_invocation` row read back from DuckDB."""

from __future__ import annotations

import json

import pytest

from retrieval import LookupConfig, lookup_knowledge
from tests.conftest import stored_row


def _lookup(query, index, store, **kwargs):
    config = kwargs.pop("config", LookupConfig())
    result = lookup_knowledge(query, index=index, config=config, recorder=store, **kwargs)
    return result, result.to_dict(), stored_row(store, result.invocation_id)


# 1. L0 is a hint provider -------------------------------------------------------------------------

def test_l0_matches_expose_structured_hints(index, store):
    result, payload, row = _lookup("PagerDuty escalation routing", index, store)
    for l0 in (payload["retrieval_details"]["l0"], row["retrieval_details"]["l0"]):
        assert "Alert routing" in l0["matched_titles"]
        assert {"routing", "escalation"} <= set(l0["matched_keywords"])
        assert "alerting" in l0["domains"]
        assert "PagerDuty" in l0["entities"]
        assert l0["match_count"] >= 1
    assert row["l0_match_count"] == payload["retrieval_details"]["l0"]["match_count"]


def test_single_l0_match_still_attempts_l1(index, store):
    result, payload, row = _lookup("invoice", index, store)
    assert payload["retrieval_details"]["l0"]["match_count"] == 1
    assert payload["retrieval_details"]["l1"]["status"] == "ok"
    assert payload["retrieval_details"]["l1"]["candidate_count"] > 0
    assert row["l0_match_count"] == 1
    assert row["l1_status"] == "ok"
    assert row["l1_candidate_count"] == payload["retrieval_details"]["l1"]["candidate_count"]


# 2. L0 domain as optional L1 filter ---------------------------------------------------------------

def test_single_domain_adds_category_filter(index, store):
    result, payload, row = _lookup("silence", index, store)
    details = payload["retrieval_details"]
    assert details["l0"]["domains"] == ["alerting"]
    assert details["filter"] == {"decision": "applied", "l0_domains": ["alerting"],
                                 "applied": {"category": "alerting"}}
    assert all("alerting" in block.domains for block in result.evidence_blocks)
    assert row["filter_decision"] == "applied"
    assert row["retrieval_details"]["filter"]["applied"] == {"category": "alerting"}


def test_no_domain_runs_l1_without_filter(index, store):
    result, payload, row = _lookup("install the agent", index, store)
    details = payload["retrieval_details"]
    assert details["l0"]["match_count"] >= 1 and details["l0"]["domains"] == []
    assert details["filter"]["decision"] == "skipped_no_domain"
    assert details["filter"]["applied"] is None
    assert details["l1"]["status"] == "ok"
    assert row["filter_decision"] == "skipped_no_domain"
    assert row["retrieval_details"]["filter"]["applied"] is None


def test_several_domains_run_l1_without_filter(index, store):
    result, payload, row = _lookup("PagerDuty", index, store)
    details = payload["retrieval_details"]
    assert set(details["l0"]["domains"]) == {"alerting", "integrations"}
    assert details["filter"]["decision"] == "skipped_ambiguous"
    assert details["filter"]["applied"] is None
    assert details["l1"]["rows_searched"] == len(index.l1.chunks)
    assert row["filter_decision"] == "skipped_ambiguous"
    assert row["retrieval_details"]["filter"]["applied"] is None


# 3. Fallback evidence -----------------------------------------------------------------------------

def test_l1_empty_returns_l0_primary_without_semantic_support(index, store):
    result, payload, row = _lookup("invoice", index, store, config=LookupConfig(l1_min_score=1.0))
    assert payload["retrieval_details"]["l1"]["status"] == "empty"
    assert payload["primary"]["source"] == "billing/invoices.md"
    assert payload["primary"]["retrieval_layer"] == "L0"
    assert payload["relevance"]["semantic_support"] is False
    assert payload["retrieval_layer"] == "L0"
    assert row["l1_status"] == "empty"
    assert row["retrieval_layer"] == "L0"
    assert row["retrieval_details"]["relevance"]["semantic_support"] is False
    assert row["retrieval_details"]["evidence"][0]["source"] == "billing/invoices.md"


def test_l1_failure_returns_l0_primary_and_keeps_hints(index, store):
    config = LookupConfig(simulate_l1_failure=True)
    result, payload, row = _lookup("PagerDuty escalation routing", index, store, config=config)
    assert payload["primary"]["source"] == "alerting/routing.md"
    assert payload["primary"]["retrieval_layer"] == "L0"
    assert payload["relevance"]["semantic_support"] is False
    assert row["retrieval_details"]["relevance"] == payload["relevance"]
    l1 = row["retrieval_details"]["l1"]
    assert row["l1_status"] == "failed" and l1["status"] == "failed"
    assert l1["error"]["type"] == "SimulatedL1Failure"
    assert row["retrieval_details"]["l0"] == payload["retrieval_details"]["l0"]
    assert "Alert routing" in row["retrieval_details"]["l0"]["matched_titles"]


# 4. Persisted L0 hints ----------------------------------------------------------------------------

def test_invocation_record_persists_l0_hints(index, store):
    result, payload, row = _lookup("rotate OAuth token", index, store)
    stored, returned = row["retrieval_details"]["l0"], payload["retrieval_details"]["l0"]
    for key in ("matched_keywords", "domains", "entities", "matched_titles"):
        assert stored[key] == returned[key]
    assert stored["matched_titles"] == ["API tokens"]
    assert stored["entities"] == ["OAuth"]
    assert "token" in stored["matched_keywords"]
    assert set(stored["domains"]) == {"security", "api"}


def test_both_layers_record_l0_plus_l1(index, store):
    result, payload, row = _lookup("PagerDuty escalation routing", index, store)
    assert payload["retrieval_details"]["l0"]["match_count"] > 0
    assert payload["retrieval_details"]["l1"]["candidate_count"] > 0
    assert payload["retrieval_layer"] == "L0+L1"
    assert row["retrieval_layer"] == "L0+L1"
    assert row["retrieval_details"]["retrieval_layer"] == "L0+L1"


# 5. Structured evidence blocks --------------------------------------------------------------------

def test_evidence_blocks_carry_source_title_breadcrumb_layer_content_and_reasons(index, store):
    result, payload, row = _lookup("update the credit card", index, store)
    block = payload["evidence_blocks"][0]
    assert block["source"] == "billing/invoices.md"
    assert block["title"] == "Invoices and payment"
    assert block["breadcrumb"] == "Invoices and payment > Update the credit card"
    assert block["retrieval_layer"] in ("L0", "L1", "L0+L1")
    assert "Stripe validates it" in block["content"]
    assert block["hit_reasons"] and all({"layer", "reason"} <= set(r) for r in block["hit_reasons"])
    summary = row["retrieval_details"]["evidence"][0]
    assert (summary["source"], summary["title"]) == (block["source"], block["title"])


def test_primary_and_supplement_stay_available(index, store):
    result, payload, row = _lookup("alerts", index, store)
    blocks = payload["evidence_blocks"]
    assert len(blocks) >= 2
    assert payload["primary"] == blocks[0]
    assert payload["supplement"] == blocks[1:]
    assert [e["source"] for e in row["retrieval_details"]["evidence"]] == [b["source"] for b in blocks]
    assert row["evidence_count"] == len(blocks)


# 6. Deduplication ---------------------------------------------------------------------------------

def test_same_source_from_l0_and_l1_merges_into_one_block(index, store):
    result, payload, row = _lookup("escalation policy routing", index, store)
    sources = [b["source"] for b in payload["evidence_blocks"]]
    assert len(sources) == len(set(sources))
    merged = payload["evidence_blocks"][0]
    assert merged["source"] == "alerting/routing.md"
    assert merged["retrieval_layer"] == "L0+L1"
    assert {r["layer"] for r in merged["hit_reasons"]} == {"L0", "L1"}
    assert payload["retrieval_details"]["duplicates_merged"] >= 1
    stored = row["retrieval_details"]["evidence"][0]
    assert stored["retrieval_layer"] == "L0+L1"
    assert {r["layer"] for r in stored["hit_reasons"]} == {"L0", "L1"}


def test_details_record_candidate_and_final_counts(index, store):
    result, payload, row = _lookup("alert", index, store, top_k=2)
    details = payload["retrieval_details"]
    assert details["candidate_count"] == details["l0"]["match_count"] + details["l1"]["candidate_count"]
    assert details["evidence_count"] == len(payload["evidence_blocks"]) == 2
    assert details["candidate_count"] > details["evidence_count"]
    assert row["candidate_count"] == details["candidate_count"]
    assert row["evidence_count"] == 2


# 7. Compact evidence summaries --------------------------------------------------------------------

@pytest.mark.parametrize("query", ["retention rollups walkthrough"])
def test_evidence_summaries_are_compact(index, store, query):
    result, payload, row = _lookup(query, index, store, config=LookupConfig(snippet_chars=5000))
    long_block = next(b for b in payload["evidence_blocks"] if b["source"] == "billing/plans.md")
    assert len(long_block["content"]) > 600
    for summaries in (payload["retrieval_details"]["evidence"], row["retrieval_details"]["evidence"]):
        for summary in summaries:
            assert {"source", "title", "retrieval_layer", "score", "hit_reasons", "content_preview"} <= set(summary)
            assert "content" not in summary
            assert len(summary["content_preview"]) <= 200
    assert long_block["content"] not in json.dumps(row["retrieval_details"])
