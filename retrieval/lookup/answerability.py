"""The signals a lookup has about whether its evidence answers the question, which absolute scores hide.

An L1 score of 0.47 means little alone: "what is the capital of France" scores that high on the Hugo docs,
because "capital" stems like "capitalize". What separates it from a real question is how much of the
query's weight (IDF) the knowledge base holds at all (France: nothing), and how much of it the first page
holds. These signals, with the primary's score parts, its lead over the next page and whether L0 agreed,
are what retrieval.lookup.confidence weighs with a fitted logistic model (confidence_model.py).

A lookup with a contextual model part has that part's signals too (PART_SIGNALS), which only a model fitted
for that configuration weighs (retrieval.lookup.grading): with a dense part, the first page's dense score
(MiniLM's cosines mean the same from one query to the next, so an unrelated question scores low everywhere;
its lead over the next block's, tried too, got a weight against its own meaning and lifted no figure: the
margin already holds what the dense part added, docs/quality.md); with a reranker, the first page's score
standardised over the ranking's reranked pages (raw cross-encoder scores are on each model's own scale).
"""

from __future__ import annotations

import math
import statistics
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from retrieval.lookup.evidence import EvidenceBlock
from retrieval.text.analysis import tokenize

if TYPE_CHECKING:
    from retrieval.l1.search import L1Index

USABLE_L1 = ("ok", "empty")  # L1 statuses after which its vocabulary can be read
UNSEEN_IDF_BONUS = 1.0  # a term the knowledge base never uses weighs the rarest term's IDF plus this


@dataclass(frozen=True)
class Signals:
    """Numbers the confidence is computed from, each in words by signal_words; all 0 when there is no evidence.
    `margin` is None when no block follows the primary: a missing comparison is no evidence either way, so
    the model gives it no pull (it is not a lead of 100%). The model parts' signals are None unless that
    part scored the ranking (`parts`); one that does not apply to this lookup is None as well (no pull)."""

    l1_score: float  # the primary's L1 score (0 when L1 did not find it)
    word_lead: float  # its best section's lexical cosine less the mean of its LSA and static ones: word
    # overlap without agreement in meaning ("fix" matching a page about fixes) counts against (with a dense part,
    # which takes the static part's place, the static cosine is 0: a model fitted for it weighs it so)
    margin: float | None  # (first score - second score) / first score: the primary's lead over the next block,
    # in the whole ranking (not only the blocks returned); None when nothing follows it
    primary_l0: float  # 1 when L0 also found the primary
    corpus_coverage: float  # share of the query's IDF weight in terms the knowledge base holds at all
    primary_coverage: float  # share of it in terms the primary block's title, breadcrumb and text hold
    query_terms: float  # log(1 + the query's distinct terms)
    dense: float | None = None  # the primary page's dense score (mean of its whole text's and best section's
    # cosines with the query); None without a dense part, or when the dense part did not score the primary
    rerank: float | None = None  # the primary's reranker score standardised over the ranking's reranked pages
    parts: tuple[str, ...] = ()  # the model parts that scored this lookup's ranking, in PART_SIGNALS order

    @property
    def names(self) -> tuple[str, ...]:
        """This lookup's signals: SIGNALS, then those of each model part that scored it."""
        return SIGNALS + tuple(name for part in self.parts for name in PART_SIGNALS[part]) if self.parts else SIGNALS

    def vector(self, names: Sequence[str] | None = None) -> tuple[float, ...]:
        """The signals in `names` order (SIGNALS by default), a missing one as NaN (the fit and the model give
        it no pull)."""
        return tuple(math.nan if (v := getattr(self, name)) is None else v  # not asdict: slow
                     for name in (SIGNALS if names is None else names))

    def to_dict(self) -> dict[str, float | None]:
        """This lookup's signals by name (`names`): today's seven when no model part scored it."""
        return {name: None if (v := getattr(self, name)) is None else round(v, 4) for name in self.names}


SIGNALS = ("l1_score", "word_lead", "margin", "primary_l0", "corpus_coverage", "primary_coverage", "query_terms")
# each contextual model part's signals, present when that part scored the lookup's ranking (parts are in this order)
PART_SIGNALS = {"dense": ("dense",), "rerank": ("rerank",)}
ALL_SIGNALS = SIGNALS + tuple(name for names in PART_SIGNALS.values() for name in names)
DENSE_DETAIL, RERANK_DETAIL = 4, 6  # where an L1 block's l1_detail holds its dense and its reranker score


def signals(query: str, blocks: Sequence[EvidenceBlock], l1: L1Index | None,
            ranking: Sequence[EvidenceBlock] | None = None, l1_status: str = "ok") -> Signals:
    """The signals of one lookup's returned blocks; `ranking` is every ranked block, returned or not, whose
    second gives the primary's lead (with `top_k` 1 it would otherwise be 100% whatever came second). L1's
    vocabulary weighs the query's terms unless L1 failed or timed out on this call (then it is not touched)."""
    if l1_status not in USABLE_L1 or not hasattr(l1, "vocabulary"):  # a stand-in L1 (tests) has no vocabulary
        l1 = None
    weights, known_weight = _term_weights(query, l1)
    total = sum(weights.values()) or 1.0
    known = known_weight / total
    if not blocks:
        return Signals(0.0, 0.0, 0.0, 0.0, known, 0.0, math.log1p(len(weights)))
    primary = blocks[0]
    lexical, lsa, static = (primary.l1_detail or (0.0, None, None))[:3]
    words = _terms_of(f"{primary.title} {primary.breadcrumb} {primary.content}")
    held = sum(w for term, w in weights.items() if term in words) / total
    following = ranking if ranking is not None and len(ranking) > 1 else blocks
    margin: float | None = None  # nothing follows the primary: no comparison
    if len(following) > 1:
        margin = (primary.score - following[1].score) / primary.score if primary.score > 0 else 0.0
    word_lead = float(lexical or 0.0) - (float(lsa or 0.0) + float(static or 0.0)) / 2
    return Signals(float(primary.l1_score or 0.0), word_lead, margin, float("L0" in primary.layers), known, held,
                   math.log1p(len(weights)), **_part_signals(primary, following))


