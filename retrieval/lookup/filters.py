"""The filter decision: whether L1 gets a category filter, which one, and why; and the widening guard."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from retrieval.l0.index import L0Hints
from retrieval.lookup.statuses import FilterStatus, check
from retrieval.text.analysis import normalize_label

DECISIONS: tuple[str, ...] = get_args(FilterStatus)


@dataclass(frozen=True)
class Widening:
    """The guard against a wrong L0 filter: the filtered and unfiltered best scores, and whether it widened."""

    widened: bool
    filtered_best: float | None
    unfiltered_best: float | None
    ratio: float

    @property
    def rule(self) -> str:
        if self.ratio <= 0:
            return "widening off (filter_widen_ratio 0)"
        return (f"widen when the filtered best score is below {self.ratio:g} x the unfiltered best: "
                f"L1 then answers from every row, the filter having been sent first")


@dataclass(frozen=True)
class FilterEffect:
    """What an applied (not widened) filter changed in the returned evidence, against the unfiltered
    probe's top-k: a filter that agrees with the ranking's best pages moves nothing near the top."""

    changed: bool
    first_changed_rank: int | None
    removed: int
    added: int
    removed_sources: tuple[str, ...] = ()  # the sources that left the top-k, in their unfiltered order
    added_sources: tuple[str, ...] = ()  # the sources that came in, in their filtered order

    def to_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, "first_changed_rank": self.first_changed_rank, "removed": self.removed,
                "added": self.added, "removed_sources": list(self.removed_sources),
                "added_sources": list(self.added_sources)}


def filter_effect(unfiltered: list[str], filtered: list[str]) -> FilterEffect:
    """Compare the sources the lookup would return without the filter with those it returns with it:
    the first rank (1-based) where they differ, and how many sources left and came in."""
    first = next((i + 1 for i, (a, b) in enumerate(zip(unfiltered, filtered, strict=False)) if a != b), None)
    if first is None and len(unfiltered) != len(filtered):
        first = min(len(unfiltered), len(filtered)) + 1
    kept, before = set(filtered), set(unfiltered)
    removed = tuple(s for s in unfiltered if s not in kept)
    added = tuple(dict.fromkeys(s for s in filtered if s not in before))
    return FilterEffect(first is not None, first, len(removed), len(added), removed, added)


@dataclass(frozen=True)
class FilterDecision:
    """`decision` is one of DECISIONS; `applied` is the exact filter sent to L1 (None: no filter)."""

    decision: FilterStatus
    l0_domains: tuple[str, ...]
    applied: dict[str, str] | None
    widening: Widening | None = None
    effect: FilterEffect | None = None

    def __post_init__(self) -> None:
        check(self.decision, FilterStatus, "filter decision")

    @property
    def widened(self) -> bool:
        return self.widening is not None and self.widening.widened

    def to_dict(self) -> dict[str, Any]:
        """The spec's three keys; when the guard widened, also `widened`, `best_scores` and `widen_rule`
        (absent otherwise, so the usual decision reads exactly as the spec writes it). The `effect` goes
        to `retrieval_details["filter_effect"]`, beside this dict, for the same reason."""
        decided = {"decision": self.decision, "l0_domains": list(self.l0_domains),
                   "applied": dict(self.applied) if self.applied else None}
        guard = self.widening
        if guard is not None and guard.widened:
            decided.update(widened=True, best_scores={"filtered": _round(guard.filtered_best),
                                                      "unfiltered": _round(guard.unfiltered_best)},
                           widen_ratio=guard.ratio, widen_rule=guard.rule)
        return decided


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


def guard(filtered_best: float | None, unfiltered_best: float | None, ratio: float) -> Widening:
    """Widen when the filtered result is much weaker than the unfiltered one (or empty while it is not)."""
    if ratio <= 0 or not unfiltered_best:
        return Widening(False, filtered_best, unfiltered_best, ratio)
    weak = filtered_best is None or filtered_best < ratio * unfiltered_best
    return Widening(weak, filtered_best, unfiltered_best, ratio)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
