"""Why a lookup returned fewer blocks than `top_k` asked for: a block is one page, so a filter over a small
category, an L1 that did not run, or a query few pages match caps the count; the analyst sees which."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.l1.results import L1Result
from retrieval.lookup.evidence import EvidenceBlock
from retrieval.lookup.filters import FilterDecision
from retrieval.lookup.statuses import L1_DID_NOT_ANSWER, ShortfallLimit, check


@dataclass(frozen=True)
class Shortfall:
    """`requested` blocks asked for, `returned` given, and the `reason` in words; `limit` names the binding
    cause: `filter` (the filter's category holds too few pages), `l1` (L1 did not answer), `matches` (too
    few pages matched the query)."""

    requested: int
    returned: int
    limit: ShortfallLimit
    reason: str

    def __post_init__(self) -> None:
        check(self.limit, ShortfallLimit, "shortfall limit")

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "returned": self.returned, "limit": self.limit,
                "reason": self.reason}


def explain_shortfall(requested: int, blocks: Sequence[EvidenceBlock], decision: FilterDecision, status: str,
                      result: L1Result | None, l1_index: Any) -> Shortfall | None:
    """None when the lookup returned all `requested` blocks; else the shortfall and its binding cause
    (`l1_index` tells how many pages the filter in force allows; a stand-in without page sets is skipped).
    The filter is the cause only when every page it allows came back; fewer means too few pages matched."""
    returned = len(blocks)
    if returned >= requested:
        return None
    short = f"{returned} of the {requested} blocks asked for (a block is one page)"
    applied = None if decision.widened else decision.applied
    named = ", ".join(f"{key} '{value}'" for key, value in (applied or {}).items())
    if status == "empty" and result is not None and not blocks:
        scope = f" inside the filter on {named}" if applied else ""
        return Shortfall(requested, returned, "matches", f"{short}: nothing in the knowledge base matched the "
                         f"query{scope}: no section in L1{_below(result)} and no page in L0")
    if status not in ("ok", "empty") or result is None:
        l0_sources = sum(1 for b in blocks if "L0" in b.layers)
        return Shortfall(requested, returned, "l1", f"{short}: {L1_DID_NOT_ANSWER.get(status, 'L1 did not answer')}"
                         f", so the evidence is L0's matches alone ({l0_sources} {_pages(l0_sources)})")
    allowed = _filter_pages(l1_index, applied)
    if allowed is not None and returned >= allowed:
        return Shortfall(requested, returned, "filter", f"{short}: the filter on {named} allows only "
                         f"{allowed} {_pages(allowed)}, and all of them came back")
    found = len({c.chunk.source for c in result.candidates})
    sections = len(result.candidates)
    l0_only = sum(1 for b in blocks if b.layers == {"L0"})
    scope = f" inside the filter on {named}, which allows {allowed} {_pages(allowed)}" if allowed is not None \
        else f" inside the filter on {named}" if applied else ""
    merged = f" ({sections} sections, one block per page)" if sections > found else ""
    return Shortfall(requested, returned, "matches", f"{short}: only {found} {_pages(found)} matched the query "
                     f"in L1{scope}{merged}, and L0's matches added {l0_only}{_below(result)}")


def _below(result: L1Result) -> str:
    """'; 13 sections scored below l1_min_score', or nothing when none did."""
    dropped = result.dropped_below_min_score
    return f"; {dropped} {'section' if dropped == 1 else 'sections'} scored below l1_min_score" if dropped else ""


def _filter_pages(l1_index: Any, applied: dict[str, str] | None) -> int | None:
    """How many pages the filter in force allows (None: no filter, or an L1 without page sets)."""
    pages = getattr(l1_index, "pages", None)
    if not applied or pages is None:
        return None
    try:
        allowed = pages.allowed(applied)
    except ValueError:  # a filter key L1 does not know: it searched nothing, which `matches` reports
        return None
    return None if allowed is None else int(len(allowed))


def _pages(count: int) -> str:
    return "page" if count == 1 else "pages"
