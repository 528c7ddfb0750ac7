"""One lookup: L0 hints, the domain vote, the filter decision, L1, evidence, relevance, `retrieval_details`."""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "orchestrator": "lookup_knowledge LookupResult",
    "provenance": "LIBRARIES library_versions",
    "invocation": "ToolInvocation",
    "recorders": "Recorders combine",
    "answerability": "Signals SIGNALS PART_SIGNALS",
    "confidence": "ConfidenceModel",
    "grading": "ModelConfiguration CONFIDENCE_MODELS=MODELS_FOLDER configured_models=configured "
               "confidence_model_path=model_path read_confidence_model=read_model",
    "model_parts": "prepare_models recorded_models",
    "explain": "explain_missing explain_result MissingReport Explanation MISSING_STAGES=STAGES",
})
