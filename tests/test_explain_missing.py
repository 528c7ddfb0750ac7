"""Issue 33, items 1 and 2: `explain_missing` says, for each expected page, the first stage of the lookup that
lost it, with the numbers behind it; `python -m retrieval explain` prints it. One constructed knowledge base
where every stage happens, one test per stage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval import MISSING_STAGES as STAGES
from retrieval import LookupConfig, TraceStore, explain_missing, explain_result, lookup_knowledge, open_index
from retrieval.cli import main as cli_main
from retrieval.lookup.explain import NOT_REPRODUCED
from tests.fixtures.explain_fixtures import QUERY

ROOT = Path(__file__).resolve().parents[1]


def _one(index, source, **kwargs):
    report = explain_missing(QUERY, [source], index=index, **kwargs)
    assert report.reproduced and len(report.explanations) == 1
    return report, report.explanations[0]


def test_returned_agrees_with_the_lookups_own_rank(explain_index):
    result = lookup_knowledge(QUERY, index=explain_index, config=LookupConfig(svd_dims=8))
    for rank, block in enumerate(result.evidence_blocks, start=1):
        report, found = _one(explain_index, block.source, config=LookupConfig(svd_dims=8))
        assert report.returned == tuple(b.source for b in result.evidence_blocks)
        assert (found.stage, found.rank, found.numbers["rank"]) == ("returned", rank, rank)
        assert found.numbers["score"] == pytest.approx(block.score, abs=1e-6)


def test_not_in_kb_says_which_prefix_excluded_it(explain_index):
    _, found = _one(explain_index, "drafts/old.md")
    assert found.stage == "not_in_kb" and found.numbers == {"excluded_by": "drafts"} and "--exclude" in found.reason


def test_not_in_kb_says_why_a_page_was_skipped_at_load(explain_index):
    _, found = _one(explain_index, "billing/broken.md")
    assert found.stage == "not_in_kb" and found.numbers["skipped"]["path"].endswith("billing/broken.md")
    assert "skipped when the knowledge base was loaded" in found.reason


def test_not_in_kb_offers_close_names_for_a_typo(explain_index):
    _, found = _one(explain_index, "billing/refund.md")
    assert found.stage == "not_in_kb" and found.numbers["close_matches"][0] == "billing/refunds.md"


def test_filtered_out_names_the_filter_and_the_pages_categories(explain_index):
    _, found = _one(explain_index, "billing/refunds.md", category="API")
    assert found.stage == "filtered_out"
    assert found.numbers["categories"] == ["billing"] and found.numbers["filter"] == "api"
    assert found.numbers["decision"] == "caller" and "caller's category 'api'" in found.reason
    assert found.parts and found.last_parts  # what it would have scored without the filter, beside the last block


def test_filtered_out_by_the_l0_filter_gives_the_vote_that_chose_it(explain_index):
    _, found = _one(explain_index, "api/webhooks.md", config=LookupConfig(svd_dims=8))
    assert found.stage == "filtered_out" and found.numbers["decision"] == "applied"
    assert found.numbers["filter"] == "billing" and found.numbers["categories"] == ["api"]
    chosen = next(v for v in found.numbers["vote"] if v["domain"] == "billing")
    assert chosen["accepted"] and 0 < chosen["share"] <= 1 and chosen["best_score"] > 0
    assert found.numbers["guard"]["widened"] is False and "the guard kept the filter" in found.reason


def test_below_min_score_gives_the_best_sections_score_against_the_minimum(explain_index):
    config = LookupConfig(svd_dims=8, l1_min_score=0.99, l0_filter=False)
    _, found = _one(explain_index, "api/webhooks.md", config=config)
    assert found.stage == "below_min_score" and found.numbers["l1_min_score"] == 0.99
    assert 0 < found.numbers["best_score"] < 0.99 and found.numbers["l1_rank"] is None
    assert f"{found.numbers['best_score']:.3f}" in found.reason
    assert found.parts and found.last_parts  # what it would have scored, beside the last returned block


def test_below_min_score_says_when_nothing_of_the_page_matched(explain_index):
    _, found = _one(explain_index, "misc/garden.md", config=LookupConfig(svd_dims=8, l0_filter=False))
    assert found.stage == "below_min_score" and found.numbers["best_score"] == 0.0
    assert "no section of it shares a term" in found.reason and not found.l0_matched


def test_not_in_pool_gives_its_l1_rank_against_the_pools_last_page(explain_index):
    config = LookupConfig(svd_dims=8, l1_pool=1, top_k=1, l0_weight=0.0, l0_filter=False)
    pooled = lookup_knowledge(QUERY, index=explain_index, config=config, top_k=1)
    first = pooled.evidence_blocks[0].source
    others = [s for s in ("billing/invoices.md", "api/webhooks.md", "billing/refunds.md") if s != first]
    report = explain_missing(QUERY, others, index=explain_index, config=config, top_k=1)
    pooled_out = [e for e in report.explanations if e.stage == "not_in_pool" and not e.l0_matched]
    assert pooled_out, [e.to_dict() for e in report.explanations]
    found = pooled_out[0]
    assert found.numbers["pool_pages"] == 1 and found.numbers["l1_rank"] >= 2
    assert found.numbers["pooling_score"] <= found.numbers["pool_last_score"] + 1e-6


def test_below_top_k_gives_its_rank_parts_and_the_gap_to_the_last_returned_block(explain_index):
    config = LookupConfig(svd_dims=8)
    result = lookup_knowledge(QUERY, index=explain_index, config=config, top_k=1)
    second = lookup_knowledge(QUERY, index=explain_index, config=config, top_k=2).evidence_blocks[1]
    _, found = _one(explain_index, second.source, config=config, top_k=1)
    assert found.stage == "below_top_k" and found.rank == 2
    assert found.numbers["score"] == pytest.approx(second.score, abs=1e-6)
    last = result.evidence_blocks[0]
    assert found.numbers["last_returned"]["source"] == last.source
    assert found.numbers["gap"] == pytest.approx(last.score - second.score, abs=1e-6) and found.numbers["gap"] >= 0
    assert sum(p.contribution for p in found.parts) == pytest.approx(second.score, abs=1e-6)
    assert found.last_parts == last.score_parts and "short of it in total" in found.reason


def test_a_page_retrieved_past_the_cutoff_is_below_top_k_at_its_rank(explain_index):
    config = LookupConfig(svd_dims=8, l0_filter=False)
    result = lookup_knowledge(QUERY, index=explain_index, config=config, top_k=5)
    third = result.evidence_blocks[2]
    report = explain_missing(QUERY, [third.source, result.evidence_blocks[0].source], index=explain_index,
                             config=config, top_k=5, cutoff=2)
    past, first = report.explanations
    assert (past.stage, past.rank, report.cutoff) == ("below_top_k", 3, 2)
    assert past.numbers["last_returned"]["source"] == result.evidence_blocks[1].source
    assert first.stage == "returned" and first.rank == 1


def test_explain_result_reuses_a_lookup_and_agrees_with_explain_missing(explain_index):
    config = LookupConfig(svd_dims=8)
    result = lookup_knowledge(QUERY, index=explain_index, config=config, top_k=3)
    sources = ["api/webhooks.md", "misc/garden.md", result.evidence_blocks[0].source]
    reused = explain_result(result, sources, index=explain_index, config=config, category=None, top_k=3)
    fresh = explain_missing(QUERY, sources, index=explain_index, config=config, top_k=3)
    assert [e.to_dict() for e in reused.explanations] == [e.to_dict() for e in fresh.explanations]


def test_a_changed_knowledge_base_is_not_guessed_at(explain_index):
    report = explain_missing(QUERY, ["billing/refunds.md"], index=explain_index, recorded_fingerprint="0" * 64)
    assert not report.reproduced and report.explanations[0].stage == NOT_REPRODUCED
    assert "the knowledge base changed since the recorded call" in report.note


def test_every_stage_is_documented_in_order():
    assert STAGES == ("not_in_kb", "filtered_out", "below_min_score", "not_in_pool", "below_top_k", "merged",
                      "returned")
    text = (ROOT / "docs" / "explain.md").read_text()
    assert all(f"`{stage}`" in text for stage in STAGES)


def test_explain_without_a_source_is_an_error(explain_index):
    with pytest.raises(ValueError, match="name at least one source"):
        explain_missing(QUERY, [" "], index=explain_index)


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "retrieval", "explain", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_cli_explain_prints_one_entry_per_source_with_its_stage(explain_kb):
    out = _cli(QUERY, "--source", "misc/garden.md", "--source", "drafts/old.md", "--kb", str(explain_kb), "--exclude",
               "drafts", "--svd-dims", "8", "--category", "Misc", "--compact")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert [(s["source"], s["stage"]) for s in answer["sources"]] == [("misc/garden.md", "below_min_score"),
                                                                      ("drafts/old.md", "not_in_kb")]


def test_cli_explain_replays_a_recorded_call_and_checks_it(explain_kb, tmp_path):
    traces = tmp_path / "t.duckdb"
    index = open_index(explain_kb, svd_dims=8, exclude_paths="drafts")
    with TraceStore(traces) as store:
        recorded = lookup_knowledge(QUERY, index=index, config=LookupConfig(svd_dims=8), top_k=2, recorder=store)
    out = _cli("--invocation", recorded.invocation_id, "--traces", str(traces), "--source", "billing/invoices.md",
               "--kb", str(explain_kb), "--exclude", "drafts", "--svd-dims", "8")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["reproduced"] and answer["top_k"] == 2
    assert answer["returned"] == [b.source for b in recorded.evidence_blocks]
    other_base = _cli("--invocation", recorded.invocation_id, "--traces", str(traces), "--source", "api/tokens.md",
                      "--kb", str(explain_kb), "--svd-dims", "8")  # without the exclusion: another knowledge base
    assert json.loads(other_base.stdout)["sources"][0]["stage"] == NOT_REPRODUCED


def test_cli_explain_names_a_missing_source_flag_and_an_empty_query(explain_kb):
    assert "--source" in _cli(QUERY, "--kb", str(explain_kb)).stderr
    empty = _cli(" ", "--source", "x.md", "--kb", str(explain_kb))
    assert empty.returncode == 2 and "the query is empty" in empty.stderr


MODEL_QUERY = "alerts invoices tokens install agent"  # matches many pages of the tiny base: a pool to re-rank


def _lost_to_a_model_part(model_kb, tmp_path, config, part):
    """Explain, at top_k 2, the first page the lookup ranks below it; the page's parts must be its card's in the
    same lookup at top_k 10, and its reason must name `part` as what it trails on most."""
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    wide = lookup_knowledge(MODEL_QUERY, index=index, config=config, top_k=10)
    lost = wide.evidence_blocks[2]
    report = explain_missing(MODEL_QUERY, [lost.source], index=index, config=config, top_k=2)
    found = report.explanations[0]
    assert report.returned == tuple(b.source for b in wide.evidence_blocks[:2])
    assert (found.stage, found.rank) == ("below_top_k", 3)
    assert f"it trails most on the {part} part " in found.reason
    assert found.parts == lost.score_parts and found.last_parts == wide.evidence_blocks[1].score_parts
    assert part in {p.part for p in found.parts} & {p.part for p in found.last_parts}
    return found


def test_a_page_the_dense_part_moved_below_top_k_trails_on_the_dense_part(model_kb, tmp_path):
    config = LookupConfig(l1_dense_model="hash:32", l1_dense_weight=5.0, l0_filter=False)
    found = _lost_to_a_model_part(model_kb, tmp_path, config, "L1 dense")
    dense = next(p for p in found.parts if p.part == "L1 dense")
    assert dense.weight == pytest.approx(5.0 * config.l1_weight)  # at its own weight, as on the card


def test_a_page_the_reranker_moved_below_top_k_trails_on_the_rerank_part(model_kb, tmp_path):
    config = LookupConfig(rerank_model="hash", rerank_weight=5.0, l0_filter=False)
    _lost_to_a_model_part(model_kb, tmp_path, config, "L1 rerank")


def test_the_explain_command_takes_the_dense_settings_and_names_the_part(model_kb, tmp_path, capsys):
    index = open_index(model_kb, cache_dir=tmp_path / "cache")
    config = LookupConfig(l1_dense_model="hash:32", l1_dense_weight=5.0, l0_filter=False)
    lost = lookup_knowledge(MODEL_QUERY, index=index, config=config, top_k=10).evidence_blocks[2].source
    assert cli_main(["explain", MODEL_QUERY, "--source", lost, "--kb", str(model_kb), "--top-k", "2",
                     "--no-l0-filter", "--l1-dense-model", "hash:32", "--l1-dense-weight", "5"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["sources"]
    assert found["stage"] == "below_top_k" and "it trails most on the L1 dense part " in found["reason"]
    assert "L1 dense" in {p["part"] for p in found["last_returned_score_parts"]}