def _part_signals(primary: EvidenceBlock, ranking: Sequence[EvidenceBlock]) -> dict[str, Any]:
    """The model parts' signals and `parts` (none when no block of the ranking carries a dense or a reranker
    score: the part was off, failed, or had nothing to score)."""
    out: dict[str, Any] = {}
    parts = []
    if any(_detail(b, DENSE_DETAIL) is not None for b in ranking):
        parts.append("dense")
        out["dense"] = _detail(primary, DENSE_DETAIL)
    scored = [v for b in ranking if (v := _detail(b, RERANK_DETAIL)) is not None]
    if scored:
        parts.append("rerank")
        mine, spread = _detail(primary, RERANK_DETAIL), statistics.pstdev(scored)
        out["rerank"] = None if mine is None else (mine - statistics.fmean(scored)) / spread if spread > 0 else 0.0
    return {**out, "parts": tuple(parts)} if parts else out


def _detail(block: EvidenceBlock, position: int) -> float | None:
    """One of an L1 block's l1_detail values (None for an L0-only block or an older, shorter detail)."""
    detail = block.l1_detail
    return None if detail is None or len(detail) <= position or detail[position] is None else float(detail[position])


def _term_weights(query: str, l1: L1Index | None) -> tuple[dict[str, float], float]:
    """Each distinct query term's IDF in the knowledge base's sections (an unseen term weighs the most), and
    the weight of the terms the knowledge base holds."""
    terms = dict.fromkeys(tokenize(query))
    if l1 is None:
        return dict.fromkeys(terms, 1.0), 0.0
    seen = _idf_memo(l1)
    out, known = {}, 0.0
    for term in terms:
        weight = seen.get(term)
        if weight is None:
            weight = l1.section_idf(term)  # -1: no section of the base holds it
            if len(seen) >= IDF_MEMO_TERMS:
                seen.clear()
            seen[term] = weight
        if weight >= 0:
            out[term] = weight
            known += weight
        else:
            out[term] = seen[_RAREST] + UNSEEN_IDF_BONUS
    return out, known


IDF_MEMO_TERMS = 100_000  # query terms remembered per index (their IDF), so common words skip the vocabulary
_RAREST = "\0rarest"  # the memo's key for the vocabulary's highest IDF (no term holds a NUL)
_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # L1Index -> {term: IDF, or -1 when unseen}


def _idf_memo(l1: L1Index) -> dict[str, float]:
    memo = _MEMOS.get(l1)
    if memo is None or _RAREST not in memo:
        memo = _MEMOS[l1] = {_RAREST: l1.rarest_idf()}
    return memo


@lru_cache(maxsize=4096)
def _terms_of(text: str) -> frozenset[str]:
    """The analysed terms of a block's text (blocks recur across lookups: popular pages)."""
    return frozenset(tokenize(text))


_WORDS: dict[str, Any] = {  # each signal in words, for the relevance basis
    "l1_score": lambda v: f"L1 score {v:.2f}",
    "word_lead": lambda v: (f"word overlap ahead of meaning by {v:.2f} (lexical against LSA and static cosines)"
                            if v >= 0 else f"meaning ahead of word overlap by {-v:.2f}"),
    "margin": lambda v: "no next block to compare with" if v is None else f"a lead of {v:.0%} over the next block",
    "primary_l0": lambda v: "L0 also found the first page" if v else "L0 did not find the first page",
    "corpus_coverage": lambda v: f"the knowledge base holds {v:.0%} of the query's weight",
    "primary_coverage": lambda v: f"the first page holds {v:.0%} of the query's weight",
    "dense": lambda v: "no dense score for the first page" if v is None else f"dense score {v:.2f} (meaning)",
    "rerank": lambda v: "the reranker did not score the first page" if v is None else
    f"reranker score {v:+.1f} standard deviations from the reranked pages' mean",
}


def _question_length(value: float, pull: float) -> str:
    """The query_terms signal in words: short or detailed by the way it pulled (against or for)."""
    terms = round(math.expm1(value))
    counted = f"{terms} {'term' if terms == 1 else 'terms'}"
    return f"a short question ({counted})" if pull < 0 else f"a detailed question ({counted})" if pull > 0 \
        else f"a question of {counted}"


def signal_words(name: str, value: float | None, pull: float = 0.0) -> str:
    """One signal in words, for the relevance basis: 'the first page holds 100% of the query's weight';
    `pull` (its effect on the confidence) words the question's length as short or detailed."""
    if name == "query_terms":
        return _question_length(float(value or 0.0), pull)
    return _WORDS[name](value)
