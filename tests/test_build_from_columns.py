"""A build turns the base read from files into the columns a cached index holds and lets the Python objects go
before L0 and L1 are built (retrieval/index/build_columns.py): the same arrays, cache files and lookups as a
build over the `Entry` and `Chunk` objects, with the objects gone from the build's start."""

from __future__ import annotations

import dataclasses
import gc
import json
import weakref
from pathlib import Path

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge
from retrieval.index import progress as bp
from retrieval.index.build import KnowledgeIndex, build_index
from retrieval.index.build_columns import StreamedRows, indexable_rows
from retrieval.index.cache import CachedIndex, write_cache
from retrieval.index.chunk_store import ChunkStore, indexable
from retrieval.index.entry_columns import EntryColumns
from retrieval.kb.load import load_knowledge_base
from retrieval.kb.model import Chunk, Entry, KnowledgeBase
from retrieval.l0.index import L0Index
from retrieval.l1.arrays import build_arrays, loaded
from retrieval.l1.config import IndexConfig
from retrieval.l1.embedder import default_embedder
from retrieval.l1.search import L1Index
from retrieval.paths import SAMPLE_KB
from retrieval.storage.spill import Spill, spilled_file
from retrieval.storage.text_column import TextColumn

WORDS = ("alpha", "beta", "gamma", "delta", "kappa", "lambda", "sigma", "omega", "café", "naïve", "東京", "Größe",
         "rotate", "token", "alert", "invoice", "silence", "cluster", "node", "disk")


def _generated_base(root: Path, pages: int = 40, seed: int = 11) -> Path:
    """Markdown pages of 1-6 sections with labels, non-ASCII words, and sections with no text at all."""
    rng = np.random.default_rng(seed)
    for page in range(pages):
        sections = []
        for s in range(int(rng.integers(1, 7))):
            body = "" if rng.random() < 0.15 else " ".join(rng.choice(WORDS, size=int(rng.integers(3, 60))))
            sections.append(f"## Part {s} {rng.choice(WORDS)}\n\n{body}\n")
        front = (f"---\ntitle: Page {page} {rng.choice(WORDS)}\ncategory: {('Ops', 'Billing', 'Café')[page % 3]}\n"
                 f"keywords: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\nentities: [Node {page % 5}]\n"
                 f"description: page {page}\n---\n\n")
        path = root / f"folder{page % 4}" / f"page-{page}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(front + f"Opening of page {page}.\n\n" + "\n".join(sections), encoding="utf-8")
    return root


def _l1_arrays(arrays) -> dict[str, np.ndarray]:
    return {f.name: np.asarray(getattr(arrays, f.name)) for f in dataclasses.fields(arrays)}


