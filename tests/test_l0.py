"""L0: BM25Okapi scores equal rank-bm25's, matches need a positive score and a shared term, hints name what matched."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from retrieval import load_knowledge_base
from retrieval.l0.arrays import entry_terms
from retrieval.l0.index import L0Index
from retrieval.text.analysis import tokenize
from tests.conftest import shared_path

QUERIES = ["filter an array with where", "install hugo on windows", "image processing image resize",
           "template lookup order", "taxonomy terms", "multilingual menus", "zzzz unknown", "the"]


def _max_difference(entries, queries) -> float:
    ours, reference = L0Index(entries), BM25Okapi([entry_terms(e) for e in entries])
    return max(float(np.abs(ours.scores(tokenize(q)) - reference.get_scores(tokenize(q))).max()) for q in queries)


def test_scores_equal_rank_bm25_on_the_tiny_kb(index):
    assert _max_difference(index.kb.entries, ["alert routing", "token token", "install agent", "nothing"]) < 1e-6


def test_scores_equal_rank_bm25_on_hugo_docs():
    kb = load_knowledge_base(shared_path("hugo_docs", "content", "en"))
    titles = [e.title for e in kb.entries[:60]]
    assert _max_difference(kb.entries, QUERIES + titles) < 1e-6


def test_zero_score_entries_are_not_matches(index):
    hints = index.l0.match("completely unrelated words")
    assert hints.match_count == 0
    assert hints.domains == () and hints.matched_titles == ()


def test_hints_name_the_matched_keywords_and_entities(index):
    hints = index.l0.match("stripe invoice")
    assert hints.matched_titles == ("Invoices and payment",)
    assert hints.matched_keywords == ("invoice",)
    assert hints.entities == ("Stripe",)
    assert hints.domains == ("billing",)


def test_weak_matches_below_the_score_ratio_are_dropped(index):
    everything = index.l0.match("PagerDuty escalation routing", min_score_ratio=0.0)
    strongest = index.l0.match("PagerDuty escalation routing", min_score_ratio=1.0)
    assert everything.match_count > strongest.match_count == 1
    assert strongest.matches[0].source == "alerting/routing.md"


def test_max_matches_caps_the_hints(index):
    assert index.l0.match("alerts alerting PagerDuty", max_matches=1, min_score_ratio=0.0).match_count == 1
    assert index.l0.match("alerts", max_matches=0).match_count == 0


@pytest.mark.parametrize("query", ["", "   ", "the of and"])
def test_queries_without_terms_match_nothing(index, query):
    assert index.l0.match(query).match_count == 0
