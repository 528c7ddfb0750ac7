"""`Recorders`: several recorders as one (the trace store and OpenTelemetry, say), each getting every call."""

from __future__ import annotations

import pytest

from retrieval import combine_recorders, lookup_knowledge
from retrieval.lookup import Recorders


class Flushable(list):
    """A recorder that keeps what it got and counts flushes and closes."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = self.closed = 0

    def flush(self) -> None:
        self.flushed += 1

    def close(self) -> None:
        self.closed += 1


def test_every_recorder_gets_the_same_call(index):
    first, second = [], []
    result = lookup_knowledge("invoice", index=index, recorder=Recorders((first.append, second.append)))
    assert [i.id for i in first] == [i.id for i in second] == [result.invocation_id]


def test_one_raising_recorder_does_not_keep_the_others_from_the_call(index):
    def broken(invocation):
        raise RuntimeError("recorder down")

    kept: list = []
    with pytest.raises(RuntimeError, match="recorder down"):
        lookup_knowledge("invoice", index=index, recorder=Recorders((broken, kept.append)))
    assert len(kept) == 1


def test_flush_and_close_reach_the_recorders_that_have_them():
    plain, flushable = [], Flushable()
    recorders = Recorders((plain.append, flushable))
    recorders.flush()
    recorders.close()
    assert (flushable.flushed, flushable.closed) == (1, 1)


def test_combine_drops_the_missing_ones():
    only = Flushable()
    assert combine_recorders(None, None) is None
    assert combine_recorders(None, only) is only
    assert combine_recorders(only, only).recorders == (only, only)
