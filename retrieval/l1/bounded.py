"""L1's bounded selection: which rows' LSA cosines a query needs so its best pages are exact.

A row's fused score is `w * lexical + (1 - w) * max(cosine, 0) + page_weight * page score`. Its bound
takes the cosine as 1; a tighter bound takes it as `head . q_head + |tail| * |q_tail|` (Cauchy–Schwarz on
the dimensions past the first HEAD_DIMS, kept contiguous so a bound reads 64 bytes of a row, not 1 KB).
Round one scores the rows with the best bounds (growing the block until it holds `top_k` pages); its
`top_k`-th best page gives a threshold T, and round two scores the rows whose tight bound reaches T. Then
each chosen page's rows that could still be among its best `sections` are scored. The result equals
scoring every row (`L1Index.select(..., exact=True)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from retrieval.l1.arrays import HEAD_DIMS
from retrieval.l1.page_ranking import PageRanking
from retrieval.l1.results import L1Scores
from retrieval.l1.stacked import Stacked
from retrieval.l1.universe import Universe

TOP_VALUE_SAMPLE = 4096  # bounds sampled to pick the first block's threshold
COSINE_SLACK = 1e-4  # float32 rounding of a 256-term dot product is ~1e-6; the bound stays above it


class SearchSpace(Protocol):
    """What the bounded selection reads of an L1 index (`L1Index` is one), named here so this module does
    not import the index that calls it."""

    page_of_chunk: np.ndarray
    n_pages: int
    lsa_heads: LsaHeads

    def lsa_scores(self, scores: L1Scores, rows: np.ndarray) -> np.ndarray: ...

    def rows_of(self, pages: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class LsaHeads:
    """The first HEAD_DIMS dimensions of every LSA row, contiguous, and the norm of the rest (made at build:
    retrieval/l1/arrays.py `lsa_heads`), over every segment's rows."""

    head: Stacked  # float32 (rows, HEAD_DIMS)
    tail_norm: Stacked  # float32 (rows,)

    def cosine_bound(self, rows: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
        """An upper bound of each row's cosine with the unit `query_vector`, at most 1."""
        head_dot = self.head.take(rows) @ query_vector[:HEAD_DIMS]
        tail = float(np.linalg.norm(query_vector[HEAD_DIMS:]))
        return np.minimum(head_dot + self.tail_norm.take(rows) * tail + COSINE_SLACK, 1.0)


@dataclass(frozen=True)
class Bounded:
    """The rows a selection must score, with their LSA cosines, and how many rows with a lexical match were
    proved below the minimum score without being scored."""

    rows: np.ndarray
    lsa: np.ndarray
    proved_below: int
    ranking: PageRanking | None = None  # of the kept rows, when no row was added after it


class _Query:
    """One query's bounds over one universe (by position in it), and the rows scored so far. Bounds are
    kept per page (a page's best row: its largest lexical score); a row's own bound is computed only for
    the pages whose bound reaches a threshold, so a query reads its dense per-row scores once, not once
    per step (at 1M chunks each dense pass cost about half a millisecond)."""

    def __init__(self, index: SearchSpace, scores: L1Scores, page_relative: np.ndarray, universe: Universe,
                 page_weight: float, floor: float) -> None:
        self.index, self.scores, self.floor, self.universe = index, scores, floor, universe
        self.w = scores.tfidf_weight
        self.cap = (1 - self.w) if scores.query_vector is not None else 0.0
        self.page_part = page_weight * page_relative
        self.lexical = scores.lexical if universe.rows is None else scores.lexical[universe.rows]
        self.universe_page_part = self.page_part if universe.pages is None else self.page_part[universe.pages]
        self.everyone_possible = self.cap > 0 and self.cap - 1e-6 >= floor
        self.page_bound, self.proved_below = self._page_bounds()
        self.scored = np.zeros(scores.lexical.size, dtype=bool)
        self.rows: list[np.ndarray] = []
        self.lsa: list[np.ndarray] = []

    def _page_bounds(self) -> tuple[np.ndarray, int]:
        """Each universe page's bound (its best row's: -inf when no row of it can reach the minimum), and
        how many rows with a lexical match cannot reach the minimum."""
        run_starts, page_run = self.universe.bound_runs()
        run_best = np.zeros(run_starts.size + 1, dtype=self.lexical.dtype)  # the last: pages without rows
        if run_starts.size:  # a run's segment ends at the next run's start: every start is in range
            run_best[:-1] = np.maximum.reduceat(self.lexical, run_starts)
        blend = self.w * run_best[page_run] + self.cap
        bound = blend + self.universe_page_part
        if self.everyone_possible:  # every row can reach the minimum
            return bound, 0
        bound[~((blend >= self.floor) & (blend > 0))] = -np.inf
        row_blend = self.w * self.lexical + self.cap
        return bound, int(np.count_nonzero((self.lexical > 0) & ~((row_blend >= self.floor) & (row_blend > 0))))

    def reaching_positions(self, threshold: float, *, above: bool = False) -> np.ndarray:
        """Universe positions whose row bound reaches `threshold` (`above`: exceeds it) and whose blend can
        reach the minimum: the rows of the pages whose bound does, each row's own bound then checked."""
        universe = self.universe
        pages = np.flatnonzero(self.page_bound > threshold if above else self.page_bound >= threshold)
        if int(universe.sizes[pages].sum()) > DENSE_SHARE * self.lexical.size:  # most rows: one pass over all
            positions = np.arange(self.lexical.size, dtype=np.int64)
            page_part = (self.page_part[self.index.page_of_chunk] if universe.rows is None
                         else self.universe_page_part[universe.page_of_position])
        else:
            positions = universe.positions_of(pages)
            page_part = np.repeat(self.universe_page_part[pages], universe.sizes[pages])
        blend = self.w * self.lexical[positions] + self.cap
        bound = blend + page_part
        keep = bound > threshold if above else bound >= threshold
        if not self.everyone_possible:
            keep &= (blend >= self.floor) & (blend > 0)
        return positions[keep]

    def at(self, positions: np.ndarray) -> np.ndarray:
        """Rows at `positions` of the universe."""
        return positions if self.universe.rows is None else self.universe.rows[positions]

    def unscored(self, positions: np.ndarray) -> np.ndarray:
        """The rows at `positions` not scored yet."""
        rows = self.at(positions)
        return rows[~self.scored[rows]]

    def score(self, rows: np.ndarray) -> None:
        """Compute the LSA cosines of `rows` (none scored before)."""
        self.scored[rows] = True
        self.rows.append(rows)
        self.lsa.append(self.index.lsa_scores(self.scores, rows))

    def tight(self, rows: np.ndarray) -> np.ndarray:
        """Each row's fused bound with its cosine's bound in place of 1 (-inf: its blend cannot reach the
        minimum)."""
        cosine = np.clip(self.index.lsa_heads.cosine_bound(rows, self.scores.query_vector), 0.0, None)
        blend = self.w * self.scores.lexical[rows] + self.cap * cosine
        fused = blend + self.page_part[self.index.page_of_chunk[rows]]
        fused[~((blend >= self.floor) & (blend > 0))] = -np.inf
        return fused

    def reaching(self, rows: np.ndarray, threshold: np.ndarray | float, *, tight: bool) -> np.ndarray:
        """`rows` whose bound (`tight`: with the cosine's bound, not 1) reaches `threshold` (a number, or one
        per row) and whose blend can reach the minimum; tightly proved matched rows are counted."""
        if rows.size == 0:
            return rows
        if tight and self.scores.query_vector is not None:
            fused = self.tight(rows)
            self.proved_below += int(np.count_nonzero((fused == -np.inf) & (self.scores.lexical[rows] > 0)))
            return rows[fused >= threshold]
        blend = self.w * self.scores.lexical[rows] + self.cap
        fused = blend + self.page_part[self.index.page_of_chunk[rows]]
        return rows[(blend >= self.floor) & (blend > 0) & (fused >= threshold)]

    def fused(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Scored rows, their cosines, fused scores and the kept mask (blend above 0 and the minimum)."""
        rows, lsa = np.concatenate(self.rows), np.concatenate(self.lsa)
        blended = self.w * self.scores.lexical[rows] + (1 - self.w) * np.clip(lsa, 0.0, None)
        kept = (blended > 0) & (blended >= self.floor)
        return rows, lsa, blended + self.page_part[self.index.page_of_chunk[rows]], kept


DENSE_SHARE = 0.25  # past this share of the universe's rows, a threshold's rows are found in one pass over all


def bounded_rows(index: SearchSpace, scores: L1Scores, page_relative: np.ndarray, universe: Universe, *,
                 top_k: int, page_weight: float, min_score: float, first: int, sections: int) -> Bounded:
    """The rows of `universe` that can be among the result, with their LSA cosines; every other row is
    proved unable."""
    query = _Query(index, scores, page_relative, universe, page_weight, max(min_score - 1e-9, 0.0))
    kth, limit = _first_round(query, top_k, first)
    if kth > -np.inf and kth <= limit:  # an unscored row could still lead a top page: score every one whose
        todo = query.unscored(query.reaching_positions(kth))  # tight bound can
        query.score(query.reaching(todo, kth, tight=True))
    rows, lsa, fused, kept = query.fused()
    ranking = PageRanking.of(rows[kept], fused[kept], index.page_of_chunk, top_k)
    extra = _section_rows(query, ranking, sections)
    if extra.size:
        query.score(extra)
        return Bounded(np.concatenate(query.rows), np.concatenate(query.lsa), query.proved_below)
    return Bounded(rows, lsa, query.proved_below, ranking)


def _first_round(query: _Query, top_k: int, first: int) -> tuple[float, float]:
    """Score about `first` rows with the best bounds, growing the block until they hold `top_k` pages (or
    every possible row is scored); the `top_k`-th best page's score, and a bound of every unscored row's.
    The threshold is read off the page bounds: about the bound of the page at which the best pages hold
    `first` rows."""
    page_bound, page_of_chunk = query.page_bound, query.index.page_of_chunk
    rows_per_page = max(1.0, query.lexical.size / max(page_bound.size, 1))
    while True:
        threshold = _top_value(page_bound, max(1, int(first / rows_per_page)))
        if threshold == -np.inf:
            block, limit = query.reaching_positions(-np.inf, above=True), -np.inf
        else:  # rows below the threshold are at most the float32 just below it
            block = query.reaching_positions(threshold)
            limit = float(np.nextafter(np.float32(threshold), np.float32(-np.inf)))
            if block.size > 8 * first:  # many rows tie at the threshold: take those above it first
                above = query.reaching_positions(threshold, above=True)
                block, limit = (above, threshold) if above.size else (block, limit)
        query.score(query.unscored(block))
        rows, _, fused, kept = query.fused()
        kth = _kth_page_leader(page_of_chunk[rows[kept]], fused[kept], top_k)
        if kth > -np.inf or limit == -np.inf:
            return kth, limit
        first *= 8


def _top_value(bound: np.ndarray, count: int) -> float:
    """About the `count`-th largest of `bound`, from a strided sample (a partition of every value is slow on a
    large base; any value is correct, a good one saves work); -inf when that reaches every possible value. The
    sample is sorted, not partitioned: numpy's partition slows 10x when most values are equal (a filtered
    universe's pages without a lexical match share their page's bound), and sorting does not."""
    step = max(1, bound.size // TOP_VALUE_SAMPLE)
    sample = bound[::step]
    rank = max(1, count // step)
    if rank >= sample.size:
        return -np.inf
    return float(np.sort(sample)[sample.size - rank])


def _section_rows(query: _Query, ranking: PageRanking, sections: int) -> np.ndarray:
    """Unscored rows of the chosen pages whose tight bound reaches their page's `sections`-th best."""
    index = query.index
    page_of_chunk = index.page_of_chunk
    if ranking.rows.size == 0:
        return np.empty(0, dtype=np.int64)
    leader_pages = ranking.pages[ranking.starts]
    needed = np.full(index.n_pages, -np.inf)
    full = ranking.counts >= sections
    needed[leader_pages[full]] = ranking.fused[ranking.starts[full] + sections - 1]
    candidates = index.rows_of(leader_pages[ranking.best])
    candidates = candidates[~query.scored[candidates]]
    candidates = query.reaching(candidates, needed[page_of_chunk[candidates]], tight=False)
    return query.reaching(candidates, needed[page_of_chunk[candidates]], tight=True)


def _kth_page_leader(pages: np.ndarray, fused: np.ndarray, k: int) -> float:
    """The `k`-th best page's best fused score among scored rows (-inf when fewer than `k` pages)."""
    if pages.size == 0:
        return -np.inf
    best = np.full(int(pages.max()) + 1, -np.inf)
    np.maximum.at(best, pages, fused)
    leaders = best[np.isfinite(best)]
    return float(-np.partition(-leaders, k - 1)[k - 1]) if leaders.size >= k else -np.inf
