"""Contextual text encoders (dense vectors) and cross-encoder rerankers behind one small API, loaded from a
spec string with no network at run time.

Spec forms:
- `onnx:PATH` — an ONNX export folder (fastembed's or optimum's layout): `model.onnx` (or `onnx/model.onnx`,
  or the folder's only `*.onnx`; PATH may also be the .onnx file) with `tokenizer.json` beside it, and
  optional `config.json`, `sentence_bert_config.json` (max_seq_length, 256 by default, capped by the
  tokenizer's) and `1_Pooling/config.json` (mean pooling unless it says CLS). Needs the `[onnx]` extra.
- `st:NAME_OR_PATH` — a sentence-transformers folder, or a model id already in the Hugging Face cache:
  SentenceTransformer for an encoder, CrossEncoder for a reranker. Needs the `[sentence-transformers]` extra.
- `callable:package.module:function` — your function: `function(texts) -> (n, d)` for an encoder,
  `function(query, texts) -> (n,)` for a reranker (or pass the function: `encoder_from_callable`,
  `reranker_from_callable`).
- `hash:DIM` (`hash` alone: 64) — a deterministic word-hash encoder with no weights, for tests; as a
  reranker, the cosine of the query's and the text's hash vectors.
- a bare folder — st when it holds `modules.json`, onnx when it holds a `*.onnx` and `tokenizer.json`.

Every failure is a `ModelError` (a ValueError) whose one-line message names the spec and says what to do.
docs/models.md is the reference.
"""

from __future__ import annotations

from retrieval import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "errors": "ModelError",
    "info": "ModelInfo",
    "vectors": "TextEncoder PairScorer checked_vectors checked_scores",
    "loading": "load_encoder load_reranker",
    "callables": "encoder_from_callable reranker_from_callable",
})
