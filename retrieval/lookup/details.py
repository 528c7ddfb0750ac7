"""`retrieval_details` as typed, frozen values: what one lookup did, never full content.

`RetrievalDetails.to_dict()` is the JSON returned to callers and stored in `tool_invocation`; its keys
are a contract (README, tests/test_contract.py) and its exact shape is pinned by a golden file
(tests/golden/retrieval_details.json).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.l0.index import L0Hints
from retrieval.l1.results import DenseStatus, L1Result
from retrieval.lookup.evidence import EvidenceBlock
from retrieval.lookup.filters import FilterDecision
from retrieval.lookup.relevance import Relevance
from retrieval.lookup.rerank import RerankReport
from retrieval.lookup.shortfall import Shortfall
from retrieval.lookup.statuses import L1Status, Layer, check

MAX_SUMMARIES = 20  # deeper blocks (evaluation asks for 100) are listed by source only: traces stay compact


@dataclass(frozen=True)
class L1Outcome:
    """What happened to L1 in one call: status, error, and the result when it ran."""

    status: L1Status
    result: L1Result | None = None
    error: dict[str, str] | None = None
    dense: DenseStatus | None = None  # the dense part's status when it could not run at all (a model that failed)

    def __post_init__(self) -> None:
        check(self.status, L1Status, "L1 status")

    def to_dict(self) -> dict[str, Any]:
        result = self.result
        return {"status": self.status, "error": self.error,
                "candidate_count": len(result.candidates) if result else 0,
                "rows_searched": result.rows_searched if result else 0,
                "dropped_below_min_score": result.dropped_below_min_score if result else 0,
                "rows_scored": result.rows_scored if result else 0,
                "embedder": _embedder(result), **self._dense()}

    def _dense(self) -> dict[str, Any]:
        """`dense`: the dense part's model and status, present only when a dense part was asked for (so a
        lookup without one records what it always did)."""
        status = self.dense or getattr(self.result, "dense", None)
        return {"dense": status.to_dict()} if status is not None else {}


@dataclass(frozen=True)
class Counts:
    """Candidates before merging (L0 matches + L1 chunks), final blocks, and candidates folded away."""

    candidates: int
    evidence: int
    duplicates_merged: int


@dataclass(frozen=True)
class RetrievalDetails:
    """The compact record of one lookup: layer, L0 hints, filter decision, L1 outcome, counts, evidence
    summaries, relevance, timings and any shortfall of blocks."""

    retrieval_layer: Layer
    l0: L0Hints
    filter: FilterDecision
    l1: L1Outcome
    counts: Counts
    blocks: tuple[EvidenceBlock, ...]
    relevance: Relevance
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    shortfall: Shortfall | None = None  # why fewer blocks than top_k came back (None: all came back)
    rerank: RerankReport | None = None  # what the reranker did (None: no reranker asked for; the key is left out)

    def __post_init__(self) -> None:
        check(self.retrieval_layer, Layer, "retrieval layer")

    def to_dict(self) -> dict[str, Any]:
        return {"retrieval_layer": self.retrieval_layer, "l0": self.l0.to_dict(), "filter": self.filter.to_dict(),
                "l1": self.l1.to_dict(), "candidate_count": self.counts.candidates,
                "evidence_count": self.counts.evidence, "duplicates_merged": self.counts.duplicates_merged,
                "evidence": [summary(b) for b in self.blocks[:MAX_SUMMARIES]],
                "evidence_sources": [b.source for b in self.blocks],
                "evidence_scores": [round(b.score, 6) for b in self.blocks],
                "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
                "relevance": self.relevance.to_dict(),
                "filter_effect": self.filter.effect.to_dict() if self.filter.effect is not None else None,
                "shortfall": self.shortfall.to_dict() if self.shortfall is not None else None,
                **({"rerank": self.rerank.to_dict()} if self.rerank is not None else {})}


def overall_layer(hints: L0Hints, outcome: L1Outcome) -> Layer:
    """`L0+L1` when L0 matched and L1 returned candidates, else the one layer that answered, else `none`."""
    l1 = outcome.result is not None and bool(outcome.result.candidates)
    if hints.match_count and l1:
        return "L0+L1"
    return "L0" if hints.match_count else ("L1" if l1 else "none")


def summary(block: EvidenceBlock) -> dict[str, Any]:
    """A block's summary in `evidence`, with the breadcrumb of its best section (OpenTelemetry's document
    metadata names it; added here, beside the block's own `summary()`)."""
    return {**block.summary(), "breadcrumb": block.breadcrumb or None}


def best_score(blocks: Sequence[EvidenceBlock]) -> float | None:
    return blocks[0].score if blocks else None


def _embedder(result: L1Result | None) -> dict[str, Any] | None:
    """The embedder of L1's static part in this call (name, dimensions), or None when it had none."""
    info = getattr(result, "embedder", None)  # an L1 stand-in's result may not have one
    return info.to_dict() if info is not None else None
