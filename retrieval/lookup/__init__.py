"""One lookup: L0 hints, the domain vote, the filter decision, L1, evidence, relevance, `retrieval_details`."""

from __future__ import annotations

from retrieval import lazy_exports

_EXPORTS = {
    "lookup_knowledge": "orchestrator",
    "LookupResult": "orchestrator",
    "ToolInvocation": "invocation",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
