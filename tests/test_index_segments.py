"""The index as segments (issue 50): an update writes a delta beside the last full build, never the base; a search
reads both and stays exact; BM25's idf is exact across them and its mean lengths stay the base's until the next
full build, which moves a score no more than the mean length moved."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval import open_index
from retrieval.index.cache import CacheWarning
from retrieval.index.lineage import REFIT_SHARE
from tests.index_helpers import CONFIG, PAGES, edit_generated_pages, fast_equals_exact, write_generated_base


def _folders(cache: Path) -> dict[str, dict]:
    return {p.name: json.loads((p / "manifest.json").read_text(encoding="utf-8"))
            for p in cache.iterdir() if (p / "manifest.json").is_file()}


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


def test_a_one_page_edit_writes_a_delta_of_at_most_a_twentieth_of_the_base_and_leaves_the_base_untouched(tmp_path):
    kb, cache = tmp_path / "kb", tmp_path / "cache"
    write_generated_base(kb, pages=1500)
    open_index(kb, cache_dir=cache, config=CONFIG)
    (base_name, _), = _folders(cache).items()
    base = cache / base_name
    before = {f.name: (f.stat().st_ino, f.stat().st_size, f.stat().st_mtime_ns) for f in base.iterdir()
              if f.suffix == ".npy"}
    edit_generated_pages(kb, [7])
    updated = open_index(kb, cache_dir=cache, config=CONFIG)
    assert updated.update is not None
    deltas = {name: m for name, m in _folders(cache).items() if m.get("base")}
    (delta_name, manifest), = deltas.items()
    assert manifest["base"] == base_name
    assert _bytes(cache / delta_name) <= 0.05 * _bytes(base), (_bytes(cache / delta_name), _bytes(base))
    after = {f.name: (f.stat().st_ino, f.stat().st_size, f.stat().st_mtime_ns) for f in base.iterdir()
             if f.suffix == ".npy"}
    assert after == before  # not one of the base's arrays written again


def test_a_search_across_the_base_and_the_delta_equals_the_exact_scan(segmented):
    _, _, index, queries = segmented
    assert len(index.l1.segments) == 2 and index.l1.dead.pages.size == len(range(0, PAGES, 50)) + 1
    pruned = fast_equals_exact(index.l1, queries, (None, {"category": "ops"}, {"source": "p50.md"}))
    assert pruned >= 20


def test_a_tombstoned_page_is_never_returned_and_its_new_version_is(segmented):
    _, _, index, _ = segmented
    result = index.l1.search("brandnewword", top_k=50)
    sources = [c.chunk.source for c in result.candidates]
    assert "added.md" in sources and "p0.md" in sources and "p3.md" not in sources
    assert all(c.chunk.breadcrumb != "Revised" or c.chunk.source != "p3.md" for c in result.candidates)
    old_text_of_p50 = [c for c in index.l1.search("Section 0 of page 50", top_k=5).candidates
                       if c.chunk.source == "p50.md"]
    assert len({c.chunk.chunk_id for c in old_text_of_p50}) == len(old_text_of_p50)  # one live copy, not two
    assert index.l1.pages.page_of("p3.md") is None


def test_an_update_reopened_from_the_cache_answers_as_it_did(segmented):
    kb, cache, index, queries = segmented
    reopened = open_index(kb, cache_dir=cache, config=CONFIG)
    assert reopened.from_cache and len(reopened.l1.segments) == 2
    for query in queries:
        assert [(c.chunk.chunk_id, c.score) for c in reopened.l1.search(query, top_k=10).candidates] == \
            [(c.chunk.chunk_id, c.score) for c in index.l1.search(query, top_k=10).candidates]


def test_a_second_update_replaces_the_delta_beside_the_same_base(tmp_path):
    kb, cache = tmp_path / "kb", tmp_path / "cache"
    write_generated_base(kb, pages=200)
    open_index(kb, cache_dir=cache, config=CONFIG)
    (base_name, _), = _folders(cache).items()
    edit_generated_pages(kb, [1])
    open_index(kb, cache_dir=cache, config=CONFIG)
    edit_generated_pages(kb, [2], marker="secondmarker")
    second = open_index(kb, cache_dir=cache, config=CONFIG)
    assert second.update is not None and second.update.lineage.updates == 2
    assert {m.get("base") for m in _folders(cache).values()} == {None, base_name}
    assert len(second.l1.segments) == 2 and second.l1.dead.pages.size == 2  # both edited pages, in one delta
    assert [c.chunk.source for c in second.l1.search("secondmarker", top_k=3).candidates][:1] == ["p2.md"]
    assert [c.chunk.source for c in second.l1.search("brandnewword", top_k=3).candidates][:1] == ["p1.md"]


def test_the_query_weighs_terms_by_their_exact_idf_over_the_live_rows(segmented):
    """The idf an updated index applies is a full build's: the base's document frequencies, less the tombstoned
    rows', plus the delta's (here checked against a full build of the same files)."""
    kb, _, index, _ = segmented
    full = open_index(kb, use_cache=False, config=CONFIG)
    from retrieval.l1.segments import QueryTerms, QueryWeights

    for query in ("brandnewword", "w7 w8", "w0 w1 w2 w1999"):
        ours = QueryWeights.of(QueryTerms.of(query), index.l1.segments, index.l1.dead, k1=1.2, pair_weight=0.5)
        theirs = QueryWeights.of(QueryTerms.of(query), full.l1.segments, full.l1.dead, k1=1.2, pair_weight=0.5)
        # a word both segments hold is weighed once per segment, with the same weight
        assert np.allclose(np.unique(np.round(np.concatenate([w for _, w in ours.sections]), 12)),
                           np.unique(np.round(theirs.sections[0][1], 12)), rtol=1e-12, atol=0)


def test_frozen_mean_lengths_move_a_lexical_score_no_more_than_the_mean_length_moved(tmp_path):
    """At the refit share, an update's lexical scores (mean lengths kept from the base) against a full build's
    (its own mean lengths): each differs by at most the mean length's relative change (docs/l1.md)."""
    kb, cache = tmp_path / "kb", tmp_path / "cache"
    queries = write_generated_base(kb, pages=300)
    open_index(kb, cache_dir=cache, config=CONFIG)
    edit_generated_pages(kb, range(0, int(300 * REFIT_SHARE / 4)))  # each adds a section: the mean length moves
    updated = open_index(kb, cache_dir=cache, config=CONFIG)
    full = open_index(kb, use_cache=False, config=CONFIG)
    assert updated.update is not None
    drift = abs(full.l1.arrays.lengths_mean[0] / updated.l1.arrays.lengths_mean[0] - 1)
    assert drift > 0.001  # the edits did move the mean
    worst = 0.0
    for query in queries:
        ours, theirs = _lexical_by_text(updated.l1, query), _lexical_by_text(full.l1, query)
        assert ours.keys() == theirs.keys()
        for key, value in theirs.items():
            if value > 0:
                worst = max(worst, abs(ours[key] / value - 1))
    assert 0 < worst <= drift / (1 - drift) + 1e-5, (worst, drift)


