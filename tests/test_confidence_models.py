"""The relevance grade per model configuration: today's model and signals exactly when no model part is on; a
dense part's or reranker's signals, graded by the model fitted for that configuration (a file keyed by the
models' fingerprints) or by today's with the fallback said; the fit's file read back; and leave-one-source-out
validation that never fits on what it reports. Weight-free models only (`hash:32`); no shared data."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from eval import fit_confidence
from eval.answerability import LabelledQuestion
from eval.loso_confidence import folds, validate
from retrieval import LookupConfig, lookup_knowledge
from retrieval.lookup import PART_SIGNALS, SIGNALS, ConfidenceModel, ModelConfiguration, read_confidence_model
from retrieval.lookup import confidence_model as shipped
from retrieval.lookup.confidence import DEFAULT, estimate
from retrieval.lookup.grading import MODELS_ENV, model_path
from retrieval.models import load_encoder, load_reranker

QUERIES = ("install skylark server on linux", "how do I silence alerts during maintenance",
           "download my invoices", "when is the deadline for filing my income taxes")
DENSE = LookupConfig(l1_dense_model="hash:32")
RERANK = LookupConfig(rerank_model="hash:32")


def _shipped_confidence(signals) -> float:
    """The shipped numbers applied by hand, independently of retrieval.lookup.confidence."""
    logit = shipped.INTERCEPT + sum(0.0 if (v := getattr(signals, n)) is None else w * (v - m) / s for n, m, s, w
                                    in zip(shipped.SIGNALS, shipped.MEAN, shipped.SCALE, shipped.WEIGHTS, strict=True))
    return 1 / (1 + math.exp(-logit))


def _dense_key() -> str:
    return f"dense-{load_encoder('hash:32').info.fingerprint}"


def _dense_only_model(key: str) -> ConfidenceModel:
    """A model that weighs the dense score alone: confidence = sigmoid(dense); high from 0.6, medium from 0.55."""
    names = (*SIGNALS, "dense")
    zeros = (0.0,) * len(SIGNALS)
    return ConfidenceModel(names, (*zeros, 0.0), (1.0,) * len(names), (*zeros, 1.0), 0.0, 0.6, 0.55, key)


@pytest.mark.parametrize("query", QUERIES)
def test_without_a_model_part_a_lookup_is_graded_by_the_shipped_model_on_todays_signals(sample_index, query):
    relevance = lookup_knowledge(query, index=sample_index).relevance
    payload = relevance.to_dict()
    assert tuple(payload["signals"]) == SIGNALS and "confidence_model" not in payload
    assert relevance.signals.parts == () and relevance.signals.vector() == relevance.signals.vector(SIGNALS)
    assert relevance.confidence == pytest.approx(_shipped_confidence(relevance.signals), abs=1e-12)
    assert DEFAULT.signals == tuple(shipped.SIGNALS) and (DEFAULT.high, DEFAULT.medium) == (shipped.HIGH,
                                                                                            shipped.MEDIUM)


def test_a_configuration_without_a_fitted_model_falls_back_to_todays_and_says_so(sample_index, monkeypatch):
    monkeypatch.delenv(MODELS_ENV, raising=False)
    relevance = lookup_knowledge(QUERIES[1], index=sample_index, config=DENSE).relevance
    payload = relevance.to_dict()
    assert payload["confidence_model"] == {"configuration": _dense_key(), "model": "default"}
    assert relevance.signals.parts == ("dense",) and list(payload["signals"]) == [*SIGNALS, "dense"]
    assert payload["signals"]["dense"] is not None
    assert relevance.confidence == pytest.approx(_shipped_confidence(relevance.signals), abs=1e-12)  # dense ignored


def test_a_configuration_with_a_fitted_model_is_graded_by_it_and_records_which(sample_index, tmp_path, monkeypatch):
    key = _dense_key()
    model_path(key, tmp_path).write_text(json.dumps(_dense_only_model(key).to_dict()))
    monkeypatch.setenv(MODELS_ENV, str(tmp_path))
    relevance = lookup_knowledge(QUERIES[1], index=sample_index, config=DENSE).relevance
    assert relevance.to_dict()["confidence_model"] == {"configuration": key, "model": key}
    dense = relevance.signals.dense
    assert relevance.confidence == pytest.approx(1 / (1 + math.exp(-dense)))
    assert relevance.level == ("high" if relevance.confidence >= 0.6 else "medium" if relevance.confidence >= 0.55
                               else "low")


def test_a_fitted_file_that_cannot_be_read_falls_back_and_names_the_file(sample_index, tmp_path, monkeypatch):
    model_path(_dense_key(), tmp_path).write_text('{"signals": ["l1_score"]}')
    monkeypatch.setenv(MODELS_ENV, str(tmp_path))
    graded = lookup_knowledge(QUERIES[1], index=sample_index, config=DENSE).relevance.to_dict()["confidence_model"]
    assert graded["model"] == "default" and str(tmp_path) in graded["error"]


def test_a_reranker_adds_its_standardised_score_and_both_parts_make_one_key(sample_index, monkeypatch):
    monkeypatch.delenv(MODELS_ENV, raising=False)
    reranked = lookup_knowledge(QUERIES[0], index=sample_index, config=RERANK).relevance
    assert reranked.signals.parts == ("rerank",) and reranked.signals.rerank is not None
    assert abs(reranked.signals.rerank) < 10  # standardised over the reranked pages: not the raw score
    both = LookupConfig(l1_dense_model="hash:32", rerank_model="hash:32")
    graded = lookup_knowledge(QUERIES[0], index=sample_index, config=both).relevance.to_dict()["confidence_model"]
    assert graded["configuration"] == f"{_dense_key()}+rerank-{load_reranker('hash:32').info.fingerprint}"
    configuration = ModelConfiguration(dense="a", rerank="b")
    assert configuration.signals == SIGNALS + PART_SIGNALS["dense"] + PART_SIGNALS["rerank"]


def _looked(rows: int = 40, seed: int = 0) -> list[fit_confidence.Looked]:
    """Synthetic lookups of every kind of source: the first signal separates answerable from unanswerable."""
    rng = random.Random(seed)
    sources = {"sample": ("sample", True), "hugo-dev": ("hugo", True), "scifact-train": ("scifact", True),
               "sample-none": ("sample", False), "off-topic→hugo": ("hugo", False),
               "shares-one-word→sample": ("sample", False), "hugo-dev→sample": ("sample", False),
               "scifact→hugo": ("hugo", False), "sample→hugo": ("hugo", False)}
    out = []
    for source, (kb, answerable) in sources.items():
        origin = source.partition("→")[0].replace("scifact-train", "scifact")
        for i in range(rows):
            first = answerable and rng.random() < 0.7
            signals = tuple(rng.gauss(1.0 if first else -1.0, 1.0) for _ in range(len(SIGNALS) + 1))
            question = LabelledQuestion(f"{origin}{i}", f"question {i} of {origin}", kb, source,
                                        ("a.md",) if answerable else (), rng.random() < 0.3)
            out.append(fit_confidence.Looked(question, signals, first, first or rng.random() < 0.5, True))
    return out


def test_leave_one_source_out_never_fits_on_what_a_fold_reports():
    looked = _looked()
    calls: list[list] = []

    def recording_fit(rows):
        calls.append(rows)
        return {"HIGH": 0.5, "MEDIUM": 0.2}

    report = validate(looked, recording_fit, lambda numbers, x: 1 / (1 + np.exp(-x[:, 0])))
    plan = folds({row.question.source: row.question.answerable for row in looked})
    assert [f.name for f in plan] == ["sample", "hugo-dev", "scifact-train", "off-topic", "cross-corpus",
                                      "near-domain"]
    assert len(calls) == len(plan)
    for fold, fitted in zip(plan, calls, strict=True):
        left_texts = {row.question.text for row in looked if row.question.source in fold.left_out}
        assert fitted and not {row.question.source for row in fitted} & fold.unseen
        assert not any(row.question.held_out for row in fitted)
        if fold.name in ("sample", "hugo-dev", "scifact-train"):  # the same questions asked elsewhere: unseen too
            assert not {row.question.text for row in fitted} & left_texts
    reported = [s.source for s in report.sources]
    assert sorted(reported) == sorted({row.question.source for row in looked})  # each source once
    assert "hugo-dev→sample" in next(f for f in plan if f.name == "hugo-dev").unseen
    hugo = next(s for s in report.sources if s.source == "hugo-dev")
    assert hugo.fold == "hugo-dev" and hugo.auroc is not None and hugo.reach is not None
    assert "| hugo-dev | hugo-dev |" in report.render() and json.dumps(report.to_dict())


def test_the_fit_writes_a_file_that_loads_back_to_the_same_numbers(tmp_path):
    looked = _looked(rows=60, seed=1)
    configuration = ModelConfiguration(dense="0123456789abcdef")
    numbers = fit_confidence.fit(looked)
    model = fit_confidence.fitted_model(numbers, configuration)
    path = model_path(configuration.key, tmp_path)
    path.write_text(fit_confidence.model_file(model, looked, DENSE))
    loaded = read_confidence_model(path)
    assert loaded == model and loaded.key == "dense-0123456789abcdef" and loaded.signals == (*SIGNALS, "dense")
    for name, fitted in (("mean", "MEAN"), ("scale", "SCALE"), ("weights", "WEIGHTS")):
        assert getattr(loaded, name) == pytest.approx(tuple(numbers[fitted]), rel=1e-5)
    assert (loaded.high, loaded.medium) == pytest.approx((numbers["HIGH"], numbers["MEDIUM"]), abs=1e-4)
    assert json.loads(path.read_text())["settings"]["l1_dense_model"] == "hash:32"
    row = looked[0]
    from retrieval.lookup import Signals

    signals = Signals(*row.signals[:len(SIGNALS)], dense=row.signals[-1], parts=("dense",))
    assert estimate(signals, loaded).value == pytest.approx(
        float(fit_confidence.confidence_of(numbers, np.array([row.signals]))[0]), rel=1e-4)


def test_fitting_with_settings_but_no_model_part_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "hugo_docs").mkdir()
    (tmp_path / "scifact").mkdir()
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_SHARED_DATA", str(tmp_path))
    assert fit_confidence.main(["--set", "top_k=3", "--dry-run"]) == 2
    assert "l1_dense_model or rerank_model" in capsys.readouterr().err
