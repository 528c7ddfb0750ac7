"""The MCP tool's output: a typed view of a `LookupResult` (its output schema), its short text rendering,
and the tool's input schema read from `LookupTool.definition()`.

Pure mapping with no `mcp` import, so it is unit-tested on its own. The TypedDicts come from
`typing_extensions`: below Python 3.12 pydantic cannot build a schema from `typing.TypedDict`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from typing_extensions import TypedDict

from retrieval.agent.mcp_resources import resource_uri
from retrieval.lookup.orchestrator import LookupResult
from retrieval.lookup.statuses import FilterStatus, L1Status, Layer, RelevanceLevel

TEXT_CONTENT_CHARS = 300  # the text rendering shows the start of each block; the structured result has it all


class HitReasonOut(TypedDict):
    """Why a block was returned: the layer, the field that matched, the reason in words, its score."""

    layer: str
    field: str
    reason: str
    score: float | None


class EvidenceBlockOut(TypedDict):
    """One source's evidence; `resource_uri` reads the whole entry (`knowledge://…`, percent-encoded)."""

    source: str
    title: str | None
    breadcrumb: str | None
    layer: Layer
    content: str
    hit_reasons: list[HitReasonOut]
    score: float
    resource_uri: str


class RelevanceOut(TypedDict):
    """How far the primary block can be trusted; `semantic_support` is false for L0-only evidence;
    `confidence` is the estimated chance that the first page answers; `abstain` is true when the knowledge
    base does not seem to hold an answer (level low or none); `signals` are what the confidence weighs."""

    level: RelevanceLevel
    semantic_support: bool
    basis: str
    confidence: float
    abstain: bool
    signals: dict[str, float | None] | None


class FilterOut(TypedDict):
    """The filter decision: what was decided, L0's domains, the exact filter sent to L1, and widening."""

    decision: FilterStatus
    l0_domains: list[str]
    applied: dict[str, str] | None
    widened: bool


class LookupOutput(TypedDict):
    """The structured result of `lookup_knowledge` over MCP: evidence blocks once, best first."""

    query: str
    evidence_blocks: list[EvidenceBlockOut]
    relevance: RelevanceOut
    retrieval_layer: Layer
    filter: FilterOut
    l1_status: L1Status
    invocation_id: str


def structured_output(result: LookupResult) -> LookupOutput:
    """Map a lookup result to the tool's output schema (no `primary`/`supplement` copies of the blocks)."""
    details = result.retrieval_details
    decided = details["filter"]
    blocks = [EvidenceBlockOut(source=b.source, title=b.title or None, breadcrumb=b.breadcrumb or None,
                               layer=b.retrieval_layer, content=b.content,  # type: ignore[typeddict-item]
                               hit_reasons=[HitReasonOut(**r.to_dict()) for r in b.hit_reasons],
                               score=round(b.score, 6), resource_uri=resource_uri(b.source))
              for b in result.evidence_blocks]
    return LookupOutput(
        query=result.query, evidence_blocks=blocks,
        relevance=RelevanceOut(**result.relevance.to_dict()),  # type: ignore[typeddict-item]
        retrieval_layer=result.retrieval_layer,  # type: ignore[typeddict-item]
        filter=FilterOut(decision=decided["decision"], l0_domains=list(decided["l0_domains"]),
                         applied=decided["applied"], widened=bool(decided.get("widened", False))),
        l1_status=details["l1"]["status"], invocation_id=result.invocation_id)


def render_text(output: LookupOutput) -> str:
    """A short plain-text rendering for clients that read only text content."""
    relevance, decided = output["relevance"], output["filter"]
    support = "semantic support" if relevance["semantic_support"] else "no semantic support"
    applied = f" {json.dumps(decided['applied'], ensure_ascii=False)}" if decided["applied"] else ""
    lines = [f"relevance: {relevance['level']} ({support}; {relevance['basis']})",
             f"layer: {output['retrieval_layer']}, L1: {output['l1_status']}, "
             f"filter: {decided['decision']}{applied}{' (widened)' if decided['widened'] else ''}",
             f"invocation: {output['invocation_id']}"]
    if relevance["abstain"]:  # said first and plainly: an agent reading only the text must not miss it
        lines.insert(0, "The knowledge base does not seem to hold an answer to this question"
                        + ("; the closest evidence follows." if output["evidence_blocks"] else "."))
    if not output["evidence_blocks"]:
        lines.append("no evidence found")
    for rank, block in enumerate(output["evidence_blocks"], start=1):
        content = " ".join(block["content"].split())
        if len(content) > TEXT_CONTENT_CHARS:
            content = content[:TEXT_CONTENT_CHARS].rstrip() + " …"
        reasons = "; ".join(r["reason"] for r in block["hit_reasons"])
        lines += ["", f"[{rank}] {block['title'] or block['source']} ({block['source']}, {block['layer']}, "
                      f"score {block['score']:.3f})",
                  f"    why: {reasons}", f"    read all: {block['resource_uri']}", f"    {content}"]
    return "\n".join(lines)


def input_schema(definition: dict[str, Any]) -> dict[str, Any]:
    """The tool definition's parameter schema, with the base's domains as the `category` enum."""
    schema = copy.deepcopy(definition["parameters"])
    category = schema["properties"]["category"]
    domains = category.pop("examples", None)
    if domains:
        category["enum"] = list(domains)
    return schema
