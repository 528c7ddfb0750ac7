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

With an embedder (retrieval/l1/embedder.py) and a static weight, the pool is then re-ranked by each page's
static score (l1_static.py): `score += weight * spread * z`, z and the spread of fused scores taken over
the pool's 20 best pages. The pool itself is chosen as without it, so its selection stays exact.

Selection is exact but does not scan every chunk's LSA vector (l1_bounded.py): a row's fused score is at
most `w * lexical + (1 - w) * (a bound of its cosine) + page_weight * page score`; rows are scored best
bound first until the `top_k`-th best page found beats every unscored row's bound (`select(..., exact=True)`
scans everything and is the reference). A filter is a set of pages, so a filtered query scores only its
category's rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from retrieval.index import progress as bp
from retrieval.index.chunk_store import TextColumn
from retrieval.index.config import IndexConfig
from retrieval.index.postings import postings_sum
from retrieval.kb.model import Chunk
from retrieval.l1.bounded import LsaHeads, PageRanking, Universe, bounded_rows
from retrieval.l1.embedder import Embedder, EmbedderInfo, EmbedderWarning, LazyEmbedder, is_static
from retrieval.l1.lsa_fit import fit_components
from retrieval.l1.static import composed_vectors, embedded_vectors, page_vectors, pool_boosts
from retrieval.l1.static import query_vector as static_query_vector  # `_score` has an LSA `query_vector`
from retrieval.l1.terms import TermIndex, count_terms, query_terms
from retrieval.text.analysis import normalize_label

FILTER_KEYS = ("category", "source")
SECTIONS_PER_PAGE = 3  # sections of one page L1 returns; the rest stay out of the pool
FIRST_BLOCK_ROWS = 256  # rows with the best bounds scored first, at least ROWS_PER_PAGE per requested page (at 100k,
# 256-320 rows took 12% less time per search than 512: the first block is most of the rows scored)
ROWS_PER_PAGE = 16
FULL_PASS_SHARE = 0.2  # past this share of the rows, score them all in one pass (at 100k: 8 ms, against 25 ms
# to gather two thirds of them)


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


@dataclass(frozen=True, eq=False)
class L1Scores:
    """One query's cheap scores over the whole index: lexical per chunk, BM25 per page, and the query's
    unit vector in LSA space (None without LSA). `lexical` is None when the query has no indexed term."""

    lexical: np.ndarray | None
    pages: np.ndarray | None
    query_vector: np.ndarray | None
    tfidf_weight: float
    matched: np.ndarray | None = None  # unused since the bounded selection works on dense bounds; kept for callers
    lsa_memo: np.ndarray | None = None  # LSA cosines computed so far (NaN: not yet), shared by the probe and
    # the filtered search of one lookup; concurrent writers store the same values
    probes: dict[tuple[int, float, float], Probe] = field(default_factory=dict)  # unfiltered selections, by
    # (top_k, min_score, page_weight): what a filtered selection of the same query may be derived from
    chunks: dict[int, Chunk] = field(default_factory=dict)  # the chunks this query's selections made, by row
    static_vector: np.ndarray | None = None  # the query's unit vector for the static part (None: no static part)
    static_weight: float = 0.0


@dataclass(frozen=True, eq=False)
class Probe:
    """An unfiltered bounded selection's scored rows, their blended scores and its result: a filtered
    selection whose pages are all among them, under the same best page, is that result (see `_derived`)."""

    rows: np.ndarray
    blended: np.ndarray
    chosen_pages: np.ndarray
    candidates: tuple[L1Candidate, ...]


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
    static_vectors: np.ndarray  # float16 (chunks, d), unit rows: the static part (l1_static.py); d = 0: none
    static_embedder: np.ndarray  # uint8: the name of the embedder that made them, UTF-8 (empty: none)
    static_pages: np.ndarray  # float16 (pages, d), unit rows: each page's whole text (its sections' vectors summed)


