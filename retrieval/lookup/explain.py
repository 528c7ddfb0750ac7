"""`explain_missing`: for a query and the pages an analyst expected, the first stage of the lookup that lost each.

The lookup is a pipeline (L0 hints → domain vote → filter → L1 pool → static or dense re-ranking → reranker →
merge → `top_k`), and a page can be lost at any step; the fix differs for each. The stages, in pipeline order
(STAGES):
- `not_in_kb`: the knowledge base does not hold it (excluded by a prefix, skipped at load, or absent);
- `filtered_out`: the search ran inside a category the page is not in (the filter and the vote that chose it);
- `below_min_score`: its best section's L1 score is below `l1_min_score` (or nothing of it matched);
- `not_in_pool`: it scored, but other pages filled L1's pool (`l1_pool` pages) before it;
- `below_top_k`: it was ranked, below the last returned block (its score parts beside that block's, with the
  parts it trails on most named: `L1 dense` and `L1 rerank` among them when the dense part or the reranker ran);
- `merged`: folded into another block (blocks merge by source identity only, so a page is never folded into
  another page's block today; the stage is kept so the list stays the pipeline's);
- `returned`: it is in the result, at rank r.
L0 never gates, so whether L0 matched the page is said as a fact (`l0_matched`), not a stage. The lookup
explained is the real one (`lookup_knowledge`, same inputs, no trace); given a recorded call's fingerprint and
sources, a changed knowledge base or a different result is reported as `could_not_reproduce`, never guessed at.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from retrieval.config import LookupConfig
from retrieval.index.build import KnowledgeIndex
from retrieval.l1.standing import page_standing
from retrieval.lookup.evidence import EvidenceBlock, ScorePart, dedupe, fused_score, l0_block, l1_page_block, rank
from retrieval.lookup.explain_numbers import absent_reason, number_text, shortfall_words, standing_numbers
from retrieval.lookup.orchestrator import LookupResult, lookup_knowledge
from retrieval.text.analysis import normalize_label

STAGES = ("not_in_kb", "filtered_out", "below_min_score", "not_in_pool", "below_top_k", "merged", "returned")
NOT_REPRODUCED = "could_not_reproduce"


@dataclass(frozen=True)
class Explanation:
    """Where one expected page was lost: `stage` (one of STAGES, or NOT_REPRODUCED), why in words, the numbers
    behind it, whether L0 matched it, its final rank when it was ranked, and its score parts beside the last
    returned block's when it was scored."""

    source: str
    stage: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)
    l0_matched: bool = False
    rank: int | None = None
    parts: tuple[ScorePart, ...] = ()
    last_parts: tuple[ScorePart, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "stage": self.stage, "reason": self.reason, "numbers": self.numbers,
                "l0_matched": self.l0_matched, "rank": self.rank, "score_parts": [p.to_dict() for p in self.parts],
                "last_returned_score_parts": [p.to_dict() for p in self.last_parts]}


@dataclass(frozen=True)
class MissingReport:
    """The explained lookup (its returned sources) and one Explanation per asked source, in the asked order."""

    query: str
    category: str | None
    top_k: int
    returned: tuple[str, ...]
    explanations: tuple[Explanation, ...]
    kb_fingerprint: str
    reproduced: bool = True
    note: str | None = None
    cutoff: int | None = None  # the rank a page had to reach to count as returned (None: top_k)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "category": self.category, "top_k": self.top_k,
                "cutoff": self.cutoff or self.top_k, "returned": list(self.returned),
                "kb_fingerprint": self.kb_fingerprint, "reproduced": self.reproduced, "note": self.note,
                "sources": [e.to_dict() for e in self.explanations], "stages": list(STAGES)}


