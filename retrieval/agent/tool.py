"""The agent-facing tool: `LookupTool` binds an index, a configuration and a recorder to `lookup_knowledge`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from retrieval.config import LookupConfig
from retrieval.index.build import KnowledgeIndex
from retrieval.lookup.invocation import Recorder
from retrieval.lookup.orchestrator import TOOL_NAME, LookupResult, lookup_knowledge

TOOL_DESCRIPTION = (
    "Look up the product knowledge base. Returns evidence blocks (source, title, breadcrumb, content, "
    "why each was found), the best one as `primary`, and a relevance grade that says whether semantic "
    "retrieval supports it, with a `confidence` that the first page answers; when `relevance.abstain` is true "
    "the knowledge base does not seem to hold an answer: say so rather than answer from the evidence. Use it "
    "before answering questions about the product; cite `source`."
)


def tool_definition(domains: list[str] | None = None) -> dict[str, Any]:
    """Name, description and JSON Schema of the tool's parameters (function-calling format)."""
    category: dict[str, Any] = {"type": "string", "description": "Only search this domain/category "
                                "(case-insensitive). Omit to let the tool decide."}
    if domains:
        category["examples"] = sorted(domains)
    return {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1,
                          "description": "The question or keywords to look up, in the user's words."},
                "category": category,
                "top_k": {"type": "integer", "minimum": 1, "maximum": 1000,
                          "description": "How many evidence blocks to return (default 5)."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }


def agent_payload(result: LookupResult) -> dict[str, Any]:
    """What the agent reads: each evidence block once, `primary` and `supplement` as references to them
    (position, source, title), relevance, and a compact trace reference. The full `retrieval_details` stay
    in the trace (`tool_invocation`, by `invocation_id`): an agent's context is worth more than a copy.
    So are the blocks' `score_parts`, an analyst's question: they stay in the trace and the full form."""
    blocks = [{k: v for k, v in b.to_dict().items() if k != "score_parts"} for b in result.evidence_blocks]
    references = [{"block": i, "source": b["source"], "title": b["title"]} for i, b in enumerate(blocks)]
    details = result.retrieval_details
    filter_decision = details.get("filter", {})
    return {"query": result.query, "evidence_blocks": blocks,
            "primary": references[0] if references else None, "supplement": references[1:],
            "relevance": result.relevance.to_dict(), "retrieval_layer": result.retrieval_layer,
            "invocation_id": result.invocation_id,
            "trace": {"table": "tool_invocation", "invocation_id": result.invocation_id,
                      "filter": {"decision": filter_decision.get("decision"),
                                 "applied": filter_decision.get("applied")},
                      "l1_status": details.get("l1", {}).get("status"),
                      "candidate_count": details.get("candidate_count"),
                      "evidence_count": details.get("evidence_count")}}


@dataclass
class LookupTool:
    """A callable tool for agent frameworks: `tool(query, category=None, top_k=None) -> dict` (see
    `agent_payload`; `lookup_knowledge(...).to_dict()` is the full form with every detail)."""

    index: KnowledgeIndex
    config: LookupConfig = field(default_factory=LookupConfig)
    recorder: Recorder | None = None

    def __call__(self, query: str, category: str | None = None, top_k: int | None = None) -> dict[str, Any]:
        result = lookup_knowledge(query, index=self.index, config=self.config, category=category, top_k=top_k,
                                  recorder=self.recorder)
        return agent_payload(result)

    def definition(self) -> dict[str, Any]:
        return tool_definition(self.index.kb.domains())

    def definition_json(self) -> str:
        return json.dumps(self.definition(), indent=2)
