"""The record of one tool call: what `lookup_knowledge` hands to a recorder and the trace store keeps.

The stored row's `config` is the call's settings with what they resolved to beside them: `index` (the index's
settings as built) and, when a dense part or a reranker is on, `models` (retrieval.lookup.model_parts.
recorded_models: each part's name, backend and weights' hash, or null when off), added when the row is made.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any

from retrieval.lookup.provenance import COLUMNS as PROVENANCE_COLUMNS

MODELS_KEY = "models"  # of the stored `config`: the models its settings name (recorded_models)


@dataclass(frozen=True)
class ToolInvocation:
    """One row of `tool_invocation`; the typed columns repeat keys of `retrieval_details` for fast SQL."""

    tool_name: str
    query: str
    arguments: dict[str, Any]
    status: str
    latency_ms: float
    config: dict[str, Any]
    retrieval_details: dict[str, Any]
    error: str | None = None
    run_id: str | None = None
    query_id: str | None = None
    knowledge_base: dict[str, Any] = field(default_factory=dict)  # provenance.Provenance.to_dict()
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    tags: dict[str, Any] | None = None  # the caller's labels, e.g. {"page": "compare", "side": "A", ...}
    subject: str | None = None  # who an authenticated caller is (the MCP server over HTTP); never a token

    @property
    def retrieval_layer(self) -> str | None:
        return self.retrieval_details.get("retrieval_layer")

    def typed_columns(self) -> dict[str, Any]:
        """Columns analysts filter on, read from `retrieval_details` (null for failed calls)."""
        details = self.retrieval_details
        relevance = details.get("relevance") if isinstance(details.get("relevance"), dict) else {}
        applied = (details.get("filter") or {}).get("applied")
        return {"retrieval_layer": details.get("retrieval_layer"),
                "filter_decision": (details.get("filter") or {}).get("decision"),
                "l1_status": (details.get("l1") or {}).get("status"),
                "l0_match_count": (details.get("l0") or {}).get("match_count"),
                "l1_candidate_count": (details.get("l1") or {}).get("candidate_count"),
                "candidate_count": details.get("candidate_count"),
                "evidence_count": details.get("evidence_count"),
                # schema v16: the grade as plain columns (trends read these, never the JSON); a value of another
                # type than the column's is left null rather than have the row refused
                "relevance_level": _typed(relevance.get("level"), str),
                "confidence": _finite(relevance.get("confidence")),
                "abstained": _typed(relevance.get("abstain"), bool),
                "category": _typed(applied.get("category"), str) if isinstance(applied, dict) else None,
                **{name: self.knowledge_base.get(name) for name in PROVENANCE_COLUMNS}}

    def to_dict(self) -> dict[str, Any]:
        row = {f.name: getattr(self, f.name) for f in fields(self)}  # shallow: asdict deep-copies details
        row["config"] = with_models(self.config)
        row.update(self.typed_columns())
        return row


def _typed(value: Any, kind: type) -> Any:
    return value if isinstance(value, kind) else None


def _finite(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def with_models(config: Any) -> Any:
    """A recorded `config` with the models its settings name under MODELS_KEY (kept when it has them already).
    Made when the row is, not with the invocation: a row read back into one (the OTel backfill) is not given
    the models this process would load now."""
    if not isinstance(config, dict) or MODELS_KEY in config:
        return config
    from retrieval.lookup.model_parts import recorded_models  # loads retrieval.models only when a row is made

    models = recorded_models(config)
    if not any(models.values()):  # no model part on: the row is what it always was
        return config
    return {**config, MODELS_KEY: models}


Recorder = Callable[[ToolInvocation], None]