def _differing(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> set[str]:
    return {n for n in expected if got[n].dtype != expected[n].dtype or not np.array_equal(got[n], expected[n])}


def test_a_generated_base_built_from_columns_has_the_arrays_and_cache_files_of_one_built_from_its_objects(
        tmp_path: Path, small_blocks):
    root = _generated_base(tmp_path / "kb")
    config = IndexConfig(svd_dims=16)
    objects = load_knowledge_base(root)
    embedder = default_embedder()
    expected_l1 = build_arrays([c for c in objects.chunks if indexable(c)], config, None, loaded(embedder))
    index = build_index(load_knowledge_base(root), config=config, embedder=embedder,
                        spill=Spill(tmp_path / "spill", min_bytes=0))  # every text blob read from its file
    assert isinstance(index.kb.entries, EntryColumns)
    assert _differing(_l1_arrays(index.l1.arrays), _l1_arrays(expected_l1)) == set()
    assert _differing(_l1_arrays(index.l0.arrays), _l1_arrays(L0Index(objects.entries).arrays)) == set()
    assert list(index.kb.entries) == list(objects.entries) and index.kb.chunk_count == objects.chunk_count
    manifests = []
    for name, kb in (("objects", objects), ("columns", index.kb)):
        write_cache(tmp_path / name, CachedIndex(kb, index.l1.arrays, np.asarray(index.l1.chunks._rows),
                                                 None, config, 0.0, l0=index.l0.arrays))
        manifest = json.loads((tmp_path / name / "manifest.json").read_text())
        manifests.append({k: (v["xxh3_128"], v["bytes"]) for k, v in manifest["files"].items()})
    assert manifests[0] == manifests[1]


def _built_from_objects(kb: KnowledgeBase, config: IndexConfig) -> KnowledgeIndex:
    """The index a build made before it went by columns: L0 and L1 over the `Entry` and `Chunk` objects."""
    l1 = L1Index([c for c in kb.chunks if indexable(c)], config, embedder=default_embedder())
    return KnowledgeIndex(kb, L0Index(kb.entries), l1, None, config.svd_dims, 0.0, False, config)


def test_the_sample_base_built_from_columns_answers_as_the_build_over_its_objects():
    config, lookups = IndexConfig(svd_dims=32), LookupConfig()
    columns = build_index(load_knowledge_base(SAMPLE_KB), config=config)
    objects = _built_from_objects(load_knowledge_base(SAMPLE_KB), config)
    assert isinstance(columns.kb.entries, EntryColumns)
    assert _differing(_l1_arrays(columns.l1.arrays), _l1_arrays(objects.l1.arrays)) == set()
    for query in ("how do I silence alerts", "rotate the api keys", "invoice currency", "install on linux"):
        assert lookup_knowledge(query, index=columns, config=lookups).to_dict()["evidence_blocks"] == \
            lookup_knowledge(query, index=objects, config=lookups).to_dict()["evidence_blocks"]


def test_the_entry_and_chunk_objects_read_from_files_are_gone_before_l0_is_built():
    kb = load_knowledge_base(SAMPLE_KB)
    objects = [weakref.ref(kb.entries[0]), weakref.ref(kb.entries[-1]), weakref.ref(kb.entries[0].chunks[0])]
    alive_at_l0: list[bool] = []

    def progress(stage: str, fraction: float) -> None:
        if stage == bp.L0 and fraction == 0.0:
            gc.collect()
            alive_at_l0.append(any(ref() is not None for ref in objects))

    holder = [kb]
    del kb
    index = build_index(holder.pop(), svd_dims=16, progress=progress)
    assert alive_at_l0 == [False]
    assert isinstance(index.kb.entries, EntryColumns) and index.kb.entry(index.kb.entries[0].source) is not None
    assert isinstance(index.kb.source_table.names, TextColumn)  # the load's names and stat lines went too


def test_a_base_whose_chunk_differs_from_its_entry_is_built_from_its_objects():
    kb = load_knowledge_base(SAMPLE_KB)
    first = kb.entries[0]
    odd = dataclasses.replace(first, chunks=(dataclasses.replace(first.chunks[0], title="another title"),
                                             *first.chunks[1:]))
    index = build_index(KnowledgeBase(kb.root, (odd, *kb.entries[1:])), svd_dims=16)
    assert index.kb.entries[0] is odd and index.l1.chunks[0].title == "another title"


TEXTS = ("", "plain", "  leading spaces", "\u00a0\u2003", "\x1c\x1f", "\x00raw", "café", "東京\udcff", " ", "\n\t",
         "x" * 300, "\u2003em space first")
BREADCRUMBS = ("", "Part", " ", "Größe > Teil")


def _odd_entries() -> tuple[Entry, ...]:
    """Entries whose chunks pair every text above (empty, whitespace only, non-ASCII first) with each breadcrumb."""
    entries = []
    for e in range(9):
        source = f"page-{e}.md"
        chunks = tuple(Chunk(source, p, f"Page {e}", BREADCRUMBS[(e + p) % len(BREADCRUMBS)],
                             TEXTS[(3 * e + p) % len(TEXTS)], ()) for p in range(e % 5 + 1))
        entries.append(Entry(source, f"Page {e}", (), (), (), "", chunks))
    return tuple(entries)


@pytest.mark.parametrize("spilled", [False, True])
def test_streamed_rows_give_every_chunk_and_the_indexable_rows_across_blocks(tmp_path: Path, small_blocks,
                                                                           spilled: bool):
    entries = _odd_entries()
    chunks = [c for e in entries for c in e.chunks]
    store = ChunkStore.of(entries, Spill(tmp_path / "spill", min_bytes=0) if spilled else Spill(None))
    assert (spilled_file(store.texts.blob) is not None) == spilled
    expected = np.flatnonzero([indexable(c) for c in chunks])
    assert 0 < expected.size < len(chunks) and np.array_equal(indexable_rows(store), expected)
    for rows in (np.arange(len(chunks)), expected, np.array([1, 2, 5, 17]), np.array([0]), np.array([], dtype=int)):
        assert list(StreamedRows(store, rows)) == [chunks[r] for r in rows.tolist()]
