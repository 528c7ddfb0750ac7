"""The domain vote that decides which domains L0's hints carry, and the widening guard."""

from __future__ import annotations

import math

import pytest

from retrieval import LookupConfig, lookup_knowledge
from retrieval.lookup.domains import Voter, vote_domains
from retrieval.lookup.filters import FilterEffect, filter_effect, guard
from retrieval.lookup.statuses import FilterStatus, check

RULE = {"top_n": 3, "temperature": 0.2, "min_share": 0.1}


def _voter(source: str, score: float, *domains: str) -> Voter:
    return Voter(source, source.title(), score, domains, "L1")


def test_near_unanimous_top_pages_carry_one_domain():
    vote = vote_domains([_voter("a", 1.0, "alerting"), _voter("b", 0.9, "alerting"), _voter("c", 0.2, "billing")],
                        basis="ranking", **RULE)
    billing_weight = math.exp(-0.8 / 0.2)
    assert vote.accepted == ("alerting",)
    shares = {e.domain: e.share for e in vote.evidence}
    assert shares["billing"] == pytest.approx(billing_weight / (1 + math.exp(-0.5) + billing_weight))
    assert [v.source for v in vote.evidence[0].supporting] == ["a", "b"]


def test_a_close_second_domain_makes_the_vote_ambiguous():
    vote = vote_domains([_voter("a", 1.0, "alerting"), _voter("b", 0.95, "billing")], basis="ranking", **RULE)
    assert set(vote.accepted) == {"alerting", "billing"}


def test_a_near_best_uncategorised_page_blocks_the_vote():
    vote = vote_domains([_voter("a", 1.0, "alerting"), _voter("readme", 0.98)], basis="ranking", **RULE)
    assert vote.accepted == ()
    assert vote.uncategorised_share == pytest.approx(math.exp(-0.1) / (1 + math.exp(-0.1)))


def test_a_page_in_two_categories_splits_its_weight():
    vote = vote_domains([_voter("a", 1.0, "security", "api")], basis="ranking", **RULE)
    assert {e.domain: e.share for e in vote.evidence} == {"api": 0.5, "security": 0.5}
    assert set(vote.accepted) == {"api", "security"}


def test_a_whole_query_l0_match_carries_its_domain_beside_the_vote():
    vote = vote_domains([_voter("a", 1.0, "integrations")], basis="ranking", l0_coverage={"alerting": 1.0,
                        "billing": 0.3}, min_coverage=0.8, **RULE)
    assert set(vote.accepted) == {"integrations", "alerting"}
    assert "billing" not in vote.accepted


def test_no_voters_and_no_coverage_vote_for_nothing():
    vote = vote_domains([], basis="ranking", **RULE)
    assert (vote.basis, vote.accepted, vote.evidence) == ("none", (), ())


def test_a_vote_that_did_not_take_place_says_so_in_its_rule():
    """Issue 49: "what is the capital of France" showed "top 3 pages of the none vote"."""
    rule = vote_domains([], basis="ranking", **RULE).rule
    assert rule.startswith("no vote: ") and "none vote" not in rule and "top 3" not in rule
    ranked = vote_domains([_voter("a", 1.0, "alerting")], basis="ranking", **RULE).rule
    assert ranked.startswith("the top 3 pages of the unfiltered ranking vote")


def test_vote_details_name_the_rule_and_its_thresholds():
    payload = vote_domains([_voter("a", 1.0, "alerting")], basis="ranking", min_coverage=0.8, **RULE).to_dict()
    assert {"basis", "rule", "top_n", "temperature", "min_share", "min_coverage", "uncategorised_share",
            "domains"} <= set(payload)
    assert "10%" in payload["rule"] and "0.2" in payload["rule"]
    assert payload["domains"][0]["supporting"][0] == {"source": "a", "title": "A", "score": 1.0, "via": "L1"}


def test_guard_widens_only_a_much_weaker_filtered_result():
    assert guard(0.5, 1.0, 0.8).widened
    assert not guard(0.85, 1.0, 0.8).widened
    assert guard(None, 1.0, 0.8).widened  # the filter left nothing
    assert not guard(0.1, 1.0, 0.0).widened  # ratio 0 turns the guard off


def test_unknown_status_is_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match="applied, skipped_no_domain"):
        check("maybe", FilterStatus, "filter decision")


def test_l0_match_coverage_is_the_share_of_query_idf_its_fields_hold(index):
    hints = index.l0.match("silence")
    assert hints.matches[0].coverage == pytest.approx(1.0)
    partial = index.l0.match("silence for the night shift rota")
    assert 0 < partial.matches[0].coverage < 0.5


def test_weak_filtered_result_widens_and_says_so(widen_index):
    result = lookup_knowledge("widget reset", index=widen_index, config=LookupConfig(filter_widen_ratio=0.9))
    details = result.retrieval_details
    assert details["filter"]["decision"] == "applied"  # the whole-title L0 match carries billing alone
    assert details["filter"]["applied"] == {"category": "billing"}  # sent first, as the spec requires
    assert details["filter"]["widened"] is True
    best = details["filter"]["best_scores"]
    assert best["filtered"] < 0.9 * best["unfiltered"] and "widen when" in details["filter"]["widen_rule"]
    assert result.primary.source == "guides/reset.md"  # the widened result reaches outside the filter
    kept = lookup_knowledge("widget reset", index=widen_index, config=LookupConfig(filter_widen_ratio=0.0))
    assert "widened" not in kept.retrieval_details["filter"]
    assert all("billing" in b.domains for b in kept.evidence_blocks if b.l1_score is not None)


def test_filter_effect_names_the_first_changed_rank_and_the_sources_that_moved():
    effect = filter_effect(["a", "x", "b", "c"], ["a", "b", "c", "d"])
    assert effect == FilterEffect(True, 2, 1, 1, ("x",), ("d",))
    assert filter_effect(["a", "b"], ["a", "b"]) == FilterEffect(False, None, 0, 0)
    assert filter_effect(["a", "b"], ["a"]).first_changed_rank == 2  # the filter left fewer results


def test_applied_filter_records_its_effect_beside_the_decision(widen_index):
    kept = lookup_knowledge("widget reset", index=widen_index, config=LookupConfig(filter_widen_ratio=0.0))
    details = kept.retrieval_details
    assert "effect" not in details["filter"]  # the spec's filter keys stay as they are
    # guides/reset.md, outside billing, falls from first to L0-only evidence: same sources, new order
    assert details["filter_effect"] == {"changed": True, "first_changed_rank": 1, "removed": 0, "added": 0,
                                        "removed_sources": [], "added_sources": []}
    unfiltered = lookup_knowledge("widget reset", index=widen_index, config=LookupConfig(l0_filter=False))
    assert unfiltered.retrieval_details["filter_effect"] is None  # no L0 filter ran


def test_widening_compares_scores_on_the_unfiltered_scale(widen_index):
    """The filtered search normalises page scores to the best page inside the filter, so the guard reads
    the category's best page from the unfiltered ranking instead."""
    probe = lookup_knowledge("widget reset", index=widen_index, config=LookupConfig(l0_filter=False, top_k=10))
    billing_best = max(b.score for b in probe.evidence_blocks if "billing" in b.domains)
    widened = lookup_knowledge("widget reset", index=widen_index, config=LookupConfig(filter_widen_ratio=0.9))
    assert widened.retrieval_details["filter"]["best_scores"] == {
        "filtered": pytest.approx(billing_best, abs=1e-6), "unfiltered": pytest.approx(probe.primary.score, abs=1e-6)}
