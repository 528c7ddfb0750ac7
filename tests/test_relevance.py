"""The relevance grade (issue 32): a fitted confidence, its levels, and the spec's two rules whatever the model
says: L0-only evidence never claims semantic support, and an empty, failed or missing L1 never yields high."""

from __future__ import annotations

import math

import pytest

from retrieval.l0.index import L0Hints
from retrieval.lookup import confidence_model
from retrieval.lookup.answerability import SIGNALS, Signals
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
