"""`callable:package.module:function`, or a Python function passed in: your own encoder or reranker behind
the same checks as the built-in backends (shape, finite, unit rows).

An encoder function takes `list[str]` and returns an array (n, d); d is learnt at load by calling it once on
`["dimension probe"]`. A reranker function takes `(query: str, texts: list[str])` and returns an array (n,).
Either is called with at most `batch_size` texts at a time."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from retrieval.models.errors import ModelError, cause
from retrieval.models.info import model_info, text_sha256
from retrieval.models.vectors import BATCH_SIZE, batches, checked_scores, checked_vectors, text_list

PROBE = ["dimension probe"]


class CallableEncoder:
    """An encoder function, its output checked and normalised."""

    def __init__(self, function: Callable[[list[str]], Any], name: str, spec: str,
                 batch_size: int = BATCH_SIZE) -> None:
        self.function = function
        self.batch_size = batch_size
        probe = model_info(spec, "callable", name, None, text_sha256(name), {})
        self.dimensions = int(checked_vectors(probe, _called(spec, function, PROBE), 1, None).shape[1])
        self.info = model_info(spec, "callable", name, self.dimensions, text_sha256(name),
                               {"dimensions": self.dimensions})

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts)
        parts = [checked_vectors(self.info, _called(self.info.spec, self.function, batch), len(batch),
                                 self.dimensions) for batch in batches(texts, self.batch_size)]
        return np.concatenate(parts) if parts else np.zeros((0, self.dimensions), dtype=np.float32)


class CallableReranker:
    """A reranker function, its output checked."""

    def __init__(self, function: Callable[[str, list[str]], Any], name: str, spec: str,
                 batch_size: int = BATCH_SIZE) -> None:
        self.function = function
        self.batch_size = batch_size
        self.info = model_info(spec, "callable", name, None, text_sha256(name), {})

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts, query)
        parts = [checked_scores(self.info, _called(self.info.spec, self.function, query, batch), len(batch))
                 for batch in batches(texts, self.batch_size)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def encoder_from_callable(function: Callable[[list[str]], Any], name: str | None = None, *,
                          batch_size: int = BATCH_SIZE) -> CallableEncoder:
    """A TextEncoder around `function(texts) -> (n, d)`; `name` (default module:qualname) is its identity in
    ModelInfo and its fingerprint."""
    name = name or qualified_name(function)
    return CallableEncoder(function, name, f"callable:{name}", batch_size)


def reranker_from_callable(function: Callable[[str, list[str]], Any], name: str | None = None, *,
                           batch_size: int = BATCH_SIZE) -> CallableReranker:
    """A PairScorer around `function(query, texts) -> (n,)`; `name` as for encoder_from_callable."""
    name = name or qualified_name(function)
    return CallableReranker(function, name, f"callable:{name}", batch_size)


def imported_callable(spec: str, target: str) -> tuple[Callable[..., Any], str]:
    """The function `package.module:function` names (the part after ':' may be dotted, Class.method), and
    its name as ModelInfo records it; ModelError when it cannot be imported or is not callable."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ModelError("callable: needs package.module:function (a module, a colon, a function name)", spec=spec)
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except Exception as exc:  # importing a user's module runs its code, which may raise anything
        raise ModelError(f"cannot import {target} ({cause(exc)}); check the module is on PYTHONPATH and "
                         "defines the function", spec=spec) from exc
    if not callable(found):
        raise ModelError(f"{target} is a {type(found).__name__}, not a function", spec=spec)
    return found, f"{module_name}:{attribute}"


def qualified_name(function: Callable[..., Any]) -> str:
    """`module:qualname` of a function (its class's for a callable object)."""
    owner = function if hasattr(function, "__qualname__") else type(function)
    return f"{getattr(owner, '__module__', '?')}:{owner.__qualname__}"


def _called(spec: str, function: Callable[..., Any], *arguments: Any) -> Any:
    try:
        return function(*arguments)
    except Exception as exc:  # a user's function may raise anything; the caller gets one ModelError
        raise ModelError(f"the function raised {cause(exc)}", spec=spec) from exc
