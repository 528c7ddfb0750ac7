"""One recorded call as the spans it becomes: a RETRIEVER span for the lookup and a child per stage, with
their start and end times, attributes, statuses and events. Plain data, made from a `ToolInvocation` alone,
so a live lookup and a stored row (the backfill) give the same spans; recorder.py hands them to a tracer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from openinference.semconv.trace import OpenInferenceMimeTypeValues, OpenInferenceSpanKindValues, SpanAttributes

from retrieval.lookup.invocation import ToolInvocation
from retrieval.otel.documents import document_attributes, genai_documents, to_json
from retrieval.otel.stages import stage_spans

SpanStatus = Literal["OK", "ERROR", "UNSET"]
Attributes = dict[str, Any]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
HINT_KEYS = ("matched_titles", "matched_keywords", "domains", "entities", "match_count", "match_domains")
L1_KEYS = ("status", "error", "candidate_count", "rows_searched", "dropped_below_min_score", "rows_scored")
COUNT_KEYS = ("candidate_count", "evidence_count", "duplicates_merged")


@dataclass(frozen=True)
class SpanEvent:
    """An event on a span (`exception`, `filter widened`) with its attributes; it happens at the span's end."""

    name: str
    attributes: Attributes


@dataclass(frozen=True)
class SpanPlan:
    """One span to emit: times in nanoseconds since the epoch, attributes, status, events and children."""

    name: str
    start_ns: int
    end_ns: int
    attributes: Attributes
    status: SpanStatus = "UNSET"
    status_description: str | None = None
    events: tuple[SpanEvent, ...] = ()
    children: tuple[SpanPlan, ...] = ()

    def walk(self) -> list[SpanPlan]:
        """This span and every descendant, parents first."""
        return [self, *(span for child in self.children for span in child.walk())]


def plan_spans(invocation: ToolInvocation) -> SpanPlan:
    """The spans of one call: the lookup's RETRIEVER span (OK when it answered, ERROR with an exception event
    when the call was refused) and, when it answered, one child per stage laid end to end from its start."""
    end_ns = epoch_ns(invocation.created_at)
    latency = invocation.latency_ms if isinstance(invocation.latency_ms, (int, float)) else 0.0
    start_ns = end_ns - max(0, round(latency * 1e6))
    details = invocation.retrieval_details if isinstance(invocation.retrieval_details, dict) else {}
    attributes: Attributes = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.RETRIEVER.value,
        SpanAttributes.INPUT_VALUE: invocation.query,
        SpanAttributes.INPUT_MIME_TYPE: OpenInferenceMimeTypeValues.TEXT.value,
        "gen_ai.operation.name": "retrieval",
        "gen_ai.retrieval.query.text": invocation.query,
        "lookup.invocation_id": invocation.id,
        "lookup.tool_name": invocation.tool_name,
        "lookup.status": invocation.status,
    }
    attributes.update(_present({"lookup.run_id": invocation.run_id, "lookup.query_id": invocation.query_id,
                                "lookup.via": invocation.arguments.get("via"),
                                "lookup.client": invocation.arguments.get("client")}))
    if invocation.status != "ok":
        kind, message = split_error(invocation.error)
        attributes[SpanAttributes.METADATA] = to_json({"invocation_id": invocation.id,
                                                       "arguments": invocation.arguments, "error": invocation.error})
        return SpanPlan(invocation.tool_name, start_ns, end_ns, attributes, "ERROR", message,
                        (exception_event(kind, message),))
    summaries = [s for s in details.get("evidence") or () if isinstance(s, dict)]
    attributes.update(document_attributes(summaries, details.get("evidence_sources") or ()))
    attributes["gen_ai.retrieval.documents"] = genai_documents(summaries)
    attributes[SpanAttributes.METADATA] = to_json(lookup_metadata(invocation, details))
    attributes[SpanAttributes.OUTPUT_VALUE] = to_json({"retrieval_layer": details.get("retrieval_layer"),
                                                       "relevance": details.get("relevance"),
                                                       "evidence_sources": details.get("evidence_sources")})
    attributes[SpanAttributes.OUTPUT_MIME_TYPE] = OpenInferenceMimeTypeValues.JSON.value
    l1 = details.get("l1") or {}
    attributes.update(_present({"lookup.retrieval_layer": details.get("retrieval_layer"),
                                "lookup.filter.decision": (details.get("filter") or {}).get("decision"),
                                "lookup.l1.status": l1.get("status"),
                                "lookup.evidence_count": details.get("evidence_count"),
                                "lookup.relevance.level": (details.get("relevance") or {}).get("level")}))
    children = tuple(SpanPlan(stage.name, stage.start_ns, stage.end_ns, stage.attributes, stage.status,
                              stage.status_description, tuple(SpanEvent(*e) for e in stage.events))
                     for stage in stage_spans(details, start_ns))
    return SpanPlan(invocation.tool_name, start_ns, end_ns, attributes, "OK", children=children)


def lookup_metadata(invocation: ToolInvocation, details: dict[str, Any]) -> dict[str, Any]:
    """The root span's `metadata`: L0's hints, the filter decision and the filter sent, L1's status, the
    counts and the retrieval layer, read off `retrieval_details`, plus the call's identity."""
    l0 = details.get("l0") or {}
    l1 = details.get("l1") or {}
    return {"retrieval_layer": details.get("retrieval_layer"),
            "l0": {key: l0[key] for key in HINT_KEYS if key in l0},
            "filter": details.get("filter"),
            "l1": {key: l1[key] for key in L1_KEYS if key in l1},
            **{key: details.get(key) for key in COUNT_KEYS},
            "relevance": details.get("relevance"),
            "invocation_id": invocation.id, "arguments": invocation.arguments,
            **_present({"run_id": invocation.run_id, "query_id": invocation.query_id})}


def exception_event(kind: str, message: str) -> SpanEvent:
    """An `exception` event as the OTel conventions name it (what `Span.record_exception` would add)."""
    return SpanEvent("exception", {"exception.type": kind, "exception.message": message,
                                   "exception.escaped": False})


def split_error(error: str | None) -> tuple[str, str]:
    """`"ValueError: query must be …"` as ("ValueError", "query must be …")."""
    text = error or "error"
    kind, sep, message = text.partition(": ")
    return (kind, message) if sep and kind.isidentifier() else ("Error", text)


def epoch_ns(moment: datetime) -> int:
    """Nanoseconds since the epoch; a naive time is UTC (as `tool_invocation.created_at` stores it)."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    delta = aware - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _present(values: dict[str, Any]) -> dict[str, Any]:
    """The entries whose value is not None (an OTel attribute cannot be null)."""
    return {key: value for key, value in values.items() if value is not None}
