"""L1: TF-IDF + TruncatedSVD (LSA) over chunks, cosine similarity, metadata filter as a row mask.

The score of a chunk is a blend of its TF-IDF cosine (exact term overlap) and its LSA cosine (shared
latent topics), so paraphrases still score while exact terms keep their weight. The filter masks rows
*before* top-k, so a filtered search returns the best rows of the filtered set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from .corpus import Chunk
from .text import normalize_label, tokenize

FILTER_KEYS = ("category", "source")


@dataclass(frozen=True)
class L1Candidate:
    """One chunk L1 found, with its blended score and the two cosines it came from."""

    chunk: Chunk
    score: float
    tfidf_score: float
    lsa_score: float | None


@dataclass(frozen=True)
class L1Result:
    """Candidates best first; how many rows the filter left and how many fell below the minimum score."""

    candidates: tuple[L1Candidate, ...]
    rows_searched: int
    dropped_below_min_score: int


def _chunk_text(chunk: Chunk) -> str:
    return f"{chunk.breadcrumb}\n{chunk.text}"


@dataclass
class L1Index:
    """Vectors of every chunk; LSA dimensions are capped by the corpus so tiny knowledge bases work."""

    chunks: Sequence[Chunk]
    svd_dims: int = 256
    random_state: int = 0
    vectorizer: TfidfVectorizer = field(init=False, repr=False)
    svd: TruncatedSVD | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not self.chunks:
            raise ValueError("L1 needs at least one chunk with text")
        self.vectorizer = TfidfVectorizer(analyzer=tokenize, sublinear_tf=True, dtype=np.float32)
        self.tfidf = self.vectorizer.fit_transform([_chunk_text(c) for c in self.chunks]).tocsc()
        dims = min(self.svd_dims, self.tfidf.shape[1] - 1, self.tfidf.shape[0] - 1)
        self.lsa = None
        if dims >= 2:
            self.svd = TruncatedSVD(n_components=dims, random_state=self.random_state)
            self.lsa = normalize(self.svd.fit_transform(self.tfidf)).astype(np.float32)
        self._rows_by_domain = _rows_by(c.domains for c in self.chunks)
        self._rows_by_source = _rows_by((c.source,) for c in self.chunks)

    @property
    def dimensions(self) -> int:
        return 0 if self.lsa is None else self.lsa.shape[1]

    def search(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, tfidf_weight: float = 0.5) -> L1Result:
        """Best `top_k` chunks for `query` among the rows the filters allow, at or above `min_score`."""
        rows = self._mask(filters or {})
        searched = int(rows.sum()) if rows is not None else len(self.chunks)
        q = self.vectorizer.transform([query])
        if q.nnz == 0 or searched == 0:
            return L1Result((), searched, 0)
        # column slice of the CSC matrix: cost follows the query terms' postings, not the corpus size
        tfidf = np.asarray(self.tfidf[:, q.indices] @ q.data, dtype=np.float32).ravel()
        lsa = None
        score = tfidf
        if self.lsa is not None and self.svd is not None:
            qz = normalize(self.svd.transform(q)).astype(np.float32).ravel()
            lsa = self.lsa @ qz
            score = tfidf_weight * tfidf + (1 - tfidf_weight) * np.clip(lsa, 0.0, None)
        if rows is not None:
            score = np.where(rows, score, -np.inf)
        positive = score > 0
        kept = positive & (score >= min_score - 1e-9)
        dropped = int(positive.sum() - kept.sum())
        top = _top(np.where(kept, score, -np.inf), top_k)
        return L1Result(tuple(L1Candidate(self.chunks[i], float(score[i]), float(tfidf[i]),
                                          None if lsa is None else float(lsa[i])) for i in top),
                        searched, dropped)

    def _mask(self, filters: Mapping[str, str]) -> np.ndarray | None:
        unknown = sorted(set(filters) - set(FILTER_KEYS))
        if unknown:
            raise ValueError(f"unknown L1 filter key(s) {unknown}; supported: {', '.join(FILTER_KEYS)}")
        mask = None
        for key, value in filters.items():
            index = self._rows_by_domain if key == "category" else self._rows_by_source
            wanted = normalize_label(value) if key == "category" else str(value)
            rows = np.zeros(len(self.chunks), dtype=bool)
            rows[index.get(wanted, np.empty(0, dtype=np.int64))] = True
            mask = rows if mask is None else mask & rows
        return mask


def _rows_by(labels_per_row) -> dict[str, np.ndarray]:
    rows: dict[str, list[int]] = {}
    for i, labels in enumerate(labels_per_row):
        for label in labels:
            rows.setdefault(label, []).append(i)
    return {k: np.asarray(v, dtype=np.int64) for k, v in rows.items()}


def _top(score: np.ndarray, k: int) -> list[int]:
    finite = np.flatnonzero(np.isfinite(score))
    if finite.size == 0:
        return []
    if finite.size > k:
        finite = finite[np.argpartition(-score[finite], k - 1)[:k]]
    return sorted(finite.tolist(), key=lambda i: (-score[i], i))
