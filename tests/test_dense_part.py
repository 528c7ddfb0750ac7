"""The dense part (retrieval/l1/dense.py): off by default and then invisible; on, a part of its own on every card,
its vectors from a store shared by rebuilds, updates and weights; a failing model reported, never raised."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.cli import main
from retrieval.l1.dense import VectorStore, dense_text
from retrieval.l1.search import DENSE_SECTIONS_PER_PAGE
from retrieval.lookup import prepare_models
from retrieval.lookup.model_parts import store_root
from retrieval.models import ModelError, load_encoder
from tests.fixtures import model_fixtures
from tests.fixtures.model_fixtures import COUNTING, FAILING_QUERY

QUERY = "how do I silence an alert during maintenance"
DENSE = LookupConfig(l1_dense_model="hash:32", l1_dense_weight=1.0)


def _lookup(index, config, query=QUERY):
    return lookup_knowledge(query, index=index, config=config, top_k=5)


def test_the_dense_part_off_leaves_every_lookup_as_it_was(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    plain = _lookup(index, LookupConfig()).to_dict()
    weightless = _lookup(index, replace(DENSE, l1_dense_weight=0.0)).to_dict()
    for result in (plain, weightless):
        result.pop("invocation_id")
        result["retrieval_details"].pop("timings_ms")
    assert plain == weightless
    assert "dense" not in plain["retrieval_details"]["l1"] and "rerank" not in plain["retrieval_details"]


def test_a_dense_part_shows_its_score_part_on_every_l1_card_and_its_model_in_the_details(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    result = _lookup(index, DENSE)
    dense = result.retrieval_details["l1"]["dense"]
    assert dense["status"] == "ok" and dense["model"]["backend"] == "hash" and dense["model"]["fingerprint"]
    l1_blocks = [b for b in result.evidence_blocks if b.l1_score is not None]
    assert l1_blocks
    for block in l1_blocks:
        parts = {p.part: p for p in block.score_parts}
        assert "L1 dense" in parts and "L1 static" not in parts  # the dense part takes the static part's place
        assert math.isclose(sum(p.value * p.weight for p in block.score_parts), block.score, abs_tol=1e-6)
        assert "dense " in block.hit_reasons[0].reason


def test_the_dense_part_moves_pages_by_the_models_similarity(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    config = replace(DENSE, l1_dense_weight=5.0, l0_filter=False)
    result = _lookup(index, config, "alerts invoices tokens install agent")
    parts = [{p.part: p.value * p.weight for p in b.score_parts}.get("L1 dense") for b in result.evidence_blocks]
    added = [p for p in parts if p is not None]
    assert len(added) >= 2 and max(added) > 0 > min(added)  # centred on the pool: some pages up, some down


def test_the_section_vectors_follow_the_index_rows(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    encoder = load_encoder("hash:32")
    part = index.l1.dense_part(encoder, store_root(index))
    rows = np.arange(len(index.l1.chunks))
    expected = encoder.encode([dense_text(index.l1.chunks[int(r)]) for r in rows])
    assert np.allclose(part.vectors.take(rows).astype(np.float32), expected, atol=2e-3)


def test_the_vectors_are_reused_across_rebuilds_and_weights(model_kb, tmp_path):
    cache = tmp_path / "cache"
    index = open_index(model_kb, cache_dir=cache)
    config = LookupConfig(l1_dense_model=COUNTING)
    before = len(model_fixtures.ENCODED)
    prepare_models(index, config)
    first = len(model_fixtures.ENCODED) - before
    assert first >= len(index.l1.chunks)  # every section (and the load's one-text probe)
    rebuilt = open_index(model_kb, cache_dir=cache, rebuild=True)
    prepare_models(rebuilt, replace(config, l1_dense_weight=2.5))
    _lookup(rebuilt, replace(config, l1_dense_weight=0.3))
    assert len(model_fixtures.ENCODED) - before == first + 1  # nothing encoded again: only the lookup's query


def test_an_update_encodes_only_the_sections_it_changed(model_kb, tmp_path):
    cache = tmp_path / "cache"
    config = LookupConfig(l1_dense_model=COUNTING)
    prepare_models(open_index(model_kb, cache_dir=cache), config)
    page = model_kb / "billing" / "invoices.md"
    page.write_text(page.read_text() + "\n## Refund requests\n\nAsk support for a refund within thirty days.\n")
    updated = open_index(model_kb, cache_dir=cache)  # an update, or a rebuild on a base this small: the same
    before = len(model_fixtures.ENCODED)
    prepare_models(updated, config)
    encoded = model_fixtures.ENCODED[before:]
    assert encoded and all("invoice" in text.lower() or "refund" in text.lower() for text in encoded)
    assert len(encoded) <= sum(1 for c in updated.l1.chunks if c.source == "billing/invoices.md")


def test_a_vector_store_of_another_dimension_is_refused_with_what_to_do(tmp_path):
    VectorStore(tmp_path, 8).vectors(["a text"], lambda texts: np.ones((len(texts), 8)))
    with pytest.raises(ValueError, match="remove the folder to encode again"):
        VectorStore(tmp_path, 16).vectors(["a text"], lambda texts: np.ones((len(texts), 16)))


def test_a_model_that_fails_on_the_query_leaves_the_lookup_answering_and_says_so(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    config = LookupConfig(l1_dense_model=FAILING_QUERY)
    prepare_models(index, config)
    result = _lookup(index, config, "please explode on this alert question")
    dense = result.retrieval_details["l1"]["dense"]
    assert result.retrieval_details["l1"]["status"] == "ok" and result.evidence_blocks
    assert dense["status"] == "failed" and "the model broke" in dense["error"]


def test_a_model_that_cannot_load_in_a_running_lookup_is_reported_not_raised(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    result = _lookup(index, LookupConfig(l1_dense_model=f"onnx:{tmp_path / 'no-such-model'}"))
    dense = result.retrieval_details["l1"]["dense"]
    assert result.evidence_blocks and result.retrieval_details["l1"]["status"] == "ok"
    assert dense["status"] == "failed" and "ModelError" in dense["error"] and "\n" not in dense["error"]
    assert any(p.part == "L1 static" for b in result.evidence_blocks for p in b.score_parts)  # the static part stays


def test_a_missing_dense_model_is_a_one_line_error_with_exit_2(model_kb, tmp_path, capsys):
    missing = tmp_path / "no-such-model"
    code = main(["lookup", QUERY, "--kb", str(model_kb), "--no-trace", "--l1-dense-model", f"onnx:{missing}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(missing) in err and "Traceback" not in err


def test_a_dense_part_without_prepare_is_made_at_the_first_lookup(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    with pytest.raises(ModelError):
        prepare_models(index, LookupConfig(l1_dense_model="onnx:/nowhere/at/all"))
    result = _lookup(index, DENSE)
    assert result.retrieval_details["l1"]["dense"]["status"] == "ok"
    assert json.dumps(result.to_dict())  # the whole result is JSON


def test_the_index_command_makes_the_vectors_with_progress_and_a_second_run_encodes_nothing(model_kb, tmp_path,
                                                                                           capsys, monkeypatch):
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_CACHE", str(tmp_path / "cache"))
    assert main(["index", "--kb", str(model_kb), "--l1-dense-model", COUNTING]) == 0
    first = capsys.readouterr()
    summary = json.loads(first.out)["dense"]
    assert summary["sections"] > 0 and summary["model"]["backend"] == "callable"
    assert "encoding sections (dense part): 100%" in first.err
    before = len(model_fixtures.ENCODED)
    assert main(["index", "--kb", str(model_kb), "--l1-dense-model", COUNTING]) == 0
    assert "encoding sections" not in capsys.readouterr().err and len(model_fixtures.ENCODED) == before


def test_a_page_of_many_sections_is_read_on_its_best_lexical_sections_and_its_pooled_ones(tmp_path):
    sections = "\n\n".join(f"## Part {n}\n\nfiller words about topic {n} " + ("alpha " * (n % 7)) for n in range(60))
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "long.md").write_text(f"# A long page\n\n{sections}\n")
    (tmp_path / "kb" / "short.md").write_text("# A short page\n\n## One\n\nalpha beta\n")
    l1 = open_index(tmp_path / "kb", cache_dir=tmp_path / "cache").l1
    scores = l1.score("alpha topic", tfidf_weight=0.9)
    page = np.array([l1.pages.page_of("long.md")])
    own = l1.pages.rows_of(page)
    assert own.size > DENSE_SECTIONS_PER_PAGE
    pooled = own[:2]
    read = l1._dense_rows(page, pooled, scores.lexical)
    best = own[np.argsort(-scores.lexical[own], kind="stable")[:DENSE_SECTIONS_PER_PAGE]]
    assert set(pooled) <= set(read) and len(read) <= DENSE_SECTIONS_PER_PAGE + pooled.size
    assert set(scores.lexical[read].tolist()) >= set(scores.lexical[best].tolist())


def test_a_query_with_no_indexed_term_says_the_dense_part_had_nothing_to_rescore(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    result = _lookup(index, DENSE, "zzqxv wqqpt")
    assert result.retrieval_details["l1"]["status"] == "empty"
    assert result.retrieval_details["l1"]["dense"]["status"] == "empty"
