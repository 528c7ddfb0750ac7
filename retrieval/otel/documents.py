"""Evidence blocks as OpenInference documents (`retrieval.documents.{i}.document.*`) and as the OTel GenAI
conventions' `gen_ai.retrieval.documents`, from the compact summaries `retrieval_details` keeps."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson
from openinference.semconv.trace import DocumentAttributes, SpanAttributes

METADATA_KEYS = ("title", "breadcrumb", "retrieval_layer", "hit_reasons", "score_parts", "content_chars")


def document_attributes(summaries: Sequence[dict[str, Any]], sources: Sequence[str] = (),
                        prefix: str = SpanAttributes.RETRIEVAL_DOCUMENTS) -> dict[str, Any]:
    """One document per evidence block, in order: id (the source), score, content (the summary's preview,
    cut as in `retrieval_details`) and metadata (JSON: title, breadcrumb, layer, hit reasons, score parts).
    Sources past the summarised blocks (`evidence` keeps 20) become documents with their id only."""
    attributes: dict[str, Any] = {}
    for i, summary in enumerate(summaries):
        key = f"{prefix}.{i}."
        attributes[key + DocumentAttributes.DOCUMENT_ID] = str(summary.get("source"))
        if isinstance(summary.get("score"), (int, float)):
            attributes[key + DocumentAttributes.DOCUMENT_SCORE] = float(summary["score"])
        if isinstance(summary.get("content_preview"), str):
            attributes[key + DocumentAttributes.DOCUMENT_CONTENT] = summary["content_preview"]
        attributes[key + DocumentAttributes.DOCUMENT_METADATA] = to_json(document_metadata(summary))
    for i, source in enumerate(sources[len(summaries):], start=len(summaries)):
        attributes[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_ID}"] = str(source)
    return attributes


def document_metadata(summary: dict[str, Any]) -> dict[str, Any]:
    """A document's metadata: the summary's title, breadcrumb, layer (`retrieval_layer`), hit reasons, score
    parts and full content length, where the summary has them (older rows lack the breadcrumb)."""
    return {("layer" if key == "retrieval_layer" else key): summary[key] for key in METADATA_KEYS if key in summary}


def genai_documents(summaries: Sequence[dict[str, Any]]) -> str:
    """`gen_ai.retrieval.documents` (experimental): `[{"id", "score"}]` as a JSON string, as the conventions
    allow on spans."""
    return to_json([{"id": str(s.get("source")), "score": s.get("score")} for s in summaries])


def to_json(value: Any) -> str:
    """Compact JSON (orjson: the spans are made on every lookup); `json` for what orjson refuses."""
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:  # a non-str key, an int past 64 bits
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
