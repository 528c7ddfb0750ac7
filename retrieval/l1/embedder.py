"""The `Embedder` seam of L1's static part, and its default: WordLlama's packaged token embeddings.

An embedder turns texts into L2-normalised float32 rows (`embed`). A *static* embedder (a sentence vector
is a weighted sum of word vectors, no network at query time) also gives `word_vectors`: un-normalised
vectors whose sum over a text's words points where `embed` of that text points. L1 then composes a chunk's
vector from its words' vectors, so a build embeds each distinct word once instead of tokenising every
chunk (retrieval/l1/static.py). Any other embedder (sentence-transformers, fastembed) is asked to `embed` every chunk
and the query as they are.

The default loads the weights and the tokenizer that the `wordllama` wheel ships, straight from the
package's folder, without importing `wordllama` itself: the files are what `WordLlama.load(cache_dir=
<package folder>, disable_download=True)` reads (tests/test_embedder.py checks the vectors are equal), but
the package's import costs 0.6 s (it pulls in `requests`) and sets the root logger to INFO. Nothing here
opens a socket.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

WORDLLAMA_CONFIG = "l2_supercat"  # the one configuration the wheel ships (a 256-dimensional slice of it)
WORDLLAMA_DIMENSIONS = 256
WORDLLAMA_WEIGHTS = f"weights/{WORDLLAMA_CONFIG}_{WORDLLAMA_DIMENSIONS}.safetensors"
WORDLLAMA_TOKENIZER = f"tokenizers/{WORDLLAMA_CONFIG}_tokenizer_config.json"
WORDLLAMA_TENSOR = "embedding.weight"
INSTALL_HINT = "install it with pip install 'wordllama>=0.4.0.post1,<0.5' (a dependency of lookup-knowledge)"
SEQUENCE_WORDS = 1024  # words per pre-split sequence given to the tokenizer
WORDS_PER_CALL = 64 * SEQUENCE_WORDS  # words per tokenizer call


class EmbedderWarning(UserWarning):
    """The static embedder could not be loaded: L1 goes on without its static part."""


@runtime_checkable
class Embedder(Protocol):
    """Texts to vectors: `embed(texts)` is float32 [len(texts), dimensions], every row of norm 1 (or 0 for
    a text with nothing to embed). `name` identifies the model and its version (it is part of the index's
    cache key and of every trace)."""

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class StaticEmbedder(Embedder, Protocol):
    """An embedder whose text vector is the normalised sum of its words' vectors (`word_vectors`, float32
    [len(words), dimensions], not normalised: a word of three tokens weighs three tokens)."""

    def word_vectors(self, words: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EmbedderInfo:
    """What a trace records of the embedder an index used."""

    name: str
    dimensions: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "dimensions": self.dimensions}


class WordLlamaEmbedder:
    """WordLlama's static token embeddings (MIT): a text's vector is the mean of its tokens' vectors, as
    `WordLlamaInference.embed(texts, norm=True)` computes it."""

    def __init__(self, matrix: np.ndarray, tokenizer: Any, name: str) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.tokenizer = tokenizer
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.name = name
        self.dimensions = int(self.matrix.shape[1])

    @classmethod
    def load(cls, folder: Path | None = None) -> WordLlamaEmbedder:
        """The packaged model (from `folder`, by default the installed `wordllama` package's folder)."""
        from safetensors import safe_open
        from tokenizers import Tokenizer

        folder = folder or wordllama_folder()
        with safe_open(str(folder / WORDLLAMA_WEIGHTS), framework="np") as weights:
            matrix = weights.get_tensor(WORDLLAMA_TENSOR)
        tokenizer = Tokenizer.from_file(str(folder / WORDLLAMA_TOKENIZER))
        return cls(matrix, tokenizer, wordllama_name())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return unit_rows(self._mean_pooled([e.ids for e in encodings]))

    def word_vectors(self, words: Sequence[str]) -> np.ndarray:
        """Each word's token vectors summed, the word tokenised as it reads inside a text ("hello" is
        "▁hello", as in "say hello"). Words go to the tokenizer a few thousand at a time, as one
        pre-split sequence each (a call per word cost a third more), and are summed by a sparse product."""
        if len(words) <= SEQUENCE_WORDS:  # a query: one sequence, no sparse matrix
            encoding = self.tokenizer.encode(list(words), is_pretokenized=True, add_special_tokens=False)
            out = np.zeros((len(words), self.dimensions), dtype=np.float32)
            owners = np.asarray(encoding.word_ids, dtype=np.int64)
            if owners.size:
                tokens = np.clip(np.asarray(encoding.ids, dtype=np.int64), 0, self.matrix.shape[0] - 1)
                starts = np.searchsorted(owners, np.arange(len(words)))  # a word's tokens are contiguous
                present = np.r_[starts[1:] > starts[:-1], starts[-1] < owners.size]
                out[present] = np.add.reduceat(self.matrix[tokens], starts[present], axis=0)
            return out
        from scipy import sparse

        ids: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for start in range(0, len(words), WORDS_PER_CALL):
            batch = [list(words[i:i + SEQUENCE_WORDS]) for i in range(start, min(start + WORDS_PER_CALL, len(words)),
                                                                   SEQUENCE_WORDS)]
            for offset, encoding in enumerate(self.tokenizer.encode_batch(batch, is_pretokenized=True,
                                                                          add_special_tokens=False)):
                ids.append(np.asarray(encoding.ids, dtype=np.int64))
                owners.append(np.asarray(encoding.word_ids, dtype=np.int64) + start + offset * SEQUENCE_WORDS)
        tokens = np.clip(np.concatenate(ids), 0, self.matrix.shape[0] - 1)
        counts = sparse.csr_matrix((np.ones(tokens.size, dtype=np.float32), (np.concatenate(owners), tokens)),
                                   shape=(len(words), self.matrix.shape[0]))
        return np.asarray(counts @ self.matrix, dtype=np.float32)

    def _mean_pooled(self, ids: list[list[int]]) -> np.ndarray:
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        out = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        if not lengths.sum():
            return out
        flat = np.clip(np.fromiter((i for row in ids for i in row), dtype=np.int64, count=int(lengths.sum())),
                       0, self.matrix.shape[0] - 1)
        present = np.flatnonzero(lengths)
        sums = np.add.reduceat(self.matrix[flat], np.r_[0, np.cumsum(lengths)[:-1]][present], axis=0)
        out[present] = sums / lengths[present, None]
        return out


def is_static(embedder: object) -> bool:
    """Whether `embedder` gives `word_vectors` (a StaticEmbedder); cheaper than a Protocol isinstance check."""
    return callable(getattr(embedder, "word_vectors", None))


def wordllama_folder() -> Path:
    """The installed `wordllama` package's folder, found without importing the package."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the `wordllama` package is not installed; {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations)))


def wordllama_name() -> str:
    """The default embedder's identity, without loading it: model and package version."""
    try:
        package = version("wordllama")
    except PackageNotFoundError:
        package = "?"
    return f"wordllama-{WORDLLAMA_CONFIG}-{WORDLLAMA_DIMENSIONS}@{package}"


class LazyEmbedder:
    """An embedder loaded on first use, once per process; a failed load warns once and leaves None. An
    index built from cache needs it only for a query word its corpus never had."""

    def __init__(self, name: str, dimensions: int, loader: Any = None) -> None:
        self.name = name
        self.dimensions = dimensions
        self._loader = loader or WordLlamaEmbedder.load
        self._lock = threading.Lock()
        self._loaded: Embedder | None = None
        self._failure: str | None = None

    def get(self) -> Embedder | None:
        if self._loaded is not None or self._failure is not None:
            return self._loaded
        with self._lock:
            if self._loaded is None and self._failure is None:
                try:
                    self._loaded = self._loader()
                except Exception as exc:  # noqa: BLE001 (a plug-in or a damaged wheel may raise anything: no static part)
                    self._failure = f"{type(exc).__name__}: {exc}"
                    warnings.warn(f"could not load the static embedder {self.name} ({self._failure}); L1 goes "
                                  "on without its static part", EmbedderWarning, stacklevel=3)
        return self._loaded


_DEFAULT: LazyEmbedder | None = None
_DEFAULT_CHECKED = False  # whether the package was looked for (and its absence said) in this process
_DEFAULT_LOCK = threading.Lock()


def default_embedder() -> LazyEmbedder | None:
    """The process's default embedder (WordLlama, loaded on first use), or None when `wordllama` is not
    installed (said once, as an EmbedderWarning)."""
    global _DEFAULT, _DEFAULT_CHECKED
    with _DEFAULT_LOCK:
        if not _DEFAULT_CHECKED:
            _DEFAULT_CHECKED = True
            if _installed("wordllama"):
                _DEFAULT = LazyEmbedder(wordllama_name(), WORDLLAMA_DIMENSIONS)
            else:
                warnings.warn(f"the `wordllama` package is not installed, so L1 has no static part; {INSTALL_HINT}",
                              EmbedderWarning, stacklevel=2)
        return _DEFAULT


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a broken install, or a module set to None
        return False


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """`vectors` with every row scaled to norm 1 (rows of zeros stay zeros), float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)