def explain_missing(query: str, sources: Iterable[str], *, index: KnowledgeIndex, config: LookupConfig | None = None,
                    category: str | None = None, top_k: int | None = None, cutoff: int | None = None,
                    recorded_fingerprint: str | None = None,
                    recorded_sources: Sequence[str] | None = None) -> MissingReport:
    """Explain, for each of `sources`, where `lookup_knowledge(query, category=…, top_k=…)` lost it (or its rank).
    `cutoff` (default: top_k) is the rank a page must reach to count as returned: an evaluation run retrieves
    100 and scores the first 10, so a page at rank 30 was lost `below_top_k` at its cut-off of 10.
    With a recorded call's `recorded_fingerprint` / `recorded_sources`, a knowledge base changed since, or a
    lookup that no longer returns what was recorded, makes every answer `could_not_reproduce`."""
    config = config or LookupConfig()
    asked = _asked(sources)
    result = lookup_knowledge(query, index=index, config=config, category=category, top_k=top_k, recorder=None)
    returned = tuple(b.source for b in result.evidence_blocks)
    fingerprint = index.kb.fingerprint
    problem = _not_reproduced(fingerprint, returned, recorded_fingerprint, recorded_sources)
    k = top_k if top_k is not None else config.top_k
    if problem is not None:
        explained = tuple(Explanation(s, NOT_REPRODUCED, problem) for s in asked)
        return MissingReport(result.query, category, k, returned, explained, fingerprint, False, problem, cutoff or k)
    return explain_result(result, asked, index=index, config=config, category=category, top_k=k, cutoff=cutoff)


def explain_result(result: LookupResult, sources: Iterable[str], *, index: KnowledgeIndex, config: LookupConfig,
                   category: str | None, top_k: int, cutoff: int | None = None) -> MissingReport:
    """`explain_missing` over a lookup already made (`result`, from `lookup_knowledge` with these inputs): what an
    evaluation run uses, so attributing its misses costs no second lookup."""
    if result.details is None:
        raise ValueError("explain_result needs the LookupResult of an in-process lookup (its details)")
    asked = _asked(sources)
    cut = min(cutoff or top_k, top_k)
    pipeline = _Pipeline(result, index, config, category, cut)
    return MissingReport(result.query, category, top_k, tuple(b.source for b in result.evidence_blocks),
                         tuple(pipeline.explain(s) for s in asked), index.kb.fingerprint, cutoff=cut)


def _asked(sources: Iterable[str]) -> list[str]:
    asked = list(dict.fromkeys(str(s).strip() for s in sources if str(s).strip()))
    if not asked:
        raise ValueError("name at least one source to explain, e.g. --source functions/now.md")
    return asked


def _not_reproduced(fingerprint: str, returned: tuple[str, ...], recorded_fingerprint: str | None,
                    recorded_sources: Sequence[str] | None) -> str | None:
    if recorded_fingerprint and recorded_fingerprint != fingerprint:
        return (f"could not reproduce: the knowledge base changed since the recorded call (fingerprint "
                f"{recorded_fingerprint[:12]} then, {fingerprint[:12]} now); explain the query again as it is now")
    if recorded_sources is not None and tuple(recorded_sources) != returned:
        return ("could not reproduce: the lookup no longer returns what the call recorded (other settings or "
                "another index); replay it under its recorded settings")
    return None


