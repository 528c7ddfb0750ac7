"""An update's later arrays' blocks are made ahead on another thread (retrieval/index/block_making.py): a
request waits for the block being made for it, never gets one still being touched, makes its own when making
failed, and nothing is made ahead outside an update or past the pool's limit."""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterator

import numpy as np

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index import arena, block_making, incremental

MB = 1 << 20


def _fresh_pool() -> None:
    assert block_making.wait_for_reserve(timeout=30) and block_making.wait_for_ahead(timeout=30)
    gc.collect()  # arrays of earlier tests are gone, so their blocks are not counted here
    arena.release_pool()


def _gated_touch(monkeypatch, gate: threading.Event, fail: bool = False) -> None:
    """The ahead thread touches a block only once `gate` is set (and then fails, with `fail`)."""
    touch = block_making._touch

    def held(block, start, length):
        gate.wait(30)
        if fail:
            raise OSError("no memory to spare")
        touch(block, start, length)

    monkeypatch.setattr(block_making, "_touch", held)


def _await_making() -> None:
    deadline = time.monotonic() + 30
    while arena.held_bytes() == arena.pool_facts()["free_bytes"]:  # no block registered as being made yet
        assert time.monotonic() < deadline, "the ahead thread never started making its block"
        time.sleep(0.01)


@contextlib.contextmanager
def _making_held(monkeypatch, sizes: list[int], lead: int = 0, fail: bool = False) -> Iterator[threading.Event]:
    """Inside an update, blocks for `sizes` made ahead, the first held until the yielded gate is set (then
    made, or failed with `fail`); the thread is done when the block ends."""
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    _fresh_pool()
    gate = threading.Event()
    _gated_touch(monkeypatch, gate, fail=fail)
    with arena.pooled():
        block_making.make_ahead(sizes, lead=lead)
        _await_making()
        yield gate
    assert block_making.wait_for_ahead(timeout=30) and gate.is_set()


def _request_while_one_block_is_made(monkeypatch, fill: int, fail: bool) -> tuple[np.ndarray, dict, dict]:
    """A request for a 4 MB block being made ahead, which is made (or fails) 0.2 s after it starts: the array
    it got, filled with `fill`, and the pool's counts before and after."""
    before = arena.pool_facts()
    with _making_held(monkeypatch, [4 * MB], fail=fail) as gate:
        threading.Timer(0.2, gate.set).start()
        array = arena.empty((4 * MB,), np.uint8)
        array[:] = fill  # written after the thread's last touch: nothing writes zeros over it later
    return array, before, arena.pool_facts()


def test_a_request_waits_for_the_block_being_made_for_it(monkeypatch):
    array, before, after = _request_while_one_block_is_made(monkeypatch, 7, fail=False)
    assert (array == 7).all()
    assert after["waited"] == before["waited"] + 1 and after["made"] == before["made"]
    assert after["ahead"] == before["ahead"] + 1


def test_a_request_makes_its_own_block_when_making_it_ahead_failed(monkeypatch):
    array, before, after = _request_while_one_block_is_made(monkeypatch, 3, fail=True)
    assert (array == 3).all() and after["made"] == before["made"] + 1
    assert after["ahead"] == before["ahead"] and arena.held_bytes() == after["free_bytes"]  # nothing left registered


def test_the_last_sizes_are_made_first_and_sizes_already_asked_for_never(monkeypatch):
    with _making_held(monkeypatch, [2 * MB, 3 * MB, 5 * MB]) as gate:
        assert arena.held_bytes() == arena.block_size(5 * MB)  # the last size is made first
        taken = [arena.empty((2 * MB,), np.uint8), arena.empty((3 * MB,), np.uint8)]  # asked for meanwhile: made
        gate.set()
        taken.append(arena.empty((5 * MB,), np.uint8))
    assert arena.pool_facts()["free_blocks"] == 0  # nothing made that no request took
    assert all(a.flags.writeable for a in taken)


