"""The MCP server with an OTLP endpoint: each `tools/call` is the MCP SDK's server span, and the lookup's RETRIEVER
span is its child in the same trace, sent over real OTLP/HTTP to a receiver."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from retrieval.otel import OTLPReceiver
from tests.mcp_helpers import CLIENT_NAME, mcp_server
from tests.otel_helpers import roots


def test_mcp_tool_call_span_holds_the_lookup_span(tmp_path):
    with OTLPReceiver() as receiver:
        with mcp_server(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url.removesuffix("/v1/traces"),
                                       "OTEL_SERVICE_NAME": "mcp-test"}) as client:
            answered = client.lookup(query="how do I rotate an API token?", top_k=2)
            refused = client.lookup(query="   ")
        spans = list(receiver.spans)
    assert not answered.is_error and refused.is_error
    calls = [s for s in spans if s["name"] == "tools/call lookup_knowledge"]
    lookups = roots(spans)
    assert len(calls) == 2 and len(lookups) == 2
    by_id = {s["span_id"]: s for s in calls}
    for lookup in lookups:
        call = by_id[lookup["parent_span_id"]]  # the lookup's span is the tool call's child, in its trace
        assert lookup["trace_id"] == call["trace_id"]
        assert call["attributes"]["gen_ai.tool.name"] == "lookup_knowledge"
        assert lookup["attributes"]["lookup.client"] == CLIENT_NAME and lookup["attributes"]["lookup.via"] == "mcp"
        assert lookup["resource"]["service.name"] == "mcp-test"
    ok = next(s for s in lookups if s["status"] == "OK")
    assert ok["attributes"]["lookup.invocation_id"] == answered.structured_content["invocation_id"]
    assert [ok["attributes"][f"retrieval.documents.{i}.document.id"] for i in range(2)] == \
        [b["source"] for b in answered.structured_content["evidence_blocks"]]
    error = next(s for s in lookups if s["status"] == "ERROR")
    assert error["events"][0]["attributes"]["exception.type"] == "ValueError"