class _Pipeline:
    """One explained lookup: what each stage decided, read from its details and, where the details hold only
    the winners, recomputed exactly (L1's standing of a page, the fused score of a pooled page)."""

    def __init__(self, result: LookupResult, index: KnowledgeIndex, config: LookupConfig, category: str | None,
                 top_k: int) -> None:
        self.result, self.index, self.config, self.top_k = result, index, config, top_k
        self.details = result.details
        decision = self.details.filter
        self.bound = normalize_label(category) if category is not None else (
            decision.applied["category"] if decision.decision == "applied" and not decision.widened else None)
        self.outcome = self.details.l1
        self.by_page: dict[str, list[Any]] = {}
        for candidate in self.outcome.result.candidates if self.outcome.result else ():
            self.by_page.setdefault(candidate.chunk.source, []).append(candidate)
        self.matches = {m.source: m for m in self.details.l0.matches}
        self.weights = dict(l0_bound=self.details.l0.score_bound, l0_weight=config.l0_weight,
                            l1_weight=config.l1_weight, page_weight=config.page_weight)
        # the parts' own weights, as the lookup ranks with them: a rebuilt block's parts read as its card's
        self.part_weights = dict(tfidf_weight=config.l1_tfidf_weight, static_weight=config.l1_static_weight,
                                 dense_weight=config.l1_dense_weight, rerank_weight=config.rerank_weight)

    def explain(self, source: str) -> Explanation:
        entry = self.index.kb.entry(source)
        matched = source in self.matches
        returned = [b.source for b in self.result.evidence_blocks]
        if entry is None:
            return Explanation(source, "not_in_kb", *absent_reason(self.index.kb, source), l0_matched=False)
        if source in returned:
            rank_ = returned.index(source) + 1
            block = self.result.evidence_blocks[rank_ - 1]
            if rank_ > self.top_k:  # retrieved, but past the cut-off that counts
                return self._past_cutoff(block, rank_, matched)
            return Explanation(source, "returned", f"returned at rank {rank_} of {len(returned)}",
                               {"rank": rank_, "score": round(block.score, 6)}, matched, rank_, block.score_parts)
        caller = self.details.filter.decision == "caller"
        if self.bound is not None and self.bound not in entry.domains and (caller or not matched):
            # an L0-chosen filter binds L1 only: an L0 match outside it is still ranked (below)
            why, numbers = self._filtered(entry.domains)
            parts = self._unfiltered_parts(source)  # what it would have scored without the filter
            return Explanation(source, "filtered_out", why, numbers, matched, None, parts, self._last_parts())
        if source in self.by_page or matched:
            return self._below_top_k(source, entry, matched)
        return self._l1_loss(source, matched)

    def _filtered(self, domains: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        decision = self.details.filter
        vote = self.details.l0.domain_vote
        numbers: dict[str, Any] = {"categories": list(domains), "filter": self.bound, "decision": decision.decision}
        if decision.decision == "caller":
            return (f"the caller's category {self.bound!r} bound the search; the page is in "
                    f"{', '.join(domains) or 'no category'}", numbers)
        if vote is not None:
            numbers["vote"] = [{"domain": e.domain, "share": round(e.share, 4), "accepted": e.accepted,
                                "best_score": round(max((v.score for v in e.supporting), default=0.0), 4)}
                               for e in vote.evidence[:5]]
        guard = decision.widening
        if guard is not None:
            numbers["guard"] = {"widened": guard.widened, "filtered_best": guard.filtered_best,
                                "unfiltered_best": guard.unfiltered_best, "ratio": guard.ratio}
        chosen = next((v for v in numbers.get("vote", []) if v["domain"] == self.bound), None)
        share = f" ({chosen['share']:.0%} of the vote, best page score {chosen['best_score']:.2f})" if chosen else ""
        considered = "" if guard is None else (
            f"; the guard kept the filter: filtered best {number_text(guard.filtered_best)} against unfiltered "
            f"{number_text(guard.unfiltered_best)} × {guard.ratio:g}")
        return (f"the L0 filter searched only {self.bound!r}{share}; the page is in "
                f"{', '.join(domains) or 'no category'}{considered}", numbers)

    def _l1_loss(self, source: str, matched: bool) -> Explanation:
        status = self.outcome.status
        if self.outcome.result is None or self.index.l1 is None:
            return Explanation(source, "not_in_pool", f"L1 was {status}, so only L0's matches could come back, and "
                                                      "L0 did not match this page", {"l1_status": status}, matched)
        config = self.config
        standing = self._standing(source, self.bound)
        numbers = standing_numbers(standing, config)
        if not standing.indexed:
            return Explanation(source, "below_min_score", "L1 holds no section of it (no indexable text)", numbers,
                               matched)
        parts, last = self._would_be(standing), self._last_parts()  # what it would have scored, beside the last
        if standing.rank is None:
            why = (f"its best section ({standing.best_section!r}) scores {standing.best_score:.3f}, below "
                   f"l1_min_score {config.l1_min_score:g}" if numbers["best_score"] > 0 else  # as recorded (6 places)
                   "no section of it shares a term or a meaning with the query (L1 score 0)")
            return Explanation(source, "below_min_score", why, numbers, matched, None, parts, last)
        pool = self._pool_floor()
        numbers.update(pool_pages=len(self.by_page), pool_last_score=pool)
        return Explanation(source, "not_in_pool", f"L1 ranked it {standing.rank} of {standing.pages_ranked} pages "
                                                  f"(score {standing.fused:.3f}), but the pool holds "
                                                  f"{len(self.by_page)} (l1_pool {config.l1_pool}); its last page "
                                                  f"scored {number_text(pool)}", numbers, matched, None, parts, last)

    def _would_be(self, standing: Any) -> tuple[ScorePart, ...]:
        """The score parts a page L1 scored but did not pool would have had (its best section, its page part;
        no static part, which only the pool gets), as `rank` builds them."""
        block = EvidenceBlock(standing.source, "", "", "L1", "", (), l1_score=standing.best_score,
                              page_score=standing.page_score, l1_detail=(standing.lexical, standing.lsa, None, None))
        return rank([block], **self.part_weights, **self.weights)[0].score_parts

    def _unfiltered_parts(self, source: str) -> tuple[ScorePart, ...]:
        if self.index.l1 is None or self.outcome.result is None:
            return ()
        standing = self._standing(source, None)
        return self._would_be(standing) if standing.indexed else ()

    def _standing(self, source: str, category: str | None) -> Any:
        """`source`'s L1 standing in this lookup's search, inside `category` (None: unfiltered)."""
        config = self.config
        return page_standing(self.index.l1, self.result.query, source, filters=_filters(category),
                             min_score=config.l1_min_score, tfidf_weight=config.l1_tfidf_weight,
                             page_weight=config.page_weight, static_weight=config.l1_static_weight)

    def _last_parts(self) -> tuple[ScorePart, ...]:
        kept = self.result.evidence_blocks[:self.top_k]
        return kept[-1].score_parts if kept else ()

    def _pool_floor(self) -> float | None:
        """The pool's last page's pooling score (before the static or dense part and the reranker re-scored the
        pool)."""
        page_weight = self.config.page_weight
        best = [max(c.score - c.static_added - c.dense_added - c.rerank_added + page_weight * c.page_score
                    for c in found) for found in self.by_page.values()]
        return round(min(best), 6) if best else None

    def _below_top_k(self, source: str, entry: Any, matched: bool) -> Explanation:
        block = self._block(source, entry)
        order = self._order()
        rank_ = 1 + sum(1 for other, score in order.items()
                        if other != source and (score > block.score or (score == block.score and other < source)))
        return self._past_cutoff(block, rank_, matched)

    def _past_cutoff(self, block: EvidenceBlock, rank_: int, matched: bool) -> Explanation:
        """`below_top_k`: ranked `rank_`, below the last block within the cut-off, with both blocks' parts."""
        source = block.source
        kept = self.result.evidence_blocks[:self.top_k]
        last = kept[-1] if kept else None
        numbers: dict[str, Any] = {"rank": rank_, "score": round(block.score, 6), "top_k": self.top_k}
        if last is None:
            return Explanation(source, "below_top_k", f"ranked {rank_}, but nothing was returned", numbers,
                               matched, rank_, block.score_parts)
        gap = last.score - block.score
        numbers.update(last_returned={"source": last.source, "score": round(last.score, 6)}, gap=round(gap, 6))
        shortfall = shortfall_words(block.score_parts, last.score_parts, gap)
        why = (f"ranked {rank_} (score {block.score:.3f}), below the last returned block, {last.source} at rank "
               f"{len(kept)} ({last.score:.3f}): {shortfall}")
        return Explanation(source, "below_top_k", why, numbers, matched, rank_, block.score_parts, last.score_parts)

    def _block(self, source: str, entry: Any) -> EvidenceBlock:
        """The page's merged block as the lookup would have built it, with its score and parts."""
        blocks = [l1_page_block(self.by_page[source])] if source in self.by_page else []
        if source in self.matches:
            blocks.append(l0_block(self.matches[source], entry))
        return rank(dedupe(blocks), **self.part_weights, **self.weights)[0]

    def _order(self) -> dict[str, float]:
        """Every ranked source's fused score, as `lookup_knowledge` orders them (pool pages and L0 matches)."""
        scores: dict[str, float] = {}
        for source in dict.fromkeys([*self.by_page, *self.matches]):
            found = self.by_page.get(source, ())
            match = self.matches.get(source)
            if match is not None and self.bound is not None and self.details.filter.decision == "caller" \
                    and self.bound not in match.domains:
                match = None  # the caller's filter binds L0 evidence too
            if not found and match is None:
                continue
            l1_score = max((c.score for c in found), default=0.0)
            page = max((c.page_score for c in found), default=0.0)
            scores[source] = fused_score(l1_score, page, match.score if match else 0.0, **self.weights)
        return scores


def _filters(category: str | None) -> dict[str, str] | None:
    return {"category": category} if category is not None else None
