"""L1: TF-IDF + TruncatedSVD (LSA) over chunks, plus a page-level score; metadata filter as a row mask.

The score of a chunk blends two similarities, each in [0, 1]:
- lexical: TF-IDF with BM25's saturating term frequency and length normalisation (k1=1.2, b=0.75),
  divided by the query's upper bound (every term at saturation), so 1.0 means a perfect match;
- LSA: cosine of the chunk and query in the SVD space of the sublinear, L2-normalised TF-IDF matrix,
  which scores paraphrases that share no term.
Terms are unigrams plus adjacent pairs (`text.analyze`); a query's pairs weigh half a word in the page
score and nothing in the section score (Hugo dev MRR@10 0.684 -> 0.701, SciFact train nDCG@10 +0.001
against 0.2 in both). Each chunk also carries its page's score:
BM25 (b=0.9) over the whole page (every section, with its breadcrumb), divided by the best page's
score among the rows the filter allows. Natural questions name a page's subject across sections;
the best single section misses that (Hugo dev questions, MRR@10: chunks 0.62, pages 0.67, both 0.70).
Chunks are ranked by `score + page_weight * page_score`, so the pool holds the best pages' sections.
BM25-style weighting rather than plain cosine because cosine over-rewards short chunks: on SciFact train
it gave nDCG@10 0.682 against 0.698 (measured in one run of a tuning script, whole abstracts).
The filter masks rows *before* top-k, so a filtered search returns the best rows of the filtered set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.preprocessing import normalize

from .corpus import Chunk
from .text import analyze, normalize_label

FILTER_KEYS = ("category", "source")
SECTIONS_PER_PAGE = 3  # sections of one page L1 returns; the rest stay out of the pool


@dataclass(frozen=True)
class L1Candidate:
    """One chunk L1 found: its blended score, the lexical (BM25-weighted TF-IDF) score, the LSA cosine,
    and its page's BM25 score relative to the query's best page (1.0: the best page)."""

    chunk: Chunk
    score: float
    lexical_score: float
    lsa_score: float | None
    page_score: float = 0.0


@dataclass(frozen=True)
class L1Result:
    """Candidates best first; how many rows the filter left and how many fell below the minimum score."""

    candidates: tuple[L1Candidate, ...]
    rows_searched: int
    dropped_below_min_score: int


@dataclass(frozen=True, eq=False)
class L1Scores:
    """One query's scores over the whole index: blended, lexical and LSA per chunk, BM25 per page.
    All None when the query has no indexed term."""

    blended: np.ndarray | None
    lexical: np.ndarray | None
    lsa: np.ndarray | None
    pages: np.ndarray | None


def _chunk_text(chunk: Chunk) -> str:
    return f"{chunk.breadcrumb}\n{chunk.text}"


@dataclass
class L1Index:
    """Vectors of every chunk; LSA dimensions are capped by the corpus so tiny knowledge bases work."""

    chunks: Sequence[Chunk]
    svd_dims: int = 256
    random_state: int = 0
    k1: float = 1.2
    b: float = 0.75
    page_b: float = 0.9  # pages vary in length more than sections; stronger length normalisation
    section_pair_weight: float = 0.0  # query word pairs in the section score (0: words only)
    page_pair_weight: float = 0.5  # query word pairs in the page score, as a share of a single word (as in SDM)
    vectorizer: CountVectorizer = field(init=False, repr=False)
    svd: TruncatedSVD | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not self.chunks:
            raise ValueError("L1 needs at least one chunk with text")
        self.vectorizer = CountVectorizer(analyzer=analyze, dtype=np.float32)
        counts = self.vectorizer.fit_transform([_chunk_text(c) for c in self.chunks]).tocsr()
        self.lexical, self.idf = _bm25_weights(counts, self.k1, self.b)
        self._is_pair = np.asarray(["_" in term for term in self.vectorizer.get_feature_names_out()], dtype=bool)
        sources = [c.source for c in self.chunks]
        self.page_sources = tuple(dict.fromkeys(sources))
        page_number = {s: i for i, s in enumerate(self.page_sources)}
        self.page_of_chunk = np.asarray([page_number[s] for s in sources], dtype=np.int64)
        membership = sparse.csr_matrix((np.ones(len(sources), dtype=np.float32),
                                        (self.page_of_chunk, np.arange(len(sources)))),
                                       shape=(len(self.page_sources), len(sources)))
        self.page_lexical, _ = _bm25_weights((membership @ counts).tocsr(), self.k1, self.page_b)
        self.tfidf = TfidfTransformer(sublinear_tf=True).fit(counts)
        dims = min(self.svd_dims, counts.shape[1] - 1, counts.shape[0] - 1)
        self.lsa = None
        if dims >= 2:
            self.svd = TruncatedSVD(n_components=dims, random_state=self.random_state)
            self.lsa = normalize(self.svd.fit_transform(self.tfidf.transform(counts))).astype(np.float32)
            # contiguous copy: svd.transform re-lays components_.T out on every query (5 ms at 26k terms)
            self._projection = np.ascontiguousarray(self.svd.components_.T, dtype=np.float32)
        self._last_scores: tuple[tuple[str, float], L1Scores] | None = None
        self._rows_by_domain = _rows_by(c.domains for c in self.chunks)
        self._rows_by_source = _rows_by((c.source,) for c in self.chunks)

    @property
    def dimensions(self) -> int:
        return 0 if self.lsa is None else self.lsa.shape[1]

    def score(self, query: str, *, tfidf_weight: float = 0.5) -> L1Scores:
        """Every chunk's score for `query` and every page's BM25 score. The last query's scores are kept,
        so a lookup's unfiltered probe and its filtered search score the query once."""
        key = (query, tfidf_weight)
        last = getattr(self, "_last_scores", None)
        if last is not None and last[0] == key:
            return last[1]
        scores = self._score(query, tfidf_weight)
        self._last_scores = (key, scores)  # one tuple assignment: a concurrent caller sees old or new, whole
        return scores

    def _score(self, query: str, tfidf_weight: float) -> L1Scores:
        ids, counts = self._query_terms(query)
        if ids.size == 0:
            return L1Scores(None, None, None, None)
        pairs = self._is_pair[ids]
        weights = np.where(pairs, counts * self.section_pair_weight, counts)
        # column slice of the CSC matrix: cost follows the query terms' postings, not the corpus size
        bound = float(weights @ self.idf[ids]) * (self.k1 + 1)
        tfidf = np.asarray(self.lexical[:, ids] @ weights, dtype=np.float32).ravel() / bound
        lsa = None
        blended = tfidf
        if self.lsa is not None and self.svd is not None:
            # the sublinear TF-IDF of the query, projected (its L2 norm cancels in the final normalisation)
            query_tfidf = ((1.0 + np.log(counts)) * self.tfidf.idf_[ids]).astype(np.float32)
            projected = query_tfidf @ self._projection[ids]
            norm = float(np.linalg.norm(projected))
            lsa = self.lsa @ (projected / norm) if norm > 0 else np.zeros(len(self.chunks), dtype=np.float32)
            blended = tfidf_weight * tfidf + (1 - tfidf_weight) * np.clip(lsa, 0.0, None)
        page_weights = np.where(pairs, counts * self.page_pair_weight, counts)
        pages = np.asarray(self.page_lexical[:, ids] @ page_weights, dtype=np.float64).ravel()
        return L1Scores(blended, tfidf, lsa, pages)

    def _query_terms(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """The query's known term ids and their counts (what CountVectorizer.transform gives, minus its
        input validation, which cost more than the scoring on small bases)."""
        vocabulary = self.vectorizer.vocabulary_
        counted = Counter(t for t in analyze(query) if t in vocabulary)
        ids = np.fromiter((vocabulary[t] for t in counted), dtype=np.int64, count=len(counted))
        return ids, np.fromiter(counted.values(), dtype=np.float64, count=len(counted))

    def select(self, scores: L1Scores, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, page_weight: float = 0.0) -> L1Result:
        """Best `top_k` chunks among the rows the filters allow, at or above `min_score`, ranked by their
        score plus `page_weight` times their page's score relative to the best allowed page."""
        rows = self._mask(filters or {})
        searched = int(rows.sum()) if rows is not None else len(self.chunks)
        if scores.blended is None or searched == 0:
            return L1Result((), searched, 0)
        page = self._relative_page_scores(scores.pages, rows)
        score = scores.blended if rows is None else np.where(rows, scores.blended, -np.inf)
        positive = score > 0
        kept = positive & (score >= min_score - 1e-9)
        dropped = int(positive.sum() - kept.sum())
        top = self._best_pages_sections(np.where(kept, score + page_weight * page, -np.inf), top_k)
        lsa = scores.lsa
        return L1Result(tuple(L1Candidate(self.chunks[i], float(score[i]), float(scores.lexical[i]),
                                          None if lsa is None else float(lsa[i]), float(page[i]))
                              for i in top),
                        searched, dropped)

    def search(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, tfidf_weight: float = 0.5, page_weight: float = 0.0) -> L1Result:
        """`score` then `select`: the best `top_k` chunks for `query` among the rows the filters allow."""
        _check_filter_keys(filters or {})  # an unknown filter key fails before any scoring
        return self.select(self.score(query, tfidf_weight=tfidf_weight), top_k=top_k, filters=filters,
                           min_score=min_score, page_weight=page_weight)

    def _best_pages_sections(self, fused: np.ndarray, top_k: int) -> list[int]:
        """Chunks of the `top_k` best pages (a page ranks by its best chunk), at most SECTIONS_PER_PAGE each,
        best first: a page with many matching sections cannot crowd other pages out of the pool."""
        rows = np.flatnonzero(np.isfinite(fused))
        if rows.size == 0:
            return []
        pages = self.page_of_chunk[rows]
        order = np.lexsort((rows, -fused[rows], pages))  # by page, then best chunk first, ties by position
        rows, pages = rows[order], pages[order]
        first = np.r_[True, pages[1:] != pages[:-1]]
        starts = np.flatnonzero(first)
        rank_in_page = np.arange(rows.size) - np.repeat(starts, np.diff(np.r_[starts, rows.size]))
        leaders = rows[first]  # each page's best chunk
        best_pages = set(pages[first][_top(fused[leaders], top_k)].tolist())
        keep = (rank_in_page < SECTIONS_PER_PAGE) & np.isin(pages, list(best_pages))
        chosen = rows[keep]
        return chosen[np.lexsort((chosen, -fused[chosen]))].tolist()

    def _relative_page_scores(self, pages: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """Per chunk: its page's BM25 score divided by the best allowed page's."""
        if rows is not None:
            allowed = np.zeros(len(self.page_sources), dtype=bool)
            allowed[self.page_of_chunk[rows]] = True
            pages = np.where(allowed, pages, 0.0)
        best = pages.max() if pages.size else 0.0
        per_chunk = pages[self.page_of_chunk]
        return (per_chunk / best).astype(np.float32) if best > 0 else np.zeros_like(per_chunk, dtype=np.float32)

    def _mask(self, filters: Mapping[str, str]) -> np.ndarray | None:
        _check_filter_keys(filters)
        mask = None
        for key, value in filters.items():
            index = self._rows_by_domain if key == "category" else self._rows_by_source
            wanted = normalize_label(value) if key == "category" else str(value)
            rows = np.zeros(len(self.chunks), dtype=bool)
            rows[index.get(wanted, np.empty(0, dtype=np.int64))] = True
            mask = rows if mask is None else mask & rows
        return mask


def _check_filter_keys(filters: Mapping[str, str]) -> None:
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise ValueError(f"unknown L1 filter key(s) {unknown}; supported: {', '.join(FILTER_KEYS)}")


def _bm25_weights(counts: sparse.csr_matrix, k1: float, b: float) -> tuple[sparse.csc_matrix, np.ndarray]:
    """Per chunk and term: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg len)), Lucene's idf."""
    counts = counts.tocsr(copy=True)
    counts.sum_duplicates()  # CountVectorizer may leave a term's count split over several entries
    n_rows = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    average = lengths.mean() if lengths.sum() else 1.0
    doc_freq = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_rows - doc_freq + 0.5) / (doc_freq + 0.5))
    rows = np.repeat(np.arange(n_rows), np.diff(counts.indptr))
    tf = counts.data.astype(np.float64)
    weights = counts.copy().astype(np.float64)
    weights.data = idf[counts.indices] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[rows] / average))
    return weights.tocsc(), idf


def _rows_by(labels_per_row) -> dict[str, np.ndarray]:
    rows: dict[str, list[int]] = {}
    for i, labels in enumerate(labels_per_row):
        for label in labels:
            rows.setdefault(label, []).append(i)
    return {k: np.asarray(v, dtype=np.int64) for k, v in rows.items()}


def _top(score: np.ndarray, k: int) -> list[int]:
    """Positions of the `k` best finite scores, best first, ties by position."""
    finite = np.flatnonzero(np.isfinite(score))
    if finite.size == 0:
        return []
    if finite.size > k:
        finite = finite[np.argpartition(-score[finite], k - 1)[:k]]
    return sorted(finite.tolist(), key=lambda i: (-score[i], i))
