"""Evidence blocks: one per source identity, merged across L0 and L1, ordered, and summarised for traces."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from retrieval.kb.model import Entry
from retrieval.l0.index import L0Match
from retrieval.l1.results import L1Candidate

PREVIEW_CHARS = 200


@dataclass(frozen=True)
class HitReason:
    """Why a block was returned: which layer, what matched (`field`), in words (`reason`), and a score."""

    layer: str
    field: str
    reason: str
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "field": self.field, "reason": self.reason,
                "score": None if self.score is None else round(self.score, 6)}


@dataclass(frozen=True)
class ScorePart:
    """One term of a block's fused score: `value` (the part's own score) × `weight` = `contribution`; a
    block's contributions add up to its score, which is how an analyst sees why it ranks where it does."""

    part: str
    value: float
    weight: float

    @property
    def contribution(self) -> float:
        return self.value * self.weight

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "value": round(self.value, 6), "weight": round(self.weight, 6),
                "contribution": round(self.contribution, 6)}


@dataclass(frozen=True)
class EvidenceBlock:
    """One source's evidence: its best section's content and breadcrumb, and every path that found it."""

    source: str
    title: str
    breadcrumb: str
    retrieval_layer: str
    content: str
    hit_reasons: tuple[HitReason, ...]
    score: float = 0.0
    l0_score: float | None = None
    l1_score: float | None = None
    page_score: float | None = None
    other_sections: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    # best section's lexical score, LSA cosine, static score and what the static part added (None: no static part),
    # then its page's dense score and what the dense part added, and the reranker's score and what it added
    l1_detail: tuple[float | None, ...] | None = None
    score_parts: tuple[ScorePart, ...] = ()  # set by `rank`: the terms `score` is the sum of

    @property
    def layers(self) -> frozenset[str]:
        return frozenset(r.layer for r in self.hit_reasons)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "title": self.title or None, "breadcrumb": self.breadcrumb or None,
                "retrieval_layer": self.retrieval_layer, "content": self.content,
                "hit_reasons": [r.to_dict() for r in self.hit_reasons], "score": round(self.score, 6),
                "l0_score": _round(self.l0_score), "l1_score": _round(self.l1_score),
                "page_score": _round(self.page_score), "other_sections": list(self.other_sections),
                "domains": list(self.domains), "score_parts": [p.to_dict() for p in self.score_parts]}

    def summary(self) -> dict[str, Any]:
        """The compact form kept in `retrieval_details`: no full content."""
        preview = self.content[:PREVIEW_CHARS]
        return {"source": self.source, "title": self.title or None, "retrieval_layer": self.retrieval_layer,
                "score": round(self.score, 6), "hit_reasons": [r.to_dict() for r in self.hit_reasons],
                "score_parts": [p.to_dict() for p in self.score_parts],
                "content_preview": preview, "content_chars": len(self.content)}


def l0_block(match: L0Match, entry: Entry) -> EvidenceBlock:
    """L0-only evidence: the entry's opening section, with one hit reason per matched field."""
    reasons = []
    if match.title_matched:
        reasons.append(HitReason("L0", "title", f"title matched: {match.title}", match.score))
    for name, values in (("keywords", match.matched_keywords), ("entities", match.matched_entities),
                         ("category", match.matched_categories)):
        if values:
            reasons.append(HitReason("L0", name, f"{name} matched: {', '.join(values)}", match.score))
    opening = entry.chunks[0] if entry.chunks else None  # the opening section (read once: decoded per access)
    return EvidenceBlock(entry.source, entry.title, opening.breadcrumb if opening else entry.title, "L0",
                         opening.text if opening else entry.description, tuple(reasons), l0_score=match.score,
                         domains=entry.domains)


def l1_block(candidate: L1Candidate) -> EvidenceBlock:
    """L1 evidence: the matched chunk, with its cosine scores in the hit reason."""
    chunk = candidate.chunk
    return EvidenceBlock(chunk.source, chunk.title, chunk.breadcrumb, "L1", chunk.text, (_l1_reason(candidate),),
                         l1_score=candidate.score, page_score=candidate.page_score, domains=chunk.domains,
                         l1_detail=_l1_detail(candidate))


def _l1_detail(candidate: L1Candidate) -> tuple[float | None, ...]:
    added = candidate.static_added if candidate.static_score is not None else None
    dense = candidate.dense_added if candidate.dense_score is not None else None
    rerank = candidate.rerank_added if candidate.rerank_score is not None else None
    return (candidate.lexical_score, candidate.lsa_score, candidate.static_score, added, candidate.dense_score, dense,
            candidate.rerank_score, rerank)


