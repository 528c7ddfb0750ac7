"""A lookup's stages as child spans, made after the fact from `retrieval_details.timings_ms`: L0, the L1
search (the unfiltered probe, or the caller's category), the domain vote, the L1 search under an L0-derived
filter when one ran, and the evidence (post-processing). The lookup runs them in this order, so they are laid
end to end from the call's start with their measured durations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

from retrieval.otel.documents import document_attributes, to_json

RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
CHAIN = OpenInferenceSpanKindValues.CHAIN.value
L1_ERRORS = ("failed", "timeout", "unavailable")  # L1 did not answer: the lookup fell back to L0's evidence
L1_ANSWERED = ("ok", "empty")
L1_COUNTS = ("candidate_count", "rows_searched", "dropped_below_min_score", "rows_scored")
STAGE_NAMES = {"l0": "L0 hints", "l1": "L1 search", "domains": "domain vote", "l1_filtered": "L1 search (filtered)",
               "evidence": "evidence"}


@dataclass(frozen=True)
class Stage:
    """One stage's span: name, times (ns), attributes, status and events as (name, attributes) pairs."""

    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: str = "UNSET"
    status_description: str | None = None
    events: tuple[tuple[str, dict[str, Any]], ...] = ()


def stage_spans(details: dict[str, Any], start_ns: int) -> list[Stage]:
    """The stages of one answered lookup, from `details` (its `retrieval_details`); none without timings."""
    timings = details.get("timings_ms")
    if not isinstance(timings, dict):
        return []
    filtered = filtered_search_ran(details)
    decision = details.get("filter") or {}
    widened = bool(decision.get("widened"))
    stages = []
    cursor = start_ns
    for key in ("l0", "l1", "domains", "l1_filtered", "evidence"):
        if key == "l1_filtered" and not filtered:
            continue
        duration = timings.get(key)
        if not isinstance(duration, (int, float)):
            continue
        end = cursor + max(0, round(duration * 1e6))
        attributes, status, description, events = _stage(key, details, filtered, widened)
        attributes["lookup.stage"] = key
        stages.append(Stage(STAGE_NAMES[key], cursor, end, attributes, status, description, events))
        cursor = end
    return stages


def filtered_search_ran(details: dict[str, Any]) -> bool:
    """Whether L1 searched again under an L0-derived filter: the filter was applied and the first search
    answered (a failed or disabled L1 leaves nothing to filter)."""
    decision = (details.get("filter") or {}).get("decision")
    return decision == "applied" and (details.get("l1") or {}).get("status") in L1_ANSWERED


def _stage(key: str, details: dict[str, Any], filtered: bool, widened: bool):
    decision = details.get("filter") or {}
    if key == "l0":
        l0 = details.get("l0") or {}
        matches = [{"source": m.get("source"), "title": m.get("title"), "score": m.get("score")}
                   for m in l0.get("matches") or () if isinstance(m, dict)]
        attributes = {SpanAttributes.OPENINFERENCE_SPAN_KIND: RETRIEVER, "lookup.l0.match_count": len(matches),
                      "lookup.l0.domains": [str(d) for d in l0.get("domains") or ()],
                      **document_attributes(matches)}
        return attributes, "UNSET", None, ()
    if key == "domains":
        attributes = {SpanAttributes.OPENINFERENCE_SPAN_KIND: CHAIN,
                      "lookup.domains.basis": str(((details.get("l0") or {}).get("domain_evidence") or {})
                                                  .get("basis")),
                      "lookup.filter.decision": str(decision.get("decision")),
                      "lookup.filter.applied": to_json(decision.get("applied"))}
        return attributes, "UNSET", None, ()
    if key == "evidence":
        attributes = {SpanAttributes.OPENINFERENCE_SPAN_KIND: CHAIN,
                      **{f"lookup.{k}": details[k] for k in ("candidate_count", "evidence_count", "duplicates_merged")
                         if isinstance(details.get(k), int)},
                      "lookup.relevance.level": str((details.get("relevance") or {}).get("level"))}
        return attributes, "UNSET", None, ()
    return _l1_stage(key, details, filtered, widened)


def _l1_stage(key: str, details: dict[str, Any], filtered: bool, widened: bool):
    """An L1 search: the filter it ran under, and L1's outcome on the search the lookup answered from (the
    filtered one, unless there was none or the guard widened back to the first)."""
    decision = details.get("filter") or {}
    sent = decision.get("applied") if key == "l1_filtered" or decision.get("decision") == "caller" else None
    attributes: dict[str, Any] = {SpanAttributes.OPENINFERENCE_SPAN_KIND: RETRIEVER,
                                  "lookup.l1.search": "filtered" if key == "l1_filtered" else "probe",
                                  "lookup.l1.filter": to_json(sent)}
    events: list[tuple[str, dict[str, Any]]] = []
    if key == "l1_filtered" and widened:
        scores = decision.get("best_scores") or {}
        events.append(("filter widened", {k: v for k, v in {
            "lookup.filter.best_score.filtered": scores.get("filtered"),
            "lookup.filter.best_score.unfiltered": scores.get("unfiltered"),
            "lookup.filter.widen_ratio": decision.get("widen_ratio"),
            "lookup.filter.widen_rule": decision.get("widen_rule")}.items() if v is not None}))
        attributes["lookup.filter.widened"] = True
    answered_from_filtered = filtered and not widened
    if answered_from_filtered != (key == "l1_filtered"):  # the other search's outcome is the one recorded
        return attributes, "UNSET", None, tuple(events)
    l1 = details.get("l1") or {}
    status = str(l1.get("status"))
    attributes["lookup.l1.status"] = status
    attributes.update({f"lookup.l1.{k}": l1[k] for k in L1_COUNTS if isinstance(l1.get(k), int)})
    if status not in L1_ERRORS:
        return attributes, "UNSET", None, tuple(events)
    error = l1.get("error") if isinstance(l1.get("error"), dict) else {}
    kind, message = str(error.get("type") or "L1Error"), str(error.get("message") or status)
    events.append(("exception", {"exception.type": kind, "exception.message": message, "exception.escaped": False}))
    return attributes, "ERROR", f"L1 {status}: {message}; answered from L0's evidence", tuple(events)
