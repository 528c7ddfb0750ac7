"""The lookup never loses a call: L1 faults fall back inside the guard, odd Unicode is made storable."""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval import LookupConfig, lookup_knowledge
from retrieval.l1.results import L1Candidate, L1Result
from retrieval.lookup.guard import L1BadResult, guarded_search, validated
from retrieval.text.surrogates import replace_surrogates

CALLS = 100
QUERY = "PagerDuty escalation routing"


class FakeL1:
    """Stands in for L1Index.search: does whatever `behaviour(query)` does."""

    def __init__(self, behaviour):
        self.behaviour = behaviour

    def search(self, query, **_):
        return self.behaviour(query)


def _candidate(index, score: float) -> L1Candidate:
    return L1Candidate(index.kb.chunks[0], score, score, score, score)


def _calls(index, behaviour, config: LookupConfig | None = None):
    """CALLS recorded lookups against a fake L1; returns (results, recorded invocations)."""
    faulty = replace(index, l1=FakeL1(behaviour))
    rows = []
    results = [lookup_knowledge(f"{QUERY} {n}", index=faulty, recorder=rows.append, config=config)
               for n in range(CALLS)]
    return results, rows


def _assert_fell_back(results, rows, status: str) -> None:
    assert len(rows) == CALLS and all(r.status == "ok" for r in rows)
    for result in results:
        l1 = result.retrieval_details["l1"]
        assert l1["status"] == status and l1["error"]["type"]
        assert not result.relevance.semantic_support
        assert result.retrieval_layer in ("L0", "none")
        assert all(b.l1_score is None for b in result.evidence_blocks)


def test_l1_raising_falls_back_on_every_call(index):
    def boom(query):
        raise RuntimeError("L1 exploded")

    results, rows = _calls(index, boom)
    _assert_fell_back(results, rows, "failed")
    assert results[0].retrieval_details["l1"]["error"] == {"type": "RuntimeError", "message": "L1 exploded"}


@pytest.mark.parametrize("wrong", [None, {"candidates": []}, [], "ok", 3.5])
def test_l1_returning_the_wrong_type_falls_back_on_every_call(index, wrong):
    results, rows = _calls(index, lambda query: wrong)
    _assert_fell_back(results, rows, "failed")
    assert results[0].retrieval_details["l1"]["error"]["type"] == "L1BadResult"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_l1_non_finite_scores_fall_back_on_every_call(index, bad):
    results, rows = _calls(index, lambda query: L1Result((_candidate(index, bad),), 5, 0))
    _assert_fell_back(results, rows, "failed")
    assert "non-finite" in results[0].retrieval_details["l1"]["error"]["message"]


def test_l1_candidates_of_the_wrong_type_fall_back(index):
    results, rows = _calls(index, lambda query: L1Result(("not a candidate",), 5, 0))
    _assert_fell_back(results, rows, "failed")


def test_l1_hanging_past_the_limit_times_out_on_every_call(index):
    release = threading.Event()
    config = LookupConfig(l1_timeout_ms=20)
    started = time.perf_counter()
    try:
        results, rows = _calls(index, lambda query: release.wait(5), config)
    finally:
        release.set()  # let the abandoned searches end
    _assert_fell_back(results, rows, "timeout")
    assert rows[0].config["l1_timeout_ms"] == 20
    assert "20 ms" in results[0].retrieval_details["l1"]["error"]["message"]
    assert time.perf_counter() - started < CALLS * 0.02 * 2 + 5  # waited the limit, never the hang


def test_finite_l1_scores_still_give_semantic_support(index):
    results, rows = _calls(index, lambda query: L1Result((_candidate(index, 0.9),), 5, 0))
    assert len(rows) == CALLS
    assert all(r.retrieval_details["l1"]["status"] == "ok" and r.relevance.semantic_support for r in results)


def test_validated_names_the_problem():
    with pytest.raises(L1BadResult, match="dict"):
        validated({})
    with pytest.raises(L1BadResult, match="rows_searched"):
        validated(L1Result((), -1, 0))


def test_guarded_search_never_raises_and_reuses_its_workers():
    before = threading.active_count()
    calls = [guarded_search(lambda: L1Result((), 1, 0), 1000) for _ in range(200)]
    assert all(c.error is None and c.result is not None for c in calls)
    assert threading.active_count() <= before + 9


def test_l1_timeout_ms_is_validated():
    with pytest.raises(ValueError, match="l1_timeout_ms"):
        LookupConfig(l1_timeout_ms=0)


@pytest.mark.parametrize(("text", "expected", "count"), [
    ("a\ud800b", "a\ufffdb", 1), ("\ud83d\ude00", "\U0001f600", 0), ("\udc00\ud800", "\ufffd\ufffd", 2),
    ("plain \ufffd", "plain \ufffd", 0)])
def test_lone_surrogates_are_replaced_and_counted(text, expected, count):
    assert replace_surrogates(text) == (expected, count)


def test_lone_surrogate_in_query_and_category_is_recorded_not_raised(index, store):
    result = lookup_knowledge("escalation \ud800 routing", index=index, category="alert\udfffing", recorder=store)
    assert result.retrieval_details["input"]["surrogates_replaced"] == {"query": 1, "category": 1}
    row = store.query("SELECT query, arguments FROM tool_invocation")
    assert row["query"].tolist() == ["escalation \ufffd routing"]
    assert json.loads(row["arguments"][0])["category"] == "alert\ufffding"


def test_bad_input_with_a_surrogate_is_still_recorded(index, store):
    with pytest.raises(ValueError):
        lookup_knowledge("fine", index=index, category="\ud800", top_k=0, recorder=store)
    assert store.count() == 1


ANY_CHARACTER = st.characters(exclude_categories=())  # surrogates (Cs) included
QUERIES = st.text(ANY_CHARACTER, max_size=40)
CATEGORIES = st.one_of(st.none(), st.text(ANY_CHARACTER, max_size=12),
                       st.sampled_from(["billing", "Alerting", "\ud800"]))
BATCHES, QUERIES_PER_BATCH, CATEGORIES_PER_BATCH = 200, 10, 5


def test_ten_thousand_generated_calls_each_give_one_row_and_no_stray_exception(index, store):
    """200 batches of 10 queries x 5 categories = 10,000 calls; the rows go to DuckDB in one insert at the end
    (TraceStore opens the file per write, so 10,000 single writes would take minutes)."""
    calls, recorded = [], []

    @settings(max_examples=BATCHES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.lists(QUERIES, min_size=QUERIES_PER_BATCH, max_size=QUERIES_PER_BATCH),
           st.lists(CATEGORIES, min_size=CATEGORIES_PER_BATCH, max_size=CATEGORIES_PER_BATCH))
    def run_batch(queries, categories):
        rows = []
        for query in queries:
            for category in categories:
                with contextlib.suppress(ValueError):  # the documented refusal (blank query or category)
                    lookup_knowledge(query, index=index, category=category, recorder=rows.append)
        assert len(rows) == len(queries) * len(categories)  # refused calls are recorded too
        for row in rows:  # valid UTF-8 throughout, as pyarrow and DuckDB demand
            json.dumps(row.to_dict(), default=str, ensure_ascii=False).encode("utf-8")
        calls.append(len(rows))
        recorded.extend(rows)

    run_batch()
    assert sum(calls) >= 10_000
    store.record_many(recorded)
    assert store.count() == sum(calls) == len({r.id for r in recorded})
