"""Issue 33, item 4: every evaluation run says, for each relevant page missing from a question's top k (the
primary metric's cut-off), the stage of the lookup that lost it; per run, the counts; a comparison says which
stages moved."""

from __future__ import annotations

import json

import pytest

from eval import runs
from eval.cli import main as eval_main
from eval.compare import compare_runs
from eval.reports import render
from retrieval import MISSING_STAGES, LookupConfig, TraceStore
from retrieval.cli import main as retrieval_main
from tests.conftest import shared_path

CONFIG = LookupConfig(svd_dims=8)
METRICS = ["ndcg@1", "recall@10"]  # cut-off 1: most questions with two relevant pages miss one


def _missed(result) -> list[tuple[str, str]]:
    """(query id, page) of every relevant page not in the first `cutoff` sources of its lookup, by hand."""
    cutoff = result.diagnostics["missed_stages"]["cutoff"]
    ranked = _ranked(result)
    return [(q, s) for q, relevant in zip(result.per_query["query_id"], result.per_query["relevant"], strict=True)
            for s in relevant if s not in ranked[q][:cutoff]]


def _ranked(result) -> dict[str, list[str]]:
    return {q: list(t) for q, t in zip(result.per_query["query_id"], result.per_query["top_sources"], strict=True)}


def test_every_missed_relevant_page_gets_exactly_one_stage_and_the_counts_add_up(eval_dataset, store):
    result = runs.run_evaluation(eval_dataset, CONFIG.with_overrides({"l1_min_score": 0.3}), store=store,
                                 metrics=METRICS)
    missed = result.diagnostics["missed_stages"]
    by_hand = _missed(result)
    assert missed["cutoff"] == 1 and missed["metric"] == "ndcg@1" and missed["missed"] == len(by_hand) > 0
    assert sum(missed["counts"].values()) == missed["missed"] and set(missed["counts"]) <= set(MISSING_STAGES)
    stages = dict(zip(result.per_query["query_id"], result.per_query["relevant_stages"], strict=True))
    for query_id, page in by_hand:
        assert stages[query_id][page]["stage"] in set(MISSING_STAGES) - {"returned"}
    returned = [(q, s) for q, found in stages.items() for s, v in found.items() if v["stage"] == "returned"]
    assert all(v["rank"] == 1 for q, found in stages.items() for v in found.values() if v["stage"] == "returned")
    assert len(returned) + len(by_hand) == sum(len(r) for r in result.per_query["relevant"])
    assert missed["sentence"].startswith(f"of {len(by_hand)} missed relevant page(s) in the top 1: ")


def test_explaining_a_runs_misses_through_the_cli_gives_the_runs_stages(eval_dataset, store, capsys):
    result = runs.run_evaluation(eval_dataset, CONFIG.with_overrides({"l1_min_score": 0.3}), store=store,
                                 metrics=METRICS)
    store.flush()
    rows = result.per_query.set_index("query_id")
    for query_id, page in _missed(result):
        argv = ["explain", "--invocation", rows.loc[query_id, "invocation_id"], "--traces", str(store.path),
                "--source", page, "--cutoff", "1", "--kb", eval_dataset.kb_path, "--compact"]
        assert retrieval_main(argv) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["reproduced"]
        assert answer["sources"][0]["stage"] == rows.loc[query_id, "relevant_stages"][page]["stage"]


def test_the_summary_reports_and_json_carry_the_stage_counts(eval_dataset, tmp_path, capsys):
    argv = ["run", "--dataset", eval_dataset.path, "--traces", str(tmp_path / "t.duckdb"), "--no-progress",
            "--set", "svd_dims=8", "--set", "l1_min_score=0.3", "--metrics", ",".join(METRICS)]
    assert eval_main(argv) == 0
    out = capsys.readouterr().out
    assert "missed pages: of " in out and "in the top 1:" in out
    assert eval_main([*argv, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["diagnostics"]["missed_stages"]["missed"] == sum(run["diagnostics"]["missed_stages"]["counts"].values())
    stored = runs.load_run(TraceStore(tmp_path / "t.duckdb"), run["run_id"])
    markdown = render(stored, "markdown")
    assert "## Missed relevant pages" in markdown and "| stage | pages |" in markdown
    assert "relevant_stages" in render(stored, "csv").splitlines()[0]


def test_a_comparison_says_which_stage_moved(eval_dataset, store):
    a = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=["ndcg@10"])
    b = runs.run_evaluation(eval_dataset, CONFIG.with_overrides({"l1_min_score": 0.9, "l0_weight": 0.0}), store=store,
                            metrics=["ndcg@10"])
    comparison = compare_runs(store, a.run_id, b.run_id)
    moves = comparison.stage_moves
    assert moves["lost_by_b"].get("below_min_score", 0) > 0
    assert any(s.startswith("B lost ") and "below min score" in s for s in moves["sentences"])
    assert "## Where B lost or won relevant pages" in render(comparison, "markdown")
    assert comparison.to_dict()["stage_moves"] == moves


def test_no_attribution_skips_it_and_says_so(eval_dataset, store):
    result = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS, attribute=False)
    assert "skipped" in result.diagnostics["missed_stages"]
    assert result.per_query["relevant_stages"].isna().all()


@pytest.mark.slow
def test_on_the_hugo_dev_set_every_missed_page_gets_one_stage_and_the_cli_agrees(tmp_path, capsys):
    kb = shared_path("hugo_docs", "content", "en")
    queries = shared_path("hugo_docs", "dev_queries.jsonl")
    traces = tmp_path / "t.duckdb"
    exclude = "news,showcase,myshowcase,readfiles,maintenance"
    assert eval_main(["run", "--kb", str(kb), "--queries", str(queries), "--exclude", exclude, "--traces",
                      str(traces), "--no-progress", "--no-oracle", "--no-baseline", "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    result = runs.load_run(TraceStore(traces), run_id)
    missed = result.diagnostics["missed_stages"]
    by_hand = _missed(result)
    assert missed["missed"] == len(by_hand) == sum(missed["counts"].values()) > 0
    rows = result.per_query.set_index("query_id")
    for query_id, page in by_hand:
        argv = ["explain", "--invocation", rows.loc[query_id, "invocation_id"], "--traces", str(traces), "--source",
                page, "--cutoff", str(missed["cutoff"]), "--kb", str(kb), "--exclude", exclude, "--compact"]
        assert retrieval_main(argv) == 0
        answer = json.loads(capsys.readouterr().out)
        assert answer["sources"][0]["stage"] == rows.loc[query_id, "relevant_stages"][page]["stage"], (query_id, page)
