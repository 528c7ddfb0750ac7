"""Model specs read once: which backend a spec names and what it points to (a folder, a model id, a
function, a dimension), or a ModelError listing the forms. The forms are in retrieval/models/__init__.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from retrieval.models.errors import FORMS, ModelError

PREFIXES = ("onnx", "st", "callable", "hash")
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9_+.-]+):")  # two characters at least: C:\ stays a path
PATHLIKE = re.compile(r"^(/|\.{1,2}(/|$)|~)")


@dataclass(frozen=True)
class ParsedSpec:
    """A spec split into its backend (`form`) and what follows the prefix (`target`)."""

    spec: str
    form: str  # "onnx" | "st" | "callable" | "hash"
    target: str


def parse_spec(spec: object) -> ParsedSpec:
    """The form and target of `spec`; a bare path is an ST folder when it holds modules.json, an ONNX export
    when it holds a *.onnx and tokenizer.json."""
    if not isinstance(spec, str) or not spec.strip():
        raise ModelError(f"a model spec must be a non-empty string; lookup-knowledge expects {FORMS}", spec=spec)
    if spec == "hash":
        return ParsedSpec(spec, "hash", "")
    scheme = SCHEME.match(spec)
    if scheme and scheme.group(1) in PREFIXES:
        target = spec[scheme.end():]
        if not target and scheme.group(1) != "hash":
            raise ModelError(f"nothing follows '{scheme.group(1)}:'; lookup-knowledge expects {FORMS}", spec=spec)
        return ParsedSpec(spec, scheme.group(1), target)
    path = Path(spec).expanduser()
    if scheme and not path.exists():
        raise ModelError(f"unknown spec form '{scheme.group(1)}:'; lookup-knowledge expects {FORMS}", spec=spec)
    return ParsedSpec(spec, _folder_form(spec, path), str(path))


def existing_path(spec: str, target: str) -> Path:
    """`target` as an existing path, or the ModelError that says what folder to give."""
    path = Path(target).expanduser()
    if not path.exists():
        raise ModelError(f"model folder {path} does not exist: give the folder of an ONNX export (model.onnx + "
                         "tokenizer.json) or a sentence-transformers folder", spec=spec)
    return path


def is_path(target: str) -> bool:
    """Whether an `st:` target is meant as a path (it exists, or it is written like one) rather than a model id."""
    return Path(target).expanduser().exists() or bool(PATHLIKE.match(target)) or target.count("/") > 1


def _folder_form(spec: str, path: Path) -> str:
    path = existing_path(spec, str(path))
    if path.is_file() and path.suffix == ".onnx":
        return "onnx"
    if path.is_dir() and (path / "modules.json").is_file():
        return "st"
    if path.is_dir() and (path / "tokenizer.json").is_file() and (any(path.glob("*.onnx"))
                                                                 or any(path.glob("onnx/*.onnx"))):
        return "onnx"
    raise ModelError(f"{path} is neither a sentence-transformers folder (modules.json) nor an ONNX export "
                     f"(*.onnx + tokenizer.json); a plain transformers folder needs st:PATH; lookup-knowledge expects "
                     f"{FORMS}", spec=spec)
