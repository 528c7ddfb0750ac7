"""L1: TF-IDF + TruncatedSVD (LSA) over chunks, plus a page-level score; metadata filter as a page mask.

The score of a chunk blends two similarities, each in [0, 1]:
- lexical: TF-IDF with BM25's saturating term frequency and length normalisation (k1=1.2, b=0.75),
  divided by the query's upper bound (every term at saturation), so 1.0 means a perfect match;
- LSA: cosine of the chunk and query in the SVD space of the sublinear, L2-normalised TF-IDF matrix,
  which scores paraphrases that share no term.
Sections are scored on unigrams (`text.tokenize`); pages on unigrams plus adjacent pairs, a pair
weighing half a word (Hugo dev MRR@10 0.684 -> 0.701 against no pairs). Each chunk also carries its
page's score: BM25 (b=0.9) over the whole page (every section, with its breadcrumb), divided by the best
page's score among the pages the filter allows. Natural questions name a page's subject across sections;
the best single section misses that (Hugo dev questions, MRR@10: chunks 0.62, pages 0.67, both 0.70).
Chunks are ranked by `score + page_weight * page_score`, so the pool holds the best pages' sections.
BM25-style weighting rather than plain cosine because cosine over-rewards short chunks: on SciFact train
it gave nDCG@10 0.682 against 0.698.

Selection is exact but does not scan every chunk's LSA vector. A page's best possible fused score is
`page_weight * page_score + w * (its best lexical score) + (1 - w)`, since an LSA cosine is at most 1.
Pages are scored whole, best bound first, in growing blocks, until the `top_k`-th best page found beats
every unscored page's bound (`select(..., exact=True)` scans everything and is the reference). A filter
is a set of pages, so a filtered query scores only its category's pages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import build_progress as bp
from .chunk_store import TextColumn
from .corpus import Chunk
from .index_config import IndexConfig
from .lsa_fit import fit_components
from .postings import postings_sum
from .terms import TermIndex, count_terms, query_terms
from .text import normalize_label

FILTER_KEYS = ("category", "source")
SECTIONS_PER_PAGE = 3  # sections of one page L1 returns; the rest stay out of the pool
FIRST_BLOCK_ROWS = 512  # rows with the best bounds scored first (at least 16 per requested page)


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
    """Candidates best first; how many rows the filter left, how many fell below the minimum score (rows
    scored below it, plus rows with a lexical match proved below it unscored; rows with no lexical match
    are counted only when scored), and how many rows had their LSA vector scored (every allowed row when
    exact)."""

    candidates: tuple[L1Candidate, ...]
    rows_searched: int
    dropped_below_min_score: int
    rows_scored: int = 0


@dataclass(frozen=True, eq=False)
class L1Scores:
    """One query's cheap scores over the whole index: lexical per chunk, BM25 per page, and the query's
    unit vector in LSA space (None without LSA). `lexical` is None when the query has no indexed term."""

    lexical: np.ndarray | None
    pages: np.ndarray | None
    query_vector: np.ndarray | None
    tfidf_weight: float
    matched: np.ndarray | None = None  # rows with a lexical score above 0
    lsa_memo: np.ndarray | None = None  # LSA cosines computed so far (NaN: not yet), shared by the probe and
    # the filtered search of one lookup; concurrent writers store the same values


@dataclass(frozen=True, eq=False)
class L1Arrays:
    """Everything L1 searches with, as plain arrays (what the cache stores; no fitted objects)."""

    unigram_blob: np.ndarray  # uint8: the unigrams' UTF-8 bytes (see chunk_store.TextColumn)
    unigram_offsets: np.ndarray  # int64
    unigram_hashes: np.ndarray  # int64, sorted (see terms.TermIndex)
    unigram_ids: np.ndarray  # int64: the unigram id of each sorted hash
    pair_keys: np.ndarray  # int64, sorted: first * number of unigrams + second
    section_indptr: np.ndarray  # CSC by unigram: BM25 weights per chunk
    section_rows: np.ndarray
    section_weights: np.ndarray
    section_idf: np.ndarray  # float64, per unigram
    page_indptr: np.ndarray  # CSC by unigram-then-pair: BM25 weights per page
    page_rows: np.ndarray
    page_weights: np.ndarray
    page_idf: np.ndarray
    lsa_idf: np.ndarray  # float32, smoothed idf of the sublinear TF-IDF the SVD saw
    projection: np.ndarray  # float32 (terms the SVD saw, dims): the SVD's components, transposed
    projection_row: np.ndarray  # int32 per unigram: its row of `projection`, -1 for a term the SVD never saw
    lsa: np.ndarray  # float32 (chunks, dims), rows L2-normalised
    page_of_chunk: np.ndarray  # int64 per chunk
    page_row_starts: np.ndarray  # int64 (pages + 1): chunks of page p are page_row_order[starts[p]:starts[p+1]]
    page_row_order: np.ndarray


class L1Index:
    """Vectors of every chunk; LSA dimensions are capped by the corpus so tiny knowledge bases work."""

    def __init__(self, chunks: Sequence[Chunk], config: IndexConfig | None = None, *, svd_dims: int | None = None,
                 arrays: L1Arrays | None = None, progress: bp.Progress | None = None) -> None:
        if not chunks:
            raise ValueError("L1 needs at least one chunk with text")
        config = config or IndexConfig()
        if svd_dims is not None:
            config = IndexConfig(**{**config.to_dict(), "svd_dims": svd_dims})
        self.chunks = chunks
        self.config = config
        self.arrays = arrays if arrays is not None else build_arrays(chunks, config, progress)
        a = self.arrays
        self.vocabulary = TermIndex(TextColumn(a.unigram_blob, a.unigram_offsets), a.unigram_hashes, a.unigram_ids)
        # one chunk per page names its source and domains (a page's chunks share them)
        first_chunks = [chunks[int(row)] for row in a.page_row_order[a.page_row_starts[:-1]]]
        self.page_sources = tuple(c.source for c in first_chunks)
        self.n_pages = len(self.page_sources)
        self._pages_by_domain = _pages_by((c.domains for c in first_chunks), self.n_pages)
        self._page_by_source = {source: page for page, source in enumerate(self.page_sources)}
        self._page_sizes = np.diff(a.page_row_starts)
        self._last_scores: tuple[tuple[str, float], L1Scores] | None = None

    @property
    def dimensions(self) -> int:
        return int(self.arrays.lsa.shape[1])

    def score(self, query: str, *, tfidf_weight: float = 0.5) -> L1Scores:
        """The query's lexical score per chunk, BM25 per page and LSA query vector. The last query's scores
        are kept, so a lookup's unfiltered probe and its filtered search score the query once."""
        key = (query, tfidf_weight)
        last = self._last_scores
        if last is not None and last[0] == key:
            return last[1]
        scores = self._score(query, tfidf_weight)
        self._last_scores = (key, scores)  # one tuple assignment: a concurrent caller sees old or new, whole
        return scores

    def _score(self, query: str, tfidf_weight: float) -> L1Scores:
        a = self.arrays
        ids, counts = query_terms(query, self.vocabulary, a.pair_keys)
        if ids.size == 0:
            return L1Scores(None, None, None, tfidf_weight)
        n_unigrams = len(self.vocabulary)
        words = ids < n_unigrams
        word_ids, word_counts = ids[words], counts[words]
        lexical = np.zeros(len(self.chunks), dtype=np.float32)
        if word_ids.size:
            bound = float(word_counts @ a.section_idf[word_ids]) * (self.config.k1 + 1)
            lexical = postings_sum(a.section_indptr, a.section_rows, a.section_weights, word_ids,
                                    word_counts / bound, len(self.chunks)).astype(np.float32)
        page_counts = np.where(words, counts, counts * self.config.page_pair_weight)
        pages = postings_sum(a.page_indptr, a.page_rows, a.page_weights, ids, page_counts, self.n_pages)
        query_vector = None
        if self.dimensions and word_ids.size:
            # the sublinear TF-IDF of the query, projected (its L2 norm cancels in the final normalisation)
            query_tfidf = ((1.0 + np.log(word_counts)) * a.lsa_idf[word_ids]).astype(np.float32)
            rows = a.projection_row[word_ids]
            projected = query_tfidf[rows >= 0] @ a.projection[rows[rows >= 0]]
            norm = float(np.linalg.norm(projected))
            query_vector = projected / norm if norm > 0 else None
        memo = np.full(len(self.chunks), np.nan, dtype=np.float32) if query_vector is not None else None
        return L1Scores(lexical, pages, query_vector, tfidf_weight, np.flatnonzero(lexical), memo)

    def lsa_scores(self, scores: L1Scores, rows: np.ndarray) -> np.ndarray:
        """LSA cosines of `rows` (zeros without LSA or a query vector); each row is computed once per query."""
        if scores.query_vector is None:
            return np.zeros(rows.size, dtype=np.float32)
        memo = scores.lsa_memo
        if memo is None:
            return self.arrays.lsa[rows] @ scores.query_vector
        values = memo[rows]
        todo = np.isnan(values)
        if todo.any():
            fresh = rows[todo]
            computed = self.arrays.lsa[fresh] @ scores.query_vector
            memo[fresh] = computed
            values[todo] = computed
        return values

    def select(self, scores: L1Scores, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, page_weight: float = 0.0, exact: bool = False) -> L1Result:
        """Best `top_k` pages' best sections among the pages the filters allow, each at or above `min_score`,
        ranked by their score plus `page_weight` times their page's score relative to the best allowed page.
        `exact` scores every allowed chunk (the reference the bounded selection must equal)."""
        allowed = self._allowed_pages(filters or {})
        searched = len(self.chunks) if allowed is None else int(self._page_sizes[allowed].sum())
        if scores.lexical is None or searched == 0:
            return L1Result((), searched, 0, 0)
        page_relative = _relative(scores.pages, allowed)
        if exact:
            rows = (np.arange(len(self.chunks)) if allowed is None else self._rows_of(allowed))
            lsa = self.lsa_scores(scores, rows)
            proved_below = 0
        else:
            rows, lsa, proved_below = self._bounded_rows(scores, page_relative, allowed, top_k, page_weight,
                                                         min_score)
        w = scores.tfidf_weight
        blended = w * scores.lexical[rows] + (1 - w) * np.clip(lsa, 0.0, None)
        positive = blended > 0
        kept = positive & (blended >= min_score - 1e-9)
        fused = blended + page_weight * page_relative[self.arrays.page_of_chunk[rows]]
        chosen = _best_pages_sections(rows[kept], fused[kept], self.arrays.page_of_chunk, top_k)
        order = np.argsort(rows, kind="stable")
        positions = order[np.searchsorted(rows[order], chosen)] if chosen else []
        has_lsa = scores.query_vector is not None
        candidates = []
        for row, i in zip(chosen, np.asarray(positions).tolist(), strict=True):
            candidates.append(L1Candidate(self.chunks[row], float(blended[i]), float(scores.lexical[row]),
                                          float(lsa[i]) if has_lsa else None,
                                          float(page_relative[self.arrays.page_of_chunk[row]])))
        dropped = int(positive.sum() - kept.sum()) + proved_below
        return L1Result(tuple(candidates), searched, dropped, int(rows.size))

    def search(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, tfidf_weight: float = 0.5, page_weight: float = 0.0,
               exact: bool = False) -> L1Result:
        """`score` then `select`: the best `top_k` pages' sections for `query` among the allowed pages."""
        _check_filter_keys(filters or {})  # an unknown filter key fails before any scoring
        return self.select(self.score(query, tfidf_weight=tfidf_weight), top_k=top_k, filters=filters,
                           min_score=min_score, page_weight=page_weight, exact=exact)

    def _bounded_rows(self, scores: L1Scores, page_relative: np.ndarray, allowed: np.ndarray | None, top_k: int,
                      page_weight: float, min_score: float) -> tuple[np.ndarray, np.ndarray, int]:
        """The rows that can be among the result, with their LSA cosines, and how many rows with a lexical
        match were proved below the minimum score; every other row is proved unable.

        A row's fused score is at most `w * lexical + (1 - w) + page_weight * page score` (a cosine is at
        most 1). Round one scores the rows with the best bounds; its `top_k`-th best page gives a threshold
        T, and round two scores every row whose bound reaches T, which makes the `top_k` pages exact. Then
        each chosen page's rows that could still be among its best SECTIONS_PER_PAGE are scored too.
        """
        a, w = self.arrays, scores.tfidf_weight
        lexical = scores.lexical
        cap = (1 - w) if scores.query_vector is not None else 0.0
        floor = max(min_score - 1e-9, 0.0)
        matched = scores.matched if scores.matched is not None else np.flatnonzero(lexical)
        pages = np.arange(self.n_pages) if allowed is None else allowed
        if allowed is not None:
            inside = np.zeros(self.n_pages, dtype=bool)
            inside[allowed] = True
            matched = matched[inside[a.page_of_chunk[matched]]]
        blend_bound = w * lexical[matched] + cap
        reachable = (blend_bound >= floor) & (blend_bound > 0)
        proved_below = int(reachable.size - reachable.sum())  # matched rows that cannot reach the minimum
        matched = matched[reachable]
        matched_bound = blend_bound[reachable] + page_weight * page_relative[a.page_of_chunk[matched]]
        # rows without a lexical match blend to at most `cap`: one bound per page
        unmatched_pages = pages if (cap > 0 and cap >= floor) else np.empty(0, dtype=np.int64)
        unmatched_bound = cap + page_weight * page_relative[unmatched_pages]

        def rows_reaching(threshold: float) -> np.ndarray:
            extra = self._rows_of(unmatched_pages[unmatched_bound >= threshold])
            return np.concatenate([matched[matched_bound >= threshold], extra[lexical[extra] == 0]])

        first = max(FIRST_BLOCK_ROWS, 16 * top_k)
        threshold = (-np.partition(-matched_bound, first - 1)[first - 1] if matched.size > first
                     else (matched_bound.min() if matched.size else floor))
        rows = rows_reaching(threshold)
        lsa, fused, kept = self._fused(scores, rows, page_relative, page_weight, floor)
        kth = _kth_page_leader(a.page_of_chunk[rows[kept]], fused[kept], top_k)
        if kth < threshold:
            rows = rows_reaching(max(kth, floor))
            lsa, fused, kept = self._fused(scores, rows, page_relative, page_weight, floor)
        extra = self._section_candidates(scores, rows, fused, kept, page_relative, page_weight, floor, top_k)
        if extra.size:
            extra_lsa = self.lsa_scores(scores, extra)
            rows, lsa = np.concatenate([rows, extra]), np.concatenate([lsa, extra_lsa])
        return rows, lsa, proved_below

    def _fused(self, scores: L1Scores, rows: np.ndarray, page_relative: np.ndarray, page_weight: float,
               floor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """LSA cosines, fused scores and the kept mask (blend above 0 and at least the minimum) of `rows`."""
        w = scores.tfidf_weight
        lsa = self.lsa_scores(scores, rows)
        blended = w * scores.lexical[rows] + (1 - w) * np.clip(lsa, 0.0, None)
        kept = (blended > 0) & (blended >= floor)
        return lsa, blended + page_weight * page_relative[self.arrays.page_of_chunk[rows]], kept

    def _section_candidates(self, scores: L1Scores, rows: np.ndarray, fused: np.ndarray, kept: np.ndarray,
                            page_relative: np.ndarray, page_weight: float, floor: float, top_k: int) -> np.ndarray:
        """Unscored rows of the chosen pages whose bound reaches their page's SECTIONS_PER_PAGE-th best."""
        a, w = self.arrays, scores.tfidf_weight
        cap = (1 - w) if scores.query_vector is not None else 0.0
        kept_rows, kept_fused = rows[kept], fused[kept]
        if kept_rows.size == 0:
            return np.empty(0, dtype=np.int64)
        pages = a.page_of_chunk[kept_rows]
        order = np.lexsort((kept_rows, -kept_fused, pages))
        pages, ranked_fused = pages[order], kept_fused[order]
        first = np.r_[True, pages[1:] != pages[:-1]]
        starts = np.flatnonzero(first)
        leader_pages, leader_scores = pages[first], ranked_fused[first]
        chosen = leader_pages[np.lexsort((leader_pages, -leader_scores))[:top_k]]
        counts = np.diff(np.r_[starts, pages.size])
        needed = np.full(self.n_pages, -np.inf)
        full = counts >= SECTIONS_PER_PAGE
        needed[leader_pages[full]] = ranked_fused[starts[full] + SECTIONS_PER_PAGE - 1]
        candidates = self._rows_of(chosen)
        scored = np.zeros(len(self.chunks), dtype=bool) if candidates.size else None
        if scored is None:
            return candidates
        scored[rows] = True
        candidates = candidates[~scored[candidates]]
        lexical = scores.lexical[candidates]
        bound = w * lexical + cap + page_weight * page_relative[a.page_of_chunk[candidates]]
        possible = ((w * lexical + cap) >= floor) & ((w * lexical + cap) > 0)
        return candidates[possible & (bound >= needed[a.page_of_chunk[candidates]])]

    def _rows_of(self, pages: np.ndarray) -> np.ndarray:
        a = self.arrays
        starts, ends = a.page_row_starts[pages], a.page_row_starts[pages + 1]
        lengths = ends - starts
        if not lengths.sum():
            return np.empty(0, dtype=np.int64)
        offsets = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        return a.page_row_order[np.arange(lengths.sum()) + offsets]

    def _allowed_pages(self, filters: Mapping[str, str]) -> np.ndarray | None:
        _check_filter_keys(filters)
        allowed = None
        for key, value in filters.items():
            if key == "category":
                pages = self._pages_by_domain.get(normalize_label(value), np.empty(0, dtype=np.int64))
            else:
                page = self._page_by_source.get(str(value))
                pages = np.asarray([] if page is None else [page], dtype=np.int64)
            allowed = pages if allowed is None else np.intersect1d(allowed, pages)
        return allowed


def build_arrays(chunks: Sequence[Chunk], config: IndexConfig, progress: bp.Progress | None = None) -> L1Arrays:
    """Count terms, weight them (BM25 for sections and pages) and fit the LSA space; `progress` gets
    each stage's fractions (retrieval.build_progress)."""
    sources = [c.source for c in chunks]
    page_number: dict[str, int] = {}
    page_of_chunk = np.fromiter((page_number.setdefault(s, len(page_number)) for s in sources), dtype=np.int64,
                                count=len(sources))
    texts = bp.counted((f"{c.breadcrumb}\n{c.text}" for c in chunks), len(chunks), progress, bp.VECTORISING,
                       then=bp.WEIGHTING)
    counts = count_terms(texts, page_of_chunk, len(page_number), lambda f: bp.report(progress, bp.WEIGHTING, 0.95 * f))
    if counts.chunks.nnz == 0:
        raise ValueError("L1 needs at least one chunk with an indexable term")
    section_weights, section_idf = _bm25_weights(counts.chunks, config.k1, config.b)
    page_weights, page_idf = _bm25_weights(counts.pages, config.k1, config.page_b)
    bp.report(progress, bp.WEIGHTING, 1.0)
    lsa_idf, projection, projection_row, lsa = _fit_lsa(counts.chunks, config, progress)
    order = np.argsort(page_of_chunk, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(page_of_chunk, minlength=len(page_number)))].astype(np.int64)
    terms = TermIndex.of(counts.unigrams)
    column = TextColumn.of(counts.unigrams)
    return L1Arrays(column.blob, column.offsets, terms.hashes, terms.ids, counts.pair_keys, section_weights.indptr.astype(np.int64),
                    section_weights.indices, section_weights.data.astype(np.float32), section_idf,
                    page_weights.indptr.astype(np.int64), page_weights.indices,
                    page_weights.data.astype(np.float32), page_idf, lsa_idf, projection, projection_row, lsa, page_of_chunk,
                    starts, order.astype(np.int64))


