"""A large build's arrays spilled to disk as they are made (retrieval/storage/spill.py): the same index as one
built in memory, file-backed, taken by the cache as written, and nothing left behind."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.index.build import build_index
from retrieval.index.cache import SPILL_PREFIX
from retrieval.index.chunk_store import TextColumn
from retrieval.kb.load import load_knowledge_base
from retrieval.paths import SAMPLE_KB
from retrieval.storage.spill import SPILL_MIN_ENV, Spill, spilled_file

QUERIES = ("how do I silence alerts", "rotate the api keys", "invoice currency")


def _arrays(index) -> dict[str, np.ndarray]:
    arrays = index.l1.arrays
    return {f.name: np.asarray(getattr(arrays, f.name)) for f in dataclasses.fields(arrays)}


def test_a_spilled_build_equals_the_in_memory_one_and_its_large_arrays_are_files(tmp_path: Path):
    kb = load_knowledge_base(SAMPLE_KB)
    in_memory = build_index(kb, svd_dims=16)
    spilled = build_index(kb, svd_dims=16, spill=Spill(tmp_path / "spill", min_bytes=0))
    expected, got = _arrays(in_memory), _arrays(spilled)
    assert {name for name in got if not np.array_equal(got[name], expected[name])} == set()
    for name in ("lsa", "static_vectors"):
        array = getattr(spilled.l1.arrays, name)
        if array.size:
            assert not array.flags.writeable
            assert spilled_file(array) is not None and spilled_file(array).parent == tmp_path / "spill"
    assert spilled_file(in_memory.l1.arrays.lsa) is None


def test_the_cache_takes_the_spilled_files_and_no_spill_folder_is_left(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(SPILL_MIN_ENV, "0")
    cache = tmp_path / "cache"
    built = open_index(SAMPLE_KB, svd_dims=16, cache_dir=cache)
    assert not built.from_cache
    assert not list(cache.glob(f"{SPILL_PREFIX}*")) and not list(cache.glob("*/.spill"))
    assert spilled_file(built.l1.arrays.lsa) is None  # its name went with the spill folder; the map stays
    cached = open_index(SAMPLE_KB, svd_dims=16, cache_dir=cache)
    assert cached.from_cache
    assert {n for n, a in _arrays(cached).items() if not np.array_equal(a, _arrays(built)[n])} == set()
    config = LookupConfig()
    for query in QUERIES:
        assert lookup_knowledge(query, index=cached, config=config).evidence_blocks == \
            lookup_knowledge(query, index=built, config=config).evidence_blocks
    texts = [c.text for c in cached.kb.chunks]
    assert texts == [c.text for c in built.kb.chunks]


def test_a_text_column_spilled_reads_back_every_string(tmp_path: Path):
    values = ["plain", "", "naïve café", "emoji \N{SNOWMAN}", "x" * 5000, "\udcff surrogate"]
    in_memory = TextColumn.of(values)
    spilled = TextColumn.of(values, Spill(tmp_path, min_bytes=0))
    assert [spilled[i] for i in range(len(values))] == values == [in_memory[i] for i in range(len(values))]
    assert spilled_file(spilled.blob) is not None


def test_a_spill_size_that_is_not_a_number_is_a_clear_error(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(SPILL_MIN_ENV, "lots")
    with pytest.raises(ValueError, match=f"{SPILL_MIN_ENV}='lots' is not a number of megabytes"):
        Spill(tmp_path).rows("lsa", (10, 4), np.float32)
