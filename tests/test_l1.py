"""L1: LSA over chunks on tiny corpora, filter as a row mask before top-k, minimum score."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval import LookupConfig, build_index, load_knowledge_base, lookup_knowledge
from retrieval.kb.load import parse_markdown_entry
from retrieval.l1.search import L1Index


def test_svd_dimensions_are_capped_by_a_tiny_corpus(index):
    assert 2 <= index.l1.dimensions < len(index.l1.chunks)


def test_two_chunk_corpus_works_without_svd():
    entry = parse_markdown_entry("a.md", "---\ntitle: One\n---\nalpha beta gamma")
    l1 = L1Index(entry.chunks)
    assert l1.dimensions == 0
    assert l1.search("alpha", top_k=3).candidates[0].chunk.source == "a.md"


def test_filter_returns_the_best_of_the_filtered_set(index):
    query = "alerts notification on-call"
    filtered = index.l1.search(query, top_k=1, filters={"category": "alerting"})
    unfiltered = index.l1.search(query, top_k=len(index.l1.chunks))
    in_set = [c for c in unfiltered.candidates if "alerting" in c.chunk.domains]
    best_page = in_set[0].chunk.source
    assert [c.chunk.chunk_id for c in filtered.candidates] == [c.chunk.chunk_id for c in in_set
                                                                 if c.chunk.source == best_page]
    assert filtered.rows_searched == sum("alerting" in c.domains for c in index.l1.chunks)


def test_category_filter_ignores_case_and_spaces(index):
    a = index.l1.search("silence", top_k=5, filters={"category": "  Alerting "})
    b = index.l1.search("silence", top_k=5, filters={"category": "alerting"})
    assert [c.chunk.chunk_id for c in a.candidates] == [c.chunk.chunk_id for c in b.candidates] != []


def test_candidates_below_min_score_are_dropped_and_counted(index):
    everything = index.l1.search("token", top_k=100, min_score=0.0)
    strict = index.l1.search("token", top_k=100, min_score=0.3)
    assert all(c.score >= 0.3 for c in strict.candidates)
    assert len(strict.candidates) + strict.dropped_below_min_score == len(everything.candidates)


def test_min_score_one_keeps_only_perfect_matches(index):
    everything = index.l1.search("invoice", top_k=10, min_score=0.0)
    assert everything.candidates and all(c.score < 1.0 for c in everything.candidates)  # none is perfect here
    strict = index.l1.search("invoice", top_k=10, min_score=1.0)
    lexical = [c for c in everything.candidates if c.lexical_score > 0]
    assert not strict.candidates and strict.dropped_below_min_score >= len(lexical) > 0
    exact = index.l1.search("invoice", top_k=10, min_score=1.0, exact=True)  # every row scored, so counted
    assert not exact.candidates and exact.dropped_below_min_score >= len(everything.candidates)
    best = everything.candidates[0].score  # the threshold is inclusive: the best candidate passes its own score
    top = index.l1.search("invoice", top_k=10, min_score=best)
    assert top.candidates and all(c.score >= best or np.isclose(c.score, best) for c in top.candidates)


def test_unknown_filter_key_names_the_supported_ones(index):
    with pytest.raises(ValueError, match="supported: category, source"):
        index.l1.search("x", top_k=1, filters={"colour": "red"})


def test_caller_category_is_kept_and_decision_says_caller(index):
    result = lookup_knowledge("PagerDuty", index=index, category="Integrations")
    details = result.retrieval_details
    assert details["filter"]["decision"] == "caller"
    assert details["filter"]["applied"] == {"category": "integrations"}
    assert {b.source for b in result.evidence_blocks} == {"integrations/pagerduty.md"}


def test_l0_filter_off_records_disabled(index):
    result = lookup_knowledge("silence", index=index, config=LookupConfig(l0_filter=False))
    assert result.retrieval_details["filter"] == {"decision": "disabled", "l0_domains": ["alerting"], "applied": None}


def test_l1_disabled_returns_l0_evidence_only(index):
    result = lookup_knowledge("invoice", index=index, config=LookupConfig(l1_enabled=False))
    assert result.retrieval_details["l1"]["status"] == "disabled"
    assert result.retrieval_layer == "L0"
    assert result.primary.source == "billing/invoices.md"


def test_l1_unavailable_when_no_chunk_has_terms(tmp_path):
    (tmp_path / "empty.md").write_text("---\ntitle: The\n---\n")
    index = build_index(load_knowledge_base(tmp_path))
    result = lookup_knowledge("anything", index=index)
    assert index.l1 is None and result.retrieval_details["l1"]["status"] == "unavailable"


def test_search_returns_the_best_pages_with_at_most_three_sections_each(index):
    result = index.l1.search("alert escalation silence retention invoice token", top_k=2)
    pages = list(dict.fromkeys(c.chunk.source for c in result.candidates))
    assert len(pages) == 2
    assert all(sum(c.chunk.source == p for c in result.candidates) <= 3 for p in pages)
    scores = [c.score for c in result.candidates]
    everything = index.l1.search("alert escalation silence retention invoice token", top_k=len(index.l1.chunks))
    assert pages == list(dict.fromkeys(c.chunk.source for c in everything.candidates))[:2]
    assert len(scores) == len(result.candidates)


def test_a_real_l1_exception_falls_back_to_l0(index, monkeypatch):
    def broken(*args, **kwargs):
        raise MemoryError("out of memory in LSA")

    monkeypatch.setattr(index.l1, "search", broken)
    result = lookup_knowledge("invoice", index=index)
    assert result.retrieval_details["l1"]["error"] == {"type": "MemoryError", "message": "out of memory in LSA"}
    assert result.primary.source == "billing/invoices.md" and not result.relevance.semantic_support


def test_query_scoring_matches_the_chunk_vectors(index):
    """The query path (term ids, sublinear TF-IDF, projection) puts a chunk's own text where the build put
    that chunk: its LSA cosine with itself is 1."""
    import numpy as np

    l1 = index.l1
    for row in (0, len(l1.chunks) // 2, len(l1.chunks) - 1):
        chunk = l1.chunks[row]
        scores = l1.score(f"{chunk.breadcrumb}\n{chunk.text}", tfidf_weight=0.0)
        assert np.isclose(l1.lsa_scores(scores, np.asarray([row]))[0], 1.0, atol=1e-4)
        assert scores.lexical[row] == scores.lexical.max() > 0


def test_bounded_selection_equals_the_exact_scan(index, monkeypatch):
    """Pages scored in order of their bound give exactly what scoring every chunk gives (blocks of one
    page, so the sample's few pages are pruned as a large base's are)."""
    from retrieval.l1 import search as l1_module

    monkeypatch.setattr(l1_module, "FIRST_BLOCK_ROWS", 1)
    pruned = 0
    queries = ("alert escalation routing", "rotate the OAuth token", "invoice refund", "retention rollups",
               "silence notifications during maintenance", "zzzz unknown words")
    for query in queries:
        for filters in (None, {"category": "alerting"}, {"category": "billing"}):
            for top_k, min_score, static_weight in ((1, 0.0, 0.0), (3, 0.05, 0.0), (30, 0.3, 0.0),
                                                    (3, 0.05, 0.5), (30, 0.0, 0.5)):
                fast = index.l1.search(query, top_k=top_k, filters=filters, min_score=min_score,
                                       tfidf_weight=0.9, page_weight=0.5, static_weight=static_weight)
                exact = index.l1.search(query, top_k=top_k, filters=filters, min_score=min_score,
                                        tfidf_weight=0.9, page_weight=0.5, exact=True, static_weight=static_weight)
                assert [(c.chunk.chunk_id, c.score) for c in fast.candidates] == \
                    [(c.chunk.chunk_id, c.score) for c in exact.candidates]
                assert fast.rows_scored <= exact.rows_scored
                pruned += fast.rows_scored < exact.rows_scored
    assert pruned > 0


def test_last_scores_are_reused_only_for_the_same_query(index):
    first = index.l1.score("silence alerts", tfidf_weight=0.9)
    assert index.l1.score("silence alerts", tfidf_weight=0.9) is first
    assert index.l1.score("silence alerts", tfidf_weight=0.5) is not first
    assert index.l1.score("invoice", tfidf_weight=0.9) is not first
