"""The relevance grade: by the primary's L1 score; L0-only evidence never claims semantic support."""

from __future__ import annotations

import pytest

from retrieval.l0.index import L0Hints
from retrieval.lookup.evidence import EvidenceBlock, HitReason
from retrieval.lookup.relevance import assess


def _block(l1: float | None, with_l0: bool = False) -> EvidenceBlock:
    reasons = ((HitReason("L1", "section", "s", l1),) if l1 is not None else ()) + (
        (HitReason("L0", "title", "t", 3.0),) if with_l0 or l1 is None else ())
    return EvidenceBlock("a.md", "A", "A", "L1", "", reasons, l1_score=l1, l0_score=3.0 if with_l0 else None)


@pytest.mark.parametrize("score, level", [(0.8, "high"), (0.4, "high"), (0.3, "medium"), (0.1, "low")])
def test_level_follows_the_primary_l1_score(score, level):
    relevance = assess([_block(score)], L0Hints(), "ok")
    assert (relevance.level, relevance.semantic_support) == (level, True)


def test_l0_agreement_is_named_but_does_not_raise_the_level():
    relevance = assess([_block(0.1, with_l0=True)], L0Hints(), "ok")
    assert relevance.level == "low" and "L0 also matched its title" in relevance.basis


@pytest.mark.parametrize("status, words", [("failed", "L1 failed"), ("empty", "no candidates"),
                                           ("disabled", "disabled"), ("unavailable", "unavailable")])
def test_l0_only_primary_is_low_without_semantic_support(status, words):
    relevance = assess([_block(None)], L0Hints(), status)
    assert (relevance.level, relevance.semantic_support) == ("low", False)
    assert words in relevance.basis


def test_no_evidence_is_none():
    assert assess([], L0Hints(), "empty").level == "none"
