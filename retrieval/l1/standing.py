"""Where one page stands in an L1 search: its best section's score, and its rank among the pages the search
could pool. The exact counterpart of `L1Index.select` for a single page, for explaining why a page was not
returned (retrieval.lookup.explain): every allowed row is scored, so the rank is the true one, not a bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from retrieval.l1.search import L1Index


@dataclass(frozen=True)
class PageStanding:
    """One page in one L1 search. `best_score` is its best section's blend of lexical and LSA (what
    `l1_min_score` is compared with), `fused` that plus `page_weight` × its page score relative to the best
    allowed page (what orders the pool); `rank` is its place among the pages with a section at or above the
    minimum (ties by page order, as the pool breaks them), None when it has none; `pages_ranked` how many
    pages have one. `indexed` is False when L1 holds no section of it (no indexable text)."""

    source: str
    indexed: bool
    allowed: bool
    best_score: float = 0.0
    best_section: str | None = None
    lexical: float = 0.0
    lsa: float | None = None
    page_score: float = 0.0
    fused: float = 0.0
    rank: int | None = None
    pages_ranked: int = 0


def page_standing(l1: L1Index, query: str, source: str, *, filters: Mapping[str, str] | None, min_score: float,
                  tfidf_weight: float, page_weight: float, static_weight: float = 0.0) -> PageStanding:
    """`source`'s standing in the search `L1Index.search(query, filters=…, min_score=…, …)` makes."""
    page = l1.pages.page_of(source)
    if page is None:
        return PageStanding(source, indexed=False, allowed=False)
    allowed = l1.pages.allowed(filters or {})
    inside = allowed is None or bool(np.isin(page, allowed))
    scores = l1.score(query, tfidf_weight=tfidf_weight, static_weight=static_weight)
    if scores.lexical is None:  # no term of the query is indexed: nothing scores
        return PageStanding(source, indexed=True, allowed=inside)
    rows = l1.pages.every_row() if allowed is None else l1.pages.rows_of(allowed)
    if not inside:  # its rows too, so its own score is known
        rows = np.concatenate([rows, l1.pages.rows_of(np.array([page]))])
    lsa = l1.lsa_scores(scores, rows)
    w = scores.tfidf_weight
    blended = w * scores.lexical[rows] + (1 - w) * np.clip(lsa, 0.0, None)
    page_of_row = l1.page_of_chunk[rows]
    relative = _relative(scores.pages, allowed)
    fused = blended + page_weight * relative[page_of_row]
    kept = (blended > 0) & (blended >= min_score - 1e-9)
    best_fused = np.full(l1.n_pages, -np.inf)
    np.maximum.at(best_fused, page_of_row[kept], fused[kept])
    mine = page_of_row == page
    best = int(np.flatnonzero(mine)[np.argmax(blended[mine])])
    own = float(best_fused[page]) if np.isfinite(best_fused[page]) else None
    ranked = np.isfinite(best_fused)
    if not inside:
        ranked[page] = False  # outside the filter, it is not among the pages this search ranks
    rank = None
    if own is not None and inside:
        ahead = (best_fused > own) | ((best_fused == own) & (np.arange(l1.n_pages) < page))
        rank = int(np.count_nonzero(ahead & ranked)) + 1
    chunk = l1.chunks[int(rows[best])]
    return PageStanding(source, True, inside, float(blended[best]), chunk.breadcrumb or chunk.title,
                        float(scores.lexical[rows[best]]),
                        float(lsa[best]) if scores.query_vector is not None else None,
                        float(relative[page]), float(fused[mine].max()), rank, int(np.count_nonzero(ranked)))


def _relative(pages: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """Per page: its BM25 score divided by the best allowed page's (as `L1Index.select` computes it; pages
    outside the filter keep their own ratio here, so a filtered-out page's standing can still be said)."""
    best = float(pages[allowed].max()) if allowed is not None and allowed.size else float(pages.max(initial=0.0))
    return (pages / best).astype(np.float32) if best > 0 else np.zeros(pages.shape, dtype=np.float32)
