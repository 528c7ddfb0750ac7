"""A block's score as the sum of its parts with their weights, the filter effect's named sources, and the
reason a lookup returned fewer blocks than top_k."""

from __future__ import annotations

import re

import pytest

from retrieval import LookupConfig, lookup_knowledge
from retrieval.agent.tool import agent_payload
from retrieval.lookup.evidence import EvidenceBlock, HitReason, rank
from retrieval.lookup.filters import filter_effect

QUERIES = ("rotate an API token", "download invoices", "agent offline firewall port",
           "escalation when nobody acknowledges", "invoice")


def _parts(block: dict) -> dict[str, dict]:
    return {p["part"]: p for p in block["score_parts"]}


@pytest.mark.parametrize("query", QUERIES)
def test_score_parts_add_up_to_each_blocks_score(index, query):
    result = lookup_knowledge(query, index=index, top_k=10).to_dict()
    assert result["evidence_blocks"], query
    for block in result["evidence_blocks"]:
        parts = block["score_parts"]
        assert parts, block["source"]
        assert sum(p["contribution"] for p in parts) == pytest.approx(block["score"], abs=1e-5)
        for part in parts:
            assert part["contribution"] == pytest.approx(part["value"] * part["weight"], abs=1e-5)
    summaries = result["retrieval_details"]["evidence"]
    assert [s["score_parts"] for s in summaries] == [b["score_parts"] for b in result["evidence_blocks"]]


def test_l1_splits_into_lexical_lsa_and_page_parts_with_the_configs_weights(index):
    config = LookupConfig(l1_tfidf_weight=0.8, l1_weight=1.5, page_weight=0.25, l1_static_weight=0.0)
    block = lookup_knowledge("download invoices", index=index, config=config).to_dict()["evidence_blocks"][0]
    parts = _parts(block)
    assert parts["L1 lexical"]["weight"] == pytest.approx(1.5 * 0.8)
    assert parts["L1 LSA"]["weight"] == pytest.approx(1.5 * 0.2)
    assert parts["page"]["weight"] == pytest.approx(0.25)
    assert "L1 static" not in parts  # no static part in this search
    l1 = parts["L1 lexical"]["contribution"] + parts["L1 LSA"]["contribution"]
    assert l1 == pytest.approx(1.5 * block["l1_score"], abs=1e-5)


def test_static_part_is_what_the_static_re_ranking_added(index):
    config = LookupConfig(l1_static_weight=0.7)
    blocks = lookup_knowledge("rotate an API token", index=index, config=config).to_dict()["evidence_blocks"]
    with_static = [b for b in blocks if "L1 static" in _parts(b)]
    if not with_static:
        pytest.skip("this index has no static embedder, so L1 has no static part")
    for block in with_static:
        parts = _parts(block)
        blend = parts["L1 lexical"]["contribution"] + parts["L1 LSA"]["contribution"]
        assert blend + parts["L1 static"]["contribution"] == pytest.approx(block["l1_score"], abs=1e-5)


def test_l1_stands_whole_when_its_lexical_weight_is_not_given():
    block = EvidenceBlock("a.md", "A", "A", "L1", "text", (HitReason("L1", "section", "x", 0.6),), l1_score=0.6,
                          page_score=0.5, l1_detail=(0.5, 0.4, None))
    ranked = rank([block], l0_weight=0.2, l1_weight=1.0, l0_bound=1.0, page_weight=0.5)[0]
    assert [p.part for p in ranked.score_parts] == ["L1", "page"]
    assert sum(p.contribution for p in ranked.score_parts) == pytest.approx(ranked.score)


def test_l1_stands_whole_when_the_blend_is_not_what_the_weights_make():
    block = EvidenceBlock("a.md", "A", "A", "L1", "text", (), l1_score=0.9, page_score=0.0,
                          l1_detail=(0.5, 0.4, None))  # 0.9 * 0.5 + 0.1 * 0.4 = 0.49, not 0.9
    ranked = rank([block], l0_weight=0.2, l1_weight=1.0, l0_bound=1.0, page_weight=0.5, tfidf_weight=0.9)[0]
    assert [p.part for p in ranked.score_parts] == ["L1", "page"]


def test_an_l0_only_block_has_only_an_l0_part_capped_at_one():
    block = EvidenceBlock("a.md", "A", "A", "L0", "text", (HitReason("L0", "title", "t", 3.0),), l0_score=3.0)
    ranked = rank([block], l0_weight=0.2, l1_weight=1.0, l0_bound=2.0, page_weight=0.5, tfidf_weight=0.9)[0]
    assert [(p.part, p.value, p.weight) for p in ranked.score_parts] == [("L0", 1.0, 0.2)]
    assert ranked.score == pytest.approx(0.2)


def test_agent_payload_leaves_score_parts_to_the_trace(index):
    result = lookup_knowledge("download invoices", index=index)
    assert all("score_parts" not in b for b in agent_payload(result)["evidence_blocks"])
    assert all(s["score_parts"] for s in result.retrieval_details["evidence"])


