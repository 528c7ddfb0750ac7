"""The reranker stage (retrieval/lookup/rerank.py): it re-scores the best pages as a part of its own, and when it
fails or runs past its budget the lookup answers as without it and `retrieval_details.rerank` says why."""

from __future__ import annotations

import math
import time

from retrieval import LookupConfig, lookup_knowledge, open_index
from retrieval.cli import main
from tests.fixtures.model_fixtures import FAILING_RERANKER, PREFERS_LAST, SLOW_RERANKER, SLOW_SECONDS

QUERY = "alerts invoices tokens install agent"


def _sources(result):
    return [b.source for b in result.evidence_blocks]


def test_a_reranker_reorders_the_best_pages_and_shows_its_part_on_their_cards(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    plain = lookup_knowledge(QUERY, index=index, config=LookupConfig(l0_filter=False), top_k=5)
    config = LookupConfig(rerank_model=PREFERS_LAST, rerank_top=3, rerank_weight=10.0, l0_filter=False)
    reranked = lookup_knowledge(QUERY, index=index, config=config, top_k=5)
    report = reranked.retrieval_details["rerank"]
    assert report["status"] == "ok" and report["pages"] == 3 and report["model"]["backend"] == "callable"
    assert _sources(reranked) != _sources(plain)
    carded = [b for b in reranked.evidence_blocks if any(p.part == "L1 rerank" for p in b.score_parts)]
    assert len(carded) == 3 and all("rerank " in b.hit_reasons[0].reason for b in carded)
    for block in reranked.evidence_blocks:
        assert math.isclose(sum(p.value * p.weight for p in block.score_parts), block.score, abs_tol=1e-6)


def test_a_reranker_past_its_budget_leaves_the_order_and_says_timeout(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    plain = lookup_knowledge(QUERY, index=index, config=LookupConfig(), top_k=5)
    started = time.perf_counter()
    late = lookup_knowledge(QUERY, index=index, config=LookupConfig(rerank_model=SLOW_RERANKER, rerank_budget_ms=50),
                            top_k=5)
    assert time.perf_counter() - started < SLOW_SECONDS  # the lookup did not wait for the model
    assert late.retrieval_details["rerank"]["status"] == "timeout"
    assert "rerank_budget_ms" in late.retrieval_details["rerank"]["error"]
    assert _sources(late) == _sources(plain)


def test_a_failing_reranker_leaves_the_order_and_says_failed(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    plain = lookup_knowledge(QUERY, index=index, config=LookupConfig(), top_k=5)
    failed = lookup_knowledge(QUERY, index=index, config=LookupConfig(rerank_model=FAILING_RERANKER), top_k=5)
    report = failed.retrieval_details["rerank"]
    assert report["status"] == "failed" and "the reranker broke" in report["error"]
    assert _sources(failed) == _sources(plain)


def test_a_reranker_that_cannot_load_in_a_running_lookup_is_reported_not_raised(model_kb, tmp_path):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    result = lookup_knowledge(QUERY, index=index, config=LookupConfig(rerank_model=f"onnx:{tmp_path / 'none'}"))
    assert result.evidence_blocks and result.retrieval_details["rerank"]["status"] == "failed"
    assert "ModelError" in result.retrieval_details["rerank"]["error"]


def test_a_missing_reranker_model_is_a_one_line_error_with_exit_2(model_kb, tmp_path, capsys):
    missing = tmp_path / "no-such-reranker"
    code = main(["lookup", QUERY, "--kb", str(model_kb), "--no-trace", "--rerank-model", f"onnx:{missing}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(missing) in err and "Traceback" not in err
