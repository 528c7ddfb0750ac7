"""`lookup_knowledge`: the only orchestrator. L0 hints -> domain vote -> filter decision -> L1 -> evidence -> record.

L0 never replaces L1: it contributes hints, an optional category filter and its own evidence. L1 scores
the query once; its unfiltered ranking (with L0's evidence) votes on the domain the hints carry
(retrieval/lookup/domains.py), and when exactly one domain is carried L1 selects within it. If that filtered result is
much weaker than the unfiltered one, the lookup widens (filters.guard), saying so in the details. When
L1 is empty or fails, L0's evidence is still returned and the relevance says it has no semantic support.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from retrieval.config import LookupConfig
from retrieval.index.build import KnowledgeIndex
from retrieval.l0.index import L0Hints
from retrieval.l1.dense import DenseSettings
from retrieval.l1.results import L1Candidate
from retrieval.lookup import provenance
from retrieval.lookup.details import Counts, L1Outcome, RetrievalDetails, best_score, overall_layer
from retrieval.lookup.domains import DomainVote, Voter, vote_domains
from retrieval.lookup.evidence import (
    EvidenceBlock,
    dedupe,
    fused_score,
    l0_block,
    l1_page_block,
    rank,
    trim_reasons,
    truncate,
)
from retrieval.lookup.filters import FilterDecision, decide_filter, filter_effect, guard
from retrieval.lookup.grading import lookup_configuration
from retrieval.lookup.guard import guarded_search
from retrieval.lookup.invocation import Recorder, ToolInvocation
from retrieval.lookup.model_parts import dense_part, rerank_on, reranker
from retrieval.lookup.relevance import Relevance, assess, signals_of
from retrieval.lookup.rerank import RerankReport, reranked
from retrieval.lookup.shortfall import explain_shortfall
from retrieval.text.analysis import normalize_label
from retrieval.text.surrogates import replace_surrogates

__all__ = ["L1Outcome", "LookupResult", "SimulatedL1Failure", "lookup_knowledge"]

TOOL_NAME = "lookup_knowledge"
MAX_L1_REASONS = 3  # a block's other matched sections stay in `other_sections`


class SimulatedL1Failure(RuntimeError):
    """Raised by the `simulate_l1_failure` drill in place of L1."""


@dataclass(frozen=True)
class LookupResult:
    """What the tool returns: evidence blocks, the compatibility fields, relevance and the trace details."""

    query: str
    evidence_blocks: tuple[EvidenceBlock, ...]
    relevance: Relevance
    retrieval_layer: str
    retrieval_details: dict[str, Any]
    invocation_id: str
    details: RetrievalDetails | None = None

    @property
    def primary(self) -> EvidenceBlock | None:
        return self.evidence_blocks[0] if self.evidence_blocks else None

    @property
    def supplement(self) -> tuple[EvidenceBlock, ...]:
        return self.evidence_blocks[1:]

    def to_dict(self) -> dict[str, Any]:
        blocks = [b.to_dict() for b in self.evidence_blocks]
        return {"query": self.query, "primary": blocks[0] if blocks else None, "supplement": blocks[1:],
                "evidence_blocks": blocks, "relevance": self.relevance.to_dict(),
                "retrieval_layer": self.retrieval_layer, "retrieval_details": self.retrieval_details,
                "invocation_id": self.invocation_id}


@dataclass(frozen=True)
class _Ranked:
    """One L1 outcome turned into ranked, merged evidence (before truncation to top_k)."""

    outcome: L1Outcome
    blocks: tuple[EvidenceBlock, ...]
    candidate_count: int
    merged: int


def lookup_knowledge(query: str, *, index: KnowledgeIndex, config: LookupConfig | None = None,
                     category: str | None = None, top_k: int | None = None, recorder: Recorder | None = None,
                     run_id: str | None = None, query_id: str | None = None) -> LookupResult:
    """Answer `query` from the knowledge base; every call (failed ones too) goes to `recorder`."""
    config = config or LookupConfig()
    started = time.perf_counter()
    query, category, replaced = _valid_unicode(query, category)
    arguments = {"query": query, "category": category, "top_k": top_k}
    try:
        query, category, top_k = _validate(query, category, top_k, config, index.svd_dims)
    except ValueError as exc:
        if recorder is not None:
            recorder(ToolInvocation(TOOL_NAME, str(query), arguments, "error", _ms(started),
                                    _recorded_config(config, index), {},
                                    error=f"{type(exc).__name__}: {exc}", run_id=run_id, query_id=query_id,
                                    knowledge_base=provenance.of_index(index).to_dict()))
        raise
    timings: dict[str, float] = {}
    hints = _timed(timings, "l0", lambda: index.l0.match(
        query, max_matches=config.l0_max_matches, min_score_ratio=config.l0_min_score_ratio))
    # the caller's category binds L1 at once; otherwise L1 first ranks every row, and that ranking votes
    probe_filter = {"category": normalize_label(category)} if category is not None else None
    keep = max(top_k, config.l0_domain_top_n)
    l0_evidence = _l0_blocks(hints, index)  # made once: the probe and the filtered ranking both merge them
    probe = _timed(timings, "l1", lambda: _ranked(hints, l0_evidence, _run_l1(query, probe_filter, index, config,
                                                                               top_k), config, category, keep))
    hints = hints.with_vote(_timed(timings, "domains", lambda: _vote(hints, probe, category, config)))
    decision = decide_filter(hints, caller_category=category, use_l0_filter=config.l0_filter)
    final, decision = _timed(timings, "l1_filtered", lambda: _filtered(query, probe, decision, hints, l0_evidence,
                                                                      index, config, top_k))
    rerank = None
    if rerank_on(config):
        final, rerank = _timed(timings, "rerank", lambda: _reranked(query, final, hints, l0_evidence, config,
                                                                    category, max(top_k, config.l0_domain_top_n)))
    blocks = _timed(timings, "evidence", lambda: tuple(
        trim_reasons(truncate(b, config.snippet_chars), MAX_L1_REASONS) for b in final.blocks[:top_k]))
    layer = overall_layer(hints, final.outcome)
    relevance = _timed(timings, "relevance", lambda: assess(
        blocks, hints, final.outcome.status, signals_of(query, blocks, index.l1, final.blocks, final.outcome.status),
        lookup_configuration(config, final.outcome, rerank)))
    timings["total"] = _ms(started)
    shortfall = explain_shortfall(top_k, blocks, decision, final.outcome.status, final.outcome.result, index.l1)
    details = RetrievalDetails(layer, hints, decision, final.outcome, Counts(final.candidate_count, len(blocks),
                               final.merged), blocks, relevance, timings, shortfall, rerank)
    payload = details.to_dict()
    payload["input"] = {"surrogates_replaced": replaced}  # lone surrogates in query/category, made U+FFFD
    payload["kb"] = {"skipped_count": len(index.kb.problems)}  # the list: index.kb.summary()["skipped"]
    invocation = ToolInvocation(TOOL_NAME, query, arguments, "ok", _ms(started), _recorded_config(config, index),
                                payload, run_id=run_id, query_id=query_id,  # a TraceStore adds its own time
                                knowledge_base=provenance.of_index(index).to_dict())
    if recorder is not None:
        recording = time.perf_counter()
        recorder(invocation)
        payload["timings_ms"]["record"] = round(_ms(recording), 3)
    return LookupResult(query, blocks, relevance, layer, payload, invocation.id, details)


def _valid_unicode(query: Any, category: Any) -> tuple[Any, Any, dict[str, int]]:
    """Query and category with lone surrogates replaced (they cannot be stored), and how many were."""
    counts = {}
    for name, value in (("query", query), ("category", category)):
        counts[name] = 0
        if isinstance(value, str):
            cleaned, counts[name] = replace_surrogates(value)
            query, category = (cleaned, category) if name == "query" else (query, cleaned)
    return query, category, counts


def _validate(query: Any, category: Any, top_k: Any, config: LookupConfig, dims: int) -> tuple[str, str | None, int]:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query must be a non-empty string; pass the question or keywords to look up")
    if category is not None and (not isinstance(category, str) or not normalize_label(category)):
        raise ValueError(f"category must be a non-blank string or omitted, got {category!r}")
    config.check_index_dims(dims)
    if top_k is None:
        return query.strip(), category, config.top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise ValueError(f"top_k must be an integer from 1 to 1000, got {top_k!r}")
    return query.strip(), category, top_k


def _run_l1(query: str, filters: dict[str, str] | None, index: KnowledgeIndex, config: LookupConfig,
            top_k: int) -> L1Outcome:
    """One L1 search under `filters`, or the outcome standing in for it (disabled, unavailable, failed, timeout)."""
    if not config.l1_enabled:
        return L1Outcome("disabled")
    if index.l1 is None:
        return L1Outcome("unavailable", error={"type": "L1Unavailable",
                                               "message": index.l1_unavailable_reason or "no L1 index"})
    settings = dict(top_k=max(config.l1_pool, top_k), filters=filters, min_score=config.l1_min_score,
                    tfidf_weight=config.l1_tfidf_weight, page_weight=config.page_weight)
    if config.l1_static_weight > 0:  # an L1 stand-in (tests, plug-ins) without a static part never sees it
        settings["static_weight"] = config.l1_static_weight
    dense, dense_failure = dense_part(index, config)
    if dense is not None:  # the contextual part takes the static part's place: on top of it, the static part
        settings.pop("static_weight", None)  # only lost (docs/quality.md)
        settings.update(dense=DenseSettings(dense, config.l1_dense_weight, config.l1_dense_norm, config.l1_dense_pool),
                        top_k=max(settings["top_k"], config.l1_dense_pool))

    def search() -> object:
        if config.simulate_l1_failure:
            raise SimulatedL1Failure("simulated L1 failure (simulate_l1_failure drill)")
        return index.l1.search(query, **settings)

    from_probe = getattr(index.l1, "from_probe", None)  # an L1 stand-in (tests, plug-ins) may only search
    quick = None if config.simulate_l1_failure or not filters or from_probe is None else \
        lambda: from_probe(query, **settings)
    call = guarded_search(search, config.l1_timeout_ms, quick)  # checked, time-limited, never raises
    if call.error is not None:
        error = {"type": type(call.error).__name__, "message": str(call.error)}
        return L1Outcome("timeout" if call.timed_out else "failed", error=error, dense=dense_failure)
    return L1Outcome("ok" if call.result.candidates else "empty", call.result, dense=dense_failure)


def _reranked(query: str, final: _Ranked, hints: L0Hints, l0_evidence: list[EvidenceBlock], config: LookupConfig,
              category: str | None, keep: int) -> tuple[_Ranked, RerankReport]:
    """The final ranking with its best pages re-scored by the reranker (retrieval/lookup/rerank.py); as it was,
    with the report saying why, when the reranker is not there, fails or runs out of time."""
    result = final.outcome.result
    scorer, error = reranker(config)
    if scorer is None:
        return final, RerankReport(config.rerank_model, "failed", error=error)
    if result is None:
        return final, RerankReport(scorer.info.to_dict(), "empty")
    result, report = reranked(query, result, scorer, top=config.rerank_top, weight=config.rerank_weight,
                              budget_ms=config.rerank_budget_ms, page_weight=config.page_weight)
    if report.status != "ok":
        return final, report
    return _ranked(hints, l0_evidence, replace(final.outcome, result=result), config, category, keep), report


def _l0_blocks(hints: L0Hints, index: KnowledgeIndex) -> list[EvidenceBlock]:
    """L0's evidence: a block per matched entry still in the knowledge base."""
    return [l0_block(m, entry) for m in hints.matches if (entry := index.kb.entry(m.source)) is not None]


