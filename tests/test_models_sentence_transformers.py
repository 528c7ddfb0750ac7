"""The st: backend on tiny saved models: its vectors are SentenceTransformer's own normalised ones, its scores
are CrossEncoder.predict's, its fingerprint follows the weight files, and a model id that is not in the local
cache is refused without a download."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

from retrieval.models import ModelError, load_encoder, load_reranker

pytest.importorskip("sentence_transformers", reason="the st: backend needs the [sentence-transformers] extra")

from sentence_transformers import CrossEncoder, SentenceTransformer

TEXTS = ["rotate the api token", "silence alerts during maintenance", "", "alpha beta gamma delta " * 20]


def test_st_vectors_equal_sentence_transformers_normalised_encode(tiny_sentence_transformer_dir):
    encoder = load_encoder(f"st:{tiny_sentence_transformer_dir}")
    own = SentenceTransformer(str(tiny_sentence_transformer_dir), device="cpu", local_files_only=True)
    expected = own.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    vectors = encoder.encode(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (4, 16) and encoder.dimensions == 16
    assert np.allclose(vectors, expected, atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_st_encoding_a_list_equals_encoding_one_by_one(tiny_sentence_transformer_dir):
    encoder = load_encoder(f"st:{tiny_sentence_transformer_dir}")
    texts = [" ".join(["alpha", "beta", "gamma"][: i % 4]) + f" token {i}" for i in range(40)]
    assert np.allclose(encoder.encode(texts), np.concatenate([encoder.encode([t]) for t in texts]), atol=1e-5)


def test_st_cross_encoder_scores_equal_predict(tiny_cross_encoder_dir):
    reranker = load_reranker(f"st:{tiny_cross_encoder_dir}")
    own = CrossEncoder(str(tiny_cross_encoder_dir), device="cpu", local_files_only=True)
    texts = ["rotate token", "invoice refund payment", "alpha"]
    expected = own.predict([("rotate the token", t) for t in texts])
    scores = reranker.score("rotate the token", texts)
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert np.allclose(scores, expected, atol=1e-6)
    assert reranker.info.backend == "sentence-transformers" and reranker.info.dimensions is None


def test_a_bare_sentence_transformers_folder_is_read_as_st(tiny_sentence_transformer_dir):
    info = load_encoder(str(tiny_sentence_transformer_dir)).info
    assert (info.backend, info.name, info.dimensions) == ("sentence-transformers", "model", 16)
    assert info.fingerprint == load_encoder(f"st:{tiny_sentence_transformer_dir}").info.fingerprint


def test_st_fingerprint_changes_when_the_weights_file_changes(tmp_path, tiny_sentence_transformer_dir):
    same = Path(shutil.copytree(tiny_sentence_transformer_dir, tmp_path / "a" / "model"))
    changed = Path(shutil.copytree(tiny_sentence_transformer_dir, tmp_path / "b" / "model"))
    weights = bytearray((changed / "model.safetensors").read_bytes())
    weights[-3] ^= 0x01  # inside the last tensor's data
    (changed / "model.safetensors").write_bytes(bytes(weights))
    before, after = load_encoder(f"st:{same}").info, load_encoder(f"st:{changed}").info
    assert before.weights_sha256 != after.weights_sha256 and before.fingerprint != after.fingerprint
    (same / "README.md").write_text("a model card changes no output")
    assert load_encoder(str(same)).info.fingerprint == before.fingerprint


def refused_connections(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every socket connect from now on fails and is recorded in the returned list."""
    attempts: list[object] = []

    def refuse(self, address):
        attempts.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def test_loading_a_local_folder_opens_no_connection(tmp_path, monkeypatch, tiny_sentence_transformer_dir,
                                                    tiny_cross_encoder_dir):
    attempts = refused_connections(monkeypatch)
    encoder = load_encoder(f"st:{shutil.copytree(tiny_sentence_transformer_dir, tmp_path / 'st')}")
    reranker = load_reranker(f"st:{shutil.copytree(tiny_cross_encoder_dir, tmp_path / 'ce')}")
    assert encoder.encode(["alpha"]).shape == (1, 16) and reranker.score("alpha", ["beta"]).shape == (1,)
    assert attempts == []


def test_a_model_id_not_in_the_local_cache_is_refused_without_a_connection(tmp_path, monkeypatch):
    attempts = refused_connections(monkeypatch)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "st"))
    spec = "st:lookup-knowledge-tests/no-such-model"
    with pytest.raises(ModelError) as raised:
        load_encoder(spec)
    assert repr(spec) in str(raised.value) and "local Hugging Face cache" in str(raised.value)
    assert attempts == []
