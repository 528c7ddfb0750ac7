"""docs/mcp.md's "One complete exchange", from a real session: `python -m retrieval mcp` on the sample base over
stdio, driven by the SDK's client (tests/mcp_helpers.py), its trace row read back after the server exits.

The JSON is the wire's (`model_dump(by_alias=True, exclude_none=True)`, what the SDK sends), cut to the
fields this project sets: fields a newer SDK adds to every message (`ttlMs`, `resultType`, …) would make
the example fail on a fresh machine for no change of ours. Needs the mcp package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval import TraceStore
from tests.compact_json import dumps

CLIENT = "claude-desktop"
QUERY = "how do I rotate an API token?"
TOP_K = 1
NO_ANSWER_QUERY = "how do I fix a squeaky door hinge"  # nothing in the base answers: it abstains, with evidence
TOOL_FIELDS = ("name", "description", "inputSchema", "outputSchema", "annotations")
RESOURCE_LINES = 5  # the start of the page resources/read returns


def wire(message: Any) -> dict[str, Any]:
    """An SDK object as JSON on the wire."""
    return message.model_dump(by_alias=True, exclude_none=True, mode="json")


def abbreviated_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema's top level: its properties without pydantic's `title`s, its `$defs` by name only."""
    out = {key: value for key, value in schema.items() if key not in ("$defs", "title")}
    out["properties"] = {name: {k: v for k, v in prop.items() if k != "title"}
                         for name, prop in schema["properties"].items()}
    if "$defs" in schema:
        out["$defs"] = dict.fromkeys(sorted(schema["$defs"]), "…")
    return out


def tool_listing(listed: dict[str, Any]) -> dict[str, Any]:
    tools = []
    for tool in listed["tools"]:
        fields = {key: tool[key] for key in TOOL_FIELDS if key in tool}
        if "outputSchema" in fields:
            fields["outputSchema"] = abbreviated_output_schema(fields["outputSchema"])
        tools.append(fields)
    return {"tools": tools}


def call_result(result: dict[str, Any]) -> dict[str, Any]:
    """The tools/call result with its text content elided (it is shown on its own)."""
    content = [{**item, "text": "…"} if item.get("type") == "text" else item for item in result["content"]]
    return {"content": content, "structuredContent": result["structuredContent"], "isError": result["isError"]}


def resource_start(read: dict[str, Any]) -> dict[str, Any]:
    contents = [{**item, "text": "".join(item["text"].splitlines(keepends=True)[:RESOURCE_LINES]) + "…"}
                for item in read["contents"]]
    return {"contents": contents}


def trace_row(traces: Path) -> dict[str, Any]:
    """The call's `tool_invocation` row (the columns the doc names), read after the server has exited."""
    frame = TraceStore(traces).query("SELECT tool_name, status, arguments FROM tool_invocation WHERE query = ?",
                                     [QUERY])
    if len(frame) != 1:
        raise AssertionError(f"expected one tool_invocation row, found {len(frame)}")
    row = frame.iloc[0]
    return {"tool_name": row["tool_name"], "status": row["status"], "arguments": json.loads(row["arguments"])}


def block(language: str, text: str) -> str:
    return f"```{language}\n{text.rstrip()}\n```\n"


def mcp_exchange(work: Path) -> dict[str, str]:
    """The regions of docs/mcp.md, from one session on the sample base (server's traces under `work`)."""
    from tests.mcp_helpers import mcp_server

    folder = work / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    with mcp_server(folder, client_name=CLIENT) as client:
        listed = wire(client.run(client.session.list_tools))
        called = wire(client.lookup(query=QUERY, top_k=TOP_K))
        abstained = wire(client.lookup(query=NO_ANSWER_QUERY, top_k=TOP_K))
        uri = called["structuredContent"]["evidence_blocks"][0]["resource_uri"]
        read = wire(client.run(client.session.read_resource, uri))
        traces = client.traces
    text = "\n".join(item["text"] for item in called["content"] if item.get("type") == "text")
    return {"mcp-tools-list": block("json", dumps(tool_listing(listed))),
            "mcp-call-arguments": block("json", dumps({"name": "lookup_knowledge",
                                                       "arguments": {"query": QUERY, "top_k": TOP_K}})),
            "mcp-call-text": block("text", text),
            "mcp-call-result": block("json", dumps(call_result(called))),
            "mcp-resource-read": block("json", dumps(resource_start(read))),
            "mcp-abstain-text": block("text", "\n".join(item["text"] for item in abstained["content"]
                                                         if item.get("type") == "text")),
            "mcp-abstain-relevance": block("json", dumps(abstained["structuredContent"]["relevance"])),
            "mcp-trace-row": block("json", dumps(trace_row(traces)))}
