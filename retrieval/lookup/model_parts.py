"""The contextual models a lookup's settings name (`l1_dense_model`, `rerank_model`), loaded where a lookup needs them.

`prepare_models` is what a command runs after opening its index: it loads each model and computes the dense
part's section vectors (encoding only what the vector store lacks), and a missing, unloadable or mismatched
model is a `ModelError`: the command's one-line error. A running lookup asks `dense_part`/`reranker`, which
never raise: a model that fails leaves the lookup without that part, and `retrieval_details` says so.
`recorded_models` is the provenance of both: what every trace row and evaluation run records of the models its
settings name (which weights answered), whatever the spec said.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrieval.config import LookupConfig
from retrieval.l1.dense import DensePart
from retrieval.l1.results import DenseStatus
from retrieval.l1.stages import Progress
from retrieval.models.errors import cause

DENSE_FOLDER = "dense"  # beside the index cache's folders: one folder per model fingerprint
# each part's model and weight settings, and what loads its model (recorded_models' keys, in its order)
MODEL_SETTINGS = {"dense": ("l1_dense_model", "l1_dense_weight", "encoder"),
                  "rerank": ("rerank_model", "rerank_weight", "reranker")}


def dense_on(config: LookupConfig) -> bool:
    return bool(config.l1_dense_model) and config.l1_dense_weight > 0


def rerank_on(config: LookupConfig) -> bool:
    return bool(config.rerank_model) and config.rerank_weight > 0


def prepare_models(index: Any, config: LookupConfig, progress: Progress | None = None) -> None:
    """Load the models `config` names and make the dense part's vectors for `index` (retrieval.index's
    KnowledgeIndex); raises retrieval.models.ModelError naming the model and what to do."""
    from retrieval.models import load_encoder, load_reranker

    if dense_on(config) and index.l1 is not None:
        index.l1.dense_part(load_encoder(config.l1_dense_model), store_root(index), progress)
    if rerank_on(config):
        load_reranker(config.rerank_model)


def dense_part(index: Any, config: LookupConfig) -> tuple[DensePart | None, DenseStatus | None]:
    """The dense part `config` asks for over `index`, or (None, the status saying why not); (None, None) when off."""
    if not dense_on(config) or index.l1 is None or not hasattr(index.l1, "dense_part"):
        return None, None
    try:
        from retrieval.models import load_encoder

        return index.l1.dense_part(load_encoder(config.l1_dense_model), store_root(index)), None
    except Exception as exc:  # noqa: BLE001 (a plugged-in model may raise anything: the lookup goes on without it)
        return None, DenseStatus(config.l1_dense_model, "failed", cause(exc))


def reranker(config: LookupConfig) -> tuple[Any | None, str | None]:
    """The reranker `config` names (retrieval.models.PairScorer) and None, or None and the error saying why not."""
    try:
        from retrieval.models import load_reranker

        return load_reranker(config.rerank_model), None
    except Exception as exc:  # noqa: BLE001 (as dense_part)
        return None, cause(exc)


def recorded_models(settings: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The models `settings` (a LookupConfig's fields, as a dict or as recorded) name, part by part: `dense` and
    `rerank`, each the model's ModelInfo.to_dict() (spec, backend, name, dimensions, weights_sha256,
    fingerprint), `{"spec", "error"}` when it does not load, or None when the part is off (no model, or weight 0).
    Models load through retrieval.models' per-process cache, so a lookup's own load is read back, not repeated;
    this never raises, as the recording it is part of must not."""
    from retrieval.models import load_encoder, load_reranker

    found: dict[str, dict[str, Any] | None] = {}
    for part, (model, weight, load) in MODEL_SETTINGS.items():
        spec = settings.get(model)
        if not isinstance(spec, str) or not spec or not _positive(settings.get(weight, 1.0)):
            found[part] = None
            continue
        try:
            found[part] = (load_encoder if load == "encoder" else load_reranker)(spec).info.to_dict()
        except Exception as exc:  # noqa: BLE001 (as dense_part: provenance says what failed, never raises)
            found[part] = {"spec": spec, "error": cause(exc)}
    return found


def _positive(weight: Any) -> bool:
    return isinstance(weight, (int, float)) and not isinstance(weight, bool) and weight > 0


def store_root(index: Any) -> Path:
    """Where the dense vectors of `index` are stored: beside its cache (the default cache without one)."""
    from retrieval.index import default_cache_dir

    return Path(getattr(index, "cache_root", None) or default_cache_dir()) / DENSE_FOLDER