class L1Index:
    """Vectors of every chunk; LSA dimensions are capped by the corpus so tiny knowledge bases work."""

    def __init__(self, chunks: Sequence[Chunk], config: IndexConfig | None = None, *, svd_dims: int | None = None,
                 arrays: L1Arrays | None = None, progress: bp.Progress | None = None,
                 embedder: Embedder | LazyEmbedder | None = None) -> None:
        if not chunks:
            raise ValueError("L1 needs at least one chunk with text")
        config = config or IndexConfig()
        if svd_dims is not None:
            config = IndexConfig(**{**config.to_dict(), "svd_dims": svd_dims})
        self.chunks = chunks
        self.config = config
        self.arrays = arrays if arrays is not None else build_arrays(chunks, config, progress, _loaded(embedder))
        a = self.arrays
        dimensions = int(a.static_vectors.shape[1])
        self.embedder = embedder if dimensions else None  # a lazy one loads at the first static search
        self.embedder_info = EmbedderInfo(bytes(a.static_embedder).decode("utf-8"), dimensions) if dimensions else None
        self.vocabulary = TermIndex(TextColumn(a.unigram_blob, a.unigram_offsets), a.unigram_hashes, a.unigram_ids)
        # one chunk per page names its source and domains (a page's chunks share them)
        first_chunks = [chunks[int(row)] for row in a.page_row_order[a.page_row_starts[:-1]]]
        self.page_sources = tuple(c.source for c in first_chunks)
        self.n_pages = len(self.page_sources)
        self._pages_by_domain = _pages_by((c.domains for c in first_chunks), self.n_pages)
        self._page_by_source = {source: page for page, source in enumerate(self.page_sources)}
        self._page_sizes = np.diff(a.page_row_starts)
        rows_by_page = bool(np.array_equal(a.page_row_order, np.arange(len(a.page_row_order))))
        self._everything = Universe(None if rows_by_page else a.page_row_order, None, self._page_sizes)
        self._universes: dict[tuple[tuple[str, str], ...], Universe] = {}
        self._last_scores: tuple[tuple[str, float], L1Scores] | None = None
        self._lsa_heads: LsaHeads | None = None

    @property
    def dimensions(self) -> int:
        return int(self.arrays.lsa.shape[1])

    def score(self, query: str, *, tfidf_weight: float = 0.5, static_weight: float = 0.0) -> L1Scores:
        """The query's lexical score per chunk, BM25 per page, LSA query vector and (with `static_weight` and
        a static part) static query vector. The last query's scores are kept, so a lookup's unfiltered
        probe and its filtered search score the query once."""
        key = (query, tfidf_weight, static_weight)
        last = self._last_scores
        if last is not None and last[0] == key:
            return last[1]
        scores = self._score(query, tfidf_weight, static_weight)
        self._last_scores = (key, scores)  # one tuple assignment: a concurrent caller sees old or new, whole
        return scores

    def _score(self, query: str, tfidf_weight: float, static_weight: float) -> L1Scores:
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
        static_vector = None
        if static_weight > 0 and self.embedder_info is not None:
            static_vector = static_query_vector(_loaded(self.embedder), query)
        return L1Scores(lexical, pages, query_vector, tfidf_weight, None, memo, static_vector=static_vector,
                        static_weight=static_weight)

    def lsa_scores(self, scores: L1Scores, rows: np.ndarray) -> np.ndarray:
        """LSA cosines of `rows` (zeros without LSA or a query vector); each row is computed once per query."""
        if scores.query_vector is None:
            return np.zeros(rows.size, dtype=np.float32)
        memo = scores.lsa_memo
        if memo is None:
            return _cosines(self.arrays.lsa, rows, scores.query_vector)
        values = memo[rows]
        todo = np.isnan(values)
        if todo.any():
            fresh = rows[todo]
            if fresh.size > FULL_PASS_SHARE * memo.size:  # one pass over the contiguous matrix is cheaper
                memo[:] = _cosines(self.arrays.lsa, slice(None), scores.query_vector)
                return memo[rows]
            computed = _cosines(self.arrays.lsa, fresh, scores.query_vector)
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
        probe = scores.probes.get((top_k, min_score, page_weight)) if allowed is not None and not exact else None
        derived = self._derived(scores, probe, allowed, searched, min_score) if probe is not None else None
        if derived is not None:
            return derived
        if exact:
            rows = (np.arange(len(self.chunks)) if allowed is None else self.rows_of(allowed))
            lsa = self.lsa_scores(scores, rows)
            proved_below = 0
        else:
            bounded = bounded_rows(self, scores, page_relative, self._universe(filters or {}, allowed), top_k=top_k,
                                   page_weight=page_weight, min_score=min_score,
                                   first=max(FIRST_BLOCK_ROWS, ROWS_PER_PAGE * top_k), sections=SECTIONS_PER_PAGE)
            rows, lsa, proved_below = bounded.rows, bounded.lsa, bounded.proved_below
        w = scores.tfidf_weight
        blended = w * scores.lexical[rows] + (1 - w) * np.clip(lsa, 0.0, None)
        positive = blended > 0
        kept = positive & (blended >= min_score - 1e-9)
        # the best pages (by their best chunk, ties by page), at most SECTIONS_PER_PAGE chunks each, best first
        # (ties by position): a page with many matching sections cannot crowd other pages out of the pool
        ranking = None if exact else bounded.ranking  # the bounded selection's, when its rows are these
        if ranking is None:
            fused = blended + page_weight * page_relative[self.arrays.page_of_chunk[rows]]
            ranking = PageRanking.of(rows[kept], fused[kept], self.arrays.page_of_chunk, top_k)
        chosen = ranking.chosen(SECTIONS_PER_PAGE)
        dropped = int(positive.sum() - kept.sum()) + proved_below
        candidates = self._candidates(chosen, rows, blended, lsa if scores.query_vector is not None else None,
                                      scores, page_relative)
        static = scores.static_vector is not None and scores.static_weight > 0
        if static:
            candidates = self._with_static(candidates, chosen, scores, page_weight)
        if allowed is None and not exact:
            chosen_pages = np.unique(self.arrays.page_of_chunk[chosen])
            scores.probes[(top_k, min_score, page_weight)] = Probe(rows, blended, chosen_pages, candidates)
        return L1Result(candidates, searched, dropped, int(rows.size), self.embedder_info if static else None)

    def from_probe(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None, min_score: float = 0.0,
                   tfidf_weight: float = 0.5, page_weight: float = 0.0, static_weight: float = 0.0) -> L1Result | None:
        """`search`'s filtered result when the query's unfiltered selection (the lookup's probe, just made)
        provably gives it, else None: no scoring, so a caller may run it without a time limit."""
        last = self._last_scores
        if not filters or last is None or last[0] != (query, tfidf_weight, static_weight):
            return None
        scores = last[1]
        probe = scores.probes.get((top_k, min_score, page_weight))
        allowed = self._allowed_pages(filters)
        if probe is None or allowed is None or allowed.size == 0:
            return None
        return self._derived(scores, probe, allowed, int(self._page_sizes[allowed].sum()), min_score)

    def _derived(self, scores: L1Scores, probe: Probe, allowed: np.ndarray, searched: int,
                 min_score: float) -> L1Result | None:
        """The filtered selection, read off the unfiltered one when provably the same: the best page is
        allowed (so page scores, relative to it, are unchanged) and so is every page the probe chose (so
        they are the allowed pages' best too, with the same sections). None otherwise.
        Counts are the probe's rows inside the filter (what a search scoring those rows reports)."""
        pages = scores.pages
        if pages[allowed].max() != pages.max():
            return None
        inside = np.zeros(self.n_pages, dtype=bool)
        inside[allowed] = True
        if not inside[probe.chosen_pages].all():
            return None
        rows_inside = inside[self.arrays.page_of_chunk[probe.rows]]
        blended = probe.blended[rows_inside]
        dropped = int(np.count_nonzero((blended > 0) & (blended < min_score - 1e-9)))
        w = scores.tfidf_weight
        cap = (1 - w) if scores.query_vector is not None else 0.0
        if not (cap > 0 and cap - 1e-6 >= max(min_score - 1e-9, 0.0)):  # matched rows proved below, unscored
            blend_bound = w * scores.lexical + cap
            proved = (scores.lexical > 0) & ~((blend_bound >= min_score - 1e-9) & (blend_bound > 0))
            dropped += int(np.count_nonzero(proved & inside[self.arrays.page_of_chunk]))
        static = scores.static_vector is not None and scores.static_weight > 0
        return L1Result(probe.candidates, searched, dropped, int(np.count_nonzero(rows_inside)),
                        self.embedder_info if static else None)

    def _candidates(self, chosen: np.ndarray, rows: np.ndarray, blended: np.ndarray, lsa: np.ndarray | None,
                    scores: L1Scores, page_relative: np.ndarray) -> tuple[L1Candidate, ...]:
        """The chosen rows as candidates, their chunks and numbers read in one pass each (numpy's per-scalar
        overhead, row by row, cost more than L1's arithmetic); chunks the query's probe made are reused."""
        if chosen.size == 0:
            return ()
        order = np.argsort(rows, kind="stable")
        positions = order[np.searchsorted(rows[order], chosen)]
        chunks = _chunks_of(self.chunks, chosen.tolist(), scores.chunks)
        lsa_values = lsa[positions].tolist() if lsa is not None else [None] * chosen.size
        page_values = page_relative[self.arrays.page_of_chunk[chosen]].tolist()
        return tuple(map(L1Candidate, chunks, blended[positions].tolist(), scores.lexical[chosen].tolist(),
                         lsa_values, page_values))

    def search(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, tfidf_weight: float = 0.5, page_weight: float = 0.0,
               exact: bool = False, static_weight: float = 0.0) -> L1Result:
        """`score` then `select`: the best `top_k` pages' sections for `query` among the allowed pages."""
        _check_filter_keys(filters or {})  # an unknown filter key fails before any scoring
        return self.select(self.score(query, tfidf_weight=tfidf_weight, static_weight=static_weight), top_k=top_k,
                           filters=filters, min_score=min_score, page_weight=page_weight, exact=exact)

    def _with_static(self, candidates: tuple[L1Candidate, ...], chosen: np.ndarray, scores: L1Scores,
                     page_weight: float) -> tuple[L1Candidate, ...]:
        """The pool re-ranked by its pages' static scores (l1_static.pool_boosts), best first. A page's static
        score is the mean of two cosines with the query: its whole text's and its best pooled section's
        (of the up to SECTIONS_PER_PAGE the pool holds), as L1's own score joins a section's and its page's."""
        if not candidates:
            return candidates
        pages, position = np.unique(self.arrays.page_of_chunk[chosen], return_inverse=True)
        page_cosines = self.arrays.static_pages[pages].astype(np.float32) @ scores.static_vector
        best = np.full(pages.size, -np.inf, dtype=np.float32)
        np.maximum.at(best, position, self.arrays.static_vectors[chosen].astype(np.float32) @ scores.static_vector)
        fused = np.full(pages.size, -np.inf)
        np.maximum.at(fused, position, [c.score + page_weight * c.page_score for c in candidates])
        static_scores = 0.5 * (page_cosines + best)
        added = pool_boosts(static_scores, fused, scores.static_weight)[position].tolist()
        boosted = map(L1Candidate, [c.chunk for c in candidates],  # built directly: `replace` cost 0.6 ms a lookup
                      [max(c.score + a, 0.0) for c, a in zip(candidates, added, strict=True)],
                      [c.lexical_score for c in candidates], [c.lsa_score for c in candidates],
                      [c.page_score for c in candidates], static_scores[position].tolist(), added)
        return tuple(sorted(boosted, key=lambda c: -(c.score + page_weight * c.page_score)))

    def rows_of(self, pages: np.ndarray) -> np.ndarray:
        """The rows of `pages`, page by page."""
        a = self.arrays
        starts, ends = a.page_row_starts[pages], a.page_row_starts[pages + 1]
        lengths = ends - starts
        if not lengths.sum():
            return np.empty(0, dtype=np.int64)
        offsets = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        return a.page_row_order[np.arange(lengths.sum()) + offsets]

    @property
    def lsa_heads(self) -> LsaHeads:
        """The LSA rows' first dimensions and tail norms (the bounded selection's cheap cosine bound), made
        on first use: a cache load stays a few array reads."""
        heads = self._lsa_heads
        if heads is None:
            heads = self._lsa_heads = LsaHeads.of(self.arrays.lsa)  # racing callers make equal copies
        return heads

    def _universe(self, filters: Mapping[str, str], allowed: np.ndarray | None) -> Universe:
        """The rows the filter allows, page by page; a filter's rows are kept for its next query (a lookup
        filters by one of a few categories, and gathering a category's rows cost 0.2 ms at 100k)."""
        if allowed is None:
            return self._everything
        key = tuple(sorted(filters.items()))
        universe = self._universes.get(key)
        if universe is None:
            if len(self._universes) >= 64:
                self._universes.clear()
            universe = self._universes[key] = Universe(self.rows_of(allowed), allowed, self._page_sizes[allowed])
        return universe

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


