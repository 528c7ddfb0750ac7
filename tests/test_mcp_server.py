"""Issue 11's acceptance: `python -m retrieval mcp` started as a subprocess over stdio, driven by the SDK's client.

One test per acceptance step, named after it. The server on the sample base is started once for the module;
the L1 failure drill and the trace count each start their own (a flag, and a shutdown that flushes the store).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import jsonschema
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from retrieval import TraceStore
from retrieval.agent.tool import tool_definition
from retrieval.lookup.orchestrator import TOOL_NAME
from tests.mcp_helpers import CLIENT_NAME, mcp_server

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DOMAINS = ["alerting", "api", "billing", "dashboards", "getting started", "integrations", "security",
                  "troubleshooting"]


def test_1_lists_the_tool_with_its_input_and_output_schemas(tool):
    expected = tool_definition(SAMPLE_DOMAINS)["parameters"]
    assert tool.input_schema["required"] == ["query"]
    assert tool.input_schema["properties"]["category"]["enum"] == SAMPLE_DOMAINS
    assert tool.input_schema["properties"]["query"] == expected["properties"]["query"]
    assert tool.input_schema["properties"]["top_k"] == expected["properties"]["top_k"]
    output = tool.output_schema
    assert set(output["required"]) == {"query", "evidence_blocks", "relevance", "retrieval_layer", "filter",
                                       "l1_status", "invocation_id"}
    block = output["$defs"]["EvidenceBlockOut"]["properties"]
    assert {"source", "title", "breadcrumb", "layer", "content", "hit_reasons", "score",
            "resource_uri"} <= set(block)
    jsonschema.Draft202012Validator.check_schema(output)


def test_2_call_on_the_sample_returns_a_structured_result_valid_against_the_output_schema(client, tool):
    result = client.lookup(query="rotate an API token", top_k=3)
    assert not result.is_error
    content = result.structured_content
    jsonschema.validate(content, tool.output_schema)
    assert content["evidence_blocks"][0]["source"] == "api/api-tokens.md"
    assert len(content["evidence_blocks"]) == 3
    assert content["relevance"]["semantic_support"] is True
    assert content["filter"]["decision"] == "applied" and content["filter"]["applied"] == {"category": "api"}
    assert content["evidence_blocks"][0]["resource_uri"] == "knowledge://api%2Fapi-tokens.md"
    text = result.content[0].text
    assert "relevance: high" in text and "[1] API Tokens (api/api-tokens.md" in text


def test_3_reads_a_knowledge_resource(client):
    found = client.lookup(query="PagerDuty escalation")
    uri = found.structured_content["evidence_blocks"][0]["resource_uri"]
    read = client.run(client.session.read_resource, uri).contents[0]
    source = found.structured_content["evidence_blocks"][0]["source"]
    assert read.mime_type == "text/markdown"
    assert f"source: {source}" in read.text
    assert (ROOT / "data" / "kb" / source).read_text().splitlines()[-1].strip() in read.text  # the whole page


@pytest.mark.parametrize("uri, message", [
    ("knowledge://..%2F..%2Fpyproject.toml", "outside the knowledge base"),
    ("knowledge://%2Fetc%2Fpasswd", "outside the knowledge base"),
    ("knowledge://api%2Fno-such-page.md", "unknown source 'api/no-such-page.md'"),
])
def test_3_refuses_a_resource_outside_the_base(client, uri, message):
    with pytest.raises(MCPError, match=message):
        client.run(client.session.read_resource, uri)


def test_3_lists_the_resource_template(client):
    templates = client.run(client.session.list_resource_templates).resource_templates
    assert [t.uri_template for t in templates] == ["knowledge://{source}"]


def test_4_empty_query_gives_a_clear_error(client):
    result = client.lookup(query="   ")
    assert result.is_error
    assert result.content[0].text == ("query must be a non-empty string; pass the question or keywords to "
                                      "look up")


@pytest.mark.parametrize("arguments, message", [
    ({}, "query must be a non-empty string; pass the question or keywords to look up"),
    ({"query": "token", "top_k": 0}, "top_k must be an integer from 1 to 1000, got 0"),
    ({"query": "token", "category": "weather"}, "category must be one of alerting, api, billing, dashboards, "
                                                "getting started, integrations, security, troubleshooting or "
                                                "omitted, got 'weather'"),
])
def test_4_bad_arguments_give_the_one_line_message(client, arguments, message):
    result = client.lookup(**arguments)
    assert result.is_error and result.content[0].text == message


def test_5_l1_failure_drill_by_flag_gives_an_l0_result_without_semantic_support(tmp_path):
    with mcp_server(tmp_path, "--simulate-l1-failure") as drill:
        result = drill.lookup(query="PagerDuty")
    assert not result.is_error
    content = result.structured_content
    assert content["l1_status"] == "failed"
    assert content["retrieval_layer"] == "L0"
    assert content["relevance"]["semantic_support"] is False
    assert content["evidence_blocks"] and {b["layer"] for b in content["evidence_blocks"]} == {"L0"}


def test_6_one_tool_invocation_row_per_call_with_the_client_recorded(tmp_path):
    with mcp_server(tmp_path) as server:
        ids = [server.lookup(query=q).structured_content["invocation_id"] for q in ("invoices", "Slack alerts")]
        assert server.lookup(query="").is_error
        traces = server.traces
    rows = TraceStore(traces).query("SELECT id, tool_name, status, arguments FROM tool_invocation")  # after exit
    assert len(rows) == 3
    assert set(ids) <= set(rows["id"])
    assert set(rows["tool_name"]) == {TOOL_NAME}
    assert sorted(rows["status"]) == ["error", "ok", "ok"]
    assert {json.loads(a)["client"] for a in rows["arguments"]} == {CLIENT_NAME}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, server: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"server exited: {server.stderr.read() if server.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f}s")


async def _http_lookup(url: str, query: str) -> types.CallToolResult:
    info = types.Implementation(name="pytest-http-client", version="1.0")
    async with streamable_http_client(url) as streams, ClientSession(*streams[:2], client_info=info) as session:
        await session.initialize()
        return await session.call_tool(TOOL_NAME, {"query": query})


def test_optional_http_transport_serves_on_localhost_only(tmp_path):
    import anyio

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "retrieval", "mcp", "--http", str(port), "--no-trace"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "LOOKUP_KNOWLEDGE_CACHE": str(tmp_path.parent / "index-cache")})
    try:
        _wait_for_port(port, server)
        result = anyio.run(_http_lookup, f"http://127.0.0.1:{port}/mcp", "download an invoice")
        listening = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not result.is_error
    assert result.structured_content["evidence_blocks"][0]["source"] == "billing/invoices.md"
    assert {line.split()[3] for line in listening.splitlines()} == {f"127.0.0.1:{port}"}  # local address column


def test_a_server_started_with_a_dense_model_answers_with_the_dense_part_on(tmp_path):
    """The server takes the dense part's settings as the other commands do (its flags are LookupConfig's)."""
    with mcp_server(tmp_path, "--l1-dense-model", "hash:32", "--l1-dense-weight", "2") as server:
        result = server.lookup(query="silence alerts during maintenance")
        traces = server.traces
    assert not result.is_error and result.structured_content["l1_status"] == "ok"
    assert any("dense " in r["reason"] for b in result.structured_content["evidence_blocks"] for r in b["hit_reasons"])
    row = TraceStore(traces).query("SELECT retrieval_details->'l1'->'dense' AS dense, config FROM tool_invocation "
                                   "WHERE id = ?", [result.structured_content["invocation_id"]]).iloc[0]
    dense, config = json.loads(row["dense"]), json.loads(row["config"])
    assert dense["status"] == "ok" and dense["model"]["name"] == "hash:32"
    assert (config["l1_dense_model"], config["l1_dense_weight"]) == ("hash:32", 2.0)
    assert config["models"]["dense"]["fingerprint"] == dense["model"]["fingerprint"]


def test_a_server_whose_model_cannot_load_refuses_to_start_with_one_line(tmp_path):
    missing = tmp_path / "no-such-model"
    traces = tmp_path / "traces.duckdb"
    done = subprocess.run([sys.executable, "-m", "retrieval", "mcp", "--traces", str(traces),
                           "--l1-dense-model", f"onnx:{missing}"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "LOOKUP_KNOWLEDGE_CACHE": str(tmp_path / "index-cache")})
    err = done.stderr.strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: model 'onnx:{missing}': ") and str(missing) in err
    assert not traces.exists()  # refused before anything was opened for writing
