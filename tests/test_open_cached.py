"""Opening a cached index: L0 comes back from its arrays exactly as built, entries are built only when read,
and a BEIR-shaped base (one entry per document) opens without building an entry or tokenising one."""

from __future__ import annotations

import gc
import json
import pickle
import random
from pathlib import Path

import numpy as np
import pytest

from retrieval import LookupConfig, load_knowledge_base, lookup_knowledge, open_index
from retrieval.index.entry_columns import EntryColumns
from retrieval.kb.model import Entry
from retrieval.text.analysis import tokenize

DATA = Path(__file__).resolve().parents[1] / "data"
WORDS = ("alert route silence token invoice refund rotate oauth dashboard panel query metric retention rollup "
         "partition agent install docker linux windows proxy certificate tls webhook slack pager escalation "
         "billing plan seat quota export import backup restore cluster node shard replica latency timeout "
         "schema migration index cache ünïcödé naïve café").split()


def _beir_corpus(folder: Path, documents: int, *, seed: int = 3) -> Path:
    """A BEIR-shaped `corpus.jsonl`: `_id`, `title`, `text` per document (one short text each, so one chunk
    per entry), a few with metadata labels, words drawn Zipf-like so some are common and some rare."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for number in range(documents):
            record = {"_id": f"doc-{number}" if number % 7 else number,
                      "title": " ".join(rng.choices(WORDS, weights, k=rng.randint(0, 5))),
                      "text": " ".join(rng.choices(WORDS, weights, k=rng.randint(5, 60)))}
            if number % 5 == 0:
                record["metadata"] = {"category": rng.choice(["Ops", "Billing", " billing ", "Security"]),
                                      "keywords": rng.sample(WORDS, 2), "entities": [rng.choice(WORDS).title()],
                                      "description": " ".join(rng.choices(WORDS, k=6))}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return folder


def _queries(count: int, *, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for _ in range(count)] + ["", "zzz unknown", "the"]


def _built_and_cached(kb: Path, cache: Path):
    built = open_index(kb, svd_dims=16, cache_dir=cache)
    cached = open_index(kb, svd_dims=16, cache_dir=cache)
    assert not built.from_cache and cached.from_cache
    # a build goes by the base's columns too (test_build_from_columns.py compares it with one over the objects)
    assert isinstance(cached.kb.entries, EntryColumns) and isinstance(built.kb.entries, EntryColumns)
    return built, cached


def _assert_same_l0(built, cached, queries: list[str]) -> None:
    for query in queries:
        terms = tokenize(query)
        assert np.array_equal(built.l0.scores(terms), cached.l0.scores(terms)), query  # bit for bit
        assert built.l0.score_bound(terms) == cached.l0.score_bound(terms)
        assert built.l0.match(query) == cached.l0.match(query)  # matches, scores, labels, coverage, hints
        assert built.l0.match(query, max_matches=50, min_score_ratio=0.0) == \
            cached.l0.match(query, max_matches=50, min_score_ratio=0.0)
        for row in range(0, len(built.kb.entries), max(1, len(built.kb.entries) // 25)):
            assert built.l0.coverage(terms, row) == cached.l0.coverage(terms, row)


def test_cached_l0_equals_the_built_one_on_the_sample_data(tmp_path):
    built, cached = _built_and_cached(DATA / "kb", tmp_path)
    queries = [json.loads(line)["text"] for line in (DATA / "queries.jsonl").read_text().splitlines() if line]
    _assert_same_l0(built, cached, queries + [e.title for e in built.kb.entries])
    assert len(cached.l0.vocabulary) == len(built.l0.vocabulary)


def test_cached_l0_equals_the_built_one_on_a_beir_jsonl(tmp_path):
    kb = _beir_corpus(tmp_path / "beir", 2000)
    built, cached = _built_and_cached(kb, tmp_path / "cache")
    _assert_same_l0(built, cached, _queries(60))


def test_lookups_on_a_cached_beir_base_answer_as_the_built_one(tmp_path):
    kb = _beir_corpus(tmp_path / "beir", 1500)
    built, cached = _built_and_cached(kb, tmp_path / "cache")
    config = LookupConfig()
    for query in _queries(25)[:-3] + ["zzz unknown", "the"]:
        one, two = (lookup_knowledge(query, index=index, config=config) for index in (built, cached))
        assert [(b.source, b.score, b.content) for b in one.evidence_blocks] == \
            [(b.source, b.score, b.content) for b in two.evidence_blocks]


def test_lazy_entries_equal_the_eager_ones(tmp_path):
    kb = _beir_corpus(tmp_path / "beir", 700)
    built, cached = _built_and_cached(kb, tmp_path / "cache")
    eager, lazy = built.kb.entries, cached.kb.entries
    assert len(lazy) == len(eager) and list(lazy) == list(eager) and lazy == eager
    for entry in eager[::37]:
        found = cached.kb.entry(entry.source)
        assert found == entry and found.domains == entry.domains and tuple(found.chunks) == tuple(entry.chunks)
    assert lazy[-1] == eager[-1] and lazy[3:9] == eager[3:9]
    with pytest.raises(IndexError):
        lazy[len(eager)]
    assert cached.kb.entry("no such document") is None and cached.kb.entry("") is None
    assert cached.kb.summary() == built.kb.summary()
    assert cached.kb.domains() == built.kb.domains() and cached.kb.chunk_count == built.kb.chunk_count
    assert list(cached.kb.chunks) == list(built.kb.chunks)


def test_lazy_entries_of_a_markdown_base_equal_the_eager_ones(kb_dir, tmp_path):
    built, cached = _built_and_cached(kb_dir, tmp_path)
    assert list(cached.kb.entries) == list(load_knowledge_base(kb_dir).entries)
    for entry in built.kb.entries:
        assert cached.kb.entry(entry.source) == entry
        assert cached.kb.entry(entry.source).domains == entry.domains
    assert cached.kb.summary() == built.kb.summary()


def test_a_stored_chunk_reads_copies_and_pickles_as_a_built_one(kb_dir, tmp_path):
    built, cached = _built_and_cached(kb_dir, tmp_path)
    for fresh, stored in zip(built.kb.chunks, cached.kb.chunks, strict=True):
        assert hash(stored) == hash(fresh) and stored == fresh and repr(stored) == repr(fresh)
    stored = cached.kb.chunks[1]
    copied = pickle.loads(pickle.dumps(stored))
    assert copied == built.kb.chunks[1] and "_store" not in vars(copied)
    assert len(pickle.dumps(stored)) < 4 * len(pickle.dumps(built.kb.chunks[1]))  # the store is not pickled
    with pytest.raises(AttributeError):
        _ = stored.no_such_field


def test_opening_a_cached_base_of_one_chunk_entries_builds_no_entry(tmp_path):
    kb = _beir_corpus(tmp_path / "beir", 3000)
    built = open_index(kb, svd_dims=16, cache_dir=tmp_path / "cache")
    del built
    gc.collect()
    before = sum(isinstance(o, Entry) for o in gc.get_objects())
    cached = open_index(kb, svd_dims=16, cache_dir=tmp_path / "cache")
    assert cached.from_cache and len(cached.kb.entries) == 3000 and cached.kb.chunk_count == 3000
    assert sum(isinstance(o, Entry) for o in gc.get_objects()) == before
    assert cached.l0.match("alert route").match_count > 0  # entries are built when they match
