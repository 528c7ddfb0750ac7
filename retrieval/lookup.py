"""`lookup_knowledge`: the only orchestrator. L0 hints -> filter decision -> L1 -> evidence -> record.

L0 never replaces L1: it contributes hints, an optional category filter and its own evidence. When
L1 is empty or fails, L0's evidence is still returned and the relevance says it has no semantic support.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config import LookupConfig
from .evidence import EvidenceBlock, dedupe, l0_block, l1_block, rank, trim_reasons, truncate
from .filters import FilterDecision, decide_filter
from .index import KnowledgeIndex
from .invocation import Recorder, ToolInvocation
from .l0 import L0Hints
from .l1 import L1Result
from .relevance import Relevance, assess
from .text import normalize_label

TOOL_NAME = "lookup_knowledge"
MAX_L1_REASONS = 3  # a block's other matched sections stay in `other_sections`
MAX_SUMMARIES = 20  # deeper blocks (evaluation asks for 100) are listed by source only: traces stay compact


class SimulatedL1Failure(RuntimeError):
    """Raised by the `simulate_l1_failure` drill in place of L1."""


@dataclass(frozen=True)
class L1Outcome:
    """What happened to L1 in one call: status, error, and the result when it ran."""

    status: str
    result: L1Result | None = None
    error: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        result = self.result
        return {"status": self.status, "error": self.error,
                "candidate_count": len(result.candidates) if result else 0,
                "rows_searched": result.rows_searched if result else 0,
                "dropped_below_min_score": result.dropped_below_min_score if result else 0}


@dataclass(frozen=True)
class LookupResult:
    """What the tool returns: evidence blocks, the compatibility fields, relevance and the trace details."""

    query: str
    evidence_blocks: tuple[EvidenceBlock, ...]
    relevance: Relevance
    retrieval_layer: str
    retrieval_details: dict[str, Any]
    invocation_id: str

    @property
    def primary(self) -> EvidenceBlock | None:
        return self.evidence_blocks[0] if self.evidence_blocks else None

    @property
    def supplement(self) -> tuple[EvidenceBlock, ...]:
        return self.evidence_blocks[1:]

    def to_dict(self) -> dict[str, Any]:
        blocks = [b.to_dict() for b in self.evidence_blocks]
        return {"query": self.query, "primary": blocks[0] if blocks else None, "supplement": blocks[1:],
                "evidence_blocks": blocks, "relevance": self.relevance.to_dict(),
                "retrieval_layer": self.retrieval_layer, "retrieval_details": self.retrieval_details,
                "invocation_id": self.invocation_id}


def lookup_knowledge(query: str, *, index: KnowledgeIndex, config: LookupConfig | None = None,
                     category: str | None = None, top_k: int | None = None, recorder: Recorder | None = None,
                     run_id: str | None = None, query_id: str | None = None) -> LookupResult:
    """Answer `query` from the knowledge base; every call (failed ones too) goes to `recorder`."""
    config = config or LookupConfig()
    started = time.perf_counter()
    arguments = {"query": query, "category": category, "top_k": top_k}
    try:
        query, category, top_k = _validate(query, category, top_k, config)
    except ValueError as exc:
        if recorder is not None:
            recorder(ToolInvocation(TOOL_NAME, str(query), arguments, "error", _ms(started), config.to_dict(), {},
                                    error=f"{type(exc).__name__}: {exc}", run_id=run_id, query_id=query_id))
        raise
    timings: dict[str, float] = {}
    hints = _timed(timings, "l0", lambda: index.l0.match(
        query, max_matches=config.l0_max_matches, min_score_ratio=config.l0_min_score_ratio))
    decision = decide_filter(hints, caller_category=category, use_l0_filter=config.l0_filter)
    outcome = _timed(timings, "l1", lambda: _run_l1(query, index, config, decision, top_k))
    blocks, candidate_count, merged = _timed(timings, "evidence", lambda: _evidence(
        hints, outcome, index, config, category, top_k))
    layer = _overall_layer(hints, outcome)
    relevance = assess(blocks, hints, outcome.status)
    timings["total"] = _ms(started)
    details = _details(layer, hints, decision, outcome, (candidate_count, merged), blocks, timings)
    details["relevance"] = relevance.to_dict()
    invocation = ToolInvocation(TOOL_NAME, query, arguments, "ok", timings["total"], config.to_dict(), details,
                                run_id=run_id, query_id=query_id)
    if recorder is not None:
        recorder(invocation)
    return LookupResult(query, tuple(blocks), relevance, layer, details, invocation.id)


def _validate(query: Any, category: Any, top_k: Any, config: LookupConfig) -> tuple[str, str | None, int]:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query must be a non-empty string; pass the question or keywords to look up")
    if category is not None and (not isinstance(category, str) or not normalize_label(category)):
        raise ValueError(f"category must be a non-blank string or omitted, got {category!r}")
    if top_k is None:
        return query.strip(), category, config.top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise ValueError(f"top_k must be an integer from 1 to 1000, got {top_k!r}")
    return query.strip(), category, top_k


def _run_l1(query: str, index: KnowledgeIndex, config: LookupConfig, decision: FilterDecision,
            top_k: int) -> L1Outcome:
    if not config.l1_enabled:
        return L1Outcome("disabled")
    if index.l1 is None:
        return L1Outcome("unavailable", error={"type": "L1Unavailable",
                                               "message": index.l1_unavailable_reason or "no L1 index"})
    try:  # the one broad catch: any L1 failure falls back to L0 evidence, recorded with its cause
        if config.simulate_l1_failure:
            raise SimulatedL1Failure("simulated L1 failure (simulate_l1_failure drill)")
        result = index.l1.search(query, top_k=max(config.l1_pool, top_k), filters=decision.applied,
                                 min_score=config.l1_min_score, tfidf_weight=config.l1_tfidf_weight,
                                 page_weight=config.page_weight)
    except Exception as exc:  # noqa: BLE001
        return L1Outcome("failed", error={"type": type(exc).__name__, "message": str(exc)})
    return L1Outcome("ok" if result.candidates else "empty", result)


def _evidence(hints: L0Hints, outcome: L1Outcome, index: KnowledgeIndex, config: LookupConfig,
              category: str | None, top_k: int) -> tuple[list[EvidenceBlock], int, int]:
    l1_blocks = [l1_block(c) for c in (outcome.result.candidates if outcome.result else ())]
    l0_blocks = [l0_block(m, entry) for m in hints.matches if (entry := index.kb.entry(m.source)) is not None]
    if category is not None:  # the caller's filter binds L0 evidence too
        l0_blocks = [b for b in l0_blocks if normalize_label(category) in b.domains]
    candidates = l1_blocks + l0_blocks
    merged = dedupe(candidates)
    ranked = rank(merged, l0_weight=config.l0_weight, l1_weight=config.l1_weight, l0_bound=hints.score_bound,
                  page_weight=config.page_weight)
    return ([trim_reasons(truncate(b, config.snippet_chars), MAX_L1_REASONS) for b in ranked[:top_k]], len(candidates),
            len(candidates) - len(merged))


def _overall_layer(hints: L0Hints, outcome: L1Outcome) -> str:
    l1 = outcome.result is not None and bool(outcome.result.candidates)
    if hints.match_count and l1:
        return "L0+L1"
    return "L0" if hints.match_count else ("L1" if l1 else "none")


def _details(layer: str, hints: L0Hints, decision: FilterDecision, outcome: L1Outcome, counts: tuple[int, int],
             blocks: list[EvidenceBlock], timings: Mapping[str, float]) -> dict[str, Any]:
    candidate_count, merged = counts
    return {"retrieval_layer": layer, "l0": hints.to_dict(), "filter": decision.to_dict(),
            "l1": outcome.to_dict(), "candidate_count": candidate_count, "evidence_count": len(blocks),
            "duplicates_merged": merged,
            "evidence": [b.summary() for b in blocks[:MAX_SUMMARIES]],
            "evidence_sources": [b.source for b in blocks],
            "timings_ms": {k: round(v, 3) for k, v in timings.items()}}


def _timed(timings: dict[str, float], stage: str, work):
    started = time.perf_counter()
    value = work()
    timings[stage] = _ms(started)
    return value


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