def _ranked(hints: L0Hints, l0_blocks: list[EvidenceBlock], outcome: L1Outcome, config: LookupConfig,
            category: str | None, keep: int) -> _Ranked:
    """L1's candidates merged with L0's evidence and ranked; the `keep` best (plus every L0 source) are made
    into blocks, the rest are only counted: building 30 pages' blocks to return 5 cost as much as L1 itself.
    The order is `rank`'s exactly: the same fused score from the same parts, ties by source."""
    by_page: dict[str, list[L1Candidate]] = {}
    best: dict[str, tuple[float, float]] = {}  # per source: its best L1 score and page score
    for candidate in outcome.result.candidates if outcome.result else ():
        source = candidate.chunk.source
        by_page.setdefault(source, []).append(candidate)
        score, page = best.get(source, (candidate.score, candidate.page_score))
        best[source] = (max(score, candidate.score), max(page, candidate.page_score))
    if category is not None:  # the caller's filter binds L0 evidence too
        l0_blocks = [b for b in l0_blocks if normalize_label(category) in b.domains]
    count = sum(len(c) for c in by_page.values()) + len(l0_blocks)
    l0_by_source = {b.source: b for b in l0_blocks}
    sources = list(dict.fromkeys([*by_page, *l0_by_source]))
    order = sorted(sources, key=lambda source: (-_fused_score(best.get(source), l0_by_source.get(source),
                                                               hints.score_bound, config), source))
    chosen = set(order[:keep]) | set(l0_by_source)
    ranked = rank(dedupe([l1_page_block(by_page[s]) for s in by_page if s in chosen] + l0_blocks),
                  l0_weight=config.l0_weight, l1_weight=config.l1_weight, l0_bound=hints.score_bound,
                  page_weight=config.page_weight, tfidf_weight=config.l1_tfidf_weight,
                  static_weight=config.l1_static_weight, dense_weight=config.l1_dense_weight,
                  rerank_weight=config.rerank_weight)
    return _Ranked(outcome, tuple(ranked), count, count - len(sources))


