"""`load_encoder` and `load_reranker`: a spec to a loaded model, once per process per spec (thread-safe; a
failed load is not remembered, so a fixed folder loads on the next call)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from retrieval.models.specs import ParsedSpec, parse_spec
from retrieval.models.vectors import PairScorer, TextEncoder

M = TypeVar("M")

_ENCODERS: dict[str, TextEncoder] = {}
_RERANKERS: dict[str, PairScorer] = {}
_LOCKS: dict[tuple[str, str], threading.Lock] = {}  # one per (role, spec): a slow load holds up only its own spec
_LOCK = threading.Lock()


def load_encoder(spec: str) -> TextEncoder:
    """The TextEncoder `spec` names (onnx:PATH, st:NAME_OR_PATH, callable:module:function, hash:DIM or a
    bare folder), loaded on first use and kept for the process; ModelError when it cannot be."""
    return _cached(_ENCODERS, spec, _new_encoder)


def load_reranker(spec: str) -> PairScorer:
    """The PairScorer `spec` names (onnx:PATH, st:NAME_OR_PATH, callable:module:function, hash or a bare
    folder), loaded on first use and kept for the process; ModelError when it cannot be."""
    return _cached(_RERANKERS, spec, _new_reranker)


def _cached(cache: dict[str, Any], spec: str, load: Callable[[ParsedSpec], M]) -> M:
    parsed = parse_spec(spec)  # a bad spec fails before any lock, and is never a key
    with _LOCK:
        lock = _LOCKS.setdefault((load.__name__, spec), threading.Lock())
    with lock:  # two threads asking for one model load it once
        if spec not in cache:
            cache[spec] = load(parsed)
        return cache[spec]


def _new_encoder(parsed: ParsedSpec) -> TextEncoder:
    if parsed.form == "hash":
        from retrieval.models.hashed import HashEncoder, hash_dimensions

        return HashEncoder(hash_dimensions(parsed.spec, parsed.target), parsed.spec)
    if parsed.form == "callable":
        from retrieval.models.callables import CallableEncoder, imported_callable

        function, name = imported_callable(parsed.spec, parsed.target)
        return CallableEncoder(function, name, parsed.spec)
    if parsed.form == "onnx":
        from retrieval.models.onnx_backend import load_onnx_encoder

        return load_onnx_encoder(parsed.spec, parsed.target)
    from retrieval.models.st_backend import SentenceTransformerEncoder

    return SentenceTransformerEncoder(parsed.spec, parsed.target)


def _new_reranker(parsed: ParsedSpec) -> PairScorer:
    if parsed.form == "hash":
        from retrieval.models.hashed import HashReranker, hash_dimensions

        return HashReranker(hash_dimensions(parsed.spec, parsed.target), parsed.spec)
    if parsed.form == "callable":
        from retrieval.models.callables import CallableReranker, imported_callable

        function, name = imported_callable(parsed.spec, parsed.target)
        return CallableReranker(function, name, parsed.spec)
    if parsed.form == "onnx":
        from retrieval.models.onnx_backend import load_onnx_reranker

        return load_onnx_reranker(parsed.spec, parsed.target)
    from retrieval.models.st_backend import CrossEncoderReranker

    return CrossEncoderReranker(parsed.spec, parsed.target)