def _lexical_by_text(l1, query: str) -> dict[tuple[str, str, str], float]:
    rows = l1.pages.every_row()
    lexical = l1.score(query, tfidf_weight=0.9).lexical
    chunks = l1.chunks.take(rows) if hasattr(l1.chunks, "take") else [l1.chunks[r] for r in rows.tolist()]
    return {(c.source, c.breadcrumb, c.text): float(v) for c, v in zip(chunks, lexical[rows], strict=True)}


def test_no_module_of_l1_imports_the_index_package():
    """L1 is the search over arrays; the index package builds, caches and updates them (and imports L1)."""
    folder = Path(__file__).resolve().parents[1] / "retrieval" / "l1"
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "retrieval.index" or n.startswith("retrieval.index.") for n in names), module.name


def test_an_updated_bases_entries_and_chunks_are_a_full_loads_in_its_order(editable_kb):
    kb, cache = editable_kb
    open_index(kb, cache_dir=cache)
    pages = sorted(kb.rglob("*.md"))
    pages[5].write_text(pages[5].read_text(encoding="utf-8") + "\n## New\nNew words here.\n", encoding="utf-8")
    pages[9].unlink()
    (kb / "a-first.md").write_text("---\ntitle: First\ncategory: Onboarding\n---\n## First\nFirst words.\n",
                                   encoding="utf-8")
    updated, full = open_index(kb, cache_dir=cache), open_index(kb, use_cache=False)
    assert updated.update is not None
    assert [e.source for e in updated.kb.entries] == [e.source for e in full.kb.entries]
    assert [(c.source, c.breadcrumb, c.text) for c in updated.kb.chunks] == \
        [(c.source, c.breadcrumb, c.text) for c in full.kb.chunks]
    assert updated.kb.entries.chunk_count() == len(full.kb.chunks)
    assert updated.kb.entries.domains() == {d for e in full.kb.entries for d in e.domains}
    assert updated.kb.entries.find(pages[9].relative_to(kb).as_posix()) is None
    assert updated.kb.entries.find("a-first.md").title == "First"