def test_filter_effect_names_the_sources_that_left_and_came_in():
    effect = filter_effect(["a", "b", "c", "d"], ["a", "e", "b", "f"]).to_dict()
    assert effect["removed_sources"] == ["c", "d"] and effect["added_sources"] == ["e", "f"]
    assert (effect["removed"], effect["added"], effect["first_changed_rank"]) == (2, 2, 2)
    unchanged = filter_effect(["a", "b"], ["a", "b"]).to_dict()
    assert unchanged["removed_sources"] == [] and unchanged["added_sources"] == [] and not unchanged["changed"]


def test_no_shortfall_when_top_k_blocks_came_back(index):
    details = lookup_knowledge("invoice", index=index, top_k=1).retrieval_details
    assert details["evidence_count"] == 1 and details["shortfall"] is None


def test_shortfall_names_the_filter_when_every_page_it_allows_came_back(index):
    config = LookupConfig(l1_min_score=0.0)  # every section scores: each page of the category matches
    details = lookup_knowledge("download invoices", index=index, category="billing", top_k=50,
                               config=config).retrieval_details
    pages = len(index.l1.pages.allowed({"category": "billing"}))
    shortfall = details["shortfall"]
    assert shortfall["limit"] == "filter" and shortfall["requested"] == 50
    assert shortfall["returned"] == details["evidence_count"] == pages < 50
    assert f"the filter on category 'billing' allows only {pages} page" in shortfall["reason"]


def test_shortfall_blames_too_few_matches_not_the_filter_when_fewer_pages_came_back_than_it_allows(sample_index):
    """Issue 49: one page of billing's came back (13 sections below the minimum, 3 candidates on one page)
    and the reason blamed the filter, which allowed more."""
    details = lookup_knowledge("when is the deadline for filing my income taxes", index=sample_index).retrieval_details
    pages = len(sample_index.l1.pages.allowed({"category": "billing"}))
    shortfall = details["shortfall"]
    assert details["filter"]["applied"] == {"category": "billing"} and details["evidence_count"] < pages
    assert shortfall["limit"] == "matches"
    assert re.search(r"only 1 page matched the query in L1 inside the filter on category 'billing', which allows "
                     rf"{pages} pages \(\d+ sections, one block per page\)", shortfall["reason"])
    assert re.search(r"\d+ sections scored below l1_min_score", shortfall["reason"])


def test_shortfall_says_nothing_matched_when_no_page_shares_a_word_with_the_query(sample_index):
    """Issue 49: "what is the capital of France" read "L1 was empty, so the evidence is L0's matches alone"."""
    shortfall = lookup_knowledge("what is the capital of France", index=sample_index).retrieval_details["shortfall"]
    assert shortfall["limit"] == "matches" and "L0's matches alone" not in shortfall["reason"]
    assert "nothing in the knowledge base matched the query" in shortfall["reason"]


def test_shortfall_names_l1_when_it_did_not_answer(index):
    config = LookupConfig(simulate_l1_failure=True)
    details = lookup_knowledge("download invoices", index=index, config=config, top_k=20).retrieval_details
    shortfall = details["shortfall"]
    assert shortfall["limit"] == "l1" and "L1 failed, so the evidence is L0's matches alone" in shortfall["reason"]
    assert f"L0's matches alone ({details['evidence_count']} page" in shortfall["reason"]


def test_shortfall_names_too_few_matching_pages(index):
    config = LookupConfig(l0_filter=False, l1_min_score=0.3)
    details = lookup_knowledge("invoices", index=index, config=config, top_k=30).retrieval_details
    shortfall = details["shortfall"]
    assert shortfall["limit"] == "matches"
    assert re.search(r"only \d+ pages? matched the query in L1", shortfall["reason"])
    dropped = details["l1"]["dropped_below_min_score"]
    assert (f"{dropped} sections scored below l1_min_score" in shortfall["reason"]) == (dropped > 0)


def test_the_static_part_is_the_real_addition_at_its_weight_and_a_floor_is_named():
    """Issue 33: the card's static part was the remainder, shown × 1: it disagreed with the hit reason whenever
    the section's score was floored at 0. Now it is what the static part added, at l1_static_weight, and
    the floor's share is its own part."""
    lexical, lsa, added = 0.10, 0.20, -0.40  # blend 0.9 * 0.10 + 0.1 * 0.20 = 0.11; 0.11 - 0.40 < 0: floored
    floored = EvidenceBlock("a.md", "A", "", "L1", "", (HitReason("L1", "section", "static 0.16 (-0.400)"),),
                            l1_score=0.0, page_score=0.5, l1_detail=(lexical, lsa, 0.16, added))
    kept = EvidenceBlock("b.md", "B", "", "L1", "", (), l1_score=0.11 + 0.05, page_score=0.5,
                         l1_detail=(lexical, lsa, 0.3, 0.05))
    for block in rank([floored, kept], l0_weight=0.2, l1_weight=1.0, l0_bound=1.0, page_weight=0.5,
                      tfidf_weight=0.9, static_weight=0.7):
        parts = {p.part: p for p in block.score_parts}
        assert sum(p.contribution for p in block.score_parts) == pytest.approx(block.score, abs=1e-9)
        static = parts["L1 static"]
        assert static.weight == pytest.approx(0.7) and static.contribution == pytest.approx(
            added if block.source == "a.md" else 0.05)
        if block.source == "a.md":
            assert parts["L1 floor"].contribution == pytest.approx(0.40 - 0.11)  # what the floor took back
        else:
            assert "L1 floor" not in parts
