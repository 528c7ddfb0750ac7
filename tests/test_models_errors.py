"""Every way a model spec fails is a ModelError whose message is one line, names the spec and says what to
do: a bad spec, a missing folder or graph, a missing extra, a corrupt file, a tokenizer that does not fit
the graph, and a function or model giving the wrong shape or NaN."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from retrieval.models import ModelError, encoder_from_callable, load_encoder, load_reranker, reranker_from_callable
from tests.fixtures.tiny_models import WORDS, write_pooling_config, write_tiny_onnx_encoder, write_tiny_tokenizer

FORMS = "onnx:PATH, st:NAME_OR_PATH, callable:module:function or hash:DIM"


def refused(load: Callable[[], object], spec: object, *words: str) -> ModelError:
    """The ModelError `load()` raises, checked to be one line naming `spec` and holding `words`."""
    with pytest.raises(ModelError) as raised:
        load()
    message = str(raised.value)
    assert "\n" not in message and repr(spec) in message, message
    assert all(word in message for word in words), message
    return raised.value


def copied(folder: Path, to: Path) -> Path:
    return Path(shutil.copytree(folder, to))


@pytest.mark.parametrize("spec", [None, "", "   ", 42])
def test_a_spec_that_is_not_a_nonempty_string_lists_the_forms(spec):
    refused(lambda: load_encoder(spec), spec, FORMS)
    refused(lambda: load_reranker(spec), spec, FORMS)


def test_an_unknown_spec_form_lists_the_forms():
    refused(lambda: load_encoder("openai:text-embedding-3-small"), "openai:text-embedding-3-small",
            "unknown spec form 'openai:'", FORMS)


@pytest.mark.parametrize("form", ["onnx:", "st:", ""])
def test_a_missing_folder_says_which_folder_to_give(tmp_path, form):
    spec = f"{form}{tmp_path / 'nowhere'}"
    refused(lambda: load_encoder(spec), spec, f"model folder {tmp_path / 'nowhere'} does not exist: give the folder "
            "of an ONNX export (model.onnx + tokenizer.json) or a sentence-transformers folder")


def test_a_folder_that_is_neither_export_lists_the_forms(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    refused(lambda: load_encoder(str(tmp_path)), str(tmp_path), "neither a sentence-transformers folder", FORMS)


def test_a_folder_without_model_onnx_says_how_to_export_one(tmp_path):
    write_tiny_tokenizer(tmp_path, WORDS)
    spec = f"onnx:{tmp_path}"
    refused(lambda: load_encoder(spec), spec, "no model.onnx", "optimum-cli export onnx")


def test_a_folder_with_two_graphs_asks_which(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "two")
    (folder / "model.onnx").rename(folder / "model_a.onnx")
    shutil.copy(folder / "model_a.onnx", folder / "model_b.onnx")
    spec = f"onnx:{folder}"
    refused(lambda: load_encoder(spec), spec, "model_a.onnx, model_b.onnx", "FILE.onnx")
    assert load_encoder(f"onnx:{folder / 'model_b.onnx'}").dimensions == 8  # naming one works


def test_a_missing_tokenizer_is_named(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "no-tokenizer")
    (folder / "tokenizer.json").unlink()
    spec = f"onnx:{folder}"
    refused(lambda: load_encoder(spec), spec, "no tokenizer.json")


def test_missing_onnxruntime_says_which_extra_to_install(tmp_path, tiny_encoder_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails as if absent
    spec = f"onnx:{copied(tiny_encoder_dir, tmp_path / 'm')}"
    refused(lambda: load_encoder(spec), spec, "pip install 'lookup-knowledge[onnx]'")


def test_missing_sentence_transformers_says_which_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    (tmp_path / "modules.json").write_text("[]")
    for load in (load_encoder, load_reranker):
        refused(lambda load=load: load(f"st:{tmp_path}"), f"st:{tmp_path}",
                "pip install 'lookup-knowledge[sentence-transformers]'")


def test_a_corrupt_graph_is_refused_with_its_cause(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "corrupt")
    (folder / "model.onnx").write_bytes(b"not a protobuf at all" * 10)
    error = refused(lambda: load_encoder(f"onnx:{folder}"), f"onnx:{folder}", "onnxruntime cannot load")
    assert error.__cause__ is not None


def test_a_corrupt_tokenizer_is_refused(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "bad-tokenizer")
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Nonsense"}}')
    refused(lambda: load_encoder(f"onnx:{folder}"), f"onnx:{folder}", "tokenizer.json")


def test_a_tokenizer_with_more_words_than_the_graph_does_not_fit(tmp_path):
    folder = write_tiny_onnx_encoder(tmp_path / "small-graph", WORDS[:5])
    write_tiny_tokenizer(folder, [*WORDS[:5], "invoice"])  # id 9: the graph has rows 0 to 8
    encoder = load_encoder(f"onnx:{folder}")
    assert encoder.encode(["alpha beta"]).shape == (1, 8)  # the words the graph knows still encode
    refused(lambda: encoder.encode(["alpha invoice"]), f"onnx:{folder}",
            "tokenizer does not fit the model: token id 9 is beyond the model's vocabulary of 9")


def test_a_graph_input_no_tokenizer_gives_is_named(tmp_path):
    folder = write_tiny_onnx_encoder(tmp_path / "positions", WORDS, extra_inputs=["position_ids"])
    refused(lambda: load_encoder(f"onnx:{folder}"), f"onnx:{folder}", "'position_ids'")


def test_a_pooling_other_than_mean_or_cls_is_refused(tmp_path, tiny_encoder_dir):
    folder = copied(tiny_encoder_dir, tmp_path / "max")
    write_pooling_config(folder, "max")
    refused(lambda: load_encoder(f"onnx:{folder}"), f"onnx:{folder}", "pooling_mode_max_tokens", "st: backend")


@pytest.mark.parametrize("spec", ["hash:0", "hash:abc", "hash:-3", "hash:9999999"])
def test_a_bad_hash_dimension_is_refused(spec):
    refused(lambda: load_encoder(spec), spec, "hash:DIM needs a whole number")


@pytest.mark.parametrize("target, words", [
    ("no_such_module_here:encode", "cannot import"),
    ("tests.fixtures.tiny_models:no_such_function", "cannot import"),
    ("tests.fixtures.tiny_models", "package.module:function"),
    ("tests.fixtures.tiny_models:NOT_CALLABLE", "is a int, not a function"),
])
def test_a_callable_that_cannot_be_imported_is_refused(target, words):
    refused(lambda: load_encoder(f"callable:{target}"), f"callable:{target}", words)


def test_a_callable_returning_nan_is_refused():
    spec = "callable:tests.fixtures.tiny_models:not_a_number_encoder"
    refused(lambda: load_encoder(spec), spec, "non-finite")


def test_a_callable_returning_one_number_per_text_is_refused():
    spec = "callable:tests.fixtures.tiny_models:flat_encoder"
    refused(lambda: load_encoder(spec), spec, "returned shape (1,)", "expected (1, d)")


def test_a_callable_whose_dimension_changes_is_refused():
    encoder = encoder_from_callable(lambda texts: np.ones((len(texts), 3 if len(texts) == 1 else 4)), name="drift")
    refused(lambda: encoder.encode(["a", "b"]), "callable:drift", "returned shape (2, 4)", "expected (2, 3)")


def test_a_callable_that_raises_is_one_model_error():
    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("the service is down\nline two")

    error = refused(lambda: encoder_from_callable(broken, name="broken"), "callable:broken",
                    "the function raised RuntimeError: the service is down line two")
    assert isinstance(error.__cause__, RuntimeError)


def test_a_reranker_giving_three_scores_per_text_is_refused():
    reranker = reranker_from_callable(lambda query, texts: np.zeros((len(texts), 3)), name="wide")
    refused(lambda: reranker.score("q", ["a", "b"]), "callable:wide", "shape (2, 3)")


def test_a_reranker_giving_nan_is_refused():
    reranker = reranker_from_callable(lambda query, texts: [float("nan")] * len(texts), name="nan")
    refused(lambda: reranker.score("q", ["a"]), "callable:nan", "non-finite")


def test_a_failed_load_is_not_kept(tmp_path, tiny_encoder_dir):
    folder = tmp_path / "later"
    folder.mkdir()
    spec = f"onnx:{folder}"
    refused(lambda: load_encoder(spec), spec, "no model.onnx")
    shutil.copytree(tiny_encoder_dir, folder, dirs_exist_ok=True)
    assert load_encoder(spec).dimensions == 8


def test_a_model_error_is_a_value_error():
    assert issubclass(ModelError, ValueError)
    assert str(ModelError("two\nlines", spec="hash:x")) == "model 'hash:x': two lines"


def test_one_string_instead_of_a_list_of_texts_is_a_type_error(tiny_encoder_dir, tiny_reranker_dir):
    for encoder in (load_encoder("hash:8"), load_encoder(f"onnx:{tiny_encoder_dir}"),
                    encoder_from_callable(lambda texts: np.ones((len(texts), 2)), name="ones")):
        with pytest.raises(TypeError, match="not one string: wrap it in a list"):
            encoder.encode("rotate the token")
        with pytest.raises(TypeError, match="must be a str, not int"):
            encoder.encode(["fine", 7])
    with pytest.raises(TypeError, match="must be a str, not NoneType"):
        load_reranker(f"onnx:{tiny_reranker_dir}").score(None, ["alpha"])
