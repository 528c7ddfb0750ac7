"""The reranker stage: a cross-encoder scores the best `rerank_top` pages of L1's result against the query, within
`rerank_budget_ms`, and its standardised score is added to their sections' scores as a part of its own.

A page is scored by its best section (breadcrumb and text, as the dense part reads it). The scores are
standardised over the scored pages and added as `rerank_weight * spread * z`, the spread being the standard
deviation of those pages' fused scores, as L1's static and dense parts are. When the model fails, or does not
answer within the budget, the lookup answers without it and `retrieval_details.rerank` says so; the abandoned
call finishes in its worker thread (L1's guard's workers: a busy one is never waited for).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from retrieval.l1.dense import dense_text
from retrieval.l1.results import L1Candidate, L1Result
from retrieval.lookup.guard import time_limited
from retrieval.models.errors import cause

PAGE_TEXT_CHARS = 2000  # of a page's best section given to the model (cross-encoders read ~512 tokens)


@dataclass(frozen=True)
class RerankReport:
    """What the reranker did in one lookup: `ok`, `timeout`, `failed`, or `empty` (no page to rerank)."""

    model: dict[str, Any] | str
    status: str
    pages: int = 0
    ms: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "status": self.status, "pages": self.pages, "ms": round(self.ms, 3),
                "error": self.error}


def reranked(query: str, result: L1Result, scorer: Any, *, top: int, weight: float, budget_ms: float,
             page_weight: float) -> tuple[L1Result, RerankReport]:
    """`result` with its best `top` pages re-scored by `scorer` (retrieval.models.PairScorer), and the report."""
    started = time.perf_counter()
    model = scorer.info.to_dict()
    pages = _best_pages(result.candidates, page_weight)[:top]
    if not pages:
        return result, RerankReport(model, "empty")
    texts = [dense_text(best.chunk)[:PAGE_TEXT_CHARS] for best, _ in pages]
    late = f"the reranker did not answer within {budget_ms:g} ms (rerank_budget_ms)"
    call = time_limited(lambda: scorer.score(query, texts), budget_ms,
                        lambda returned: _checked(returned, len(texts)), lambda: RerankTimeout(late))
    if call.error is not None:
        status = "timeout" if isinstance(call.error, RerankTimeout) else "failed"
        error = str(call.error) if status == "timeout" else cause(call.error)
        return result, RerankReport(model, status, len(pages), _ms(started), error)
    scores = call.result
    fused = np.array([score for _, score in pages])
    spread, deviation = float(fused.std()), float(scores.std())
    z = (scores - scores.mean()) / deviation if deviation > 0 else np.zeros_like(scores)
    by_source = {best.chunk.source: (float(s), float(weight * spread * zz))
                 for (best, _), s, zz in zip(pages, scores, z, strict=True)}
    candidates = []
    for c in result.candidates:
        if c.chunk.source in by_source:
            score, added = by_source[c.chunk.source]
            c = replace(c, score=max(c.score + added, 0.0), rerank_score=score, rerank_added=added)
        candidates.append(c)
    candidates.sort(key=lambda c: -(c.score + page_weight * c.page_score))
    return replace(result, candidates=tuple(candidates)), RerankReport(model, "ok", len(pages), _ms(started))


class RerankTimeout(TimeoutError):
    """The reranker did not answer within `rerank_budget_ms`."""


def _checked(returned: Any, count: int) -> np.ndarray:
    scores = np.asarray(returned, dtype=np.float64)
    if scores.shape != (count,) or not np.isfinite(scores).all():
        raise ValueError(f"the reranker returned shape {scores.shape} for {count} pages, or a non-finite score")
    return scores


def _best_pages(candidates: tuple[L1Candidate, ...], page_weight: float) -> list[tuple[L1Candidate, float]]:
    """Each page's best candidate and its fused score (score + page_weight * page score), best first."""
    best: dict[str, tuple[L1Candidate, float]] = {}
    for c in candidates:
        fused = c.score + page_weight * c.page_score
        if c.chunk.source not in best or fused > best[c.chunk.source][1]:
            best[c.chunk.source] = (c, fused)
    return sorted(best.values(), key=lambda pair: (-pair[1], pair[0].chunk.source))


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
