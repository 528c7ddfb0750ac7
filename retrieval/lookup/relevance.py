"""The relevance assessment: how far the evidence can be trusted to answer, and on what basis.

`confidence` is the fitted estimate that the first page answers the question (retrieval.lookup.confidence,
over the signals of retrieval.lookup.answerability); `level` follows it by documented thresholds, and
`abstain` says plainly when the knowledge base does not seem to hold an answer (level low or none: the
evidence still comes back). With a contextual model part on, the model fitted for its configuration grades
(retrieval.lookup.grading), and `confidence_model` says which. Two rules hold whatever the model says:
L0-only evidence never claims semantic support and is graded low (so an empty, failed or missing L1 never
yields high or medium), and no evidence is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.l0.index import L0Hints
from retrieval.lookup import confidence_model
from retrieval.lookup.answerability import Signals
from retrieval.lookup.answerability import signals as signals_of
from retrieval.lookup.confidence import estimate
from retrieval.lookup.evidence import EvidenceBlock
from retrieval.lookup.grading import GradedBy, ModelConfiguration, grading_model
from retrieval.lookup.statuses import L1_DID_NOT_ANSWER, RelevanceLevel, check

HIGH_CONFIDENCE = confidence_model.HIGH  # confidence at or above: high
MEDIUM_CONFIDENCE = confidence_model.MEDIUM  # at or above: medium; below: low, and `abstain`
NO_ANSWER = "the knowledge base does not seem to hold an answer"


@dataclass(frozen=True)
class Relevance:
    """`level` in high/medium/low/none; `semantic_support` only when L1 evidence backs the primary;
    `confidence` in [0, 1]; `abstain` when the level is low or none; `graded_by` only when a contextual model
    part was asked for (the dict then has `confidence_model`; without one it is today's exactly)."""

    level: RelevanceLevel
    semantic_support: bool
    basis: str
    confidence: float = 0.0
    signals: Signals | None = field(default=None, compare=False)
    graded_by: GradedBy | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check(self.level, RelevanceLevel, "relevance level")

    @property
    def abstain(self) -> bool:
        return self.level in ("low", "none")

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "semantic_support": self.semantic_support, "basis": self.basis,
                "confidence": round(self.confidence, 4), "abstain": self.abstain,
                "signals": self.signals.to_dict() if self.signals is not None else None,
                **({"confidence_model": self.graded_by.to_dict()} if self.graded_by is not None else {})}


def assess(blocks: Sequence[EvidenceBlock], hints: L0Hints, l1_status: str,
           signals: Signals | None = None, models: ModelConfiguration | None = None) -> Relevance:
    """Grade the evidence by the fitted confidence; L0-only evidence is low without semantic support.
    `signals` are the lookup's (retrieval.lookup.answerability); without them, those of the blocks alone.
    `models`: the contextual models that scored the lookup (retrieval.lookup.grading; None: none asked for)."""
    model, graded_by = grading_model(models)
    if not blocks:
        matched = hints.match_count  # the basis must agree with the L0 match count shown beside it
        l0 = f"none of L0's {matched} match(es) was kept" if matched else "L0 matched nothing"
        return Relevance("none", False, f"{NO_ANSWER}: no evidence ({l0} and L1 was {l1_status})", 0.0, signals,
                         graded_by)
    signals = signals if signals is not None else signals_of("", blocks, None)
    confidence = estimate(signals, model)
    primary = blocks[0]
    if primary.l1_score is None:
        why = L1_DID_NOT_ANSWER.get(l1_status, "L1 did not find this entry")
        return Relevance("low", False, f"L0 only: {why}; the primary matched on {_l0_fields(primary)} without "
                                       f"semantic support (confidence {confidence.value:.2f})",
                         confidence.value, signals, graded_by)
    level = model.level_of(confidence.value)
    basis = f"confidence {confidence.value:.2f} ({level})"
    if level == "low":
        basis = f"{NO_ANSWER}: {basis}"
    drivers = confidence.drivers(signals)
    basis += f"; {drivers}" if drivers else ""
    if "L0" in primary.layers:
        basis += f"; L0 also matched its {_l0_fields(primary)}"
    return Relevance(level, True, basis, confidence.value, signals, graded_by)


def _l0_fields(block: EvidenceBlock) -> str:
    fields = [r.field for r in block.hit_reasons if r.layer == "L0"]
    return ", ".join(dict.fromkeys(fields)) or "no L0 field"
