"""`ModelInfo`: which model a vector or a score came from, as a trace or an index cache key records it; and
the SHA-256 of a model's files (streamed, once per process per file version) its fingerprint rests on."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CHUNK = 1 << 20  # bytes read per step when hashing a file
FINGERPRINT_CHARS = 16


@dataclass(frozen=True)
class ModelInfo:
    """A loaded model's identity. `fingerprint` changes when anything that changes its outputs does (weights,
    tokenizer, settings such as max length or pooling), and only then; `spec` is as the caller wrote it."""

    spec: str
    backend: str  # "onnx" | "sentence-transformers" | "callable" | "hash"
    name: str
    dimensions: int | None  # an encoder's output size; None for a reranker
    weights_sha256: str
    fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_info(spec: str, backend: str, name: str, dimensions: int | None, weights_sha256: str,
               settings: Mapping[str, Any]) -> ModelInfo:
    """The ModelInfo of a loaded model; `settings` are those that change its outputs (JSON-encodable)."""
    return ModelInfo(spec=spec, backend=backend, name=name, dimensions=dimensions, weights_sha256=weights_sha256,
                     fingerprint=fingerprint(backend, name, weights_sha256, settings))


def fingerprint(backend: str, name: str, weights_sha256: str, settings: Mapping[str, Any]) -> str:
    """The first 16 hex digits of SHA-256 over backend, name, weights digest and settings (sorted-key JSON),
    joined by NUL bytes."""
    parts = [backend, name, weights_sha256, json.dumps(dict(settings), sort_keys=True, separators=(",", ":"))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:FINGERPRINT_CHARS]


def text_sha256(text: str) -> str:
    """SHA-256 hex of a string (a callable's qualified name, a hash spec): the 'weights' of a weightless model."""
    return hashlib.sha256(text.encode()).hexdigest()


def files_sha256(root: Path, files: Iterable[Path]) -> str:
    """SHA-256 hex over `files` in sorted order of their path relative to `root`: for each, the path's UTF-8
    bytes, a NUL, then the file's own SHA-256 digest. Renaming a file or changing a byte changes it."""
    digest = hashlib.sha256()
    for relative, path in sorted((_relative(root, Path(p)), Path(p)) for p in files):
        digest.update(relative.encode() + b"\0")
        digest.update(bytes.fromhex(file_sha256(path)))
    return digest.hexdigest()


_FILE_DIGESTS: dict[tuple[str, int, int, int], str] = {}
_FILE_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """SHA-256 hex of a file, read in 1 MiB steps, cached per process by (resolved path, size, mtime_ns, inode)
    so a model loaded twice, or by an encoder and a reranker, is read once."""
    resolved = Path(path).resolve()
    stat = os.stat(resolved)
    key = (str(resolved), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    with _FILE_LOCK:
        known = _FILE_DIGESTS.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(resolved, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    with _FILE_LOCK:
        _FILE_DIGESTS[key] = digest.hexdigest()
    return digest.hexdigest()


def _relative(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:  # a file outside the folder (a model file given by its own path): its name
        return path.name
