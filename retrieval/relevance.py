"""The relevance assessment: how much the primary evidence can be trusted, and on what basis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .evidence import EvidenceBlock
from .l0 import L0Hints

HIGH_L1_SCORE = 0.45
MEDIUM_L1_SCORE = 0.2


@dataclass(frozen=True)
class Relevance:
    """`level` in high/medium/low/none; `semantic_support` only when L1 evidence backs the primary."""

    level: str
    semantic_support: bool
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "semantic_support": self.semantic_support, "basis": self.basis}


def assess(blocks: Sequence[EvidenceBlock], hints: L0Hints, l1_status: str) -> Relevance:
    """Grade the primary block; L0-only evidence never claims semantic support."""
    if not blocks:
        return Relevance("none", False, f"no evidence: L0 matched nothing and L1 was {l1_status}")
    primary = blocks[0]
    l1_score = primary.l1_score
    if l1_score is None:
        why = {"empty": "L1 returned no candidates", "failed": "L1 failed",
               "disabled": "L1 is disabled", "unavailable": "L1 is unavailable"}.get(
            l1_status, "L1 did not find this entry")
        return Relevance("low", False, f"L0 only: {why}; the primary matched on "
                                       f"{_l0_fields(primary)} without semantic support")
    if "L0" in primary.layers and l1_score >= MEDIUM_L1_SCORE:
        return Relevance("high", True, f"L0 ({_l0_fields(primary)}) and L1 (score {l1_score:.2f}) agree")
    if l1_score >= HIGH_L1_SCORE:
        return Relevance("high", True, f"strong L1 semantic match (score {l1_score:.2f})")
    if l1_score >= MEDIUM_L1_SCORE or "L0" in primary.layers:
        return Relevance("medium", True, f"L1 semantic match (score {l1_score:.2f})"
                                         + (f" and L0 {_l0_fields(primary)}" if "L0" in primary.layers else ""))
    return Relevance("low", True, f"weak L1 semantic match only (score {l1_score:.2f})")


def _l0_fields(block: EvidenceBlock) -> str:
    fields = [r.field for r in block.hit_reasons if r.layer == "L0"]
    return ", ".join(dict.fromkeys(fields)) or "no L0 field"
