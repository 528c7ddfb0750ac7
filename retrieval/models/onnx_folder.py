"""An ONNX export folder read from disk (fastembed's and optimum's layouts): which graph, which tokenizer,
the max length and pooling its configs give, the vocabulary size, and the files its digest covers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.models.errors import ModelError, cause
from retrieval.models.specs import existing_path

DEFAULT_MAX_LENGTH = 256
UNSET_LENGTH = 1_000_000  # transformers writes a huge model_max_length (1e30) when the model sets none
CONFIGS = ("config.json", "sentence_bert_config.json", "tokenizer_config.json", "special_tokens_map.json",
           "modules.json")
POOLING_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean"}


@dataclass(frozen=True)
class OnnxExport:
    """What an export folder says about its model; `files` are those the weights digest covers."""

    root: Path
    model: Path
    tokenizer: Path
    max_length: int  # before the tokenizer's own truncation caps it
    pooling: str  # "mean" | "cls"
    has_dense: bool  # modules.json has a Dense layer after pooling (which a last_hidden_state graph lacks)
    vocab_size: int | None  # config.json's vocab_size
    files: tuple[Path, ...]


def read_export(spec: str, target: str) -> OnnxExport:
    """The export at `target` (a folder, or a .onnx file), or ModelError saying what is missing."""
    path = existing_path(spec, target)
    model = path if path.is_file() else _model_file(spec, path)
    root = path if path.is_dir() else _root_of(model)
    tokenizer = next((p for p in (model.parent / "tokenizer.json", root / "tokenizer.json") if p.is_file()), None)
    if tokenizer is None:
        raise ModelError(f"no tokenizer.json beside {model.name} in {root}; export the tokenizer with the model "
                         "(optimum-cli export onnx does) or copy it from the model's repository", spec=spec)
    config, sbert = _json(spec, root / "config.json"), _json(spec, root / "sentence_bert_config.json")
    modules = _json(spec, root / "modules.json", default=[])
    pooling_dir = next((m.get("path", "") for m in modules if str(m.get("type", "")).endswith("Pooling")),
                       "1_Pooling")
    pooling_file = root / pooling_dir / "config.json"
    files = [model, tokenizer, *_external_data(model), *(p for p in (root / n for n in CONFIGS) if p.is_file())]
    if pooling_file.is_file():
        files.append(pooling_file)
    return OnnxExport(root=root, model=model, tokenizer=tokenizer,
                      max_length=_max_length(spec, root, config, sbert), pooling=_pooling(spec, pooling_file),
                      has_dense=any("Dense" in str(m.get("type", "")) for m in modules),
                      vocab_size=config.get("vocab_size") if isinstance(config.get("vocab_size"), int) else None,
                      files=tuple(dict.fromkeys(files)))


def graph_vocab_size(model: Path, input_name: str = "input_ids") -> int | None:
    """Rows of the embedding table the graph gathers `input_name` from (its first Gather on that input whose
    table is an initializer), or None when the `onnx` package is absent or the graph does not show it."""
    try:
        import onnx
        from google.protobuf.message import DecodeError
    except ImportError:
        return None
    try:
        graph = onnx.load(str(model), load_external_data=False).graph
    except (OSError, DecodeError):  # unreadable here: onnxruntime, which did read it, gives the real error if any
        return None
    tables = {init.name: list(init.dims) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[1] == input_name:
            dims = tables.get(node.input[0])
            if dims:
                return int(dims[0])
    return None


def _model_file(spec: str, folder: Path) -> Path:
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    for pattern in ("*.onnx", "onnx/*.onnx"):
        found = sorted(folder.glob(pattern))
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(p.relative_to(folder).as_posix() for p in found)
            raise ModelError(f"{folder} holds several ONNX graphs ({names}); name one: onnx:{folder}/FILE.onnx",
                             spec=spec)
    raise ModelError(f"no model.onnx in {folder}; export one with optimum-cli export onnx --model MODEL_ID {folder}, "
                     "or give a fastembed cache folder", spec=spec)


def _root_of(model: Path) -> Path:
    """The folder of a model's configs: the graph's own, or its parent for the hub's onnx/model.onnx layout."""
    if model.parent.name == "onnx" and not (model.parent / "tokenizer.json").is_file():
        return model.parent.parent
    return model.parent


def _external_data(model: Path) -> list[Path]:
    """Tensor files beside the graph (model.onnx_data, model.onnx.data): weights too big for the protobuf."""
    return sorted(p for p in model.parent.glob(f"{model.name}?data*") if p.is_file())


def _max_length(spec: str, root: Path, config: dict[str, Any], sbert: dict[str, Any]) -> int:
    """max_seq_length (sentence_bert_config.json, else config.json, else 256), capped by the tokenizer
    config's model_max_length and the model's position embeddings."""
    wanted = sbert.get("max_seq_length") or config.get("max_seq_length") or DEFAULT_MAX_LENGTH
    caps = [_json(spec, root / "tokenizer_config.json").get("model_max_length"),
            config.get("max_position_embeddings")]
    usable = [c for c in caps if isinstance(c, int) and 0 < c < UNSET_LENGTH]
    if not isinstance(wanted, int) or wanted < 1:
        raise ModelError(f"max_seq_length {wanted!r} in {root} is not a positive whole number", spec=spec)
    return min([wanted, *usable])


def _pooling(spec: str, path: Path) -> str:
    settings = _json(spec, path)
    chosen = [key for key, value in settings.items() if key.startswith("pooling_mode_") and value is True]
    if not chosen:
        return "mean"
    if len(chosen) == 1 and chosen[0] in POOLING_MODES:
        return POOLING_MODES[chosen[0]]
    raise ModelError(f"{path} asks for {' + '.join(chosen)}; only mean or CLS pooling of an ONNX graph is "
                     "supported: use the st: backend for this model", spec=spec)


def _json(spec: str, path: Path, default: Any = None) -> Any:
    if not path.is_file():
        return {} if default is None else default
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"cannot read {path} ({cause(exc)}); restore it from the model's export", spec=spec) from exc
    if not isinstance(value, type({} if default is None else default)):
        raise ModelError(f"{path} holds a JSON {type(value).__name__}, not what a model export writes there; "
                         "restore it from the model's export", spec=spec)
    return value
