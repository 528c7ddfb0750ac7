"""Back-to-back updates (issue 35, item 1): the last index a process built or updated is kept in memory, so the
next update of the same base starts from it instead of waiting for its cache folder and reading it back
(retrieval/index/write_behind.py), and cache folders are written one at a time, a superseded one dropped."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index.foreground import Foreground
from retrieval.index.write_behind import wait_for_writes


def _append(page: Path, text: str) -> None:
    page.write_text(page.read_text(encoding="utf-8") + f"\n\n## Added\n{text}\n", encoding="utf-8")


def _first_source(index, query: str) -> str:
    return lookup_knowledge(query, index=index, config=LookupConfig(top_k=5)).evidence_blocks[0].source


def _sources(index, query: str) -> list[str]:
    return [b.source for b in lookup_knowledge(query, index=index, config=LookupConfig(top_k=5)).evidence_blocks]


def test_the_next_update_starts_from_the_last_index_in_memory(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    _append(kb / "billing" / "invoices.md", "Zephyr credits settle on the first of the month.")
    assert open_index(kb, cache_dir=cache).update is not None
    wait_for_writes()
    shutil.rmtree(cache)  # no folder to start from: only the index in memory
    _append(kb / "billing" / "plans.md", "Quokka tiers are priced per seat.")
    index = open_index(kb, cache_dir=cache)
    assert index.update is not None and index.update.parsed == 1 and index.update.lineage.updates == 2
    assert _first_source(index, "quokka tiers priced per seat") == "billing/plans.md"
    assert _first_source(index, "zephyr credits settle") == "billing/invoices.md"


def test_an_unchanged_base_after_an_update_is_served_from_memory(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    _append(kb / "billing" / "invoices.md", "Zephyr credits settle on the first of the month.")
    updated = open_index(kb, cache_dir=cache)
    again = open_index(kb, cache_dir=cache)
    assert again.from_cache and again.update is None
    assert again.l1.arrays is updated.l1.arrays  # the same arrays, not a copy read back from disk
    wait_for_writes()
    assert len([f for f in cache.iterdir() if not f.name.startswith(".")]) == 2  # the build's and the update's


def test_updates_in_a_row_each_leave_the_base_as_it_is_on_disk(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    edits = {"zephyr": "billing/invoices.md", "quokka": "api/rate-limits.md", "marmot": "alerting/routing.md"}
    for word, page in edits.items():
        _append(kb / page, f"The {word} surcharge applies to late invoices.")
        index = open_index(kb, cache_dir=cache)
        assert index.update is not None
    wait_for_writes()
    reopened = open_index(kb, cache_dir=cache)  # the last folder, as written behind
    rebuilt = open_index(kb, use_cache=False)
    assert index.kb.fingerprint == reopened.kb.fingerprint == rebuilt.kb.fingerprint
    for word, page in edits.items():
        query = f"{word} surcharge late invoices"
        assert _first_source(index, query) == _first_source(reopened, query)
        # the edited page's new words are found by the updated index as by a rebuild; its rank may differ from
        # the rebuild's: a new word has no LSA direction until a refit (docs/l1.md, Incremental updates)
        assert page in _sources(index, query) and page in _sources(rebuilt, query)
    assert reopened.from_cache and reopened.l1.arrays is index.l1.arrays


def test_a_rebuild_is_not_followed_by_an_update_from_the_index_before_it(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    _append(kb / "billing" / "invoices.md", "Zephyr credits settle on the first of the month.")
    assert open_index(kb, cache_dir=cache).update.lineage.updates == 1
    open_index(kb, cache_dir=cache, rebuild=True)
    _append(kb / "billing" / "plans.md", "Quokka tiers are priced per seat.")
    after = open_index(kb, cache_dir=cache)
    assert after.update is not None and after.update.lineage.updates == 1  # counted from the rebuild's fit


def test_kept_rows_are_copied_run_by_run_as_a_gather_would():
    import numpy as np

    from retrieval.l1 import update

    rng = np.random.default_rng(5)
    source = rng.random((400, 6)).astype(np.float32)
    old_rows = np.arange(400)
    rows = np.concatenate([old_rows[:90], [-1, -2], old_rows[95:300], old_rows[310:400], [-3]])  # removed, added
    rows = np.concatenate([rows[:50], rows[200:], rows[50:200]])  # and a block moved
    for max_runs in (update.MAX_RUNS, 2):  # run by run, and one gather past too many runs
        update.MAX_RUNS, saved = max_runs, update.MAX_RUNS
        try:
            copied = np.full((rows.size, 6), -7.0, dtype=np.float32)
            update.copy_kept(copied, source, rows)
        finally:
            update.MAX_RUNS = saved
        kept = rows >= 0
        assert np.array_equal(copied[kept], source[rows[kept]])
        assert np.all(copied[~kept] == -7.0)  # the new rows' places are left for them


def test_a_folder_being_written_is_abandoned_for_a_newer_one(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    with Foreground():  # the writer is held back, as by updates back to back, and starts the first folder late
        _append(kb / "billing" / "invoices.md", "Zephyr credits settle on the first of the month.")
        assert open_index(kb, cache_dir=cache).update is not None
        deadline = time.monotonic() + 30
        while not list(cache.glob(".building-*")):  # the writer has begun the first update's folder
            assert time.monotonic() < deadline, "the writer never began the folder"
            time.sleep(0.05)
        _append(kb / "billing" / "plans.md", "Quokka tiers are priced per seat.")
        assert open_index(kb, cache_dir=cache).update is not None
        given_up = time.monotonic() + 2  # the writer wakes and gives the first folder up while the work goes on
        while list(cache.glob(".building-*")):
            assert time.monotonic() < given_up, "the superseded folder was still being written"
            time.sleep(0.02)
    wait_for_writes()
    folders = [f for f in cache.iterdir() if not f.name.startswith(".")]
    lineages = sorted(json.loads((f / "manifest.json").read_text(encoding="utf-8"))["lineage"]["updates"]
                      for f in folders)
    assert lineages == [0, 2]  # the build's and the second update's: the first update's was given up
    assert not list(cache.glob(".building-*"))  # and its half-written folder removed
    index = open_index(kb, cache_dir=cache)
    assert index.from_cache and _first_source(index, "quokka tiers priced per seat") == "billing/plans.md"
