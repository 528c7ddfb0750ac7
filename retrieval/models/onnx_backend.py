"""`onnx:PATH`: an exported transformer run by onnxruntime on the CPU, its text cut and turned into ids by
the export's own `tokenizer.json` (HF `tokenizers`). No torch, no network.

The graph is fed the inputs it declares among input_ids, attention_mask and token_type_ids. An encoder reads
the output `sentence_embedding` when the graph has one (already pooled), else its first output
(last_hidden_state, [batch, tokens, dim]) pooled over the attention mask (mean, or CLS when
1_Pooling/config.json says so). A reranker reads `logits` (else the first output) of (query, text) pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from retrieval.models.errors import ONNX_HINT, ModelError, cause
from retrieval.models.info import ModelInfo, files_sha256, model_info
from retrieval.models.onnx_folder import OnnxExport, graph_vocab_size, read_export
from retrieval.models.vectors import BATCH_SIZE, batches, checked_scores, checked_vectors, text_list

SUPPLIED = ("input_ids", "attention_mask", "token_type_ids")
INTEGER_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}
PAD_TOKENS = ("[PAD]", "<pad>", "<|padding|>")
PROBE = ["dimension probe"]


class OnnxModel:
    """An export's session and tokenizer, and the feeds of a batch of encodings (ids checked against the
    model's vocabulary)."""

    def __init__(self, spec: str, export: OnnxExport) -> None:
        self.spec = spec
        self.export = export
        self.session = _session(spec, export)
        self.tokenizer, self.max_length = _tokenizer(spec, export)
        self.inputs = _inputs(spec, self.session)
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.vocab_size = graph_vocab_size(export.model) or export.vocab_size
        self.weights_sha256 = files_sha256(export.root, export.files)

    def run(self, output: str, texts: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """The graph's `output` for a batch (texts, or (query, text) pairs), and the attention mask."""
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        if self.vocab_size is not None and ids.size and int(ids.max()) >= self.vocab_size:
            raise ModelError(f"tokenizer does not fit the model: token id {int(ids.max())} is beyond the model's "
                             f"vocabulary of {self.vocab_size} ({self.export.tokenizer} holds "
                             f"{self.tokenizer.get_vocab_size()} tokens); use the tokenizer exported with this "
                             "model", spec=self.spec)
        arrays = {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in encodings]),
                  "token_type_ids": np.array([e.type_ids for e in encodings])}
        feeds = {name: arrays[name].astype(dtype) for name, dtype in self.inputs.items()}
        try:
            out = self.session.run([output], feeds)[0]
        except Exception as exc:  # onnxruntime's errors are its own classes, one per status
            raise ModelError(f"onnxruntime could not run {self.export.model.name} ({cause(exc)}); check its tokenizer "
                             "and inputs belong to this model", spec=self.spec) from exc
        return np.asarray(out), arrays["attention_mask"]


