"""L1's dense part: a contextual encoder's section vectors (retrieval/models), and how they re-score L1's pool.

Vectors: every section is encoded once per model, as its breadcrumb and text (`dense_text`), and kept in a
content-addressed store on disk (`VectorStore`: one folder per model fingerprint, keyed by the text's
SHA-256), so a rebuild, an update, another weight or another base of the same texts encodes nothing again.
An index holds its sections' vectors per segment (`DensePart.vectors`, the base's rows then the delta's),
gathered from the store when a model is first used on it (`L1Index.dense_part`), encoding only what the store
lacks.

Query: each pool page's dense score is the mean of two cosines with the query, its whole text's (the unit
sum of its sections' vectors) and its best section's (any of its sections, not only the pooled ones), as the
static part's is. With norm `raw` (the default), `weight * (score - centre)` is added to its sections' scores,
the centre being the mean score of the pool's best pages, so the part moves pages within the pool and not
the pool against L0's evidence; with `z`, the scores standardised over those pages, times the spread of their
fused scores, as the static part's (retrieval/l1/static.py). Chosen on the Hugo dev questions and SciFact
train (docs/quality.md): MiniLM's cosines differ between pages by amounts that mean the same from one query to
the next, so standardising them (z) threw that away. The weight and norm are settings (`l1_dense_weight`,
`l1_dense_norm`), so sweeps compare them like any other.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.kb.model import Chunk
from retrieval.l1.stacked import Stacked
from retrieval.l1.stages import Progress
from retrieval.l1.static import REFERENCE_PAGES, pool_boosts

KEY_BYTES = 16  # of a text's SHA-256: collisions among 1e9 texts have odds of 1e-20
SHARD_TEXTS = 8192  # texts encoded between shard writes: an interrupted build keeps what it encoded
READ_BLOCK = 8192  # chunks read from the index at a time
ENCODING = "L1: encoding sections (dense part)"


def dense_text(chunk: Chunk) -> str:
    """What a section's dense vector is made of: its breadcrumb (page title > headings), then its text."""
    return f"{chunk.breadcrumb}\n\n{chunk.text}" if chunk.breadcrumb else chunk.text


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:KEY_BYTES]


class VectorStore:
    """One model's section vectors on disk, by text: shards of (keys, float16 vectors) written whole and renamed
    into place, so readers never see half a shard and concurrent writers never share a file."""

    def __init__(self, folder: Path, dimensions: int) -> None:
        self.folder = Path(folder)
        self.dimensions = dimensions
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray],
                progress: Progress | None = None) -> np.ndarray:
        """The float16 vector of every text in `texts`, encoding (and storing) only those the store lacks."""
        keys = [text_key(t) for t in texts]
        with self._lock:
            shards, where = self._index()
            missing = sorted({k: i for i, k in enumerate(keys) if k not in where}.values())
            for start in range(0, len(missing), SHARD_TEXTS):
                batch = missing[start:start + SHARD_TEXTS]
                encoded = np.asarray(encode([texts[i] for i in batch]), dtype=np.float32)
                self._write([keys[i] for i in batch], encoded.astype(np.float16))
                if progress is not None:
                    progress(ENCODING, min(1.0, (start + len(batch)) / len(missing)))
            if missing:
                shards, where = self._index()
        located = np.array([where[k] for k in keys], dtype=np.int64).reshape(-1, 2)
        out = np.empty((len(texts), self.dimensions), dtype=np.float16)
        for number, vectors in enumerate(shards):
            mine = np.flatnonzero(located[:, 0] == number)
            if mine.size:
                out[mine] = vectors[located[mine, 1]]
        return out

    def _index(self) -> tuple[list[np.ndarray], dict[bytes, tuple[int, int]]]:
        """Every whole shard's vectors (memory-mapped) and where each text's vector lies: (shard, row)."""
        shards: list[np.ndarray] = []
        where: dict[bytes, tuple[int, int]] = {}
        for keys_file in sorted(self.folder.glob("*.keys.npy")):
            vectors_file = self.folder / f"{keys_file.name[:-len('.keys.npy')]}.vectors.npy"
            if not vectors_file.is_file():
                continue
            keys = np.load(keys_file)
            vectors = np.load(vectors_file, mmap_mode="r")
            if vectors.ndim != 2 or vectors.shape[1] != self.dimensions or keys.shape != (vectors.shape[0], KEY_BYTES):
                raise ValueError(f"the dense vector store {self.folder} holds vectors of shape {vectors.shape}, and "
                                 f"the model gives {self.dimensions} dimensions: remove the folder to encode again")
            number = len(shards)
            shards.append(vectors)
            where.update((bytes(k), (number, i)) for i, k in enumerate(keys))
        return shards, where

    def _write(self, keys: list[bytes], vectors: np.ndarray) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = uuid.uuid4().hex
        for suffix, array in ((".vectors.npy", vectors),
                              (".keys.npy", np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, KEY_BYTES))):
            temporary = self.folder / f".{stem}{suffix}.tmp"
            with open(temporary, "wb") as handle:
                np.save(handle, array)
            temporary.rename(self.folder / f"{stem}{suffix}")  # keys last: a shard counts once both are there


