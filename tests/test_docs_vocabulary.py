"""Every list of allowed values in the docs is the code's list: the statuses of `retrieval_details`
(retrieval/lookup/statuses.py), the domain vote's basis, the relevance grades and their thresholds, the
MCP tool's parameters and output fields (retrieval/agent/), and which L1 statuses OpenTelemetry marks as
errors. A value added to the code without being documented fails here, and so does a documented value the
code no longer has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retrieval.agent.mcp_output import EvidenceBlockOut, FilterOut, LookupOutput
from retrieval.agent.tool import tool_definition
from retrieval.lookup.domains import VoteBasis
from retrieval.lookup.relevance import HIGH_CONFIDENCE, MEDIUM_CONFIDENCE
from retrieval.lookup.statuses import FilterStatus, L1Status, Layer, RelevanceLevel, ShortfallLimit
from tests.doc_text import backticked, between, page, row, values, worded

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


DETAILS = page("retrieval-details.md")


@pytest.mark.parametrize("documented, literal", [
    (backticked(between(row(DETAILS, "relevance"), "`level` (", ")")), RelevanceLevel),
    (backticked(row(DETAILS, "retrieval_layer", 0)), Layer),
    (backticked(row(DETAILS, "retrieval_layer", 2)), Layer),
    (backticked(between(row(DETAILS, "filter"), "`decision`:", "; `l0_domains`")), FilterStatus),
    (backticked(between(row(DETAILS, "l1"), "`status`:", "; `error`")), L1Status),
    (backticked(between(row(DETAILS, "l0"), "`basis`", "; `rule`")), VoteBasis),
    (backticked(between(row(DETAILS, "shortfall"), "`limit` (the binding cause:", ") and `reason`")), ShortfallLimit),
], ids=["result.relevance.level", "result.retrieval_layer", "details.retrieval_layer", "filter.decision",
        "l1.status", "domain_evidence.basis", "shortfall.limit"])
def test_retrieval_details_lists_every_allowed_value(documented, literal):
    assert documented == values(literal), (f"docs/retrieval-details.md lists {sorted(documented)}; the code allows "
                                           f"{sorted(values(literal))}")


def test_a_blocks_layer_is_every_layer_but_none():
    assert backticked(between(row(DETAILS, "retrieval_layer", 1), "", ":")) == values(Layer) - {"none"}


def test_relevance_grades_and_thresholds_are_the_codes():
    text = between(row(DETAILS, "relevance", 1), "`level` (", "), `semantic_support`")
    assert {item.split()[0].rstrip(":") for item in text.split(", ")} == values(RelevanceLevel)
    assert f"≥ {HIGH_CONFIDENCE:g}," in text.split("medium")[0] and f"medium ≥ {MEDIUM_CONFIDENCE:g}" in text


def test_the_architecture_names_every_status_without_semantic_support():
    listed = worded(between(page("architecture.md"), "never claims semantic support for L0-only evidence (L1 ", ")"))
    assert listed == values(L1Status) - {"ok"}


def test_otel_page_says_which_l1_statuses_are_span_errors():
    pytest.importorskip("openinference.semconv", reason="the span code needs the [otel] extra")
    from retrieval.otel.stages import L1_ERRORS

    text = " ".join(page("otel.md").split())
    assert worded(between(text, "When L1 ", " (the lookup fell back")) == set(L1_ERRORS)
    assert backticked(between(text, "as the call answered. L1 ", " are not errors")) == \
        values(L1Status) - set(L1_ERRORS) - {"ok"}


MCP = " ".join(page("mcp.md").split())


def test_mcp_page_names_every_parameter_and_output_field():
    parameters = backticked(between(MCP, "Input schema from `LookupTool.definition()`:", ". The result"))
    assert parameters == set(tool_definition(["any"])["parameters"]["properties"])
    output = between(MCP, "with an output schema:", "; plus")
    assert backticked(output) == set(LookupOutput.__annotations__)
    assert backticked(between(output, "best first (", " to read the whole entry)")) == \
        set(EvidenceBlockOut.__annotations__)
    assert backticked(between(output, "`filter` (", ")")) == set(FilterOut.__annotations__)


@pytest.mark.parametrize("pattern, literal", [
    (r"l1[._]status(?:\s*=\s*|`\s+`|:\s*\")(\w+)", L1Status),
    (r"filter decision `(\w+)`", FilterStatus),
    (r"relevance[._]level(?:\s*=\s*|`\s+`|:\s*\")(\w+)", RelevanceLevel),
    (r"retrieval_layer(?:\s*=\s*'|`\s+`|:\s*\")([\w+]+)", Layer),
])
def test_every_single_status_the_docs_quote_exists(pattern, literal):
    quoted = {(p.name, value) for p in DOCS for value in re.findall(pattern, p.read_text(encoding="utf-8"))}
    unknown = sorted((name, value) for name, value in quoted if value not in values(literal))
    assert not unknown, f"the docs quote values the code does not have: {unknown}"
