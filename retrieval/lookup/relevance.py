"""The relevance assessment: how much the primary evidence can be trusted, and on what basis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.l0.index import L0Hints
from retrieval.lookup.evidence import EvidenceBlock
from retrieval.lookup.statuses import RelevanceLevel, check

# Calibrated on data/queries.jsonl (default config): every primary at L1 >= 0.4 was relevant or a
# near miss; between 0.25 and 0.4, 13 of 16 were; below 0.25 most were wrong, and the queries nothing
# answers landed there or just above. L0 agreement did not separate right from wrong, so it is named in
# the basis but does not raise the level.
HIGH_L1_SCORE = 0.4
MEDIUM_L1_SCORE = 0.25


@dataclass(frozen=True)
class Relevance:
    """`level` in high/medium/low/none; `semantic_support` only when L1 evidence backs the primary."""

    level: RelevanceLevel
    semantic_support: bool
    basis: str

    def __post_init__(self) -> None:
        check(self.level, RelevanceLevel, "relevance level")

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "semantic_support": self.semantic_support, "basis": self.basis}


def assess(blocks: Sequence[EvidenceBlock], hints: L0Hints, l1_status: str) -> Relevance:
    """Grade the primary block by its L1 score; L0-only evidence never claims semantic support."""
    if not blocks:
        matched = hints.match_count  # the basis must agree with the L0 match count shown beside it
        l0 = f"none of L0's {matched} match(es) was kept" if matched else "L0 matched nothing"
        return Relevance("none", False, f"no evidence: {l0} and L1 was {l1_status}")
    primary = blocks[0]
    l1_score = primary.l1_score
    if l1_score is None:
        why = {"empty": "L1 returned no candidates", "failed": "L1 failed", "timeout": "L1 timed out",
               "disabled": "L1 is disabled", "unavailable": "L1 is unavailable"}.get(
            l1_status, "L1 did not find this entry")
        return Relevance("low", False, f"L0 only: {why}; the primary matched on "
                                       f"{_l0_fields(primary)} without semantic support")
    level = "high" if l1_score >= HIGH_L1_SCORE else "medium" if l1_score >= MEDIUM_L1_SCORE else "low"
    words = {"high": "strong", "medium": "moderate", "low": "weak"}[level]
    basis = f"{words} L1 match (score {l1_score:.2f})"
    if "L0" in primary.layers:
        basis += f"; L0 also matched its {_l0_fields(primary)}"
    return Relevance(level, True, basis)


def _l0_fields(block: EvidenceBlock) -> str:
    fields = [r.field for r in block.hit_reasons if r.layer == "L0"]
    return ", ".join(dict.fromkeys(fields)) or "no L0 field"