def _l1_reason(candidate: L1Candidate) -> HitReason:
    # the parts, not "semantic": by default the blended score is mostly lexical
    lsa = f", LSA {candidate.lsa_score:.2f}" if candidate.lsa_score is not None else ", no LSA"
    static = "" if candidate.static_score is None else \
        f", static {candidate.static_score:.2f} ({candidate.static_added:+.3f})"
    dense = "" if candidate.dense_score is None else \
        f", dense {candidate.dense_score:.2f} ({candidate.dense_added:+.3f})"
    rerank = "" if candidate.rerank_score is None else \
        f", rerank {candidate.rerank_score:.2f} ({candidate.rerank_added:+.3f})"
    detail = (f"L1 match: lexical {candidate.lexical_score:.2f}{lsa}{static}{dense}{rerank} "
              f"in '{candidate.chunk.breadcrumb}'")
    return HitReason("L1", "section", detail, candidate.score)


def l1_page_block(candidates: Sequence[L1Candidate]) -> EvidenceBlock:
    """One page's L1 evidence in one step (what merging its sections' blocks gives, without the copies):
    the best section's content, every section's hit reason, the other sections listed."""
    best = max(candidates, key=lambda c: c.score)
    chunk = best.chunk
    sections = tuple(dict.fromkeys(c.chunk.breadcrumb for c in candidates
                                   if c.chunk.breadcrumb and c.chunk.breadcrumb != chunk.breadcrumb))
    return EvidenceBlock(chunk.source, chunk.title, chunk.breadcrumb, "L1", chunk.text,
                         tuple(dict.fromkeys(_l1_reason(c) for c in candidates)), l1_score=best.score,
                         page_score=max(c.page_score for c in candidates), other_sections=sections,
                         domains=chunk.domains, l1_detail=_l1_detail(best))


def merge(first: EvidenceBlock, second: EvidenceBlock) -> EvidenceBlock:
    """Two blocks of one source -> one: best L1 section's content, union of hit reasons and sections."""
    if first.source != second.source:
        raise ValueError(f"cannot merge evidence of different sources: {first.source!r}, {second.source!r}")
    best, other = (first, second) if _rank_key(first) >= _rank_key(second) else (second, first)
    reasons = tuple(dict.fromkeys(first.hit_reasons + second.hit_reasons))
    sections = tuple(s for s in dict.fromkeys((*best.other_sections, other.breadcrumb, *other.other_sections))
                     if s and s != best.breadcrumb)
    layers = {r.layer for r in reasons}
    return replace(best, title=best.title or other.title, retrieval_layer=layer_label(layers),
                   hit_reasons=reasons, other_sections=sections,
                   l0_score=_max(first.l0_score, second.l0_score), l1_score=_max(first.l1_score, second.l1_score),
                   page_score=_max(first.page_score, second.page_score))


def dedupe(blocks: Iterable[EvidenceBlock]) -> list[EvidenceBlock]:
    """One block per source identity, in order of first appearance; idempotent."""
    merged: dict[str, EvidenceBlock] = {}
    for block in blocks:
        merged[block.source] = merge(merged[block.source], block) if block.source in merged else block
    return list(merged.values())


def rank(blocks: Sequence[EvidenceBlock], *, l0_weight: float, l1_weight: float,
         l0_bound: float, page_weight: float = 0.0, tfidf_weight: float | None = None,
         static_weight: float | None = None, dense_weight: float | None = None,
         rerank_weight: float | None = None) -> list[EvidenceBlock]:
    """Order by l1_weight * L1 score + page_weight * page score + l0_weight * (L0 score / the query's
    L0 bound); ties by source. Each block carries its `score_parts` (L1 split into its lexical, LSA and
    static terms when `tfidf_weight`, L1's lexical weight, is given).

    The L1 and L0 parts are in [0, 1] on absolute scales, so a title that covers the whole query counts
    fully and one that shares a single common word barely moves the order; the page score is relative
    to the query's best page.
    """
    weights = dict(l0_bound=l0_bound, l0_weight=l0_weight, l1_weight=l1_weight, page_weight=page_weight)
    scored = [_with_score(b, fused_score(b.l1_score or 0.0, b.page_score or 0.0, b.l0_score or 0.0, **weights),
                          score_parts(b, tfidf_weight=tfidf_weight, static_weight=static_weight,
                                      dense_weight=dense_weight, rerank_weight=rerank_weight, **weights))
              for b in blocks]
    return sorted(scored, key=lambda b: (-b.score, b.source))


