"""An update's large arrays come from memory the process touched before (retrieval/index/arena.py): a block
whose arrays are all gone is reused by the next update, never while a view of it lives, and never outside an
update; the pool holds at most its limit."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index import arena, block_making
from retrieval.index.foreground import Foreground
from retrieval.index.live import LiveIndex
from retrieval.l1.update import update_sizes

MB = 1 << 20


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_a_dropped_array_s_block_serves_the_next_request(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    arena.release_pool()
    with arena.pooled():
        first = arena.empty((2 * MB,), np.float32)
        first[:] = 1.0
        where = _address(first)
        before = arena.pool_facts()["reused"]
        del first
        second = arena.empty((2 * MB - 100,), np.float32)  # a little smaller: the same block fits
    assert _address(second) == where
    assert arena.pool_facts()["reused"] == before + 1
    assert second.shape == (2 * MB - 100,) and second.flags.writeable


def test_a_block_is_not_reused_while_a_view_of_it_lives(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    arena.release_pool()
    with arena.pooled():
        whole = arena.empty((1024, 1024), np.float32)
        whole[:] = 7.0
        view = whole[10:20].view(np.int32)
        del whole
        other = arena.zeros((1024, 1024), np.float32)
    assert _address(other) != _address(view) - 10 * 1024 * 4
    assert (view.view(np.float32) == 7.0).all()  # the other array did not write over it
    assert not other.any()


def test_outside_an_update_arrays_are_plain(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    array = arena.empty((2 * MB,), np.float32)
    assert array.base is None  # numpy's own memory, freed as usual


def test_the_pool_keeps_at_most_its_limit(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "10")
    arena.release_pool()
    with arena.pooled():
        arrays = [arena.empty((MB,), np.float32) for _ in range(5)]  # 5 blocks of ~4 MB
    del arrays
    facts = arena.pool_facts()
    assert 0 < facts["free_bytes"] <= 10 * MB and facts["free_blocks"] == 2


def test_a_zero_limit_turns_the_pool_off(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "0")
    with arena.pooled():
        assert arena.empty((2 * MB,), np.float32).base is None


def test_a_malformed_limit_says_what_to_give(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match="whole number of megabytes"):
        arena.retained_limit()
    monkeypatch.setenv(arena.LIMIT_ENV, "-5")
    with pytest.raises(ValueError, match="negative"):
        arena.retained_limit()


def test_updates_in_a_row_reuse_the_blocks_of_the_index_they_replaced(editable_kb, monkeypatch):
    kb, cache = editable_kb
    monkeypatch.setattr(arena, "MIN_BYTES", 0)  # the sample's arrays are small: pool them all
    monkeypatch.setenv(arena.LIMIT_ENV, "256")
    arena.release_pool()
    open_index(kb, cache_dir=cache)
    edits = {"zephyr": "billing/invoices.md", "quokka": "api/rate-limits.md", "marmot": "alerting/routing.md",
             "pangolin": "billing/plans.md"}
    for word, name in edits.items():
        page = kb / name
        page.write_text(page.read_text(encoding="utf-8") + f"\n\n## {word.title()}\nThe {word} surcharge applies.\n",
                        encoding="utf-8")
        index = open_index(kb, cache_dir=cache)
        assert index.update is not None
    assert arena.pool_facts()["reused"] > 0
    for word, name in edits.items():  # every edit is found: no array was written over while another index used it
        blocks = lookup_knowledge(f"{word} surcharge", index=index, config=LookupConfig(top_k=3)).evidence_blocks
        assert blocks[0].source == name and word in blocks[0].content.lower()
    same_fit = open_index(kb, cache_dir=cache, rebuild=True, keep_fit=True)  # what an update equals
    for query in ["zephyr surcharge", "refund policy", "rate limits", "webhook signature"]:
        assert _tops(index, query) == _tops(same_fit, query)


def _tops(index, query: str) -> list[tuple[str, str]]:
    blocks = lookup_knowledge(query, index=index, config=LookupConfig(top_k=5)).evidence_blocks
    return [(b.source, b.breadcrumb) for b in blocks]


def test_the_pool_module_names_its_variable_in_the_docs():
    docs = Path(__file__).resolve().parents[1] / "docs"
    assert any(arena.LIMIT_ENV in p.read_text(encoding="utf-8") for p in docs.glob("*.md"))


def _fresh_pool() -> None:
    assert block_making.wait_for_reserve(timeout=30)  # a reserve an earlier test's update asked for is made first
    gc.collect()  # and arrays of earlier tests are gone, so their blocks are not counted here
    arena.release_pool()


def _reserved_after(sizes: list[int]) -> dict[str, int]:
    before = arena.pool_facts()
    block_making.reserve_behind(sizes)
    assert block_making.wait_for_reserve(timeout=30)
    after = arena.pool_facts()
    return {key: after[key] - before[key] for key in ("reserved", "free_blocks")}


def test_the_reserve_makes_the_blocks_the_next_update_takes(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    monkeypatch.setattr(block_making, "RESERVE_QUIET_S", 0.05)
    _fresh_pool()
    assert _reserved_after([2 * MB, 3 * MB])["reserved"] == 2
    reused = arena.pool_facts()["reused"]
    with arena.pooled():
        taken = [arena.empty((3 * MB,), np.uint8), arena.empty((2 * MB,), np.uint8)]
    assert arena.pool_facts()["reused"] >= reused + 2
    assert all(a.flags.writeable for a in taken)


def test_the_reserve_counts_the_free_blocks_there_are(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    monkeypatch.setattr(block_making, "RESERVE_QUIET_S", 0.05)
    _fresh_pool()
    with arena.pooled():
        dropped = arena.empty((2 * MB,), np.uint8)
    del dropped  # a free block of the size asked for: only the second size is made
    assert _reserved_after([2 * MB, 2 * MB])["reserved"] == 1


def test_a_reserve_past_the_limit_is_not_made(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "4")
    monkeypatch.setattr(block_making, "RESERVE_QUIET_S", 0.05)
    _fresh_pool()
    assert _reserved_after([3 * MB, 3 * MB])["reserved"] == 0


def test_the_reserve_waits_while_lookups_run(monkeypatch):
    monkeypatch.setenv(arena.LIMIT_ENV, "64")
    monkeypatch.setattr(block_making, "RESERVE_QUIET_S", 0.2)
    _fresh_pool()
    before = arena.pool_facts()["reserved"]
    with Foreground():  # a lookup or an update running
        block_making.reserve_behind([2 * MB])
        time.sleep(1.0)
        assert arena.pool_facts()["reserved"] == before
    assert block_making.wait_for_reserve(timeout=30)
    assert arena.pool_facts()["reserved"] == before + 1


def test_the_sizes_reserved_for_an_update_are_the_sizes_it_asks_for(editable_kb, monkeypatch):
    kb, cache = editable_kb
    monkeypatch.setattr(arena, "MIN_BYTES", 0)
    monkeypatch.setenv(arena.LIMIT_ENV, "256")
    open_index(kb, cache_dir=cache)
    prior = open_index(kb, cache_dir=cache)  # as a server opens it: from the cache
    store = prior.kb.entries.store
    expected = update_sizes(prior.l1.arrays, [store.breadcrumbs.blob.nbytes, store.texts.blob.nbytes])
    page = kb / "billing" / "invoices.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n\n## Zephyr\nThe zephyr surcharge applies.\n",
                    encoding="utf-8")
    assert open_index(kb, cache_dir=cache).update is not None
    asked = arena.last_sizes()
    unmatched = list(asked)
    for size in expected:  # each reserved block is one the update takes (a size within the pool's tolerance)
        match = [s for s in unmatched if arena.serves(arena.block_size(size), s)]
        assert match, f"no array of the update fits a block reserved for {size} bytes (asked: {asked})"
        unmatched.remove(match[0])


def test_a_live_index_reserves_its_first_update_s_memory(editable_kb, monkeypatch):
    kb, cache = editable_kb
    monkeypatch.setattr(arena, "MIN_BYTES", 0)
    monkeypatch.setattr(block_making, "RESERVE_QUIET_S", 0.05)
    monkeypatch.setenv(arena.LIMIT_ENV, "256")
    open_index(kb, cache_dir=cache)
    _fresh_pool()
    reserved = arena.pool_facts()["reserved"]
    live = LiveIndex(kb, cache_dir=cache).start()
    try:
        assert block_making.wait_for_reserve(timeout=30)
        reserved = arena.pool_facts()["reserved"] - reserved
        assert reserved >= 10  # the texts, the term counts and weights, the LSA and static rows
        reused = arena.pool_facts()["reused"]
        page = kb / "billing" / "plans.md"
        page.write_text(page.read_text(encoding="utf-8") + "\n\n## Quokka\nQuokka tiers are priced per seat.\n",
                        encoding="utf-8")
        assert live.refresh() and live.current().update is not None
        assert arena.pool_facts()["reused"] - reused >= reserved  # every reserved block served the update
        top = lookup_knowledge("quokka tiers", index=live.current(), config=LookupConfig(top_k=1)).evidence_blocks
        assert top[0].source == "billing/plans.md"
    finally:
        live.stop()
