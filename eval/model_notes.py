"""The models a run's settings named (`eval_run.models`: retrieval.lookup.recorded_models, per part its name,
backend, weights' hash and fingerprint), said in a run's report and compared between two runs.

Two runs that name the same model spec but loaded other weights (a model folder exported again, a cache that
moved on) are compared all the same, with a warning, as runs made with other library versions are
(eval.versions): the spec, a setting, reads the same in both, so only the fingerprint tells them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .versions import VersionNote

PARTS = {"dense": "dense model", "rerank": "reranker"}  # recorded_models' keys, as the words say them
NOT_RECORDED = "not recorded (a run stored before runs recorded them, or an imported run)"


def models_line(models: Any) -> str:
    """A run report's line: each part's model (name, backend, the start of its weights' hash, fingerprint), `off`,
    or the error it did not load with; or that the run did not record them."""
    if not isinstance(models, Mapping):
        return f"models: {NOT_RECORDED}"
    return "models: " + "; ".join(f"{label} {_said(models.get(part))}" for part, label in PARTS.items())


def _said(info: Any) -> str:
    if not isinstance(info, Mapping):
        return "off"
    if "error" in info:
        return f"{info.get('spec')} (did not load: {info['error']})"
    weights = str(info.get("weights_sha256") or "")[:12]
    return f"{info.get('name')} ({info.get('backend')}, weights {weights}…, fingerprint {info.get('fingerprint')})"


def model_notes(models: tuple[Any, Any]) -> list[VersionNote]:
    """A warning per part whose model both runs name by the same spec but with other weights (their fingerprints
    differ); none when either run did not record its models, a part is off, or the specs differ (the settings'
    diff names those)."""
    a, b = (m if isinstance(m, Mapping) else {} for m in models)
    notes = []
    for part, label in PARTS.items():
        x, y = a.get(part), b.get(part)
        if not (isinstance(x, Mapping) and isinstance(y, Mapping)) or x.get("spec") != y.get("spec"):
            continue
        if x.get("fingerprint") and y.get("fingerprint") and x["fingerprint"] != y["fingerprint"]:
            notes.append(VersionNote("warning", f"runs used different weights for the {label} {x['spec']} "
                                                f"(fingerprint {x['fingerprint']} vs {y['fingerprint']}; A vs B): "
                                                "metric differences may come from the model, not the settings"))
    return notes
