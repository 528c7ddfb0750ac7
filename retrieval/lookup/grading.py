"""Which fitted confidence model grades a lookup: today's (confidence_model.py) when no contextual model is on,
else the one fitted for the models that scored it, found by their fingerprints in confidence_models/.

A configuration's key names each model part that ran in the lookup by its model's fingerprint (ModelInfo):
`dense-<fingerprint>`, `rerank-<fingerprint>`, or both joined by `+`; `default` when none ran. Its model is
`confidence_models/<key>.json` in this package, written by `python -m eval.fit_confidence --set ...` (a folder
named by $LOOKUP_KNOWLEDGE_CONFIDENCE_MODELS is looked in first, for models fitted outside the package). A
configuration without a fitted model falls back to today's, which ignores the model parts' signals, and the
relevance says so (`confidence_model`). Each file is read once per process.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from retrieval.config import LookupConfig
from retrieval.lookup.answerability import PART_SIGNALS, SIGNALS
from retrieval.lookup.confidence import DEFAULT, ConfidenceModel
from retrieval.lookup.model_parts import dense_on, rerank_on

MODELS_FOLDER = Path(__file__).resolve().parent / "confidence_models"
MODELS_ENV = "LOOKUP_KNOWLEDGE_CONFIDENCE_MODELS"


@dataclass(frozen=True)
class ModelConfiguration:
    """The fingerprints of the contextual models that scored a lookup (None: that part did not run)."""

    dense: str | None = None
    rerank: str | None = None

    @property
    def key(self) -> str:
        parts = [f"{part}-{fp}" for part, fp in (("dense", self.dense), ("rerank", self.rerank)) if fp]
        return "+".join(parts) or DEFAULT.key

    @property
    def signals(self) -> tuple[str, ...]:
        """The signals a model fitted for this configuration weighs: SIGNALS, then each part's."""
        return SIGNALS + tuple(name for part, fp in (("dense", self.dense), ("rerank", self.rerank)) if fp
                               for name in PART_SIGNALS[part])


@dataclass(frozen=True)
class GradedBy:
    """Which configuration a lookup ran with and which fitted model graded it (`default` when none is fitted
    for that configuration, or its file could not be read: `error` says why)."""

    configuration: str
    model: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "model": self.model,
                **({"error": self.error} if self.error else {})}


def lookup_configuration(config: LookupConfig, outcome: Any, rerank: Any) -> ModelConfiguration | None:
    """The models that scored one lookup: None when `config` asks for no model part (the relevance is then
    today's exactly); else each part's fingerprint when it ran (`outcome`: the final L1 outcome, whose result
    carries the dense part's status; `rerank`: the reranker's report)."""
    if not dense_on(config) and not rerank_on(config):
        return None
    dense = getattr(getattr(outcome, "result", None), "dense", None)
    return ModelConfiguration(_fingerprint(dense) if dense_on(config) else None,
                              _fingerprint(rerank) if rerank_on(config) else None)


def configured(config: LookupConfig) -> ModelConfiguration:
    """The configuration `config`'s model parts make when they run (loads the models: a bad one raises
    retrieval.models.ModelError); what eval.fit_confidence fits a model for."""
    from retrieval.models import load_encoder, load_reranker

    return ModelConfiguration(load_encoder(config.l1_dense_model).info.fingerprint if dense_on(config) else None,
                              load_reranker(config.rerank_model).info.fingerprint if rerank_on(config) else None)


def grading_model(configuration: ModelConfiguration | None) -> tuple[ConfidenceModel, GradedBy | None]:
    """The model that grades a lookup of `configuration`, and the record of it (None when no part was asked for)."""
    if configuration is None:
        return DEFAULT, None
    key = configuration.key
    if key == DEFAULT.key:
        return DEFAULT, GradedBy(key, DEFAULT.key)
    model, error = _fitted(key, model_folders())
    return (model, GradedBy(key, model.key)) if model is not None else (DEFAULT, GradedBy(key, DEFAULT.key, error))


def model_folders() -> tuple[Path, ...]:
    """Where fitted models are looked for, first match wins: $LOOKUP_KNOWLEDGE_CONFIDENCE_MODELS, the package."""
    extra = os.environ.get(MODELS_ENV)
    return (Path(extra), MODELS_FOLDER) if extra else (MODELS_FOLDER,)


def model_path(key: str, folder: Path = MODELS_FOLDER) -> Path:
    return Path(folder) / f"{key}.json"


def read_model(path: Path) -> ConfidenceModel:
    """The model a fitted file holds (ValueError naming the file when it is not one)."""
    try:
        numbers = json.loads(Path(path).read_text(encoding="utf-8"))
        return ConfidenceModel.from_dict(numbers)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a fitted confidence model ({exc}); refit with python -m eval.fit_confidence") \
            from None


@lru_cache(maxsize=64)
def _fitted(key: str, folders: tuple[Path, ...]) -> tuple[ConfidenceModel | None, str | None]:
    """The model fitted for `key` in the first folder holding one, read once per process; or None, and why."""
    for folder in folders:
        path = model_path(key, folder)
        if path.is_file():
            try:
                model = read_model(path)
            except ValueError as exc:
                return None, str(exc)
            if model.key != key:
                return None, f"{path} was fitted for {model.key}, not {key}"
            return model, None
    return None, None


def _fingerprint(status: Any) -> str | None:
    """The model fingerprint of a part's status or report (DenseStatus, RerankReport) when that part ran."""
    model = getattr(status, "model", None)
    if getattr(status, "status", None) != "ok" or not isinstance(model, dict):
        return None
    return model.get("fingerprint") or None
