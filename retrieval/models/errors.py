"""`ModelError`: why a model spec could not give an encoder or a reranker, in one line that names the spec
and says what to do (the CLI and the app show it as it is)."""

from __future__ import annotations

FORMS = "onnx:PATH, st:NAME_OR_PATH, callable:module:function or hash:DIM"
ONNX_HINT = "pip install 'lookup-knowledge[onnx]'"
ST_HINT = "pip install 'lookup-knowledge[sentence-transformers]'"
MAX_CAUSE = 300  # characters of a library's own message kept in ours
NO_SPEC = object()


class ModelError(ValueError):
    """A model spec that cannot be loaded or run: a missing path, an unknown form, an unloadable model, a
    tokenizer that does not fit it, or output of the wrong shape or not finite."""

    def __init__(self, message: str, *, spec: object = NO_SPEC) -> None:
        self.spec = None if spec is NO_SPEC else spec
        super().__init__(one_line(message) if spec is NO_SPEC else f"model {spec!r}: {one_line(message)}")


def one_line(text: object) -> str:
    """`text` on one line, whitespace collapsed (library messages often span several)."""
    return " ".join(str(text).split())


def cause(exc: BaseException) -> str:
    """A library exception as a short clause of our message: its type and its first characters."""
    text = one_line(exc)
    if len(text) > MAX_CAUSE:
        text = text[:MAX_CAUSE - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
