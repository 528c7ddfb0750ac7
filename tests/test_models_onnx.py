"""The onnx: backend on tiny real graphs: an encoder's vector is the normalised mean (or CLS row) of its
tokens' embedding rows, a reranker's score is the graph's arithmetic done in numpy, batches change nothing,
texts are cut at the max length, and the fingerprint follows the weight bytes."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.models import PairScorer, TextEncoder, load_encoder, load_reranker
from tests.fixtures.tiny_models import (
    WORDS,
    tiny_vocabulary,
    tiny_weights,
    write_pooling_config,
    write_tiny_onnx_encoder,
    write_tiny_tokenizer,
)

pytest.importorskip("onnxruntime", reason="the onnx: backend needs the [onnx] extra")
ROOT = Path(__file__).resolve().parents[1]
IDS = tiny_vocabulary(WORDS)
CLS, SEP = IDS["[CLS]"], IDS["[SEP]"]


def ids(text: str) -> list[int]:
    """The tiny tokenizer's ids of a text, worked out by hand: lower case, words and punctuation apart."""
    return [IDS.get(token, IDS["[UNK]"]) for token in re.findall(r"\w+|[^\w\s]+", text.lower())]


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def copied(folder: Path, to: Path) -> Path:
    return Path(shutil.copytree(folder, to))


def test_onnx_vector_is_the_normalised_mean_of_its_tokens_rows_with_cls_and_sep(tiny_encoder_dir):
    table = tiny_weights(tiny_encoder_dir)["embeddings"]
    texts = ["Alpha beta", "rotate the TOKEN, now!", ""]
    vectors = load_encoder(f"onnx:{tiny_encoder_dir}").encode(texts)
    for text, vector in zip(texts, vectors, strict=True):
        assert np.allclose(vector, unit(table[[CLS, *ids(text), SEP]].mean(axis=0)), atol=1e-6), text


def test_onnx_vectors_are_float32_rows_of_norm_one(tiny_encoder_dir):
    encoder = load_encoder(f"onnx:{tiny_encoder_dir}")
    vectors = encoder.encode(["alert silence", "agent offline"])
    assert isinstance(encoder, TextEncoder) and encoder.dimensions == encoder.info.dimensions == 8
    assert vectors.dtype == np.float32 and vectors.shape == (2, 8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_onnx_encoding_a_list_equals_encoding_one_by_one(tiny_encoder_dir):
    rng = np.random.default_rng(1)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 12)))) for _ in range(45)]  # two batches
    encoder = load_encoder(f"onnx:{tiny_encoder_dir}")
    together = encoder.encode(texts)
    alone = np.concatenate([encoder.encode([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-6)


def test_onnx_cls_pooling_when_the_pooling_config_says_so(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "cls")
    write_pooling_config(folder, "cls")
    encoder = load_encoder(f"onnx:{folder}")
    cls_row = unit(tiny_weights(folder)["embeddings"][CLS])
    assert np.allclose(encoder.encode(["alpha", "refund payment"]), [cls_row, cls_row], atol=1e-6)
    assert encoder.info.fingerprint != load_encoder(f"onnx:{tiny_encoder_dir}").info.fingerprint


def test_onnx_sentence_embedding_output_is_read_as_it_is(tmp_path):
    folder = write_tiny_onnx_encoder(tmp_path / "pooled", WORDS, sentence_embedding=True)
    rows = tiny_weights(folder)["embeddings"][[CLS, *ids("gamma delta"), SEP]]
    vector = load_encoder(f"onnx:{folder}").encode(["gamma delta"])[0]
    assert np.allclose(vector, unit(rows.max(axis=0)), atol=1e-6)  # the graph's masked max, not our mean
    assert not np.allclose(vector, unit(rows.mean(axis=0)), atol=1e-3)


def test_onnx_texts_are_cut_at_max_seq_length(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "short")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 5}))
    text = "alpha beta gamma delta epsilon zeta"
    table = tiny_weights(folder)["embeddings"]
    vector = load_encoder(f"onnx:{folder}").encode([text])[0]
    assert np.allclose(vector, unit(table[[CLS, *ids(text)[:3], SEP]].mean(axis=0)), atol=1e-6)


def test_onnx_the_tokenizers_own_truncation_caps_the_max_length(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "capped")
    write_tiny_tokenizer(folder, WORDS, max_length=4)  # below the default 256
    text = "alpha beta gamma delta"
    encoder = load_encoder(f"onnx:{folder}")
    table = tiny_weights(folder)["embeddings"]
    assert np.allclose(encoder.encode([text])[0], unit(table[[CLS, *ids(text)[:2], SEP]].mean(axis=0)), atol=1e-6)
    assert encoder.info.fingerprint != load_encoder(f"onnx:{tiny_encoder_dir}").info.fingerprint


