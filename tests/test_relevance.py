"""The relevance grade (issue 32): a fitted confidence, its levels, and the spec's two rules whatever the model
says: L0-only evidence never claims semantic support, and an empty, failed or missing L1 never yields high."""

from __future__ import annotations

import math

import pytest

from retrieval.l0.index import L0Hints
from retrieval.lookup import confidence_model
from retrieval.lookup.answerability import SIGNALS, Signals, signal_words
from retrieval.lookup.confidence import estimate
from retrieval.lookup.evidence import EvidenceBlock, HitReason
from retrieval.lookup.relevance import HIGH_CONFIDENCE, MEDIUM_CONFIDENCE, NO_ANSWER, assess

STRONG = Signals(l1_score=0.9, word_lead=-0.2, margin=0.6, primary_l0=1.0, corpus_coverage=1.0,
                 primary_coverage=1.0, query_terms=math.log1p(4))
MIDDLING = Signals(l1_score=0.5, word_lead=0.0, margin=0.2, primary_l0=0.0, corpus_coverage=1.0,
                   primary_coverage=0.6, query_terms=math.log1p(3))
WEAK = Signals(l1_score=0.45, word_lead=0.3, margin=0.02, primary_l0=0.0, corpus_coverage=0.4,
               primary_coverage=0.1, query_terms=math.log1p(3))


def _block(l1: float | None, with_l0: bool = False) -> EvidenceBlock:
    reasons = ((HitReason("L1", "section", "s", l1),) if l1 is not None else ()) + (
        (HitReason("L0", "title", "t", 3.0),) if with_l0 or l1 is None else ())
    return EvidenceBlock("a.md", "A", "A", "L1", "", reasons, l1_score=l1, l0_score=3.0 if with_l0 else None)


@pytest.mark.parametrize("signals, level", [(STRONG, "high"), (MIDDLING, "medium"), (WEAK, "low")])
def test_a_case_per_level_follows_the_fitted_confidence(signals, level):
    relevance = assess([_block(0.5)], L0Hints(), "ok", signals)
    assert relevance.level == level and relevance.semantic_support
    assert relevance.confidence == pytest.approx(estimate(signals).value)
    assert f"confidence {relevance.confidence:.2f} ({level})" in relevance.basis
    assert relevance.abstain == (level == "low")
    assert relevance.basis.startswith(NO_ANSWER) == (level == "low")  # said plainly, evidence still returned


def test_no_evidence_is_none_and_abstains():
    relevance = assess([], L0Hints(), "empty", WEAK)
    assert (relevance.level, relevance.confidence, relevance.abstain) == ("none", 0.0, True)


@pytest.mark.parametrize("status, words", [("failed", "L1 failed"), ("empty", "no candidates"),
                                           ("timeout", "timed out"), ("disabled", "disabled"),
                                           ("unavailable", "unavailable")])
def test_l0_only_evidence_never_claims_semantic_support_nor_high(status, words):
    relevance = assess([_block(None)], L0Hints(), status, STRONG)  # the strongest signals do not lift it
    assert (relevance.level, relevance.semantic_support, relevance.abstain) == ("low", False, True)
    assert words in relevance.basis and "without semantic support" in relevance.basis


def test_the_basis_names_what_drove_the_confidence():
    basis = assess([_block(0.9, with_l0=True)], L0Hints(), "ok", STRONG).basis
    assert "for: " in basis and "L0 also matched its title" in basis
    assert "the first page holds 100% of the query's weight" in basis  # the strongest pull, named first


def test_the_query_weight_the_first_page_holds_raises_the_confidence():
    values = [estimate(Signals(**{**MIDDLING.to_dict(), "primary_coverage": share})).value
              for share in (0.0, 0.5, 1.0)]
    assert values == sorted(values) and values[0] < values[-1]


def test_the_shipped_model_is_for_these_signals_and_its_thresholds_are_ordered():
    assert tuple(confidence_model.SIGNALS) == SIGNALS
    assert len(confidence_model.MEAN) == len(confidence_model.SCALE) == len(confidence_model.WEIGHTS) == len(SIGNALS)
    assert all(scale > 0 for scale in confidence_model.SCALE)
    assert 0.0 < MEDIUM_CONFIDENCE < HIGH_CONFIDENCE < 1.0


def test_a_lone_block_has_no_margin_and_no_lead_in_its_basis():
    """Issue 49: with nothing after the primary, the margin is missing (None), not a lead of 100%."""
    from retrieval.lookup.answerability import signals

    lone = signals("download invoices", [_block(0.5)], None, ranking=[_block(0.5)])
    assert lone.margin is None and lone.to_dict()["margin"] is None and math.isnan(lone.vector()[2])
    relevance = assess([_block(0.5)], L0Hints(), "ok", lone)
    assert "lead of" not in relevance.basis and "100%" not in relevance.basis.split("query's weight")[-1]


def test_a_missing_margin_pulls_the_confidence_neither_way():
    missing = Signals(**{**{n: getattr(MIDDLING, n) for n in SIGNALS}, "margin": None})
    at_mean = Signals(**{**{n: getattr(MIDDLING, n) for n in SIGNALS},
                         "margin": confidence_model.MEAN[SIGNALS.index("margin")]})
    assert estimate(missing).value == pytest.approx(estimate(at_mean).value)
    assert dict(estimate(missing).pulls)["margin"] == 0.0
    full_lead = Signals(**{**{n: getattr(MIDDLING, n) for n in SIGNALS}, "margin": 1.0})
    assert estimate(full_lead).value > estimate(missing).value  # a real 100% lead still counts for


def test_a_high_grade_names_nothing_against_it():
    """Issue 49: "against: 3 query term(s)" stood in every confidence line, even at 0.98."""
    basis = assess([_block(0.9, with_l0=True)], L0Hints(), "ok", STRONG).basis
    assert "(high)" in basis and "against" not in basis and "query term(s)" not in basis


def test_against_names_a_pull_only_when_it_kept_the_grade_from_the_next_level():
    confidence = estimate(MIDDLING)
    basis = assess([_block(0.5)], L0Hints(), "ok", MIDDLING).basis
    named = [n for n, p in confidence.pulls if p < 0 and signal_words(n, getattr(MIDDLING, n), p) in basis]
    for name in named:  # each named one, removed alone, lifts medium to high
        pull = dict(confidence.pulls)[name]
        lifted = 1 / (1 + math.exp(-(math.log(confidence.value / (1 - confidence.value)) - pull)))
        assert lifted >= HIGH_CONFIDENCE
    low = assess([_block(0.45)], L0Hints(), "ok", WEAK).basis
    assert "against: " in low, "an abstention names its strongest pull against"


def test_a_short_question_is_called_short_where_it_pulls_against():
    assert signal_words("query_terms", math.log1p(3), -0.8) == "a short question (3 terms)"
    assert signal_words("query_terms", math.log1p(12), 0.4) == "a detailed question (12 terms)"
    assert signal_words("query_terms", math.log1p(1), 0.0) == "a question of 1 term"


def test_nothing_at_all_says_plainly_that_the_knowledge_base_holds_no_answer():
    relevance = assess([], L0Hints(), "empty", None)
    assert relevance.basis.startswith(NO_ANSWER) and "L0 matched nothing" in relevance.basis
