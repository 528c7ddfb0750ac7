"""What an encoder and a reranker give (`TextEncoder`, `PairScorer`), and the one check every backend's
output passes through (`checked_vectors`, `checked_scores`): right shape, finite, rows of norm 1."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from retrieval.models.errors import ModelError, cause
from retrieval.models.info import ModelInfo

BATCH_SIZE = 32
T = TypeVar("T")


@runtime_checkable
class TextEncoder(Protocol):
    """Texts to dense vectors: `encode(texts)` is float32 (len(texts), dimensions), every row of norm 1 (a
    text the model maps to zero stays zero). Batches internally; texts are cut at the model's max length."""

    info: ModelInfo
    dimensions: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class PairScorer(Protocol):
    """A cross-encoder: `score(query, texts)` is float32 (len(texts),), higher = more relevant (raw logits or
    probabilities, as the model gives them)."""

    info: ModelInfo

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray: ...


def checked_vectors(info: ModelInfo, returned: object, count: int, dimensions: int | None) -> np.ndarray:
    """`returned` as float32 (count, dimensions) with unit rows, or ModelError: not a 2-D array of that shape
    (`dimensions` None takes any width above 0), or not finite."""
    vectors = _array(info, returned)
    if count == 0 and dimensions is not None and vectors.size == 0:
        return np.zeros((0, dimensions), dtype=np.float32)
    width = dimensions if dimensions is not None else (vectors.shape[-1] if vectors.ndim == 2 else -1)
    if vectors.ndim != 2 or vectors.shape != (count, width) or width < 1:
        expected = f"({count}, {dimensions})" if dimensions is not None else f"({count}, d)"
        raise ModelError(f"returned shape {vectors.shape} for {count} text(s), expected {expected}; check the "
                         "model or the function gives one vector per text", spec=info.spec)
    _finite(info, vectors)
    return unit_rows(vectors)


def checked_scores(info: ModelInfo, returned: object, count: int) -> np.ndarray:
    """`returned` as float32 (count,), or ModelError. Accepts (count,), (count, 1), and (count, 2) whose
    column 1 is the 'relevant' class."""
    scores = _array(info, returned)
    if count == 0 and scores.size == 0:
        return np.zeros(0, dtype=np.float32)
    if scores.ndim == 2 and scores.shape[0] == count and scores.shape[1] in (1, 2):
        scores = scores[:, -1]
    if scores.shape != (count,):
        raise ModelError(f"returned scores of shape {scores.shape} for {count} text(s), expected ({count},), "
                         f"({count}, 1) or ({count}, 2); use a model with one relevance output", spec=info.spec)
    _finite(info, scores)
    return np.ascontiguousarray(scores)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` with every row scaled to norm 1 (rows of zeros stay zeros), float32."""
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def text_list(texts: Sequence[str], query: object = "") -> list[str]:
    """`texts` as a list of strings, or TypeError: one string would be read letter by letter, and anything else
    is not a text (checked at every encode and score, before the model sees it)."""
    if isinstance(texts, str):
        raise TypeError("encode and score take a sequence of texts, not one string: wrap it in a list")
    texts = list(texts)
    wrong = [type(t).__name__ for t in [query, *texts] if not isinstance(t, str)]
    if wrong:
        raise TypeError(f"a text or query must be a str, not {wrong[0]}")
    return texts


def batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """`items` in consecutive lists of at most `size`."""
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def _array(info: ModelInfo, returned: object) -> np.ndarray:
    if hasattr(returned, "detach"):  # a torch tensor
        returned = returned.detach().cpu().numpy()
    try:
        return np.asarray(returned, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"returned {type(returned).__name__}, not an array of numbers ({cause(exc)})",
                         spec=info.spec) from exc


def _finite(info: ModelInfo, values: np.ndarray) -> None:
    if not np.isfinite(values).all():
        bad = int(np.count_nonzero(~np.isfinite(values)))
        raise ModelError(f"returned {bad} non-finite value(s) (NaN or infinity); the model or function is broken "
                         "for these inputs", spec=info.spec)