@dataclass(frozen=True, eq=False)
class DensePart:
    """One model's vectors over an index's rows (`vectors`: one part per segment) and the model itself."""

    encoder: Any  # retrieval.models.TextEncoder
    vectors: Stacked
    page_vectors: np.ndarray  # each page's unit sum of its sections' vectors (float16), pages across segments

    @property
    def info(self) -> dict[str, Any]:
        return self.encoder.info.to_dict()

    def query_vector(self, query: str) -> np.ndarray:
        vector = np.asarray(self.encoder.encode([query]), dtype=np.float32)
        if vector.shape != (1, self.vectors.shape[1]):
            raise ValueError(f"the dense model {self.encoder.info.spec} gave a query vector of shape "
                             f"{vector.shape}; the index's vectors have {self.vectors.shape[1]} dimensions")
        return vector[0]


@dataclass(frozen=True)
class DenseSettings:
    """How one search uses a dense part: its weight, normalisation (`raw` or `z`) and the best pages it re-scores
    (by fused score; the pool's other pages keep theirs). Equal settings over the same part are one key (a
    DensePart equals only itself)."""

    part: DensePart
    weight: float
    norm: str = "raw"
    pool: int = 20


def segment_vectors(chunks: Sequence[Chunk], rows: range, store: VectorStore, encoder: Any,
                    progress: Progress | None = None) -> np.ndarray:
    """The float16 vectors of `chunks` at `rows` (one segment's), from the store or encoded into it."""
    texts: list[str] = []
    take = getattr(chunks, "take", None)
    for start in range(rows.start, rows.stop, READ_BLOCK):
        block = list(range(start, min(start + READ_BLOCK, rows.stop)))
        texts.extend(dense_text(c) for c in (take(block) if take is not None else [chunks[r] for r in block]))
    return store.vectors(texts, encoder.encode, progress)


def page_dense_scores(part: DensePart, pages: np.ndarray, rows: np.ndarray, row_page: np.ndarray,
                      query_vector: np.ndarray) -> np.ndarray:
    """Each of `pages`' dense score: the mean of its whole text's cosine and its best row's among `rows`
    (`row_page`: each row's position in `pages`)."""
    best = np.full(pages.size, -1.0, dtype=np.float32)
    if rows.size:
        np.maximum.at(best, row_page, part.vectors.take(rows).astype(np.float32) @ query_vector)
    whole = part.page_vectors[pages].astype(np.float32) @ query_vector
    return 0.5 * (whole + best)


def dense_boosts(page_scores: np.ndarray, page_fused: np.ndarray, weight: float, norm: str) -> np.ndarray:
    """What each pool page's dense score adds: `weight * (score - centre)` (norm `raw`), the centre being the
    mean score of the REFERENCE_PAGES best pages (by fused score); or, with norm `z`, the static part's
    standardised boost (static.pool_boosts)."""
    if norm != "raw":
        return pool_boosts(page_scores, page_fused, weight)
    reference = np.argsort(-page_fused, kind="stable")[:REFERENCE_PAGES]
    return weight * (page_scores - float(page_scores[reference].mean()))
