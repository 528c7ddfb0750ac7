"""Evaluation on the real shared data (../shared/data), on fixed samples of queries to stay fast.

Skips with the reason when the shared folder is absent (a fresh clone); never copies any of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import cli
from eval.compare import compare_runs
from tests.conftest import shared_path
from tests.eval_helpers import SHARED_SAMPLE

pytestmark = pytest.mark.shared_data


def test_scifact_run_reports_lookup_and_same_run_bm25_baseline(scifact_runs):
    default, _ = scifact_runs
    assert default.dataset["queries"] == SHARED_SAMPLE and default.top_k == 100
    assert set(default.baseline) == set(default.metrics)
    assert 0.3 < default.baseline["ndcg@10"] <= 1 and 0.2 < default.metrics["ndcg@10"] <= 1
    assert default.diagnostics["filter_applied_rate"] == 0.0  # SciFact has no per-document domain
    assert "no query has a category" in default.diagnostics["oracle"]["skipped"]  # so no oracle filter either


def test_scifact_another_setting_gives_other_figures_and_a_comparison(scifact_runs, shared_data_store):
    default, no_l1 = scifact_runs
    assert default.metrics != no_l1.metrics
    assert no_l1.diagnostics["l1_status"] == {"disabled": SHARED_SAMPLE}
    comparison = compare_runs(shared_data_store, default.run_id, no_l1.run_id, permutations=2000)
    assert comparison.metrics["ndcg@10"]["n"] == SHARED_SAMPLE
    assert comparison.metrics["ndcg@10"]["p_randomization"] <= 1


def test_hugo_known_item_measures_the_l0_filter_on_and_off(hugo_runs):
    dataset, on, off = hugo_runs
    assert dataset.exclude_fields == ("description",) and Path(dataset.kb_path).parts[-2:] == ("content", "en")
    assert on.diagnostics["filter_applied_rate"] > 0 and off.diagnostics["filter_applied_rate"] == 0
    assert 0 <= on.diagnostics["filter_precision"] <= 1
    assert on.diagnostics["filter_harm"]["count"] == len(on.diagnostics["filter_harm"]["query_ids"])
    assert off.diagnostics["filter_harm"]["count"] == 0
    assert 0.2 < on.metrics["mrr@10"] <= 1 and 0.2 < off.metrics["mrr@10"] <= 1


def test_cli_run_on_scifact_prints_json_metrics(shared_data_store, cache_dir, scifact_runs, capsys, monkeypatch):
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_CACHE", str(cache_dir))  # the index the runs above built
    root = shared_path("scifact")
    code = cli.main(["run", "--dataset", str(root), "--split", "train", "--sample", "10", "--json",
                     "--set", "svd_dims=64", "--no-progress", "--no-baseline", "--traces", str(shared_data_store.path)])
    assert code == 0 and '"ndcg@10"' in capsys.readouterr().out


def test_cli_hugo_dev_set_reports_oracle_headroom_and_filter_by_domain(shared_data_store, cache_dir, capsys,
                                                                        monkeypatch):
    """The Hugo dev query file against content/en in place, with the non-documentation folders excluded."""
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_CACHE", str(cache_dir))
    kb, queries = shared_path("hugo_docs", "content", "en"), shared_path("hugo_docs", "dev_queries.jsonl")
    code = cli.main(["run", "--kb", str(kb), "--queries", str(queries), "--exclude",
                     "news,showcase,myshowcase,readfiles,maintenance", "--sample", "20", "--json",
                     "--set", "svd_dims=64", "--no-progress", "--traces", str(shared_data_store.path)])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["dataset"]["queries"] == 20
    assert result["dataset"]["exclude_paths"] == ["maintenance", "myshowcase", "news", "readfiles", "showcase"]
    oracle = result["diagnostics"]["oracle"]
    assert set(oracle["metrics"]) == set(oracle["headroom"]) == set(result["metrics"])
    assert oracle["queries_with_category"] + oracle["queries_unfiltered"] == 20 and oracle["queries_with_category"] > 0
    assert {"filter_by_domain", "filter_confusion", "filter_widened_rate", "filter_harm_effective"} <= set(
        result["diagnostics"])
    for counts in result["diagnostics"]["filter_by_domain"].values():
        assert set(counts) == {"applied", "correct", "precision", "harm"} and counts["correct"] <= counts["applied"]
