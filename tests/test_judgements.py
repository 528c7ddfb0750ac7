"""eval.judgements: marks kept in the trace file, the latest mark counts, exports, and the CLI's --judgements."""

from __future__ import annotations

import json

import pytest

from eval import judgements
from eval.cli import main
from retrieval import TraceStore
from tests.kb_fixture import write_kb


def test_latest_mark_of_a_query_and_source_counts(store):
    judgements.record(store, "rotate a token", "security/tokens.md", 0, who="ann")
    judgements.record(store, "rotate a token", "security/tokens.md", 1, who="bob")
    frame = judgements.latest(store)
    assert frame[["source", "grade", "who"]].values.tolist() == [["security/tokens.md", 1, "bob"]]


def test_bad_marks_are_refused_with_the_allowed_grades(store):
    with pytest.raises(ValueError, match=r"grade must be one of \[0, 1, 2\]"):
        judgements.record(store, "q", "a.md", 3, who="ana")
    with pytest.raises(ValueError, match="needs a query and a source"):
        judgements.record(store, " ", "a.md", 1, who="ana")


def test_clearing_a_mark_removes_every_mark_of_that_query_and_source_only(store):
    judgements.record(store, "rotate a token", "security/tokens.md", 0, who="ana")
    judgements.record(store, "rotate a token", "security/tokens.md", 1, who="ana")
    judgements.record(store, "rotate a token", "security/sso.md", 1, who="ana")
    judgements.record(store, "other query", "security/tokens.md", 1, who="ana")
    assert judgements.clear(store, " rotate a token ", "security/tokens.md") == 2
    assert judgements.latest(store)[["query", "source"]].values.tolist() == [
        ["other query", "security/tokens.md"], ["rotate a token", "security/sso.md"]]
    assert judgements.to_queries_jsonl(judgements.latest(store)).count("security/tokens.md") == 1
    assert judgements.clear(store, "rotate a token", "security/tokens.md") == 0  # already cleared: nothing to do
    with pytest.raises(ValueError, match="needs a query and a source"):
        judgements.clear(store, "rotate a token", " ")


def test_a_cleared_mark_keeps_its_history_in_judgement_cleared(store):
    judgements.record(store, "rotate a token", "security/tokens.md", 0, who="ana")
    judgements.record(store, "rotate a token", "security/tokens.md", 1, who="ana")
    judgements.clear(store, "rotate a token", "security/tokens.md")
    kept = store.query("SELECT grade, who, created_at, cleared_at FROM judgement_cleared ORDER BY created_at")
    assert kept[["grade", "who"]].values.tolist() == [[0, "ana"], [1, "ana"]]
    assert (kept["cleared_at"] >= kept["created_at"]).all()
    assert store.query("SELECT count(*) AS n FROM judgement")["n"][0] == 0


def test_exports_as_queries_jsonl_and_qrels_tsv(store):
    judgements.record(store, "q one", "a.md", 1, who="ana")
    judgements.record(store, "q one", "b.md", 0, who="ana")
    judgements.record(store, "q two", "c.md", 0, who="ana")  # no relevant block: not a labelled query
    frame = judgements.latest(store)
    rows = [json.loads(line) for line in judgements.to_queries_jsonl(frame).splitlines()]
    assert rows == [{"_id": judgements.query_id("q one"), "text": "q one", "relevant": ["a.md"]}]
    lines = judgements.to_qrels_tsv(frame).splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore" and f"{judgements.query_id('q one')}\tb.md\t0" in lines
    assert len(lines) == 4


def test_eval_run_with_judgements_scores_against_them(tmp_path, capsys):
    kb = write_kb(tmp_path / "kb")
    marks = TraceStore(tmp_path / "marks.duckdb")
    judgements.record(marks, "rotate an API token", "security/tokens.md", 1, who="ana")
    judgements.record(marks, "download invoices", "billing/invoices.md", 1, who="ana")
    code = main(["run", "--kb", str(kb), "--judgements", str(tmp_path / "marks.duckdb"), "--traces",
                 str(tmp_path / "runs.duckdb"), "--no-progress", "--no-baseline", "--no-oracle", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dataset"]["queries"] == 2 and out["metrics"]["ndcg@10"] > 0


def test_eval_run_without_relevant_judgements_says_what_to_do(tmp_path, capsys):
    kb = write_kb(tmp_path / "kb")
    TraceStore(tmp_path / "marks.duckdb")
    code = main(["run", "--kb", str(kb), "--judgements", str(tmp_path / "marks.duckdb"), "--no-progress"])
    assert code == 2 and "judge some results first" in capsys.readouterr().err
