"""Each lookup as OpenInference spans, read back from the SDK's in-memory exporter: the span tree, the kind, every
document attribute against the evidence blocks and the metadata against `retrieval_details`, for each status
(ok, an L1 fallback, L1 empty, an L1 timeout, an invalid call), plus parenting and composition."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest

from retrieval import LookupConfig, lookup_knowledge
from retrieval.lookup import Recorders

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
pytest.importorskip("openinference.semconv", reason="the [otel] extra is not installed")

from opentelemetry.trace import StatusCode

from retrieval.otel import OTelRecorder, OTelRecordingWarning
from tests.otel_helpers import FILTERED_STAGES, STAGES, documents, events


class HangingL1:
    """Stands in for L1Index.search: waits on `release` (past the lookup's time limit)."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def search(self, query, **_):
        self.release.wait(5)


def _traced(memory_spans, query, index, **kwargs):
    result = lookup_knowledge(query, index=index, recorder=memory_spans.recorder, **kwargs)
    root, children = memory_spans.lookup_tree(result.invocation_id)
    return result, root, children


def _assert_documents_match(root, result) -> None:
    docs = documents(root.attributes)
    assert len(docs) == len(result.evidence_blocks) > 0
    for doc, block in zip(docs, result.evidence_blocks, strict=True):
        assert doc["id"] == block.source
        assert doc["score"] == round(block.score, 6)
        assert doc["content"] == block.content[:200]
        assert doc["metadata"]["title"] == block.title
        assert doc["metadata"]["breadcrumb"] == block.breadcrumb
        assert doc["metadata"]["layer"] == block.retrieval_layer
        assert doc["metadata"]["hit_reasons"] == [r.to_dict() for r in block.hit_reasons]
        assert doc["metadata"]["score_parts"] == [p.to_dict() for p in block.score_parts]
    genai = json.loads(root.attributes["gen_ai.retrieval.documents"])
    assert genai == [{"id": b.source, "score": round(b.score, 6)} for b in result.evidence_blocks]


def _assert_metadata_matches(root, result) -> None:
    details = result.retrieval_details
    metadata = json.loads(root.attributes["metadata"])
    assert metadata["retrieval_layer"] == details["retrieval_layer"] == root.attributes["lookup.retrieval_layer"]
    for key in ("matched_titles", "matched_keywords", "domains", "entities", "match_count"):
        assert metadata["l0"][key] == details["l0"][key]
    assert metadata["filter"] == details["filter"]  # the decision and the filter sent (`applied`)
    assert metadata["l1"]["status"] == details["l1"]["status"] == root.attributes["lookup.l1.status"]
    assert metadata["l1"]["error"] == details["l1"]["error"]
    for key in ("candidate_count", "evidence_count", "duplicates_merged"):
        assert metadata[key] == details[key]
    assert metadata["invocation_id"] == result.invocation_id


def _assert_timed_from_details(root, children, result) -> None:
    timings = result.retrieval_details["timings_ms"]
    assert children[0].start_time == root.start_time and children[-1].end_time <= root.end_time
    for before, after in zip(children, children[1:], strict=False):
        assert before.end_time == after.start_time  # laid end to end, in the order the lookup ran them
    for span in children:
        assert abs((span.end_time - span.start_time) / 1e6 - timings[span.attributes["lookup.stage"]]) < 0.001


def test_ok_lookup_is_a_retriever_span_with_a_child_per_stage(index, memory_spans):
    result, root, children = _traced(memory_spans, "invoice", index)
    assert result.retrieval_details["filter"]["decision"] == "applied"
    assert root.name == "lookup_knowledge" and root.parent is None
    assert root.attributes["openinference.span.kind"] == "RETRIEVER"
    assert root.attributes["input.value"] == "invoice"
    assert root.status.status_code is StatusCode.OK
    assert [c.name for c in children] == FILTERED_STAGES
    kinds = [c.attributes["openinference.span.kind"] for c in children]
    assert kinds == ["RETRIEVER", "RETRIEVER", "CHAIN", "RETRIEVER", "CHAIN"]
    filtered = children[3]
    assert json.loads(filtered.attributes["lookup.l1.filter"]) == result.retrieval_details["filter"]["applied"]
    assert filtered.attributes["lookup.l1.status"] == "ok" and "lookup.l1.status" not in children[1].attributes
    assert all(c.status.status_code is StatusCode.UNSET for c in children)
    _assert_documents_match(root, result)
    _assert_metadata_matches(root, result)
    _assert_timed_from_details(root, children, result)
    l0_docs = documents(children[0].attributes)
    assert [d["id"] for d in l0_docs] == [m["source"] for m in result.retrieval_details["l0"]["matches"]]


def test_l1_fallback_sets_the_l1_span_error_with_an_exception_event(index, memory_spans):
    result, root, children = _traced(memory_spans, "PagerDuty escalation routing", index,
                                     config=LookupConfig(simulate_l1_failure=True))
    assert result.retrieval_details["l1"]["status"] == "failed"
    assert root.status.status_code is StatusCode.OK  # the call answered, from L0's evidence
    assert [c.name for c in children] == STAGES
    l1 = children[1]
    assert l1.status.status_code is StatusCode.ERROR and "failed" in l1.status.description
    assert events(l1)["exception"]["exception.type"] == "SimulatedL1Failure"
    assert events(l1)["exception"]["exception.message"] == result.retrieval_details["l1"]["error"]["message"]
    _assert_documents_match(root, result)
    _assert_metadata_matches(root, result)
    _assert_timed_from_details(root, children, result)


def test_l1_empty_is_not_an_error(index, memory_spans):
    result, root, children = _traced(memory_spans, "invoice", index, config=LookupConfig(l1_min_score=1.0))
    assert result.retrieval_details["l1"]["status"] == "empty"
    assert root.status.status_code is StatusCode.OK
    l1 = next(c for c in children if c.attributes.get("lookup.l1.status") == "empty")
    assert l1.status.status_code is StatusCode.UNSET and not l1.events
    _assert_documents_match(root, result)
    _assert_metadata_matches(root, result)
    _assert_timed_from_details(root, children, result)


def test_l1_timeout_sets_the_l1_span_error_with_an_exception_event(index, memory_spans):
    release = threading.Event()
    try:
        result, root, children = _traced(memory_spans, "PagerDuty escalation routing",
                                         replace(index, l1=HangingL1(release)), config=LookupConfig(l1_timeout_ms=20))
    finally:
        release.set()
    assert result.retrieval_details["l1"]["status"] == "timeout"
    assert root.status.status_code is StatusCode.OK
    l1 = children[1]
    assert l1.attributes["lookup.l1.status"] == "timeout"
    assert l1.status.status_code is StatusCode.ERROR and "timeout" in l1.status.description
    assert "20 ms" in events(l1)["exception"]["exception.message"]
    assert (children[1].end_time - children[1].start_time) / 1e6 >= 20
    _assert_documents_match(root, result)
    _assert_metadata_matches(root, result)


def test_invalid_call_is_an_error_span_with_the_message(index, memory_spans):
    with pytest.raises(ValueError, match="non-empty") as raised:
        lookup_knowledge("   ", index=index, recorder=memory_spans.recorder)
    spans = memory_spans.spans()
    assert len(spans) == 1  # no stage ran: no children
    root = spans[0]
    assert root.attributes["openinference.span.kind"] == "RETRIEVER"
    assert root.attributes["lookup.status"] == "error"
    assert root.status.status_code is StatusCode.ERROR and root.status.description == str(raised.value)
    assert events(root)["exception"] == {"exception.type": "ValueError", "exception.message": str(raised.value),
                                         "exception.escaped": False}
    assert not documents(root.attributes)


def test_widened_filter_is_an_event_on_the_filtered_search(widen_index, memory_spans):
    result, root, children = _traced(memory_spans, "widget reset", widen_index,
                                     config=LookupConfig(filter_widen_ratio=0.9))
    decision = result.retrieval_details["filter"]
    assert decision["widened"] is True
    assert [c.name for c in children] == FILTERED_STAGES
    probe, filtered = children[1], children[3]
    assert filtered.attributes["lookup.filter.widened"] is True
    widened = events(filtered)["filter widened"]
    assert widened["lookup.filter.best_score.unfiltered"] == decision["best_scores"]["unfiltered"]
    assert probe.attributes["lookup.l1.status"] == "ok"  # the lookup answered from the first search
    _assert_metadata_matches(root, result)


def test_caller_category_is_the_filter_of_the_one_l1_search(index, memory_spans):
    result, root, children = _traced(memory_spans, "invoice", index, category="Billing")
    assert [c.name for c in children] == STAGES
    assert json.loads(children[1].attributes["lookup.l1.filter"]) == {"category": "billing"}
    assert json.loads(root.attributes["metadata"])["arguments"]["category"] == "Billing"


def test_lookup_span_is_a_child_of_the_callers_current_span(index, memory_spans):
    tracer = memory_spans.provider.get_tracer("agent framework")
    with tracer.start_as_current_span("agent tool call") as tool_span:
        result = lookup_knowledge("invoice", index=index, recorder=memory_spans.recorder)
    root, _ = memory_spans.lookup_tree(result.invocation_id)
    assert root.parent.span_id == tool_span.get_span_context().span_id
    assert root.context.trace_id == tool_span.get_span_context().trace_id


def test_one_call_goes_to_the_trace_store_and_to_opentelemetry(index, store, memory_spans):
    result = lookup_knowledge("invoice", index=index, recorder=Recorders((store, memory_spans.recorder)))
    root, _ = memory_spans.lookup_tree(result.invocation_id)
    rows = store.query("SELECT id, status FROM tool_invocation")
    assert rows["id"].tolist() == [result.invocation_id] == [root.attributes["lookup.invocation_id"]]


def test_recorder_failure_is_one_warning_and_never_reaches_the_lookup(index, memory_spans):
    recorder = OTelRecorder(memory_spans.provider, background=False)

    def refuse(*args, **kwargs):
        raise RuntimeError("tracer broken")

    recorder.tracer.start_span = refuse
    with pytest.warns(OTelRecordingWarning, match="tracer broken") as caught:
        results = [lookup_knowledge(q, index=index, recorder=recorder) for q in ("invoice", "silence")]
    assert all(r.evidence_blocks for r in results)
    assert len([w for w in caught if issubclass(w.category, OTelRecordingWarning)]) == 1
