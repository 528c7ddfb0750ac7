"""`st:NAME_OR_PATH`: a sentence-transformers model on the CPU, SentenceTransformer for an encoder and
CrossEncoder for a reranker, loaded with local_files_only=True (a folder, or a model id already in the
Hugging Face cache: nothing is downloaded). Imported only when a spec asks for it (it brings torch)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.models.errors import ST_HINT, ModelError, cause
from retrieval.models.info import files_sha256, model_info
from retrieval.models.specs import existing_path, is_path
from retrieval.models.vectors import BATCH_SIZE, checked_scores, checked_vectors, text_list

WEIGHT_SUFFIXES = {".json", ".txt", ".model", ".safetensors", ".bin", ".pt", ".pth"}
SKIPPED_FOLDERS = {"onnx", "openvino"}  # other backends' copies of the weights, which torch does not read


class SentenceTransformerEncoder:
    """A SentenceTransformer as a TextEncoder (its own batching, its normalize_embeddings)."""

    def __init__(self, spec: str, target: str, batch_size: int = BATCH_SIZE) -> None:
        library = _library(spec, target)
        folder = model_folder(spec, target, getattr(library.SentenceTransformer, "default_huggingface_organization",
                                                    "sentence-transformers"))
        self.model = _loaded(spec, library.SentenceTransformer, target)
        self.batch_size = batch_size
        width = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimensions = width() or self._encoded(["dimension probe"]).shape[1]
        self.info = model_info(spec, "sentence-transformers", _name(target, folder), self.dimensions,
                               files_sha256(folder, weight_files(folder)),
                               {"max_length": self.model.max_seq_length, "dimensions": self.dimensions})

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return checked_vectors(self.info, self._encoded(texts), len(texts), self.dimensions)

    def _encoded(self, texts: list[str]) -> Any:
        return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder as a PairScorer: `predict` of (query, text) pairs, with the
    model's own activation (a sigmoid for one label, by default)."""

    def __init__(self, spec: str, target: str, batch_size: int = BATCH_SIZE) -> None:
        library = _library(spec, target)
        folder = model_folder(spec, target, getattr(library.CrossEncoder, "default_huggingface_organization", None))
        self.model = _loaded(spec, library.CrossEncoder, target)
        self.batch_size = batch_size
        max_length = getattr(self.model, "max_seq_length", None) or getattr(self.model, "max_length", None)
        activation = type(getattr(self.model, "activation_fn", None)).__name__
        self.info = model_info(spec, "sentence-transformers", _name(target, folder), None,
                               files_sha256(folder, weight_files(folder)),
                               {"max_length": max_length, "activation": activation})

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts, query)
        if not texts:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict([(query, text) for text in texts], batch_size=self.batch_size,
                                    show_progress_bar=False, convert_to_numpy=True)
        return checked_scores(self.info, scores, len(texts))


def model_folder(spec: str, target: str, organisation: str | None) -> Path:
    """The local folder of `target`: the path itself, or the Hugging Face cache's snapshot of the model id
    (tried as written, then under the library's default organisation, as sentence-transformers does)."""
    if is_path(target):
        return existing_path(spec, target)
    from huggingface_hub import snapshot_download

    names = [target, *([f"{organisation}/{target}"] if organisation and "/" not in target else [])]
    for name in names:
        try:
            return Path(snapshot_download(name, cache_dir=os.getenv("SENTENCE_TRANSFORMERS_HOME"),
                                          local_files_only=True))
        except (OSError, ValueError):  # not cached (LocalEntryNotFoundError) or not an id (HFValidationError)
            continue
    raise ModelError(f"{target} is neither a folder nor a model in the local Hugging Face cache, and nothing is "
                     "downloaded at run time; download it once (hf download MODEL_ID) or give its "
                     "folder", spec=spec)


def weight_files(folder: Path) -> list[Path]:
    """The files torch's sentence-transformers reads: weights, configs, tokenizer files (not README, not the
    onnx/ and openvino/ copies; pytorch_model.bin only when no model.safetensors is beside it)."""
    found = []
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if (not path.is_file() or path.suffix not in WEIGHT_SUFFIXES or parts[0] in SKIPPED_FOLDERS
                or any(p.startswith(".") for p in parts)):
            continue
        if path.name == "pytorch_model.bin" and (path.parent / "model.safetensors").is_file():
            continue
        found.append(path)
    return found


def _library(spec: str, target: str) -> Any:
    """The sentence_transformers package, imported (torch: seconds) once a path target is known to exist."""
    if is_path(target):
        existing_path(spec, target)
    try:
        import sentence_transformers
    except ImportError as exc:
        raise ModelError(f"the st: backend needs sentence-transformers ({cause(exc)}); {ST_HINT}",
                         spec=spec) from exc
    return sentence_transformers


def _loaded(spec: str, model_class: Any, target: str) -> Any:
    try:
        return model_class(target, device="cpu", local_files_only=True)
    except Exception as exc:  # torch, transformers and the hub client raise many kinds
        raise ModelError(f"sentence-transformers cannot load it as a {model_class.__name__} ({cause(exc)}); give a "
                         "complete local model folder or a model id already downloaded", spec=spec) from exc


def _name(target: str, folder: Path) -> str:
    return folder.name if is_path(target) else target