def _fit_lsa(counts, config: IndexConfig, progress: bp.Progress | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sublinear, smoothed-idf, L2-normalised TF-IDF; TruncatedSVD fitted on a row sample (the LSA space
    of 20k sections matches that of all of them closely, and a fit is quadratic in what it sees);
    then every chunk projected and L2-normalised."""
    from sklearn.preprocessing import normalize

    bp.report(progress, bp.SVD, 0.0)  # the TF-IDF sample, then TruncatedSVD's steps (retrieval.lsa_fit)
    n_rows, n_terms = counts.shape
    doc_freq = np.bincount(counts.indices, minlength=n_terms)
    idf = (np.log((1.0 + n_rows) / (1.0 + doc_freq)) + 1.0).astype(np.float32)
    tfidf = counts.astype(np.float32, copy=True)
    tfidf.data = (1.0 + np.log(tfidf.data)) * idf[tfidf.indices]
    tfidf = normalize(tfidf, copy=False)
    rng = np.random.default_rng(config.random_state)
    sample = (np.arange(n_rows) if n_rows <= config.svd_sample_rows
              else np.sort(rng.choice(n_rows, config.svd_sample_rows, replace=False)))
    fitted = tfidf[sample]
    # fit on the terms the sample holds; from a sampled (large) base, only those in two sampled chunks or more:
    # a term seen once shapes no shared direction, and at 100k chunks they are most of the vocabulary
    least = 1 if sample.size == n_rows else 2
    seen = np.flatnonzero(np.bincount(fitted.indices, minlength=n_terms) >= least)
    dims = min(config.svd_dims, seen.size - 1, sample.size - 1)
    projection_row = np.full(n_terms, -1, dtype=np.int32)
    if dims < 2:
        bp.report(progress, bp.SVD, 1.0)  # too few chunks or terms for an LSA space: nothing to fit
        return idf, np.zeros((0, 0), dtype=np.float32), projection_row, np.zeros((n_rows, 0), dtype=np.float32)
    components = fit_components(fitted[:, seen], dims, config.random_state, lambda f: bp.report(progress, bp.SVD, f))
    projection = np.ascontiguousarray(components.T, dtype=np.float32)
    projection_row[seen] = np.arange(seen.size, dtype=np.int32)
    seen_only = tfidf[:, seen].tocsr()  # the terms the SVD never saw project to nothing
    lsa = np.empty((n_rows, dims), dtype=np.float32)
    for start in bp.counted(range(0, n_rows, 50_000), -(-n_rows // 50_000), progress, bp.PROJECTING):
        part = np.asarray(seen_only[start:start + 50_000] @ projection, dtype=np.float32)
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        lsa[start:start + 50_000] = part / np.where(norms > 0, norms, 1.0)
    return idf, projection, projection_row, lsa


def _best_pages_sections(rows: np.ndarray, fused: np.ndarray, page_of_chunk: np.ndarray, top_k: int) -> list[int]:
    """Chunks of the `top_k` best pages (a page ranks by its best chunk, ties by page), at most
    SECTIONS_PER_PAGE each, best first (ties by position): a page with many matching sections cannot crowd
    other pages out of the pool."""
    if rows.size == 0:
        return []
    pages = page_of_chunk[rows]
    order = np.lexsort((rows, -fused, pages))  # by page, then best chunk first, ties by position
    rows, pages, fused = rows[order], pages[order], fused[order]
    first = np.r_[True, pages[1:] != pages[:-1]]
    starts = np.flatnonzero(first)
    rank_in_page = np.arange(rows.size) - np.repeat(starts, np.diff(np.r_[starts, rows.size]))
    leader_pages, leader_scores = pages[first], fused[first]
    best = np.lexsort((leader_pages, -leader_scores))[:top_k]
    keep = (rank_in_page < SECTIONS_PER_PAGE) & np.isin(pages, leader_pages[best])
    chosen, scores = rows[keep], fused[keep]
    return chosen[np.lexsort((chosen, -scores))].tolist()


def _kth_page_leader(pages: np.ndarray, fused: np.ndarray, k: int) -> float:
    """The `k`-th best page's best fused score among scored rows (-inf when fewer than `k` pages)."""
    if pages.size == 0:
        return -np.inf
    best = np.full(int(pages.max()) + 1, -np.inf)
    np.maximum.at(best, pages, fused)
    leaders = best[np.isfinite(best)]
    return float(-np.partition(-leaders, k - 1)[k - 1]) if leaders.size >= k else -np.inf


def _relative(pages: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """Per page: its BM25 score divided by the best allowed page's (pages outside the filter: 0)."""
    if allowed is not None:
        kept = np.zeros_like(pages)
        kept[allowed] = pages[allowed]
        pages = kept
    best = pages.max() if pages.size else 0.0
    return (pages / best).astype(np.float32) if best > 0 else np.zeros(pages.shape, dtype=np.float32)


def _check_filter_keys(filters: Mapping[str, str]) -> None:
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise ValueError(f"unknown L1 filter key(s) {unknown}; supported: {', '.join(FILTER_KEYS)}")


def _bm25_weights(counts, k1: float, b: float):
    """Per row and term of a scipy CSR matrix: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg len)),
    Lucene's idf; the weights as a CSC matrix, and the idf."""
    from scipy import sparse

    n_rows = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1), dtype=np.float64).ravel()
    average = lengths.mean() if lengths.sum() else 1.0
    doc_freq = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_rows - doc_freq + 0.5) / (doc_freq + 0.5))
    norm = (k1 * (1 - b + b * lengths / average)).astype(np.float32)  # per row; float32 keeps 1M chunks small
    tf = counts.data.astype(np.float32)
    values = tf * np.float32(k1 + 1) / (tf + np.repeat(norm, np.diff(counts.indptr)))
    values *= idf[counts.indices].astype(np.float32)
    weights = sparse.csr_matrix((values, counts.indices, counts.indptr), shape=counts.shape)
    return weights.tocsc(), idf


def _pages_by(domains_per_page, n_pages: int) -> dict[str, np.ndarray]:
    pages: dict[str, list[int]] = {}
    for page, domains in enumerate(domains_per_page):
        for domain in domains:
            pages.setdefault(domain, []).append(page)
    return {k: np.asarray(v, dtype=np.int64) for k, v in pages.items()}