def test_onnx_reranker_score_is_the_graphs_arithmetic_in_numpy(tiny_reranker_dir):
    weights = tiny_weights(tiny_reranker_dir)
    query, texts = "rotate the token", ["rotate token now", "invoice refund", "alpha"]
    scores = load_reranker(f"onnx:{tiny_reranker_dir}").score(query, texts)
    for text, score in zip(texts, scores, strict=True):
        first, second = [CLS, *ids(query), SEP], [*ids(text), SEP]
        types = [0] * len(first) + [1] * len(second)
        hidden = weights["embeddings"][first + second] + weights["type_embeddings"][types]
        assert score == pytest.approx(float(hidden.mean(axis=0) @ weights["weight"][:, 0]), abs=1e-5), text
    assert scores.dtype == np.float32 and scores.shape == (3,)


def test_onnx_reranker_scoring_a_list_equals_scoring_one_by_one(tiny_reranker_dir):
    reranker = load_reranker(f"onnx:{tiny_reranker_dir}")
    texts = [" ".join(WORDS[i % 7:i % 7 + i % 5]) for i in range(40)]
    assert isinstance(reranker, PairScorer) and reranker.info.dimensions is None
    assert np.allclose(reranker.score("alpha beta", texts),
                       np.concatenate([reranker.score("alpha beta", [t]) for t in texts]), atol=1e-5)


def test_onnx_fingerprint_changes_when_one_weight_byte_changes(tmp_path, tiny_encoder_dir):
    same, changed = copied(tiny_encoder_dir, tmp_path / "a" / "tiny"), copied(tiny_encoder_dir, tmp_path / "b" / "tiny")
    data = bytearray((changed / "model.onnx").read_bytes())
    at = bytes(data).index(tiny_weights(changed)["embeddings"].tobytes())  # the table's raw bytes in the file
    data[at + 5] ^= 0x01
    (changed / "model.onnx").write_bytes(bytes(data))
    before, after = load_encoder(f"onnx:{same}").info, load_encoder(f"onnx:{changed}").info
    assert before.name == after.name == "tiny"
    assert before.weights_sha256 != after.weights_sha256 and before.fingerprint != after.fingerprint


def test_onnx_fingerprint_is_stable_across_spellings_and_processes(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "stable")
    here = load_encoder(f"onnx:{folder}").info
    assert load_encoder(str(folder)).info.fingerprint == here.fingerprint  # a bare folder: another cache entry
    code = f"from retrieval.models import load_encoder; print(load_encoder({str(folder)!r}).info.fingerprint)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == here.fingerprint


def test_onnx_weights_digest_covers_the_files_in_sorted_path_order(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "digest")
    digest = hashlib.sha256()
    for name in ("model.onnx", "tokenizer.json"):
        digest.update(name.encode() + b"\0" + hashlib.sha256((folder / name).read_bytes()).digest())
    assert load_encoder(f"onnx:{folder}").info.weights_sha256 == digest.hexdigest()


def test_onnx_folder_in_the_hubs_layout_and_a_named_graph_file_load(tmp_path, tiny_encoder_dir):
    hub = tmp_path / "hub"
    (hub / "onnx").mkdir(parents=True)
    shutil.copy(tiny_encoder_dir / "model.onnx", hub / "onnx" / "model.onnx")
    shutil.copy(tiny_encoder_dir / "tokenizer.json", hub / "tokenizer.json")
    expected = load_encoder(f"onnx:{tiny_encoder_dir}").encode(["alpha beta"])
    for spec in (f"onnx:{hub}", f"onnx:{hub / 'onnx' / 'model.onnx'}", str(hub), f"onnx:{tiny_encoder_dir}/model.onnx"):
        encoder = load_encoder(spec)
        assert encoder.info.backend == "onnx" and np.allclose(encoder.encode(["alpha beta"]), expected), spec
    assert load_encoder(f"onnx:{hub}").info.name == "hub"


def test_a_bare_folder_with_a_graph_and_a_tokenizer_is_read_as_onnx(tiny_encoder_dir):
    info = load_encoder(str(tiny_encoder_dir)).info
    assert (info.backend, info.spec, info.name) == ("onnx", str(tiny_encoder_dir), tiny_encoder_dir.name)
