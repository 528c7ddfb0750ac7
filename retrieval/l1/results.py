"""What an L1 search returns (candidates, results) and the per-query state a lookup's searches share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrieval.kb.model import Chunk
from retrieval.l1.embedder import EmbedderInfo


@dataclass(frozen=True)
class L1Candidate:
    """One chunk L1 found: its score (the blend of lexical and LSA, plus the static part), the lexical
    (BM25-weighted TF-IDF) score, the LSA cosine, its page's BM25 score relative to the query's best page
    (1.0: the best page), its page's static score (the mean of its whole text's and its best pooled
    section's cosines; None: no static part in this search) and what the static part added to the score
    (negative for a page below the pool's mean)."""

    chunk: Chunk
    score: float
    lexical_score: float
    lsa_score: float | None
    page_score: float = 0.0
    static_score: float | None = None
    static_added: float = 0.0
    dense_score: float | None = None  # its page's best section cosine with the query (None: no dense part)
    dense_added: float = 0.0
    rerank_score: float | None = None  # the reranker's score of its page (None: not reranked)
    rerank_added: float = 0.0


@dataclass(frozen=True)
class L1Result:
    """Candidates best first; how many rows the filter left, how many fell below the minimum score (rows
    scored below it, plus rows with a lexical match proved below it unscored; rows with no lexical match
    are counted only when scored), and how many rows had their LSA vector scored (every allowed row when
    exact)."""

    candidates: tuple[L1Candidate, ...]
    rows_searched: int
    dropped_below_min_score: int
    rows_scored: int = 0
    embedder: EmbedderInfo | None = None  # the embedder whose static part re-ranked the pool (None: no static part)
    dense: DenseStatus | None = None  # the dense part's model and status (None: no dense part asked for)


@dataclass(frozen=True)
class DenseStatus:
    """What the dense part did in one search: `ok`; `empty` (no term of the query is indexed: no pool to
    re-score); or `failed` with the error (the search went on without it)."""

    model: dict[str, Any] | str
    status: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "status": self.status, "error": self.error}


@dataclass(frozen=True, eq=False)
class L1Scores:
    """One query's cheap scores over the whole index: lexical per chunk, BM25 per page, and the query's
    unit vector in LSA space (None without LSA). `lexical` is None when the query has no indexed term."""

    lexical: np.ndarray | None
    pages: np.ndarray | None
    query_vector: np.ndarray | None
    tfidf_weight: float
    matched: np.ndarray | None = None  # unused since the bounded selection works on dense bounds; kept for callers
    lsa_memo: LsaMemo | None = None  # LSA cosines computed so far, shared by the probe and
    # the filtered search of one lookup; concurrent writers store the same values
    probes: dict[tuple[int, float, float], Probe] = field(default_factory=dict)  # unfiltered selections, by
    # (top_k, min_score, page_weight): what a filtered selection of the same query may be derived from
    chunks: dict[int, Chunk] = field(default_factory=dict)  # the chunks this query's selections made, by row
    static_vector: np.ndarray | None = None  # the query's unit vector for the static part (None: no static part)
    static_weight: float = 0.0
    dense: DenseQuery | None = None  # the dense part's query (None: no dense part asked for)


@dataclass(frozen=True, eq=False)
class DenseQuery:
    """The dense part of one query: its settings (the model's vectors, weight, normalisation, pool) and the
    query's vector (None when encoding it failed: `status` says why)."""

    settings: Any  # retrieval.l1.dense.DenseSettings
    vector: np.ndarray | None
    status: DenseStatus


@dataclass(frozen=True, eq=False)
class Probe:
    """An unfiltered bounded selection's scored rows, their blended scores and its result: a filtered
    selection whose pages are all among them, under the same best page, is that result (see `_derived`)."""

    rows: np.ndarray
    blended: np.ndarray
    chosen_pages: np.ndarray
    candidates: tuple[L1Candidate, ...]


@dataclass(frozen=True, eq=False)
class LsaMemo:
    """A query's LSA cosines computed so far: `values[row]` holds one where `known[row]`. Made per query, so
    it costs only a zeroed mask (a NaN-filled float array wrote 4 MB per query at 1M chunks)."""

    values: np.ndarray  # float32, unwritten where not known
    known: np.ndarray  # bool

    @classmethod
    def of(cls, rows: int) -> LsaMemo:
        return cls(np.empty(rows, dtype=np.float32), np.zeros(rows, dtype=bool))