class OnnxEncoder:
    """An ONNX export as a TextEncoder."""

    def __init__(self, spec: str, export: OnnxExport, batch_size: int = BATCH_SIZE) -> None:
        self.model = OnnxModel(spec, export)
        self.batch_size = batch_size
        pooled = "sentence_embedding" in self.model.outputs
        self.output = "sentence_embedding" if pooled else self.model.outputs[0]
        self.pooling = "model" if pooled else export.pooling
        if export.has_dense and not pooled:
            raise ModelError(f"modules.json puts a Dense layer after pooling, which {export.model.name}'s output "
                             f"{self.output!r} does not include; export with the sentence_embedding output or use "
                             "the st: backend", spec=spec)
        self.dimensions = self._declared_width() or self._pooled(PROBE).shape[1]
        self.info = self._info(spec, self.dimensions)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of `texts`, in their order; encoded shortest first, so a batch pads little."""
        texts = text_list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = [checked_vectors(self.info, self._pooled(batch), len(batch), self.dimensions)
                 for batch in batches([texts[i] for i in order], self.batch_size)]
        if not parts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return vectors

    def _pooled(self, texts: list[str]) -> np.ndarray:
        out, mask = self.model.run(self.output, texts)
        if out.ndim == 2:
            return out
        if out.ndim != 3 or out.shape[:2] != mask.shape:
            raise ModelError(f"output {self.output!r} has shape {out.shape}, expected [batch, dim] or [batch, "
                             f"tokens, dim] for {mask.shape[0]} text(s); export the model's last_hidden_state or "
                             "sentence_embedding", spec=self.model.spec)
        if self.pooling == "cls":
            return out[:, 0]
        weights = mask[:, :, None].astype(np.float32)
        return (out * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)

    def _declared_width(self) -> int | None:
        shape = next(o.shape for o in self.model.session.get_outputs() if o.name == self.output)
        return shape[-1] if shape and isinstance(shape[-1], int) and shape[-1] > 0 else None

    def _info(self, spec: str, dimensions: int | None) -> ModelInfo:
        settings = {"max_length": self.model.max_length, "pooling": self.pooling, "output": self.output,
                    "dimensions": dimensions}
        return model_info(spec, "onnx", self.model.export.root.name, dimensions, self.model.weights_sha256, settings)


class OnnxReranker:
    """An ONNX cross-encoder export as a PairScorer: (query, text) pairs in, one logit per pair out."""

    def __init__(self, spec: str, export: OnnxExport, batch_size: int = BATCH_SIZE) -> None:
        self.model = OnnxModel(spec, export)
        self.batch_size = batch_size
        self.output = "logits" if "logits" in self.model.outputs else self.model.outputs[0]
        self.info = model_info(spec, "onnx", export.root.name, None, self.model.weights_sha256,
                               {"max_length": self.model.max_length, "output": self.output})

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        texts = text_list(texts, query)
        parts = [checked_scores(self.info, self.model.run(self.output, [(query, t) for t in batch])[0], len(batch))
                 for batch in batches(texts, self.batch_size)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def load_onnx_encoder(spec: str, target: str) -> OnnxEncoder:
    """The encoder of the export at `target` (a folder or a .onnx file)."""
    return OnnxEncoder(spec, read_export(spec, target))


def load_onnx_reranker(spec: str, target: str) -> OnnxReranker:
    """The reranker of the export at `target` (a folder or a .onnx file)."""
    return OnnxReranker(spec, read_export(spec, target))


def _session(spec: str, export: OnnxExport) -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise ModelError(f"the ONNX backend needs onnxruntime ({cause(exc)}); {ONNX_HINT}", spec=spec) from exc
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: a graph's warnings are not the caller's to act on
    # no busy-waiting between operators: a spinning thread took a core the lookup's other work needed, and one
    # query's encoding went from 7.5 to 16 ms at p50 (65 ms at p95) beside other processes (docs/models.md)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return onnxruntime.InferenceSession(str(export.model), sess_options=options,
                                            providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's errors are its own classes, one per status
        raise ModelError(f"onnxruntime cannot load {export.model} ({cause(exc)}); re-export the model or check "
                         "the file is complete", spec=spec) from exc


def _tokenizer(spec: str, export: OnnxExport) -> tuple[Any, int]:
    """The export's tokenizer, padding to the batch's longest and cutting at the max length; and that length
    (the configs' max length, capped by the tokenizer's own truncation)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelError(f"the ONNX backend needs tokenizers ({cause(exc)}); {ONNX_HINT}", spec=spec) from exc
    try:
        tokenizer = Tokenizer.from_file(str(export.tokenizer))
    except Exception as exc:  # tokenizers raises a bare Exception for a malformed file
        raise ModelError(f"cannot read {export.tokenizer} ({cause(exc)}); it must be a Hugging Face tokenizers "
                         "file (tokenizer.json)", spec=spec) from exc
    own = (tokenizer.truncation or {}).get("max_length")
    max_length = min(export.max_length, own) if isinstance(own, int) and own > 0 else export.max_length
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or next((t for t in PAD_TOKENS if tokenizer.token_to_id(t) is not None),
                                                 "[PAD]")
    pad_id = padding.get("pad_id", tokenizer.token_to_id(pad_token) or 0)
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)  # to the batch's longest, whatever the file says
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer, max_length


def _inputs(spec: str, session: Any) -> dict[str, Any]:
    """Each graph input's name and integer dtype; ModelError for an input a tokenizer cannot give."""
    inputs = {}
    for declared in session.get_inputs():
        if declared.name not in SUPPLIED:
            raise ModelError(f"the graph needs input {declared.name!r}, which a tokenizer does not give (it gives "
                             f"{', '.join(SUPPLIED)}); export the model without it", spec=spec)
        if declared.type not in INTEGER_TYPES:
            raise ModelError(f"the graph's input {declared.name!r} is {declared.type}, not int64 or int32",
                             spec=spec)
        inputs[declared.name] = INTEGER_TYPES[declared.type]
    if "input_ids" not in inputs:
        raise ModelError("the graph takes no input_ids; it is not a text model export", spec=spec)
    return inputs
