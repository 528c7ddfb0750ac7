"""The MCP tool's output mapping, text rendering, input schema and resources, without a running server."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from retrieval import LookupConfig, lookup_knowledge
from retrieval.agent.mcp_output import (
    TEXT_CONTENT_CHARS,
    LookupOutput,
    input_schema,
    render_text,
    structured_output,
)
from retrieval.agent.mcp_resources import SourceRefused, find_entry, render_entry, resource_uri
from retrieval.agent.tool import tool_definition
from retrieval.cli import build_parser, config_flag, config_from_args, main
from retrieval.config import field_choices
from retrieval.lookup.invocation import ToolInvocation

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = TypeAdapter(LookupOutput)


def test_structured_output_lists_each_block_once_in_order_with_its_resource_uri(index):
    result = lookup_knowledge("alert routing escalation", index=index, top_k=3)
    output = structured_output(result)
    OUTPUT.validate_python(output)
    assert "primary" not in output and "supplement" not in output
    assert [b["source"] for b in output["evidence_blocks"]] == [b.source for b in result.evidence_blocks]
    first, block = output["evidence_blocks"][0], result.evidence_blocks[0]
    assert first["layer"] == block.retrieval_layer and first["content"] == block.content
    assert first["hit_reasons"] == [r.to_dict() for r in block.hit_reasons]
    assert first["resource_uri"] == resource_uri(block.source)
    assert output["invocation_id"] == result.invocation_id
    assert output["l1_status"] == result.retrieval_details["l1"]["status"]


def test_structured_output_carries_the_filter_decision_and_widening(index):
    result = lookup_knowledge("alert routing escalation", index=index)
    decided = result.retrieval_details["filter"]
    output = structured_output(result)
    assert output["filter"] == {"decision": decided["decision"], "l0_domains": decided["l0_domains"],
                                "applied": decided["applied"], "widened": False}
    details = {**result.retrieval_details, "filter": {**decided, "widened": True}}
    widened = replace(result, retrieval_details=details)
    assert structured_output(widened)["filter"]["widened"] is True


def test_l1_failure_maps_to_l0_blocks_without_semantic_support(index):
    result = lookup_knowledge("PagerDuty", index=index, config=LookupConfig(simulate_l1_failure=True))
    output = structured_output(result)
    assert output["l1_status"] == "failed" and output["relevance"]["semantic_support"] is False
    assert "no semantic support" in render_text(output)


def test_text_rendering_names_relevance_sources_and_uris_and_cuts_long_content(index):
    result = lookup_knowledge("retention rollups", index=index, config=LookupConfig(snippet_chars=5000))
    output = structured_output(result)
    text = render_text(output)
    assert text.startswith(f"relevance: {output['relevance']['level']}")
    for rank, block in enumerate(output["evidence_blocks"], start=1):
        assert f"[{rank}] " in text and block["resource_uri"] in text
    long_block = next(b for b in output["evidence_blocks"] if len(b["content"]) > TEXT_CONTENT_CHARS)
    shown = " ".join(long_block["content"].split())[:TEXT_CONTENT_CHARS].rstrip()
    assert f"    {shown} …" in text.splitlines()


def test_text_rendering_says_when_nothing_was_found(index):
    output = structured_output(lookup_knowledge("zzzqqq xyzzy", index=index))
    assert output["evidence_blocks"] == [] and "no evidence found" in render_text(output)


def test_input_schema_turns_the_domains_into_an_enum_without_touching_the_definition():
    definition = tool_definition(["billing", "alerting"])
    schema = input_schema(definition)
    assert schema["properties"]["category"]["enum"] == ["alerting", "billing"]
    assert "examples" not in schema["properties"]["category"]
    assert definition["parameters"]["properties"]["category"]["examples"] == ["alerting", "billing"]
    assert schema["required"] == ["query"] and schema["additionalProperties"] is False


def test_input_schema_of_a_base_without_categories_has_no_enum():
    assert "enum" not in input_schema(tool_definition([]))["properties"]["category"]


@pytest.mark.parametrize("source", ["api/api-tokens.md", "a b/ü?#%.md", "doc:17", "plain"])
def test_resource_uri_is_the_sdk_template_expansion_and_round_trips(source):
    uri_template = pytest.importorskip("mcp.shared.uri_template")
    template = uri_template.UriTemplate.parse("knowledge://{source}")
    assert resource_uri(source) == template.expand({"source": source})
    assert template.match(resource_uri(source)) == {"source": source}


def test_find_entry_returns_an_entry_of_the_base(index):
    assert find_entry(index.kb, "billing/invoices.md").source == "billing/invoices.md"


@pytest.mark.parametrize("source, message", [
    ("../billing/invoices.md", "outside the knowledge base"),
    ("billing/../../secrets.md", "outside the knowledge base"),
    ("/etc/passwd", "outside the knowledge base"),
    ("..\\..\\secrets", "outside the knowledge base"),
    ("billing/missing.md", "unknown source 'billing/missing.md'"),
])
def test_find_entry_refuses_sources_outside_the_base(index, source, message):
    with pytest.raises(SourceRefused, match=message):
        find_entry(index.kb, source)


def test_render_entry_holds_every_section_under_its_heading(index):
    entry = index.kb.entry("alerting/routing.md")
    text = render_entry(entry)
    assert text.startswith("# Alert routing\n")
    assert "## Routes\n" in text and "## Escalation policies\n" in text
    for chunk in entry.chunks:
        assert chunk.text.strip() in text
    assert "entities: PagerDuty" in text


def test_client_recorder_adds_the_client_to_the_arguments():
    pytest.importorskip("mcp")
    from retrieval.agent.mcp_server import ClientRecorder

    seen: list[ToolInvocation] = []
    invocation = ToolInvocation("lookup_knowledge", "q", {"query": "q", "category": None, "top_k": 3}, "ok",
                                1.0, {}, {})
    ClientRecorder(seen.append, "claude-desktop", "1.2")(invocation)
    assert seen[0].arguments == {"query": "q", "category": None, "top_k": 3, "client": "claude-desktop",
                                 "client_version": "1.2", "via": "mcp"}
    assert seen[0].id == invocation.id and invocation.arguments == {"query": "q", "category": None, "top_k": 3}


def test_close_recorder_flushes_then_closes_a_store_that_can():
    pytest.importorskip("mcp")
    from retrieval.agent.mcp_server import close_recorder

    calls: list[str] = []

    class Buffered:
        def __call__(self, invocation: ToolInvocation) -> None: ...
        def flush(self) -> None: calls.append("flush")
        def close(self) -> None: calls.append("close")

    close_recorder(Buffered())
    close_recorder(None)
    close_recorder(lambda invocation: None)
    assert calls == ["flush", "close"]


def test_importing_retrieval_and_its_cli_does_not_import_mcp():
    code = ("import sys, retrieval, retrieval.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))")
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_mcp_command_without_the_sdk_says_how_to_install_it(kb_dir, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "retrieval.agent.mcp_server", None)  # importing it fails, as without mcp
    assert main(["mcp", "--kb", str(kb_dir), "--no-trace"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: the MCP server needs the mcp package") and "lookup-knowledge[mcp]" in error
    assert len(error.strip().splitlines()) == 1


def test_mcp_command_takes_every_config_flag_of_lookup():
    argv: list[str] = []
    for f in fields(LookupConfig):
        flag = config_flag(f.name)
        if f.type in (bool, "bool"):
            argv.append(flag)
        elif field_choices(f.name):
            argv += [flag, next(c for c in field_choices(f.name) if c != f.default)]
        elif str(f.type).startswith("str"):  # a model spec (nothing is loaded to read the flags)
            argv += [flag, "hash:32"]
        else:
            default = 256 if f.default is None else f.default  # svd_dims: unset by default, any index
            is_int = str(f.type).startswith("int")
            argv += [flag, str(default + 1 if is_int else default / 2)]  # valid, not the default
    served = config_from_args(build_parser().parse_args(["mcp", *argv]))
    looked_up = config_from_args(build_parser().parse_args(["lookup", "q", *argv]))
    assert served == looked_up
    assert [f.name for f in fields(LookupConfig) if getattr(served, f.name) == f.default] == []
