"""End to end against a real Phoenix server: lookups through the CLI and through the MCP server, with the OTLP
endpoint set, read back through Phoenix's REST API: the RETRIEVER span with its documents, its stage spans, and
the MCP call's span holding the lookup's."""

from __future__ import annotations

import json

import pytest

from tests.phoenix_helpers import wait_for

pytestmark = pytest.mark.slow
pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

PROJECT = "lookup-knowledge-e2e"


def _span(phoenix, invocation_id: str, project: str = "default") -> tuple[dict, list[dict]]:
    """The lookup's span (by its invocation id) once Phoenix has stored it, and every span of its trace."""
    def found():
        spans = phoenix.spans(project)
        return next(([s, spans] for s in spans if s["attributes"].get("lookup.invocation_id") == invocation_id), None)

    root, spans = wait_for(found, 30, f"Phoenix never showed the span of {invocation_id} in {project}")
    return root, [s for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"]]


def test_cli_lookup_reaches_phoenix_as_a_retriever_span_with_its_documents(phoenix, tmp_path):
    from tests.otel_helpers import run_cli

    completed = run_cli("lookup", "how do I rotate an API token?", "--traces", str(tmp_path / "t.duckdb"),
                        "--otlp-endpoint", phoenix.url, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "warning" not in completed.stderr
    payload = json.loads(completed.stdout)
    root, trace = _span(phoenix, payload["invocation_id"])
    assert root["span_kind"] == "RETRIEVER" and root["status_code"] == "OK" and root["parent_id"] is None
    attributes = root["attributes"]
    assert attributes["input.value"] == "how do I rotate an API token?"
    for i, block in enumerate(payload["evidence_blocks"]):
        assert attributes[f"retrieval.documents.{i}.document.id"] == block["source"]
        assert attributes[f"retrieval.documents.{i}.document.score"] == pytest.approx(block["score"])
        assert attributes[f"retrieval.documents.{i}.document.content"] == block["content"][:200]
        assert attributes[f"retrieval.documents.{i}.document.metadata.title"] == block["title"]
    assert f"retrieval.documents.{len(payload['evidence_blocks'])}.document.id" not in attributes
    assert attributes["metadata.filter.decision"] == payload["retrieval_details"]["filter"]["decision"]
    children = {s["name"]: s for s in trace if s["parent_id"] == root["context"]["span_id"]}
    assert {"L0 hints", "L1 search", "domain vote", "evidence"} <= set(children)
    assert children["L1 search"]["span_kind"] == "RETRIEVER" and children["evidence"]["span_kind"] == "CHAIN"


def test_mcp_call_reaches_phoenix_with_the_lookup_inside_the_tool_call(phoenix, tmp_path):
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from tests.mcp_helpers import mcp_server

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url, "OTEL_SERVICE_NAME": "lookup-knowledge-mcp",
           "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}"}
    with mcp_server(tmp_path, env=env) as client:
        result = client.lookup(query="PagerDuty escalation", top_k=3)
    assert not result.is_error
    root, trace = _span(phoenix, result.structured_content["invocation_id"], PROJECT)
    call = next(s for s in trace if s["context"]["span_id"] == root["parent_id"])
    assert call["name"] == "tools/call lookup_knowledge"
    assert call["attributes"]["mcp.method.name"] == "tools/call"
    assert root["span_kind"] == "RETRIEVER" and root["attributes"]["lookup.via"] == "mcp"
    sources = [b["source"] for b in result.structured_content["evidence_blocks"]]
    assert [root["attributes"][f"retrieval.documents.{i}.document.id"] for i in range(len(sources))] == sources