def build_arrays(chunks: Sequence[Chunk], config: IndexConfig, progress: bp.Progress | None = None,
                 embedder: Embedder | None = None) -> L1Arrays:
    """Count terms, weight them (BM25 for sections and pages), fit the LSA space and embed every chunk with
    `embedder` (no static part without one); `progress` gets each stage's fractions (retrieval.index.progress)."""
    sources = [c.source for c in chunks]
    page_number: dict[str, int] = {}
    page_of_chunk = np.fromiter((page_number.setdefault(s, len(page_number)) for s in sources), dtype=np.int64,
                                count=len(sources))
    texts = bp.counted((f"{c.breadcrumb}\n{c.text}" for c in chunks), len(chunks), progress, bp.VECTORISING,
                       then=bp.WEIGHTING)
    counts = count_terms(texts, page_of_chunk, len(page_number), lambda f: bp.report(progress, bp.WEIGHTING, 0.95 * f),
                         surface=is_static(embedder))
    if counts.chunks.nnz == 0:
        raise ValueError("L1 needs at least one chunk with an indexable term")
    section_weights, section_idf = _bm25_weights(counts.chunks, config.k1, config.b)
    page_weights, page_idf = _bm25_weights(counts.pages, config.k1, config.page_b)
    bp.report(progress, bp.WEIGHTING, 1.0)
    lsa_idf, projection, projection_row, lsa = _fit_lsa(counts.chunks, config, progress)
    order = np.argsort(page_of_chunk, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(page_of_chunk, minlength=len(page_number)))].astype(np.int64)
    static, name = _static_part(embedder, chunks, counts)
    static_pages = page_vectors(static, page_of_chunk, len(page_number))
    terms = TermIndex.of(counts.unigrams)
    column = TextColumn.of(counts.unigrams)
    return L1Arrays(column.blob, column.offsets, terms.hashes, terms.ids, counts.pair_keys, section_weights.indptr.astype(np.int64),
                    section_weights.indices, section_weights.data.astype(np.float32), section_idf,
                    page_weights.indptr.astype(np.int64), page_weights.indices,
                    page_weights.data.astype(np.float32), page_idf, lsa_idf, projection, projection_row, lsa, page_of_chunk,
                    starts, order.astype(np.int64), static, name, static_pages)