def score_parts(block: EvidenceBlock, *, l0_bound: float, l0_weight: float, l1_weight: float,
                page_weight: float, tfidf_weight: float | None = None,
                static_weight: float | None = None, dense_weight: float | None = None,
                rerank_weight: float | None = None) -> tuple[ScorePart, ...]:
    """The terms of `fused_score` for one block, each with its weight; L1's term split into its lexical,
    LSA and static terms when its lexical weight is known and they add up to its score. The static term is
    what the static part added, at `static_weight` (`l1_static_weight`); when the section's score was floored
    at 0, an `L1 floor` term says what the floor took back, so the parts still add up to the score."""
    parts: list[ScorePart] = []
    if block.l1_score is not None:
        parts.extend(_l1_parts(block.l1_score, block.l1_detail, l1_weight, tfidf_weight, static_weight,
                               dense_weight, rerank_weight))
        parts.append(ScorePart("page", block.page_score or 0.0, page_weight))
    if block.l0_score is not None:
        parts.append(ScorePart("L0", min(block.l0_score / l0_bound, 1.0) if l0_bound > 0 else 0.0, l0_weight))
    return tuple(parts)


def _l1_parts(l1_score: float, detail: tuple[float | None, ...] | None, l1_weight: float,
              tfidf_weight: float | None, static_weight: float | None = None, dense_weight: float | None = None,
              rerank_weight: float | None = None) -> list[ScorePart]:
    if detail is None or tfidf_weight is None:
        return [ScorePart("L1", l1_score, l1_weight)]
    lexical, lsa, static = detail[:3]
    added = detail[3] if len(detail) > 3 else None
    parts = [ScorePart("L1 lexical", lexical, l1_weight * tfidf_weight)]
    if lsa is not None:
        parts.append(ScorePart("L1 LSA", max(lsa, 0.0), l1_weight * (1 - tfidf_weight)))
    rest = l1_score - sum(p.value * p.weight for p in parts) / l1_weight if l1_weight else 0.0
    for name, index, weight in (("L1 dense", 5, dense_weight), ("L1 rerank", 7, rerank_weight)):
        model_added = detail[index] if len(detail) > index else None
        if model_added is not None:  # what a model's part added, at its own weight (a part of its own on the card)
            weight = weight if weight else 1.0
            parts.append(ScorePart(name, model_added / weight, l1_weight * weight))
            rest -= model_added
    if static is not None and added is not None:  # what the static re-ranking added, at its own weight
        weight = static_weight if static_weight else 1.0
        parts.append(ScorePart("L1 static", added / weight, l1_weight * weight))
        if abs(rest - added) > 1e-6:  # the section's score was floored at 0: the floor took this back
            parts.append(ScorePart("L1 floor", rest - added, l1_weight))
    elif static is not None:  # a detail recorded without the addition: the remainder is the static part
        parts.append(ScorePart("L1 static", rest, l1_weight))
    elif abs(rest) > 1e-4:  # the blend is not what these weights make: show L1 whole rather than wrong parts
        return [ScorePart("L1", l1_score, l1_weight)]
    return parts


def _with_score(block: EvidenceBlock, score: float, parts: tuple[ScorePart, ...]) -> EvidenceBlock:
    """The block with its score and the parts that sum to it, without `replace`'s field introspection (a
    lookup ranks ~20 blocks)."""
    return EvidenceBlock(**{**block.__dict__, "score": score, "score_parts": parts})


def fused_score(l1_score: float, page_score: float, l0_score: float, *, l0_bound: float, l0_weight: float,
                l1_weight: float, page_weight: float) -> float:
    """`rank`'s score from a block's parts, so a caller can order sources before building their blocks."""
    l0 = min(l0_score / l0_bound, 1.0) if l0_bound > 0 else 0.0
    return l1_weight * l1_score + page_weight * page_score + l0_weight * l0


def truncate(block: EvidenceBlock, limit: int) -> EvidenceBlock:
    """Cut content to `limit` characters at a word boundary, marking the cut with an ellipsis."""
    if len(block.content) <= limit:
        return block
    cut = block.content[:limit].rsplit(None, 1)[0] if " " in block.content[:limit] else block.content[:limit]
    return replace(block, content=cut.rstrip() + " …")


def trim_reasons(block: EvidenceBlock, per_layer: int) -> EvidenceBlock:
    """Keep each layer's `per_layer` best hit reasons (every layer stays represented); sections stay listed."""
    kept: list[HitReason] = []
    for layer in dict.fromkeys(r.layer for r in block.hit_reasons):
        ranked = sorted((r for r in block.hit_reasons if r.layer == layer), key=lambda r: -(r.score or 0.0))
        kept.extend(ranked if layer == "L0" else ranked[:per_layer])
    return block if len(kept) == len(block.hit_reasons) and tuple(kept) == block.hit_reasons else \
        replace(block, hit_reasons=tuple(kept))


def layer_label(layers: Iterable[str]) -> str:
    found = set(layers)
    if {"L0", "L1"} <= found:
        return "L0+L1"
    return next(iter(found)) if len(found) == 1 else "none"


def _rank_key(block: EvidenceBlock) -> tuple[float, float]:
    return (block.l1_score if block.l1_score is not None else -1.0, block.l0_score or 0.0)


def _max(*scores: float | None) -> float | None:
    values = [v for v in scores if v is not None]
    return max(values) if values else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
