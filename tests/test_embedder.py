"""The Embedder seam of L1's static part: the packaged WordLlama model (no network), plug-in embedders,
and an index that goes on without the static part when the model is missing or broken."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval import LookupConfig, load_knowledge_base, lookup_knowledge, open_index
from retrieval.index.build import build_index
from retrieval.l1.embedder import EmbedderWarning, LazyEmbedder, WordLlamaEmbedder, wordllama_folder
from retrieval.l1.static import composed_vectors
from retrieval.l1.terms import count_terms
from tests.kb_fixture import write_kb

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["How do I silence an alert during maintenance?", "Invoices are sent on the first of the month.",
         "Rotate the OAuth token before it expires"]


class HashingEmbedder:
    """A tiny embedder written for the test: each word hashed to one of 32 dimensions (not static)."""

    name = "test-hashing-32"
    dimensions = 32

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word)) % self.dimensions] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


class StaticHashingEmbedder(HashingEmbedder):
    """The same, declared static: its text vector is the sum of its words' vectors."""

    name = "test-static-hashing-32"

    def __init__(self) -> None:
        super().__init__()
        self.words_embedded = 0

    def word_vectors(self, words: Sequence[str]) -> np.ndarray:
        self.words_embedded += len(words)
        out = np.zeros((len(words), self.dimensions), dtype=np.float32)
        for row, word in enumerate(words):
            out[row, sum(map(ord, word.lower())) % self.dimensions] = 1.0
        return out


class BrokenEmbedder(HashingEmbedder):
    name = "test-broken"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), 3), dtype=np.float32)  # not the promised dimensions


