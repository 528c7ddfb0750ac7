"""The filter decision: whether L1 gets a category filter, which one, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .l0 import L0Hints
from .text import normalize_label

DECISIONS = ("applied", "skipped_no_domain", "skipped_ambiguous", "disabled", "caller")


@dataclass(frozen=True)
class FilterDecision:
    """`decision` is one of DECISIONS; `applied` is the exact filter sent to L1 (None: no filter)."""

    decision: str
    l0_domains: tuple[str, ...]
    applied: dict[str, str] | None

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "l0_domains": list(self.l0_domains),
                "applied": dict(self.applied) if self.applied else None}


def decide_filter(hints: L0Hints, *, caller_category: str | None, use_l0_filter: bool) -> FilterDecision:
    """Caller filters always win; else exactly one nonblank L0 domain becomes `{"category": domain}`."""
    domains = tuple(dict.fromkeys(d for d in (normalize_label(x) for x in hints.domains) if d))
    if caller_category is not None:
        return FilterDecision("caller", domains, {"category": normalize_label(caller_category)})
    if not use_l0_filter:
        return FilterDecision("disabled", domains, None)
    if not domains:
        return FilterDecision("skipped_no_domain", domains, None)
    if len(domains) > 1:
        return FilterDecision("skipped_ambiguous", domains, None)
    return FilterDecision("applied", domains, {"category": domains[0]})
