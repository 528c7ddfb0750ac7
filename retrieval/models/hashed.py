"""`hash:DIM`: a deterministic encoder with no weights, for tests and for logic that needs vectors but not
meaning (Haystack's mock embedders do the same). Texts that share words get close vectors.

A word is a case-folded `\\w+` match. Its vector is DIM signs (±1) read from SHA-256 in counter mode: the
digests of the word's UTF-8 bytes followed by a 4-byte little-endian counter 0, 1, … are concatenated and
bit i (most significant first) gives +1 when set. A text's vector is the sum of its words' vectors (a word
twice counts twice), L2-normalised; a text with no word is the zero vector. The reranker `hash` (or
`hash:DIM`) scores a text by the cosine of its vector and the query's."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from retrieval.models.errors import ModelError
from retrieval.models.info import model_info, text_sha256
from retrieval.models.vectors import checked_scores, checked_vectors, text_list

DEFAULT_DIMENSIONS = 64
MAX_DIMENSIONS = 65536
WORD = re.compile(r"\w+")


class HashEncoder:
    """Word-hash vectors of `dimensions` signs (see the module docstring)."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS, spec: str | None = None) -> None:
        self.dimensions = dimensions
        canonical = f"hash:{dimensions}"
        self.info = model_info(spec or canonical, "hash", canonical, dimensions, text_sha256(canonical),
                               {"dimensions": dimensions})

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word, count in Counter(WORD.findall(text.casefold())).items():
                out[row] += count * word_signs(word, self.dimensions)
        return checked_vectors(self.info, out, len(texts), self.dimensions)


class HashReranker:
    """Scores a text by the cosine of its hash vector and the query's."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS, spec: str | None = None) -> None:
        self.encoder = HashEncoder(dimensions)
        canonical = f"hash:{dimensions}"
        self.info = model_info(spec or canonical, "hash", canonical, None, text_sha256(canonical),
                               {"dimensions": dimensions, "score": "cosine"})

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts, query)
        vectors = self.encoder.encode([query, *texts])
        return checked_scores(self.info, vectors[1:] @ vectors[0], len(texts))


@lru_cache(maxsize=65536)
def word_signs(word: str, dimensions: int) -> np.ndarray:
    """The fixed ±1 float32 vector of one (already case-folded) word."""
    blocks = -(-dimensions // 256)
    stream = b"".join(hashlib.sha256(word.encode() + i.to_bytes(4, "little")).digest() for i in range(blocks))
    bits = np.unpackbits(np.frombuffer(stream, dtype=np.uint8))[:dimensions]
    signs = np.where(bits == 1, 1.0, -1.0).astype(np.float32)
    signs.setflags(write=False)
    return signs


def hash_dimensions(spec: str, argument: str) -> int:
    """DIM of `hash:DIM` (64 for a bare `hash`), or ModelError."""
    if not argument:
        return DEFAULT_DIMENSIONS
    if not (argument.isascii() and argument.isdigit()) or not 1 <= int(argument) <= MAX_DIMENSIONS:
        raise ModelError(f"hash:DIM needs a whole number of dimensions from 1 to {MAX_DIMENSIONS}, got "
                         f"{argument!r}; write e.g. hash:64", spec=spec)
    return int(argument)