def _run(script: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_packaged_model_loads_and_embeds_with_no_network_access(tmp_path: Path):
    """Every socket call is refused and recorded, then the model loads (ours and WordLlama's own load), an
    index is built with its static part and a lookup uses it."""
    result = _run(f"""
        import json, socket, warnings
        attempts = []
        def refuse(name):
            def call(*args, **kwargs):
                attempts.append(name)
                raise OSError("network access is not allowed in this test")
            return call
        socket.socket.connect = refuse("connect")
        socket.socket.connect_ex = refuse("connect_ex")
        socket.create_connection = refuse("create_connection")
        socket.getaddrinfo = refuse("getaddrinfo")
        from pathlib import Path
        from retrieval import lookup_knowledge, open_index
        from retrieval.l1.embedder import WordLlamaEmbedder, wordllama_folder
        vector = WordLlamaEmbedder.load().embed(["how do I silence an alert"])
        from wordllama import WordLlama
        WordLlama.load(cache_dir=wordllama_folder(), disable_download=True)
        index = open_index({str(ROOT / "data" / "kb")!r}, cache_dir={str(tmp_path / "cache")!r})
        result = lookup_knowledge("stop alerts while we deploy", index=index)
        print(json.dumps({{"attempts": attempts, "norm": float((vector ** 2).sum()),
                          "embedder": result.retrieval_details["l1"]["embedder"]}}))
    """)
    assert result["attempts"] == []
    assert result["norm"] == pytest.approx(1.0, abs=1e-5)
    assert result["embedder"]["dimensions"] == 256 and result["embedder"]["name"].startswith("wordllama-")


def test_our_loader_gives_wordllamas_own_vectors():
    from wordllama import WordLlama

    theirs = WordLlama.load(cache_dir=wordllama_folder(), disable_download=True).embed(TEXTS, norm=True)
    ours = WordLlamaEmbedder.load().embed(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (3, 256)
    assert np.abs(ours - theirs).max() < 1e-6


def _words(texts: list[str]):
    return count_terms(texts, np.arange(len(texts)), len(texts), surface=True)


def test_chunk_vectors_composed_from_words_equal_embedding_each_text():
    """Composed from L1's case-folded words (stop words kept, nothing stemmed), a chunk's vector is the
    model's own vector of those words."""
    embedder = WordLlamaEmbedder.load()
    counts = _words(TEXTS)
    composed = composed_vectors(embedder, counts.surface).astype(np.float32)
    direct = embedder.embed([" ".join(re.findall(r"[^\W_]+", t.casefold())) for t in TEXTS])
    assert composed.shape == (3, 256) and np.all(np.sum(composed * direct, axis=1) > 0.999)


def test_a_static_plug_in_is_composed_from_its_word_vectors():
    embedder = StaticHashingEmbedder()
    counts = _words(TEXTS * 50)
    vectors = composed_vectors(embedder, counts.surface).astype(np.float32)
    distinct = len({w for t in TEXTS for w in re.findall(r"[^\W_]+", t.casefold())})
    assert embedder.words_embedded == distinct and embedder.calls == 0  # each distinct word once, no text
    plain = [" ".join(re.findall(r"[^\W_]+", t.casefold())) for t in TEXTS]
    assert np.allclose(vectors, np.tile(embedder.embed(plain), (50, 1)), atol=2e-3)


def test_a_tiny_in_test_embedder_plugs_into_the_seam(tmp_path: Path):
    kb = write_kb(tmp_path / "kb")
    embedder = HashingEmbedder()
    index = open_index(kb, cache_dir=tmp_path / "cache", embedder=embedder)
    assert index.l1.embedder_info.to_dict() == {"name": "test-hashing-32", "dimensions": 32}
    assert index.l1.arrays.static_vectors.shape == (len(index.l1.chunks), 32)
    result = lookup_knowledge("how do I silence an alert", index=index)
    assert result.retrieval_details["l1"]["embedder"] == {"name": "test-hashing-32", "dimensions": 32}
    assert any(", static " in r.reason for b in result.evidence_blocks for r in b.hit_reasons if r.layer == "L1")
    cached = open_index(kb, cache_dir=tmp_path / "cache", embedder=HashingEmbedder())
    assert cached.from_cache and cached.l1.embedder_info.name == "test-hashing-32"
    other = open_index(kb, cache_dir=tmp_path / "cache", embedder=None)  # another embedder: another index
    assert not other.from_cache and other.l1.embedder_info is None


def test_an_embedder_that_breaks_its_promise_leaves_l1_without_a_static_part(tmp_path: Path):
    kb = load_knowledge_base(write_kb(tmp_path / "kb"))
    with pytest.warns(EmbedderWarning, match=r"returned shape \(.*, 3\).*expected"):
        index = build_index(kb, embedder=BrokenEmbedder())
    assert index.l1 is not None and index.l1.embedder_info is None
    result = lookup_knowledge("how do I silence an alert", index=index)
    assert result.evidence_blocks and result.retrieval_details["l1"]["embedder"] is None


def test_a_model_that_fails_to_load_warns_once_and_the_index_builds_without_it(tmp_path: Path):
    def refuse():
        raise OSError("weights file is damaged")

    kb = load_knowledge_base(write_kb(tmp_path / "kb"))
    lazy = LazyEmbedder("damaged-model", 256, refuse)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = build_index(kb, embedder=lazy)
        second = build_index(kb, embedder=lazy)
    said = [w for w in caught if issubclass(w.category, EmbedderWarning)]
    assert len(said) == 1
    assert "damaged-model" in str(said[0].message) and "weights file is damaged" in str(said[0].message)
    assert first.l1.embedder_info is None and second.l1.embedder_info is None
    assert lookup_knowledge("silence an alert", index=first).evidence_blocks


def test_without_the_wordllama_package_the_index_builds_without_the_static_part_and_says_so_once(tmp_path: Path):
    """A real interpreter whose package finder cannot find `wordllama`."""
    result = _run(f"""
        import importlib.machinery, json, sys, warnings
        search = importlib.machinery.PathFinder.find_spec  # the finder of installed packages, told to miss one
        def find_spec(cls, name, path=None, target=None):
            return None if name.split(".")[0] == "wordllama" else search(name, path, target)
        importlib.machinery.PathFinder.find_spec = classmethod(find_spec)
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            from retrieval import lookup_knowledge, open_index
            index = open_index({str(ROOT / "data" / "kb")!r}, cache_dir={str(tmp_path / "cache")!r})
            again = open_index({str(ROOT / "data" / "kb")!r}, cache_dir={str(tmp_path / "cache")!r})
            result = lookup_knowledge("stop alerts while we deploy", index=again)
        said = [str(w.message) for w in caught if w.category.__name__ == "EmbedderWarning"]
        reasons = [r.reason for b in result.evidence_blocks for r in b.hit_reasons]
        print(json.dumps({{"said": said, "embedder": result.retrieval_details["l1"]["embedder"],
                          "cached": again.from_cache, "static": any("static" in r for r in reasons),
                          "blocks": len(result.evidence_blocks)}}))
    """)
    assert len(result["said"]) == 1 and "wordllama" in result["said"][0]
    assert result["embedder"] is None and not result["static"] and result["blocks"] > 0 and result["cached"]


def test_static_weight_zero_gives_the_lookup_without_a_static_part(tmp_path: Path):
    kb = load_knowledge_base(write_kb(tmp_path / "kb"))
    with_static, without = build_index(kb, svd_dims=32), build_index(kb, svd_dims=32, embedder=None)
    assert with_static.l1.embedder_info is not None and without.l1.embedder_info is None
    off = LookupConfig(l1_static_weight=0.0)
    for query in ("how do I silence an alert", "invoice refund", "rotate the OAuth token", "retention"):
        a = lookup_knowledge(query, index=with_static, config=off).to_dict()
        b = lookup_knowledge(query, index=without, config=off).to_dict()
        for result in (a, b):
            result.pop("invocation_id")
            result["retrieval_details"].pop("timings_ms")
        assert a == b
