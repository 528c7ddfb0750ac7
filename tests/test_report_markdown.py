"""Every Markdown document the project exports, read as a CommonMark renderer shows it: the run report, the
comparison report and the trace report hold real tables with the expected headers and readable text (no
dict or JSON reprs, no `None`, floats rounded)."""

from __future__ import annotations

import re

import pytest

from eval import runs
from eval.compare import compare_runs, significance_words
from eval.reports import render
from retrieval import LookupConfig
from tests.markdown_helpers import Rendered, render_markdown

CONFIG = LookupConfig(svd_dims=8)
METRICS = ("ndcg@5", "recall@10", "mrr@5")
UNROUNDED = re.compile(r"\d\.\d{4,}")  # more than 3 decimals: a float printed as stored


def assert_readable(shown: Rendered) -> None:
    """No Python or JSON reprs of nested values, no `None`, no float printed to more than 3 decimals."""
    assert "{" not in shown.text and not re.search(r"\b(None|nan|NaN|NaT)\b", shown.text), shown.text
    assert not UNROUNDED.search(shown.text), UNROUNDED.findall(shown.text)


def test_run_report_renders_its_metrics_table_and_readable_diagnostics(eval_dataset, store):
    run = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS)
    shown = render_markdown(render(run, "markdown"))
    metrics = shown.table("metric", "lookup", "bm25 baseline", "delta", "oracle filter", "headroom")
    assert [row["metric"] for row in metrics] == list(METRICS)
    assert [float(row["lookup"]) for row in metrics] == [pytest.approx(run.metrics[m], abs=5e-4) for m in METRICS]
    assert shown.table("query_id", "query", "ndcg@5")[0]["query_id"].startswith("q")
    assert shown.table("domain", "applied", "correct", "precision", "harm")
    assert (2, "Diagnostics") in shown.headings
    latency = next(item for item in shown.items if item.startswith("latency_ms: "))
    assert re.fullmatch(r"latency_ms: p50 \d+(\.\d)?, p95 \d+(\.\d)?, mean \d+(\.\d)?", latency)  # ms, 1 decimal
    assert "filter_harm: count 0, rate 0, missed 0, query_ids none" in shown.items
    assert any(item.startswith("unanswerable (no relevant page; graded, not ranked): 1 question(s), e.g. q7")
               for item in shown.items)
    assert any(item.startswith("not scored: 1 row(s) have no text or no `relevant` field, e.g. q8")
               for item in shown.items)
    assert_readable(shown)


def test_comparison_report_says_better_or_worse_and_significance_in_words(eval_dataset, store):
    a = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS)
    b = runs.run_evaluation(eval_dataset, CONFIG.with_overrides({"l1_enabled": False}), store=store, metrics=METRICS)
    for first, second in ((a, b), (b, a)):
        comparison = compare_runs(store, first.run_id, second.run_id)
        shown = render_markdown(render(comparison, "markdown"))
        table = shown.table("metric", "A", "B", "delta", "wins/ties/losses", "significance")
        for row in table:
            stats = comparison.metrics[row["metric"]]
            assert row["significance"] == significance_words(stats["p_randomization"], stats["delta"])
        primary = comparison.metrics["ndcg@5"]
        verdict = next(item for item in shown.items if item.startswith("ndcg@5 (primary): "))
        side = "B better" if primary["delta"] > 0 else "B worse"
        assert primary["delta"] != 0 and verdict.startswith(f"ndcg@5 (primary): {side}, ")
        assert "settings A → B: l1_enabled " in " ".join(shown.items)
        assert_readable(shown)
