"""Judged@10 (issue 34 item 4): the share of each question's top 10 that its labels (grade 0 included) or an
analyst's mark judge, per question (`eval_query.judged_at_10`) and per run (`diagnostics["judged_at_10"]`),
checked against trec_eval's judged measure through pytrec_eval, and said in the CLI summary and the reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval import depth, judgements
from eval.cli import main as eval_main
from eval.datasets import load_dataset
from eval.reports import render
from eval.runs import run_evaluation
from retrieval import LookupConfig, TraceStore
from tests.eval_helpers import write_dataset

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier (a dev extra) is not installed")

DOCS = [f"d{i}" for i in range(15)]
QUICK = {"baseline": False, "oracle": False, "attribute": False, "metrics": ("ndcg@10", "mrr@10")}


def _trec_judged_10(ranked: list[str], qrels: dict[str, int]) -> float:
    """trec_eval's judged_10 through pytrec_eval, which lacks the measure itself: on the run cut to its first 10
    documents, relevant retrieved + judged non-relevant retrieved, over 10."""
    unique = list(dict.fromkeys(ranked))[:10]
    run = {"q": {doc: float(len(unique) - rank) for rank, doc in enumerate(unique)}}
    found = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"num_rel_ret", "num_nonrel_judged_ret"}).evaluate(run)["q"]
    return (found["num_rel_ret"] + found["num_nonrel_judged_ret"]) / 10


@settings(max_examples=500, deadline=None, derandomize=True)
@given(ranked=st.lists(st.sampled_from(DOCS), min_size=1, max_size=14),
       qrels=st.dictionaries(st.sampled_from(DOCS), st.integers(min_value=0, max_value=3), min_size=1, max_size=10))
def test_judged_at_10_equals_trec_evals_judged_10(ranked, qrels):
    assert depth.judged_at(ranked, qrels) == pytest.approx(_trec_judged_10(ranked, qrels), abs=1e-12)


def test_a_short_ranking_is_divided_by_10():
    assert depth.judged_at(["a", "b", "c"], {"a": 1, "b": 1, "c": 1}) == pytest.approx(0.3)
    assert _trec_judged_10(["a", "b", "c"], {"a": 1, "b": 1, "c": 1}) == pytest.approx(0.3)


def test_a_grade_0_label_is_a_judgement():
    assert depth.judged_at(["a", "b"], {"b": 0}) == pytest.approx(0.1)
    assert depth.unjudged(["a", "b"], {"b": 0}) == ["a"]


def test_a_page_seen_twice_counts_once_and_the_eleventh_page_not_at_all():
    ranked = ["a", "a", *[f"p{i}" for i in range(9)], "z"]
    assert depth.top(ranked) == ["a", *[f"p{i}" for i in range(9)]]
    assert depth.judged_at(ranked, {"a": 1, "z": 1}) == pytest.approx(0.1)


def test_marks_on_the_query_text_add_to_the_labels():
    rows = [{"query": " rotate a token ", **depth.query_columns(["a", "b", "c"], {"a": 1})},
            {"query": "other", **depth.query_columns(["a", "b"], {})}]
    depth.add_marks(rows, {"rotate a token": {"b": 0.0, "x": 1.0}})
    assert rows[0][depth.COLUMN] == pytest.approx(0.2) and rows[0][depth.UNJUDGED] == ["c"]
    assert rows[1][depth.COLUMN] == 0.0 and rows[1][depth.UNJUDGED] == ["a", "b"]


def _graded_set(root: Path) -> Path:
    """tests/eval_helpers.py's dataset, with q2's labels grading one page 0 (judged, not relevant)."""
    write_dataset(root)
    path = root / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["relevant"] = {"billing/invoices.md": 1, "billing/plans.md": 0}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _stored(store: TraceStore, run_id: str) -> dict[str, tuple[float, list[str]]]:
    frame = store.query("SELECT query_id, judged_at_10, top_sources FROM eval_query WHERE run_id = ?", [run_id])
    return {q: (j, json.loads(t)) for q, j, t in zip(frame["query_id"], frame["judged_at_10"], frame["top_sources"],
                                                     strict=True)}


def test_a_run_stores_judged_at_10_per_question_with_grade_0_labels(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    run = run_evaluation(load_dataset(_graded_set(tmp_path / "set")), LookupConfig(), store=store, **QUICK)
    stored = _stored(store, run.run_id)
    value, top = stored["q2"]
    assert len(top) < 10  # an 8-page base: the ranking is short, and still divided by 10
    assert {"billing/invoices.md", "billing/plans.md"} <= set(top)
    assert value == pytest.approx(0.2)  # the grade-0 page counts
    answerable = [stored[q][0] for q in ("q1", "q2", "q3", "q4", "q5", "q6")]
    assert run.diagnostics["judged_at_10"] == pytest.approx(sum(answerable) / 6, abs=1e-4)


def test_an_analysts_mark_counts_as_a_judgement_in_the_next_run(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    dataset = load_dataset(_graded_set(tmp_path / "set"))
    before = run_evaluation(dataset, LookupConfig(), store=store, **QUICK)
    value, top = _stored(store, before.run_id)["q3"]
    page = next(s for s in top if s != "alerting/silences.md")
    judgements.record(store, dataset.queries[2].text, page, 0, who="ana")
    after = run_evaluation(dataset, LookupConfig(), store=store, **QUICK)
    assert _stored(store, after.run_id)["q3"][0] == pytest.approx(value + 0.1)
    assert after.diagnostics["judged_at_10"] > before.diagnostics["judged_at_10"]


def test_the_cli_summary_says_judged_at_10(tmp_path, capsys):
    traces = tmp_path / "t.duckdb"
    assert eval_main(["run", "--dataset", str(_graded_set(tmp_path / "set")), "--traces", str(traces),
                      "--no-progress", "--no-oracle", "--no-baseline", "--metrics", "ndcg@10"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "judged@10" in x)
    value = TraceStore(traces).query("SELECT diagnostics FROM eval_run")["diagnostics"].map(json.loads)[0]
    assert line.strip().startswith(f"judged@10: {value['judged_at_10']:.2f} (the share of each question's top 10")


def test_the_run_reports_say_judged_at_10(tmp_path):
    store = TraceStore(tmp_path / "t.duckdb")
    run = run_evaluation(load_dataset(_graded_set(tmp_path / "set")), LookupConfig(), store=store, **QUICK)
    expected = f"judged@10: {run.diagnostics['judged_at_10']:.2f}"
    assert expected in render(run, "markdown")
    assert expected in render(run, "html")
    assert depth.judged_line({}) == "judged@10: not measured (a run stored before it was)"