def _fused_score(l1_best: tuple[float, float] | None, l0: EvidenceBlock | None, l0_bound: float,
                 config: LookupConfig) -> float:
    """`evidence.rank`'s score of one source's merged block, from its parts (no block built): its
    candidates' best L1 and page scores, and its L0 block."""
    l1_score, page_score = l1_best if l1_best is not None else (0.0, 0.0)
    l0_score = l0.l0_score if l0 is not None and l0.l0_score is not None else 0.0
    return fused_score(l1_score, page_score, l0_score, l0_bound=l0_bound, l0_weight=config.l0_weight,
                       l1_weight=config.l1_weight, page_weight=config.page_weight)


def _vote(hints: L0Hints, probe: _Ranked, category: str | None, config: LookupConfig) -> DomainVote:
    """The domain vote: over the unfiltered ranking, or over L0's matches alone when L1 gave no unfiltered
    ranking (disabled, failed, unavailable, or bound by the caller's category)."""
    if category is None and probe.outcome.result is not None:
        basis, blocks = "ranking", probe.blocks
    else:
        basis = "l0_matches"
        blocks = tuple(b for b in probe.blocks if "L0" in b.layers) if category is None else ()
    voters = [Voter(b.source, b.title, b.score, b.domains, b.retrieval_layer) for b in blocks]
    coverage: dict[str, float] = {}
    for match in hints.matches:
        for domain in match.domains:
            coverage[domain] = max(coverage.get(domain, 0.0), match.coverage)
    return vote_domains(voters, basis=basis, top_n=config.l0_domain_top_n, temperature=config.l0_domain_temperature,
                        min_share=config.l0_domain_min_share, l0_coverage=coverage,
                        min_coverage=config.l0_domain_min_coverage)


