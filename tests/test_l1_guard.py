"""The L1 result check: its fast path for plain candidates lets nothing through that the full check refuses."""

from __future__ import annotations

import math

import pytest

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