def test_the_sizes_an_update_asks_for_first_are_made_before_the_last(monkeypatch):
    with _making_held(monkeypatch, [2 * MB, 3 * MB, 5 * MB], lead=1) as gate:
        assert arena.held_bytes() == arena.block_size(2 * MB)  # the lead first
        gate.set()
        taken = [arena.empty((size,), np.uint8) for size in (2 * MB, 3 * MB, 5 * MB)]
    assert arena.pool_facts()["free_blocks"] == 0 and all(a.flags.writeable for a in taken)


def test_nothing_is_made_ahead_outside_an_update_or_past_the_limit(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "4")
    _fresh_pool()
    before = arena.pool_facts()["ahead"]
    block_making.make_ahead([2 * MB])  # not inside an update
    with arena.pooled():
        block_making.make_ahead([3 * MB, 3 * MB])  # past the 4 MB limit
    assert block_making.wait_for_ahead(timeout=30)
    assert arena.pool_facts()["ahead"] == before and arena.held_bytes() == 0


def test_a_first_update_takes_blocks_made_ahead_and_answers_as_a_same_fit_rebuild(editable_kb, monkeypatch):
    kb, cache = editable_kb
    monkeypatch.setattr(arena, "MIN_BYTES", 0)  # the sample's arrays are small: pool them all
    monkeypatch.setenv(arena.LIMIT_ENV, "256")
    open_index(kb, cache_dir=cache)
    _fresh_pool()
    before = arena.pool_facts()
    page = kb / "billing" / "invoices.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Zephyr\nThe zephyr surcharge applies.\n",
                    encoding="utf-8")
    updated = open_index(kb, cache_dir=cache)
    assert updated.update is not None and block_making.wait_for_ahead(timeout=30)
    after = arena.pool_facts()
    assert after["ahead"] > before["ahead"]
    assert after["reused"] + after["waited"] - before["reused"] - before["waited"] >= after["ahead"] - before["ahead"]
    top = lookup_knowledge("zephyr surcharge", index=updated, config=LookupConfig(top_k=1)).evidence_blocks
    assert top[0].source == "billing/invoices.md" and "zephyr" in top[0].content.lower()
    same_fit = open_index(kb, cache_dir=cache, rebuild=True, keep_fit=True)
    for query in ["zephyr surcharge", "refund policy", "rate limits", "webhook signature"]:
        assert _tops(updated, query) == _tops(same_fit, query)


def _tops(index, query: str) -> list[tuple[str, str]]:
    blocks = lookup_knowledge(query, index=index, config=LookupConfig(top_k=5)).evidence_blocks
    return [(b.source, b.breadcrumb) for b in blocks]


def test_an_update_that_gives_way_to_a_build_leaves_no_block_made_ahead(editable_kb, monkeypatch):
    kb, cache = editable_kb
    monkeypatch.setattr(arena, "MIN_BYTES", 0)
    monkeypatch.setenv(arena.LIMIT_ENV, "256")
    open_index(kb, cache_dir=cache)
    _fresh_pool()
    monkeypatch.setattr(incremental, "REFIT_SHARE", 0.0)  # any change passes the bound: a full build follows
    page = kb / "billing" / "invoices.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Zephyr\nThe zephyr surcharge applies.\n",
                    encoding="utf-8")
    rebuilt = open_index(kb, cache_dir=cache)
    assert rebuilt.update is None  # built whole
    assert block_making.wait_for_ahead(timeout=0) and arena.held_bytes() == 0  # stopped, and nothing kept


def test_blocks_are_made_ahead_only_while_the_pool_has_room(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "8")
    _fresh_pool()
    with arena.pooled():
        kept = arena.empty((5 * MB,), np.uint8)  # a free block of another size, once dropped
    del kept
    gc.collect()
    before = arena.pool_facts()
    assert before["free_bytes"] > 5 * MB
    with arena.pooled():
        block_making.make_ahead([2 * MB, 3 * MB])  # 5.4 MB of blocks: within the limit, but not beside the free one
        assert block_making.wait_for_ahead(timeout=30)
    after = arena.pool_facts()
    assert after["ahead"] - before["ahead"] <= 1 and arena.held_bytes() <= 8 * MB