def _fit_lsa(counts, config: IndexConfig, progress: bp.Progress | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sublinear, smoothed-idf, L2-normalised TF-IDF; TruncatedSVD fitted on a row sample (the LSA space
    of 20k sections matches that of all of them closely, and a fit is quadratic in what it sees);
    then every chunk projected and L2-normalised."""
    from sklearn.preprocessing import normalize

    bp.report(progress, bp.SVD, 0.0)  # the TF-IDF sample, then TruncatedSVD's steps (retrieval.l1.lsa_fit)
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


def _static_part(embedder: Embedder | None, chunks: Sequence[Chunk], counts) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk's static vector and the embedder's name; empty without an embedder, or when it breaks its
    promise (wrong shape, non-finite values: said once, as an EmbedderWarning)."""
    none = np.zeros((len(chunks), 0), dtype=np.float16), np.zeros(0, dtype=np.uint8)
    if embedder is None:
        return none
    try:
        if is_static(embedder) and counts.surface is not None:
            vectors = composed_vectors(embedder, counts.surface)
        else:
            vectors = embedded_vectors(embedder, [f"{c.breadcrumb}\n{c.text}" for c in chunks])
    except ValueError as exc:
        warnings.warn(f"{exc}; L1 is built without its static part", EmbedderWarning, stacklevel=4)
        return none
    return vectors, np.frombuffer(embedder.name.encode("utf-8"), dtype=np.uint8).copy()


def _loaded(embedder: Embedder | LazyEmbedder | None) -> Embedder | None:
    """The embedder itself (a lazy one loaded now; None when its load failed)."""
    return embedder.get() if isinstance(embedder, LazyEmbedder) else embedder


def _cosines(lsa: np.ndarray, rows: np.ndarray | slice, query_vector: np.ndarray) -> np.ndarray:
    """Each row's dot product with the query, the same whichever other rows come with it: a BLAS product's
    last bits depend on the batch (254 of 700 rows differed), so a cosine kept from the probe could differ
    from the one a fresh search computes. einsum sums each row alone, and is no slower here."""
    return np.einsum("ij,j->i", lsa[rows], query_vector)


def _chunks_of(chunks: Sequence[Chunk], rows: list[int], known: dict[int, Chunk]) -> list[Chunk]:
    """`chunks` at `rows`, those not in `known` read in one pass from a column store (else one by one) and
    added to it."""
    missing = [row for row in rows if row not in known]
    if missing:
        take = getattr(chunks, "take", None)
        known.update(zip(missing, take(missing) if take is not None else [chunks[row] for row in missing],
                         strict=True))
    return [known[row] for row in rows]


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
