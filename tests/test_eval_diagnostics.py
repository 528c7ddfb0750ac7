"""Diagnostics read from `retrieval_details`: filter precision and harm, fallback, dedupe and latency."""

from __future__ import annotations

import pandas as pd
import pytest

from eval.diagnostics import query_diagnostics, summarize

DOMAINS = {"billing/invoices.md": ("billing",), "alerting/routing.md": ("alerting",), "misc/faq.md": ()}


def _details(decision="applied", category="billing", layer="L0+L1", l1="ok", candidates=6, merged=2, blocks=4):
    applied = {"category": category} if decision == "applied" else None
    return {"retrieval_layer": layer, "filter": {"decision": decision, "l0_domains": [category], "applied": applied},
            "l1": {"status": l1}, "candidate_count": candidates, "duplicates_merged": merged,
            "evidence_count": blocks}


def _diagnose(details, qrels, ranked=(), latency=10.0):
    return query_diagnostics(details, qrels, list(ranked), lambda s: DOMAINS.get(s, ()), latency)


def test_filter_on_a_relevant_documents_category_is_correct_and_harmless():
    row = _diagnose(_details(), {"billing/invoices.md": 1})
    assert (row["filter_correct"], row["filter_harm"]) == (True, False)


def test_filter_excluding_a_relevant_document_is_harm():
    row = _diagnose(_details(category="Billing"), {"alerting/routing.md": 1}, ranked=["billing/invoices.md"])
    assert row["filter_category"] == "billing"
    assert (row["filter_correct"], row["filter_harm"], row["filter_harm_missed"]) == (False, True, True)


def test_relevant_document_without_category_is_harmed_by_any_filter():
    row = _diagnose(_details(), {"misc/faq.md": 1, "billing/invoices.md": 1}, ranked=["misc/faq.md"])
    assert (row["filter_correct"], row["filter_harm"], row["filter_harm_missed"]) == (True, True, False)


def test_skipped_filter_has_no_precision_and_no_harm():
    row = _diagnose(_details(decision="skipped_ambiguous"), {"alerting/routing.md": 1})
    assert (row["filter_category"], row["filter_correct"], row["filter_harm"]) == (None, None, False)


def test_summary_rates_counts_and_latency_percentiles():
    rows = [
        {**_diagnose(_details(), {"billing/invoices.md": 1}, latency=10), "query_id": "q1"},
        {**_diagnose(_details(category="billing"), {"alerting/routing.md": 1}, latency=20), "query_id": "q2"},
        {**_diagnose(_details(decision="disabled", layer="L0", l1="failed", candidates=2, merged=0, blocks=2),
                     {"alerting/routing.md": 1}, latency=30), "query_id": "q3"},
        {**_diagnose(_details(decision="skipped_no_domain", candidates=4, merged=0, blocks=4),
                     {"misc/faq.md": 1}, latency=40), "query_id": "q4"},
    ]
    summary = summarize(pd.DataFrame(rows))
    assert summary["queries"] == 4
    assert summary["filter_applied_rate"] == 0.5
    assert summary["filter_precision"] == 0.5
    assert summary["filter_harm"] == {"count": 1, "rate": 0.25, "missed": 1, "query_ids": ["q2"]}
    assert summary["l0_only_fallback_rate"] == 0.25
    assert summary["l1_status"] == {"failed": 1, "ok": 3}
    assert summary["dedup_ratio"] == pytest.approx((6 + 6 + 2 + 4) / (4 + 4 + 2 + 4), abs=1e-4)
    assert summary["duplicates_merged_rate"] == pytest.approx(4 / 18, abs=1e-4)
    assert summary["latency_ms"]["p50"] == pytest.approx(25.0)
    assert summary["latency_ms"]["p95"] == pytest.approx(38.5)


def test_filter_that_changed_the_top_ten_is_counted_and_one_that_did_not_is_not():
    moved = {**_details(), "filter_effect": {"changed": True, "first_changed_rank": 2, "removed": 1, "added": 1}}
    deep = {**_details(), "filter_effect": {"changed": True, "first_changed_rank": 40, "removed": 3, "added": 3}}
    rows = [{**_diagnose(moved, {"billing/invoices.md": 1}), "query_id": "q1"},
            {**_diagnose(deep, {"billing/invoices.md": 1}), "query_id": "q2"},
            {**_diagnose(_details(decision="disabled"), {"billing/invoices.md": 1}), "query_id": "q3"}]
    assert [r["filter_changed"] for r in rows] == [True, False, None]
    summary = summarize(pd.DataFrame(rows))
    assert (summary["filter_changed"], summary["filter_changed_within"]) == (1, 10)
