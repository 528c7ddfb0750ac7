"""L1: TF-IDF + TruncatedSVD (LSA) over chunks, plus a page-level score; metadata filter as a page mask.

A chunk's score blends a lexical part (BM25-weighted TF-IDF over its unigrams, divided by the query's
upper bound) and an LSA cosine; each chunk also carries its page's BM25 score (unigrams and adjacent
pairs over every section), so the pool holds the best pages' sections. With an embedder and a static
weight, the pool is then re-ranked by each page's static score (retrieval/l1/static.py). Selection is
exact without scanning every LSA vector (retrieval/l1/bounded.py; `select(..., exact=True)` scans all
and is the reference). The design and its measurements: docs/l1.md.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.kb.model import Chunk
from retrieval.l1 import stages as bp
from retrieval.l1.arrays import L1Arrays, bm25_idf, build_arrays, loaded
from retrieval.l1.bounded import LsaHeads, bounded_rows
from retrieval.l1.config import IndexConfig
from retrieval.l1.dense import (
    DensePart,
    DenseSettings,
    VectorStore,
    dense_boosts,
    page_dense_scores,
    segment_vectors,
)
from retrieval.l1.embedder import Embedder, EmbedderInfo, LazyEmbedder
from retrieval.l1.page_ranking import PageRanking
from retrieval.l1.pages import PageSets, check_filter_keys, page_heads
from retrieval.l1.postings import postings_sum
from retrieval.l1.results import DenseQuery, DenseStatus, L1Candidate, L1Result, L1Scores, LsaMemo, Probe
from retrieval.l1.segments import Delta, QueryTerms, QueryWeights, Segment, Tombstones, live_frequencies
from retrieval.l1.stacked import Stacked
from retrieval.l1.static import page_vectors, pool_boosts
from retrieval.l1.static import query_vector as static_query_vector  # `_score` has an LSA `query_vector`
from retrieval.models.errors import cause
from retrieval.storage.spill import IN_MEMORY, Spill

SECTIONS_PER_PAGE = 3  # sections of one page L1 returns; the rest stay out of the pool
FIRST_BLOCK_ROWS = 256  # rows with the best bounds scored first, at least ROWS_PER_PAGE per requested page: the
# first block is most of the rows a search scores, so it is kept small (docs/l1.md, bounded search)
ROWS_PER_PAGE = 16
DENSE_SECTIONS_PER_PAGE = 32  # sections of one page the dense part reads at most (besides its pooled ones)
FULL_PASS_SHARE = 0.2  # past this share of the rows, one pass over all of them is cheaper than gathering them


class L1Index:
    """Vectors of every chunk; LSA dimensions are capped by the corpus so tiny knowledge bases work. With a
    `delta` (retrieval/l1/segments.py), `arrays` are the base's and `chunks` run over the base's rows then the
    delta's; every row and page is numbered across both."""

    def __init__(self, chunks: Sequence[Chunk], config: IndexConfig | None = None, *, svd_dims: int | None = None,
                 arrays: L1Arrays | None = None, progress: bp.Progress | None = None,
                 embedder: Embedder | LazyEmbedder | None = None, spill: Spill = IN_MEMORY,
                 delta: Delta | None = None) -> None:
        if not chunks:
            raise ValueError("L1 needs at least one chunk with text")
        config = config or IndexConfig()
        if svd_dims is not None:
            config = IndexConfig(**{**config.to_dict(), "svd_dims": svd_dims})
        self.chunks = chunks
        self.config = config
        self.arrays = arrays if arrays is not None else build_arrays(chunks, config, progress, loaded(embedder), spill)
        a = self.arrays
        self.dead = delta.dead if delta is not None else Tombstones.none()
        segments = [Segment(a, 0, 0)]
        if delta is not None and delta.arrays is not None:
            segments.append(Segment(delta.arrays, segments[0].n_rows, segments[0].n_pages))
        self.segments = tuple(segments)
        self.n_rows = sum(s.n_rows for s in segments)
        if self.n_rows != len(chunks):
            raise ValueError(f"L1's segments hold {self.n_rows} rows and {len(chunks)} chunks were given")
        self.page_of_chunk, starts, order = _page_rows(self.segments)
        self.lsa = Stacked([s.arrays.lsa for s in segments])
        self.static_vectors = Stacked([s.arrays.static_vectors for s in segments])
        self.static_pages = Stacked([s.arrays.static_pages for s in segments])
        dimensions = int(a.static_vectors.shape[1])
        self.embedder = embedder if dimensions else None  # a lazy one loads at the first static search
        self.embedder_info = EmbedderInfo(bytes(a.static_embedder).decode("utf-8"), dimensions) if dimensions else None
        self.vocabulary = segments[0].vocabulary
        sources, domains = page_heads(chunks, order[starts[:-1]])
        self.page_sources, self.n_pages = sources, len(sources)
        self.pages = PageSets(sources, domains, starts, order, self.dead.pages if self.dead.pages.size else None)
        self._dead_rows = self.pages.rows_of(self.dead.pages)
        self._last_scores: tuple[tuple[str, float], L1Scores] | None = None
        self.lsa_heads = LsaHeads(Stacked([s.arrays.lsa_head for s in segments]),
                                  Stacked([s.arrays.lsa_tail for s in segments]))
        self._dense: dict[str, DensePart] = {}
        self._dense_lock = threading.Lock()

    def dense_part(self, encoder: Any, store_root: Path, progress: bp.Progress | None = None) -> DensePart:
        """The dense part of `encoder` (retrieval.models.TextEncoder) over this index: each segment's vectors
        from the store under `store_root` (one folder per model fingerprint), encoding only the texts the store
        lacks; made once per model and index."""
        fingerprint = encoder.info.fingerprint
        with self._dense_lock:
            part = self._dense.get(fingerprint)
            if part is None:
                store = VectorStore(Path(store_root) / fingerprint, int(encoder.dimensions))
                vectors = Stacked([segment_vectors(self.chunks, range(s.first_row, s.first_row + s.n_rows), store,
                                                   encoder, progress) for s in self.segments])
                part = DensePart(encoder, vectors, page_vectors(vectors, self.page_of_chunk, self.n_pages))
                self._dense[fingerprint] = part
        return part

    def section_idf(self, term: str) -> float:
        """`term`'s BM25 idf over every live section (-1: no live section holds it): what a query weighs it by."""
        ids = [np.array([segment.vocabulary.get(term)], dtype=np.int64) for segment in self.segments]
        df = live_frequencies(self.segments, self.dead, ids, sections=True)
        return float(bm25_idf(df, self.pages.live_rows)[0]) if df[0] > 0 else -1.0

    def rarest_idf(self) -> float:
        """The highest idf a live section's term has (a term held by one section, when some term is)."""
        if len(self.segments) == 1 and not self.dead.pages.size:
            idf = self.arrays.section_idf
            return float(idf.max()) if len(idf) else 1.0
        return float(bm25_idf(np.array([1]), self.pages.live_rows)[0])

    @property
    def dimensions(self) -> int:
        return int(self.arrays.lsa.shape[1])

    def score(self, query: str, *, tfidf_weight: float = 0.5, static_weight: float = 0.0,
              dense: DenseSettings | None = None) -> L1Scores:
        """The query's lexical score per chunk, BM25 per page, LSA query vector and (with `static_weight` and
        a static part) static query vector, and (with a `dense` part and weight) the dense query. The last
        query's scores are kept, so a lookup's unfiltered probe and its filtered search score the query once."""
        key = (query, tfidf_weight, static_weight, dense)
        last = self._last_scores
        if last is not None and last[0] == key:
            return last[1]
        scores = self._score(query, tfidf_weight, static_weight)
        if dense is not None and dense.weight > 0:  # no indexed term: no pool to re-score, and the status says so
            scores = _with_dense_query(scores, dense, query) if scores.lexical is not None else \
                replace(scores, dense=DenseQuery(dense, None, DenseStatus(dense.part.info, "empty")))
        self._last_scores = (key, scores)  # one tuple assignment: a concurrent caller sees old or new, whole
        return scores

    def _score(self, query: str, tfidf_weight: float, static_weight: float) -> L1Scores:
        a = self.arrays
        weights = QueryWeights.of(QueryTerms.of(query), self.segments, self.dead, k1=self.config.k1,
                                  pair_weight=self.config.page_pair_weight)
        if not weights.any_term:
            return L1Scores(None, None, None, tfidf_weight)
        lexical = np.zeros(self.n_rows, dtype=np.float32)
        pages = np.zeros(self.n_pages, dtype=np.float64)
        for segment, (word_ids, word_weights), (page_columns, page_weights) in zip(
                self.segments, weights.sections, weights.pages, strict=True):
            s = segment.arrays
            if word_ids.size:  # only adjacent pairs matched: pages score, chunks do not
                rows = slice(segment.first_row, segment.first_row + segment.n_rows)
                postings_sum(s.section_indptr, s.section_rows, s.section_weights, word_ids, word_weights,
                             segment.n_rows, np.float32, out=lexical[rows])
            if page_columns.size:
                at = slice(segment.first_page, segment.first_page + segment.n_pages)
                postings_sum(s.page_indptr, s.page_rows, s.page_weights, page_columns, page_weights, segment.n_pages,
                             out=pages[at])
        if self._dead_rows.size:  # a tombstoned page scores nothing
            lexical[self._dead_rows] = 0.0
            pages[self.dead.pages] = 0.0
        query_vector = None
        if self.dimensions and weights.lsa_ids.size:
            # the sublinear TF-IDF of the query, projected (its L2 norm cancels in the final normalisation); a
            # term no live row holds counts as in a build: not at all
            ids = weights.lsa_ids
            query_tfidf = ((1.0 + np.log(weights.lsa_counts)) * a.lsa_idf[ids]).astype(np.float32)
            rows = a.projection_row[ids]
            projected = query_tfidf[rows >= 0] @ a.projection[rows[rows >= 0]]
            norm = float(np.linalg.norm(projected))
            query_vector = projected / norm if norm > 0 else None
        memo = LsaMemo.of(self.n_rows) if query_vector is not None else None
        static_vector = None
        if static_weight > 0 and self.embedder_info is not None:
            static_vector = static_query_vector(loaded(self.embedder), query)
        return L1Scores(lexical, pages, query_vector, tfidf_weight, None, memo, static_vector=static_vector,
                        static_weight=static_weight)

    def lsa_scores(self, scores: L1Scores, rows: np.ndarray) -> np.ndarray:
        """LSA cosines of `rows` (zeros without LSA or a query vector); each row is computed once per query."""
        if scores.query_vector is None:
            return np.zeros(rows.size, dtype=np.float32)
        memo = scores.lsa_memo
        if memo is None:
            return self.lsa.dots(rows, scores.query_vector)
        values, known = memo.values[rows], memo.known[rows]
        if not known.all():
            fresh = rows[~known]
            if fresh.size > FULL_PASS_SHARE * memo.known.size:  # one pass over the contiguous matrix is cheaper
                memo.values[:], memo.known[:] = self.lsa.dots(None, scores.query_vector), True
                return memo.values[rows]
            values[~known] = memo.values[fresh] = self.lsa.dots(fresh, scores.query_vector)
            memo.known[fresh] = True
        return values

    def select(self, scores: L1Scores, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, page_weight: float = 0.0, exact: bool = False) -> L1Result:
        """Best `top_k` pages' best sections among the pages the filters allow, each at or above `min_score`,
        ranked by their score plus `page_weight` times their page's score relative to the best allowed page.
        `exact` scores every allowed chunk (the reference the bounded selection must equal)."""
        allowed = self.pages.allowed(filters or {})
        searched = self.pages.live_rows if allowed is None else int(self.pages.sizes[allowed].sum())
        if scores.lexical is None or searched == 0:
            return L1Result((), searched, 0, 0, dense=scores.dense.status if scores.dense is not None else None)
        page_relative = _relative(scores.pages, allowed)
        probe = scores.probes.get((top_k, min_score, page_weight)) if allowed is not None and not exact else None
        derived = self._derived(scores, probe, allowed, searched, min_score) if probe is not None else None
        if derived is not None:
            return derived
        if exact:
            rows = self.pages.every_row() if allowed is None else self.pages.rows_of(allowed)
            lsa = self.lsa_scores(scores, rows)
            proved_below = 0
        else:
            bounded = bounded_rows(self, scores, page_relative, self.pages.universe(filters or {}, allowed),
                                   top_k=top_k,
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
            fused = blended + page_weight * page_relative[self.page_of_chunk[rows]]
            ranking = PageRanking.of(rows[kept], fused[kept], self.page_of_chunk, top_k)
        chosen = ranking.chosen(SECTIONS_PER_PAGE)
        dropped = int(positive.sum() - kept.sum()) + proved_below
        candidates = self._candidates(chosen, rows, blended, lsa if scores.query_vector is not None else None,
                                      scores, page_relative)
        static = scores.static_vector is not None and scores.static_weight > 0
        if static:
            candidates = self._with_static(candidates, chosen, scores, page_weight)
        if scores.dense is not None and scores.dense.vector is not None:
            candidates = self._with_dense(candidates, chosen, scores.lexical, scores.dense, page_weight)
        if allowed is None and not exact:
            chosen_pages = np.unique(self.page_of_chunk[chosen])
            scores.probes[(top_k, min_score, page_weight)] = Probe(rows, blended, chosen_pages, candidates)
        return L1Result(candidates, searched, dropped, int(rows.size), self.embedder_info if static else None,
                        scores.dense.status if scores.dense is not None else None)

    def from_probe(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None, min_score: float = 0.0,
                   tfidf_weight: float = 0.5, page_weight: float = 0.0, static_weight: float = 0.0,
                   dense: DenseSettings | None = None) -> L1Result | None:
        """`search`'s filtered result when the query's unfiltered selection (the lookup's probe, just made)
        provably gives it, else None: no scoring, so a caller may run it without a time limit."""
        last = self._last_scores
        key = (query, tfidf_weight, static_weight, dense)
        if not filters or last is None or last[0] != key:
            return None
        scores = last[1]
        probe = scores.probes.get((top_k, min_score, page_weight))
        allowed = self.pages.allowed(filters)
        if probe is None or allowed is None or allowed.size == 0:
            return None
        return self._derived(scores, probe, allowed, int(self.pages.sizes[allowed].sum()), min_score)

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
        rows_inside = inside[self.page_of_chunk[probe.rows]]
        blended = probe.blended[rows_inside]
        dropped = int(np.count_nonzero((blended > 0) & (blended < min_score - 1e-9)))
        w = scores.tfidf_weight
        cap = (1 - w) if scores.query_vector is not None else 0.0
        if not (cap > 0 and cap - 1e-6 >= max(min_score - 1e-9, 0.0)):  # matched rows proved below, unscored
            blend_bound = w * scores.lexical + cap
            proved = (scores.lexical > 0) & ~((blend_bound >= min_score - 1e-9) & (blend_bound > 0))
            dropped += int(np.count_nonzero(proved & inside[self.page_of_chunk]))
        static = scores.static_vector is not None and scores.static_weight > 0
        return L1Result(probe.candidates, searched, dropped, int(np.count_nonzero(rows_inside)),
                        self.embedder_info if static else None, scores.dense.status if scores.dense else None)

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
        page_values = page_relative[self.page_of_chunk[chosen]].tolist()
        return tuple(map(L1Candidate, chunks, blended[positions].tolist(), scores.lexical[chosen].tolist(),
                         lsa_values, page_values))

    def search(self, query: str, *, top_k: int, filters: Mapping[str, str] | None = None,
               min_score: float = 0.0, tfidf_weight: float = 0.5, page_weight: float = 0.0,
               exact: bool = False, static_weight: float = 0.0, dense: DenseSettings | None = None) -> L1Result:
        """`score` then `select`: the best `top_k` pages' sections for `query` among the allowed pages."""
        check_filter_keys(filters or {})  # an unknown filter key fails before any scoring
        scores = self.score(query, tfidf_weight=tfidf_weight, static_weight=static_weight, dense=dense)
        return self.select(scores, top_k=top_k, filters=filters, min_score=min_score, page_weight=page_weight,
                           exact=exact)

    def _with_static(self, candidates: tuple[L1Candidate, ...], chosen: np.ndarray, scores: L1Scores,
                     page_weight: float) -> tuple[L1Candidate, ...]:
        """The pool re-ranked by its pages' static scores (l1_static.pool_boosts), best first. A page's static
        score is the mean of two cosines with the query: its whole text's and its best pooled section's
        (of the up to SECTIONS_PER_PAGE the pool holds), as L1's own score joins a section's and its page's."""
        if not candidates:
            return candidates
        pages, position = np.unique(self.page_of_chunk[chosen], return_inverse=True)
        page_cosines = self.static_pages.take(pages).astype(np.float32) @ scores.static_vector
        best = np.full(pages.size, -np.inf, dtype=np.float32)
        np.maximum.at(best, position, self.static_vectors.take(chosen).astype(np.float32) @ scores.static_vector)
        fused = np.full(pages.size, -np.inf)
        np.maximum.at(fused, position, [c.score + page_weight * c.page_score for c in candidates])
        static_scores = 0.5 * (page_cosines + best)
        added = pool_boosts(static_scores, fused, scores.static_weight)[position].tolist()
        boosted = map(L1Candidate, [c.chunk for c in candidates],  # built directly: `replace` is slow on the hot path
                      [max(c.score + a, 0.0) for c, a in zip(candidates, added, strict=True)],
                      [c.lexical_score for c in candidates], [c.lsa_score for c in candidates],
                      [c.page_score for c in candidates], static_scores[position].tolist(), added)
        return tuple(sorted(boosted, key=lambda c: -(c.score + page_weight * c.page_score)))

    def _with_dense(self, candidates: tuple[L1Candidate, ...], chosen: np.ndarray, lexical: np.ndarray,
                    dense: DenseQuery, page_weight: float) -> tuple[L1Candidate, ...]:
        """The pool re-scored by its pages' dense scores (dense.dense_boosts), best first. A page's dense score
        is the mean of its whole text's cosine with the query and its best section's (any of its sections, not
        only the pooled ones: the model may prefer a section the words did not; on Hugo dev the pooled ones
        alone gave MRR@10 0.745 against 0.753)."""
        if not candidates:
            return candidates
        settings = dense.settings
        # each candidate's page, from the candidates themselves: the static part may have re-ordered them
        of_page = np.array([self.pages.page_of(c.chunk.source) for c in candidates], dtype=np.int64)
        pages, position = np.unique(of_page, return_inverse=True)
        fused = np.full(pages.size, -np.inf)
        np.maximum.at(fused, position, [c.score + page_weight * c.page_score for c in candidates])
        scored_pages = np.sort(np.argsort(-fused, kind="stable")[:settings.pool])  # the best `pool` pages
        pages, fused = pages[scored_pages], fused[scored_pages]
        rows = self._dense_rows(pages, chosen, lexical)
        cosines = page_dense_scores(settings.part, pages, rows, np.searchsorted(pages, self.page_of_chunk[rows]),
                                    dense.vector)
        added_by_page = dict(zip(scored_pages.tolist(), zip(cosines.tolist(), dense_boosts(
            cosines, fused, settings.weight, settings.norm).tolist(), strict=True), strict=True))
        boosted = []
        for c, at in zip(candidates, position.tolist(), strict=True):
            if at in added_by_page:
                score, added = added_by_page[at]
                c = replace(c, score=max(c.score + added, 0.0), dense_score=score, dense_added=added)
            boosted.append(c)
        return tuple(sorted(boosted, key=lambda c: -(c.score + page_weight * c.page_score)))

    def _dense_rows(self, pages: np.ndarray, chosen: np.ndarray, lexical: np.ndarray) -> np.ndarray:
        """The sections of `pages` the dense part reads: every one, except on a page of more than
        DENSE_SECTIONS_PER_PAGE, where it reads that many with the best lexical scores and the pooled ones (a
        man page of 4,521 sections made one lookup read 19,812 vectors)."""
        rows = self.pages.rows_of(pages)
        sizes = self.pages.sizes[pages]
        if sizes.max(initial=0) <= DENSE_SECTIONS_PER_PAGE:
            return rows
        kept, start = [], 0
        for size in sizes.tolist():
            own = rows[start:start + size]
            start += size
            if size > DENSE_SECTIONS_PER_PAGE:
                own = own[np.argpartition(-lexical[own], DENSE_SECTIONS_PER_PAGE)[:DENSE_SECTIONS_PER_PAGE]]
            kept.append(own)
        pooled = chosen[np.isin(self.page_of_chunk[chosen], pages)]
        return np.unique(np.concatenate([*kept, pooled]))

    def rows_of(self, pages: np.ndarray) -> np.ndarray:
        """The rows of `pages`, page by page."""
        return self.pages.rows_of(pages)



def _with_dense_query(scores: L1Scores, dense: DenseSettings, query: str) -> L1Scores:
    """`scores` with the dense part's query; a model that fails to encode the query leaves the search without
    its dense part, and the status says why (the lookup still answers)."""
    model = dense.part.info
    try:
        vector, status = dense.part.query_vector(query), DenseStatus(model, "ok")
    except Exception as exc:  # noqa: BLE001 (a plugged-in model may raise anything: the search goes on without it)
        vector, status = None, DenseStatus(model, "failed", cause(exc))
    return replace(scores, dense=DenseQuery(dense, vector, status))


def _page_rows(segments: tuple[Segment, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's page, where each page's rows start and the rows page by page, across the segments (the base's
    own arrays when there is no other: nothing is copied)."""
    if len(segments) == 1:
        a = segments[0].arrays
        return a.page_of_chunk, a.page_row_starts, a.page_row_order
    page_of_chunk = np.concatenate([s.arrays.page_of_chunk + s.first_page for s in segments])
    starts = np.concatenate([segments[0].arrays.page_row_starts]
                            + [s.arrays.page_row_starts[1:] + s.first_row for s in segments[1:]])
    order = np.concatenate([s.arrays.page_row_order + s.first_row for s in segments])
    return page_of_chunk, starts, order


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