def _filtered(query: str, probe: _Ranked, decision: FilterDecision, hints: L0Hints,
              l0_evidence: list[EvidenceBlock], index: KnowledgeIndex, config: LookupConfig,
              top_k: int) -> tuple[_Ranked, FilterDecision]:
    """The L1 search under an L0-derived filter; widened back to the unfiltered `probe` when much weaker."""
    if decision.decision != "applied" or probe.outcome.result is None:
        return probe, decision  # no filter, the caller's (already applied), or no L1 to filter
    filtered = _ranked_within(probe, hints, l0_evidence, _run_l1(query, decision.applied, index, config, top_k),
                              config, max(top_k, config.l0_domain_top_n))
    widening = guard(_best_inside(probe.blocks, decision.applied["category"]) if filtered.blocks else None,
                     best_score(probe.blocks), config.filter_widen_ratio)
    if widening.widened:
        return probe, replace(decision, widening=widening)
    effect = filter_effect([b.source for b in probe.blocks[:top_k]], [b.source for b in filtered.blocks[:top_k]])
    return filtered, replace(decision, widening=widening, effect=effect)


def _best_inside(blocks: tuple[EvidenceBlock, ...], category: str) -> float | None:
    """The best unfiltered score of a page inside `category`: the filtered search normalises page scores
    to the best page inside the filter, so its own scores do not compare with the unfiltered best."""
    return max((b.score for b in blocks if category in b.domains), default=None)


def _ranked_within(probe: _Ranked, hints: L0Hints, l0_evidence: list[EvidenceBlock], outcome: L1Outcome,
                   config: LookupConfig, keep: int) -> _Ranked:
    """`_ranked` for the filtered outcome; the probe's blocks when L1 gave the probe's very candidates back
    (it does when the filter provably changes nothing: l1.L1Index._derived), as ranking them again would."""
    if outcome.result is not None and probe.outcome.result is not None and \
            outcome.result.candidates is probe.outcome.result.candidates:
        return replace(probe, outcome=outcome)
    return _ranked(hints, l0_evidence, outcome, config, None, keep)


def _recorded_config(config: LookupConfig, index: KnowledgeIndex) -> dict[str, Any]:
    """The call's settings (`svd_dims` as set: it matched the index) and the index's as built (`index`)."""
    return {**config.to_dict(), "index": index.settings()}


def _timed(timings: dict[str, float], stage: str, work):
    started = time.perf_counter()
    value = work()
    timings[stage] = _ms(started)
    return value


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
