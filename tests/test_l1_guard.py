"""The L1 result check: its fast path for plain candidates lets nothing through that the full check refuses."""

from __future__ import annotations

import math
import time

import pytest

from retrieval import lookup_knowledge
from retrieval.kb.model import Chunk
from retrieval.l1.results import L1Candidate, L1Result
from retrieval.lookup.guard import GuardedCall, L1BadResult, guarded_search, validated

CHUNK = Chunk("a.md", 0, "A", "A > One", "text", ("ops",))


@pytest.mark.parametrize("field", ["score", "lexical_score", "lsa_score", "page_score"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1, True, "0.5"])
def test_any_one_bad_number_is_refused(field, bad):
    values = {"score": 0.5, "lexical_score": 0.4, "lsa_score": 0.3, "page_score": 1.0, field: bad}
    good = L1Result((L1Candidate(CHUNK, 0.5, 0.4, None, 1.0),) * 3, 10, 0)
    assert validated(good) is good
    bad_result = L1Result((good.candidates[0], L1Candidate(CHUNK, **values)), 10, 0)
    if isinstance(bad, int) and not isinstance(bad, bool):  # an int is a real number: accepted, as before
        assert validated(bad_result) is bad_result
        return
    with pytest.raises(L1BadResult, match=field):
        validated(bad_result)


def test_quick_answer_skips_the_search_and_none_falls_through():
    searched = []

    def search():
        searched.append(True)
        return L1Result((), 0, 0)

    quick_result = L1Result((L1Candidate(CHUNK, 0.5, 0.4, 0.3, 1.0),), 1, 0)
    assert guarded_search(search, 1000, lambda: quick_result).result is quick_result and not searched
    assert guarded_search(search, 1000, lambda: None).result == L1Result((), 0, 0) and searched
    failed = guarded_search(search, 1000, lambda: 1 / 0)
    assert isinstance(failed, GuardedCall) and isinstance(failed.error, ZeroDivisionError)


def _forked_lookup(index, answers) -> None:
    started = time.perf_counter()
    result = lookup_knowledge("rotate an API token", index=index)
    answers.send((result.retrieval_details["l1"]["status"], time.perf_counter() - started))


def test_a_forked_process_searches_l1_though_its_parent_had_idle_workers(index):
    """A child forked after lookups inherits the parent's idle workers but none of their threads: it must start
    its own, not hand L1 calls to a thread that is not there (each then timed out, and L0 answered alone)."""
    import multiprocessing

    for _ in range(3):
        lookup_knowledge("rotate an API token", index=index)  # the parent has idle workers now
    fork = multiprocessing.get_context("fork")
    receive, send = fork.Pipe(duplex=False)
    child = fork.Process(target=_forked_lookup, args=(index, send))
    child.start()
    status, seconds = receive.recv()
    child.join(30)
    assert status == "ok" and seconds < 1.0, (status, seconds)
