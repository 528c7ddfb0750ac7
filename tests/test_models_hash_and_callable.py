"""retrieval.models' weight-free encoders: `hash:DIM` (SHA-256 word signs, the same in every process) and
`callable:` / Python functions behind the shared checks; ModelInfo, fingerprints and the per-spec cache."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from retrieval.models import (
    ModelInfo,
    PairScorer,
    TextEncoder,
    checked_vectors,
    encoder_from_callable,
    load_encoder,
    load_reranker,
    reranker_from_callable,
)
from tests.fixtures import tiny_models
from tests.fixtures.tiny_models import letters_encoder, shared_words_reranker

ROOT = Path(__file__).resolve().parents[1]


def signs(word: str, dimensions: int) -> np.ndarray:
    """The documented word vector, computed here from hashlib alone."""
    stream = b"".join(hashlib.sha256(word.encode() + i.to_bytes(4, "little")).digest()
                      for i in range(-(-dimensions // 256)))
    bits = "".join(f"{byte:08b}" for byte in stream)[:dimensions]
    return np.array([1.0 if bit == "1" else -1.0 for bit in bits])


def test_hash_vectors_are_float32_unit_rows_of_the_asked_dimension():
    vectors = load_encoder("hash:16").encode(["Rotate the API token", "silence alerts", "", "!!"])
    assert vectors.dtype == np.float32 and vectors.shape == (4, 16)
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-6)
    assert not vectors[2:].any()  # no word: the zero vector stays zero


def test_hash_vector_is_the_normalised_sum_of_its_words_sha256_signs():
    expected = 2 * signs("alpha", 300) + signs("beta", 300)  # case-folded, a repeated word counts twice
    vector = load_encoder("hash:300").encode(["Alpha, ALPHA beta"])[0]
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)


def test_hash_vector_is_the_same_in_another_process():
    text = "How do I rotate an API token?"
    code = (f"from retrieval.models import load_encoder; print(load_encoder('hash:32').encode([{text!r}])"
            "[0].tobytes().hex())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert bytes.fromhex(done.stdout.strip()) == load_encoder("hash:32").encode([text])[0].tobytes()


def test_similar_texts_get_closer_hash_vectors_than_unrelated_ones():
    query, near, far = load_encoder("hash").encode(["rotate the api token", "how to rotate an api token",
                                                     "download last month's invoice"])
    assert query @ near > 0.5 > query @ far


def test_bare_hash_is_64_dimensions_and_fingerprints_as_hash_64():
    bare, spelt = load_encoder("hash"), load_encoder("hash:64")
    assert bare.dimensions == 64 and bare.info.spec == "hash" and spelt.info.spec == "hash:64"
    assert bare.info.fingerprint == spelt.info.fingerprint
    assert bare.info.weights_sha256 == hashlib.sha256(b"hash:64").hexdigest()
    assert load_encoder("hash:65").info.fingerprint != bare.info.fingerprint


def test_hash_reranker_scores_the_cosine_of_the_hash_vectors():
    texts = ["rotate your api token", "the api token", "invoice refund"]
    scores = load_reranker("hash").score("rotate the API token", texts)
    vectors = load_encoder("hash:64").encode(["rotate the API token", *texts])
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert np.allclose(scores, vectors[1:] @ vectors[0], atol=1e-6)
    assert load_reranker("hash").info.dimensions is None


def test_load_encoder_keeps_one_model_per_spec():
    assert load_encoder("hash:12") is load_encoder("hash:12")
    assert load_encoder("hash:12") is not load_encoder("hash:13")
    assert load_reranker("hash:12") is load_reranker("hash:12")


def test_threads_loading_one_spec_load_it_once():
    tiny_models.CALLS.clear()
    spec = "callable:tests.fixtures.tiny_models:slow_counted_encoder"
    with ThreadPoolExecutor(8) as pool:
        loaded = list(pool.map(lambda _: load_encoder(spec), range(8)))
    assert all(model is loaded[0] for model in loaded)
    assert tiny_models.CALLS == [1]  # one dimension probe


def test_model_info_to_dict_has_the_six_fields():
    info = load_encoder("hash:8").info
    assert isinstance(info, ModelInfo)
    assert info.to_dict() == {"spec": "hash:8", "backend": "hash", "name": "hash:8", "dimensions": 8,
                              "weights_sha256": info.weights_sha256, "fingerprint": info.fingerprint}
    assert len(info.fingerprint) == 16 and int(info.fingerprint, 16) >= 0


def test_callable_spec_learns_the_dimensions_and_normalises_the_rows():
    encoder = load_encoder("callable:tests.fixtures.tiny_models:letters_encoder")
    texts = ["rotate the token", "a", "silence alerts now"]
    raw = letters_encoder(texts)
    assert encoder.dimensions == 3 and encoder.info.dimensions == 3
    assert np.allclose(encoder.encode(texts), raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)
    name = "tests.fixtures.tiny_models:letters_encoder"
    assert (encoder.info.backend, encoder.info.name) == ("callable", name)
    assert encoder.info.weights_sha256 == hashlib.sha256(name.encode()).hexdigest()


def test_callable_encoder_is_called_with_batches_of_32():
    sizes: list[int] = []

    def recorded(texts: list[str]) -> np.ndarray:
        sizes.append(len(texts))
        return letters_encoder(texts)

    vectors = encoder_from_callable(recorded, name="recorded").encode([f"text {i}" for i in range(70)])
    assert vectors.shape == (70, 3) and sizes == [1, 32, 32, 6]


def test_encoder_from_callable_names_a_python_function():
    encoder = encoder_from_callable(letters_encoder)
    assert encoder.info.name == "tests.fixtures.tiny_models:letters_encoder"
    assert encoder.info.spec == "callable:tests.fixtures.tiny_models:letters_encoder"
    assert encoder.info.fingerprint == load_encoder("callable:tests.fixtures.tiny_models:letters_encoder"
                                                    ).info.fingerprint
    renamed = encoder_from_callable(letters_encoder, name="letters v2")
    assert renamed.info.name == "letters v2" and renamed.info.fingerprint != encoder.info.fingerprint
    assert isinstance(encoder, TextEncoder)


def test_callable_reranker_scores_as_the_function_does():
    texts = ["rotate the token", "invoice", "token token rotate"]
    reranker = load_reranker("callable:tests.fixtures.tiny_models:shared_words_reranker")
    scores = reranker.score("rotate token", texts)
    assert scores.dtype == np.float32
    assert scores.tolist() == shared_words_reranker("rotate token", texts).tolist() == [2, 0, 2]
    assert isinstance(reranker, PairScorer) and reranker.info.dimensions is None


def test_reranker_from_callable_takes_a_function_and_batches_it():
    calls: list[int] = []

    def longest(query: str, texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.array([[len(t)] for t in texts])  # (n, 1) is read as (n,)

    scores = reranker_from_callable(longest, name="longest").score("q", ["a" * i for i in range(40)])
    assert scores.tolist() == list(range(40)) and calls == [32, 8]


def test_no_text_gives_an_empty_array_without_calling_the_model():
    calls: list[int] = []
    encoder = encoder_from_callable(lambda texts: calls.append(len(texts)) or letters_encoder(texts), name="c")
    assert encoder.encode([]).shape == (0, 3) and calls == [1]
    assert load_reranker("hash").score("q", []).shape == (0,)


def test_checked_vectors_normalises_rows_and_keeps_zero_rows_zero():
    info = load_encoder("hash:2").info
    vectors = checked_vectors(info, [[3.0, 4.0], [0.0, 0.0]], 2, 2)
    assert vectors.dtype == np.float32 and vectors.tolist() == [[0.6000000238418579, 0.800000011920929], [0, 0]]
