"""The bounded selection equals the exact scan on a generated base large enough to prune, grow and tighten."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.l1 import search as l1_module
from retrieval.l1.search import L1Index
from tests.index_helpers import CATEGORIES, fast_equals_exact


@pytest.mark.parametrize(("first_block", "least_pruned"), [(1, 50), (512, 1)])
def test_bounded_selection_equals_the_exact_scan_on_a_generated_base(generated, monkeypatch, first_block,
                                                                     least_pruned):
    monkeypatch.setattr(l1_module, "FIRST_BLOCK_ROWS", first_block)
    pruned = fast_equals_exact(*generated, (None, {"category": "ops"}, {"source": "p7.md"}))
    assert pruned >= least_pruned


@pytest.mark.parametrize("segments", [2, 7, 64])
def test_bounded_selection_with_pages_sharing_one_bound_equals_the_exact_scan(generated, monkeypatch, segments):
    """A large base's page bounds are reduced in runs of pages (BOUND_SEGMENTS): a looser bound, never a wrong
    one. Forced here on the generated base, with blocks of one row so pruning depends on those bounds."""
    from retrieval.l1 import universe

    monkeypatch.setattr(universe, "BOUND_SEGMENTS", segments)
    monkeypatch.setattr(l1_module, "FIRST_BLOCK_ROWS", 1)
    pruned = fast_equals_exact(*generated, (None, {"category": "ops"}))
    assert pruned > 0


def test_a_filtered_search_after_the_probe_equals_a_fresh_one(generated):
    """The lookup's second search reuses the probe (its cosines; its whole result when provably the same):
    what it returns must not depend on that."""
    index, queries = generated
    derived = 0
    for query in queries:
        for top_k, min_score in ((1, 0.05), (2, 0.0), (5, 0.05), (5, 0.4)):
            kwargs = dict(top_k=top_k, min_score=min_score, tfidf_weight=0.9, page_weight=0.5)
            for category in CATEGORIES:
                index._last_scores = None
                fresh = index.search(query, filters={"category": category}, **kwargs)
                index._last_scores = None
                probe = index.search(query, **kwargs)
                after_probe = index.search(query, filters={"category": category}, **kwargs)
                assert [(c.chunk.chunk_id, c.score, c.lsa_score, c.page_score) for c in after_probe.candidates] == \
                    [(c.chunk.chunk_id, c.score, c.lsa_score, c.page_score) for c in fresh.candidates]
                assert after_probe.rows_searched == fresh.rows_searched
                derived += bool(probe.candidates) and after_probe.candidates is probe.candidates
    assert derived > 20


def test_cosine_bound_is_at_least_the_cosine(generated):
    index, _ = generated
    lsa = index.arrays.lsa
    heads = index.lsa_heads
    rng = np.random.default_rng(1)
    for _ in range(20):
        query = rng.normal(size=lsa.shape[1]).astype(np.float32)
        query /= np.linalg.norm(query)
        rows = np.arange(lsa.shape[0])
        bound = heads.cosine_bound(rows, query)
        assert np.all(bound >= lsa @ query) and np.all(bound <= 1.0)
        assert np.mean(bound < 0.9) > 0.5  # tight enough to prune


def test_lookups_do_not_depend_on_reading_the_filtered_search_off_the_probe(index, monkeypatch):
    """The same answers, filter decisions and relevance with the shortcut switched off."""
    from retrieval import LookupConfig, lookup_knowledge

    queries = ("how do I silence alerts", "alert escalation routing", "invoice refund", "rotate the OAuth token",
               "retention rollups", "pagerduty service key", "billing plans and invoices")
    calls = []
    original = L1Index._derived

    def counted(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append(result is not None)
        return result

    def answers() -> list[dict]:
        out = []
        for query in queries:
            index.l1._last_scores = None
            details = lookup_knowledge(query, index=index, config=LookupConfig()).to_dict()
            details["retrieval_details"].pop("timings_ms")
            out.append(details | {"invocation_id": None})
        return out

    monkeypatch.setattr(L1Index, "_derived", counted)
    with_shortcut = answers()
    assert any(calls)  # the shortcut was taken at least once
    monkeypatch.setattr(L1Index, "_derived", lambda self, *args, **kwargs: None)
    assert answers() == with_shortcut


def test_from_probe_answers_only_after_the_same_query_s_probe(generated):
    index, queries = generated
    kwargs = dict(top_k=2, min_score=0.05, tfidf_weight=0.9, page_weight=0.5)
    answered = 0
    for query in queries:
        index._last_scores = None
        assert index.from_probe(query, filters={"category": "ops"}, **kwargs) is None  # no probe yet
        index.search(query, **kwargs)
        assert index.from_probe(query, filters={"category": "ops"}, **{**kwargs, "top_k": 3}) is None  # other pool
        for category in CATEGORIES:
            quick = index.from_probe(query, filters={"category": category}, **kwargs)
            if quick is not None:
                answered += 1
                full = index.search(query, filters={"category": category}, **kwargs)
                assert quick.candidates == full.candidates and quick.rows_searched == full.rows_searched
    assert answered > 5


def test_the_static_re_ranking_is_the_same_bounded_exact_and_read_off_the_probe(generated, generated_static):
    _, queries = generated
    index = generated_static
    answered = 0
    for query in queries:
        for filters in (None, {"category": "ops"}):
            kwargs = dict(top_k=5, filters=filters, min_score=0.05, tfidf_weight=0.9, page_weight=0.5,
                          static_weight=0.5)
            index._last_scores = None
            fast = index.search(query, **kwargs)
            exact = index.search(query, exact=True, **kwargs)
            assert [(c.chunk.chunk_id, c.score, c.static_score) for c in fast.candidates] == \
                [(c.chunk.chunk_id, c.score, c.static_score) for c in exact.candidates]
            if fast.candidates and len({c.chunk.source for c in fast.candidates}) > 1:
                assert fast.embedder is not None and any(c.static_added != 0 for c in fast.candidates)
        index._last_scores = None
        probe_kwargs = dict(top_k=2, min_score=0.05, tfidf_weight=0.9, page_weight=0.5, static_weight=0.5)
        index.search(query, **probe_kwargs)
        for category in CATEGORIES:
            quick = index.from_probe(query, filters={"category": category}, **probe_kwargs)
            if quick is not None:
                answered += 1
                index._last_scores = None
                assert quick.candidates == index.search(query, filters={"category": category},
                                                        **probe_kwargs).candidates
                index.search(query, **probe_kwargs)
    assert answered > 5


def test_static_weight_zero_is_the_search_without_a_static_part(generated, generated_static):
    index, queries = generated
    for query in queries:
        kwargs = dict(top_k=5, min_score=0.05, tfidf_weight=0.9, page_weight=0.5)
        without = index.search(query, **kwargs)
        off = generated_static.search(query, static_weight=0.0, **kwargs)
        assert off.candidates == without.candidates and off.embedder is None