def test_every_segments_stored_lsa_heads_are_its_own_rows(segmented):
    """The heads the bounded search bounds cosines with are made as the rows are projected, per segment."""
    from retrieval.l1.arrays import lsa_heads

    _, _, index, _ = segmented
    for segment in index.l1.segments:
        head, tail = lsa_heads(np.asarray(segment.arrays.lsa))
        assert np.array_equal(head, segment.arrays.lsa_head) and np.array_equal(tail, segment.arrays.lsa_tail)


def test_a_damaged_delta_is_never_served_and_the_update_is_made_again_from_its_base(tmp_path):
    kb, cache = tmp_path / "kb", tmp_path / "cache"
    write_generated_base(kb, pages=120)
    open_index(kb, cache_dir=cache, config=CONFIG)
    edit_generated_pages(kb, [1])
    open_index(kb, cache_dir=cache, config=CONFIG)
    (delta_name, _), = ((n, m) for n, m in _folders(cache).items() if m.get("base"))
    largest = max((cache / delta_name).glob("*.npy"), key=lambda p: p.stat().st_size)
    data = bytearray(largest.read_bytes())
    data[-1] ^= 0xFF  # one flipped byte
    largest.write_bytes(bytes(data))
    with pytest.warns(CacheWarning, match="unusable"):
        again = open_index(kb, cache_dir=cache, config=CONFIG)
    assert again.update is not None and not again.from_cache  # updated from the base, not built whole
    assert [c.chunk.source for c in again.l1.search("brandnewword", top_k=3).candidates][:1] == ["p1.md"]


UPDATE_IN_A_FRESH_PROCESS = """
import sys
from retrieval import IndexConfig, open_index
index = open_index(sys.argv[1], cache_dir=sys.argv[2], config=IndexConfig(svd_dims=48))
print(index.update is not None, "sklearn" in sys.modules)
"""


def test_an_update_in_a_fresh_process_imports_no_scikit_learn(tmp_path):
    """A process's first update (a script, `index` after an edit) does not pay scikit-learn's import (about a
    second): only a full build fits an SVD."""
    kb, cache = tmp_path / "kb", tmp_path / "cache"
    write_generated_base(kb, pages=60)
    open_index(kb, cache_dir=cache, config=CONFIG)
    edit_generated_pages(kb, [4])
    out = subprocess.run([sys.executable, "-c", UPDATE_IN_A_FRESH_PROCESS, str(kb), str(cache)], capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["True", "False"]
