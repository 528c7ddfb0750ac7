"""Issue 32, item 3: every evaluation run grades its unanswerable questions instead of skipping them, and says
how well the relevance grade separates them from answered ones (eval.abstention), in the CLI, the reports,
comparisons and the app."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from eval import cli, runs
from eval.abstention import answerability_summary, auroc
from eval.compare import compare_runs
from eval.datasets import DatasetError, load_dataset
from eval.reports import render
from eval.unanswerable import load_unanswerable, with_unanswerable
from retrieval import LookupConfig
from tests.eval_helpers import write_dataset

CONFIG = LookupConfig(svd_dims=8)
METRICS = ["ndcg@5", "mrr@10", "recall@10"]
OFF_TOPIC = [{"_id": "u1", "text": "best sourdough starter ratio"}, {"_id": "u2", "text": "who won the 1998 world cup"},
             {"text": "how long to boil an egg"}]


def _off_topic(tmp_path, rows=OFF_TOPIC):
    path = tmp_path / "off_topic.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_run_grades_its_unanswerable_questions_instead_of_skipping_them(eval_dataset, store):
    result = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS)
    summary = result.diagnostics["answerability"]
    assert (summary["answerable"], summary["unanswerable"]) == (6, 1)
    assert result.unanswerable["query_id"].tolist() == ["q7"] and "q7" not in set(result.per_query["query_id"])
    details = json.loads(store.query("SELECT retrieval_details FROM tool_invocation WHERE run_id = ? AND "
                                     "query_id = 'q7'", [result.run_id])["retrieval_details"][0])
    row = result.unanswerable.iloc[0]
    assert row["confidence"] == pytest.approx(details["relevance"]["confidence"])
    assert row["relevance_level"] == details["relevance"]["level"] and not row["answerable"]
    shares = summary["levels"]["unanswerable"]
    assert shares[row["relevance_level"]] == 1.0 and sum(shares.values()) == pytest.approx(1.0)
    no_metric = store.query("SELECT count(*) AS n FROM eval_query_metric WHERE run_id = ? AND query_id = 'q7'",
                            [result.run_id])["n"][0]
    assert no_metric == 0


def test_unanswerable_questions_leave_the_rank_metrics_as_they_were(eval_dataset, store):
    """The means are over answerable questions only: a run with q7 scores exactly as one without it."""
    answerable = replace(eval_dataset, queries=tuple(q for q in eval_dataset.queries if q.answerable))
    both = runs.run_evaluation(eval_dataset, CONFIG, store=store, metrics=METRICS)
    only = runs.run_evaluation(answerable, CONFIG, store=store, metrics=METRICS)
    assert both.metrics == only.metrics and both.baseline == only.baseline
    assert both.diagnostics["oracle"] == only.diagnostics["oracle"]
    assert both.diagnostics["queries"] == only.diagnostics["queries"] == 6  # the filter's figures too


def test_eval_run_unanswerable_file_adds_questions_reported_per_set(tmp_path, capsys):
    root = write_dataset(tmp_path / "set")
    code = cli.main(["run", "--dataset", str(root), "--traces", str(tmp_path / "t.duckdb"), "--no-progress",
                     "--set", "svd_dims=8", "--unanswerable", str(_off_topic(tmp_path)), "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    summary = out["diagnostics"]["answerability"]
    assert summary["unanswerable"] == 4 and set(summary["by_set"]) == {"labels", "off_topic"}
    assert summary["by_set"]["off_topic"]["questions"] == 3 and summary["by_set"]["labels"]["questions"] == 1
    assert out["dataset"]["unanswerable_from_file"] == 3 and out["dataset"]["queries"] == 10
    assert 0.0 <= summary["auroc"] <= 1.0 and summary["auroc_rule"].startswith("answered = a relevant page")


def test_the_run_summary_says_the_answerability_figures(tmp_path, capsys):
    root = write_dataset(tmp_path / "set")
    assert cli.main(["run", "--dataset", str(root), "--traces", str(tmp_path / "t.duckdb"), "--no-progress",
                     "--set", "svd_dims=8", "--unanswerable", str(_off_topic(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "10 queries (6 scored by rank, 4 unanswerable graded)" in out
    assert "answerability: 4 unanswerable question(s); graded high" in out and "AUROC" in out


@pytest.mark.parametrize(("rows", "message"), [
    (["{not json"], r"off_topic.jsonl:1: bad JSON"),
    ([json.dumps({"_id": "u1", "text": " "})], r":1: a question needs a non-empty \"text\""),
    ([json.dumps({"_id": "u1", "text": "x", "relevant": ["api/tokens.md"]})], "should not answer"),
    ([json.dumps({"_id": "u1", "text": "x"}), json.dumps({"_id": "u1", "text": "y"})], "appears twice"),
    ([""], "holds no questions"),
])
def test_a_bad_unanswerable_file_is_refused_saying_where(tmp_path, rows, message):
    path = tmp_path / "off_topic.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_unanswerable(path)


def test_an_unanswerable_file_may_not_reuse_the_datasets_ids(eval_dataset, tmp_path):
    with pytest.raises(DatasetError, match="q1 already name questions of set"):
        with_unanswerable(eval_dataset, _off_topic(tmp_path, [{"_id": "q1", "text": "x"}]))
    with pytest.raises(DatasetError, match="no unanswerable-questions file"):
        with_unanswerable(eval_dataset, tmp_path / "missing.jsonl")
    assert [q.id for q in load_unanswerable(_off_topic(tmp_path))][-1] == "off_topic-3"  # no _id: file and line


def test_cli_names_a_bad_unanswerable_file_and_exits_2(tmp_path, capsys):
    root = write_dataset(tmp_path / "set")
    code = cli.main(["run", "--dataset", str(root), "--traces", str(tmp_path / "t.duckdb"), "--no-progress",
                     "--unanswerable", str(tmp_path / "nope.jsonl")])
    assert code == 2 and "error: no unanswerable-questions file" in capsys.readouterr().err
    assert not (tmp_path / "t.duckdb").exists() or "run-" not in capsys.readouterr().out


def test_one_rule_a_question_with_no_positive_grade_is_unanswerable_in_every_loader(tmp_path):
    root = write_dataset(tmp_path / "set")
    rows = [json.loads(line) for line in (root / "queries.jsonl").read_text().splitlines()]
    rows.append({"_id": "zero", "text": "all graded zero", "relevant": {"api/tokens.md": 0}})
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    markdown = {q.id: q.answerable for q in load_dataset(root).queries}
    assert markdown["q7"] is False and markdown["zero"] is False and markdown["q1"] is True
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "T", "text": "words"}) + "\n")
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": f"question {i}"}) + "\n"
                                                for i in ("a", "b")))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\td1\t1\nb\td1\t0\n")
    loaded = load_dataset(beir)
    assert {q.id: q.answerable for q in loaded.queries} == {"a": True, "b": False}
    assert loaded.notes["unanswerable"] == 1


def test_auroc_counts_ties_half_and_agrees_with_scikit_learn():
    assert auroc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auroc([0.1], [0.9]) == 0.0
    assert auroc([0.5, 0.5], [0.5]) == 0.5
    assert auroc([], [0.3]) is None and auroc([0.3], []) is None
    rng = np.random.default_rng(7)
    pos, neg = rng.integers(0, 6, 40) / 5, rng.integers(0, 6, 30) / 5  # many ties
    expected = roc_auc_score([1] * 40 + [0] * 30, np.concatenate([pos, neg]))
    assert auroc(pos, neg) == pytest.approx(expected, abs=1e-4)


def test_precision_and_recall_of_high_are_counted_by_hand():
    frame = pd.DataFrame({
        "query_id": ["a", "b", "c", "d", "u1", "u2"],
        "answerable": [True, True, True, True, False, False],
        "relevance_level": ["high", "high", "medium", "high", "high", "none"],
        "confidence": [0.9, 0.8, 0.5, 0.85, 0.7, 0.0],
        "first_relevant_rank": [1, 3, 1, 1, None, None],
        "question_set": ["labels"] * 4 + ["off", "labels"],
    })
    summary = answerability_summary(frame)
    assert summary["high_precision"] == round(2 / 3, 4)  # a and d of the three graded high
    assert summary["high_recall"] == round(2 / 3, 4)  # of a, c, d (relevant first), a and d are high
    assert summary["unanswerable_high"] == 0.5 and summary["unanswerable_high_ids"] == ["u1"]
    assert summary["unanswerable_abstained"] == 0.5
    assert summary["auroc"] == auroc([0.9, 0.8, 0.5, 0.85], [0.7, 0.0])  # all four have a relevant page in the top 5
    assert summary["by_set"]["off"] == {"questions": 1, "high": 1.0, "medium": 0.0, "low": 0.0, "none": 0.0,
                                        "auroc": auroc([0.9, 0.8, 0.5, 0.85], [0.7])}


def test_a_run_without_unanswerable_questions_says_nothing_measures_abstention(eval_dataset, store):
    answerable = replace(eval_dataset, queries=tuple(q for q in eval_dataset.queries if q.answerable))
    summary = runs.run_evaluation(answerable, CONFIG, store=store, metrics=METRICS).diagnostics["answerability"]
    assert summary["unanswerable"] == 0 and summary["auroc"] is None and "--unanswerable FILE" in summary["note"]


def test_run_and_comparison_reports_show_the_answerability(eval_dataset, store, tmp_path):
    dataset = with_unanswerable(eval_dataset, _off_topic(tmp_path))
    a = runs.run_evaluation(dataset, CONFIG, store=store, metrics=METRICS)
    b = runs.run_evaluation(dataset, CONFIG.with_overrides({"l1_enabled": False}), store=store, metrics=METRICS)
    report = render(a, "markdown")
    assert "## Answerability: knowing when nothing answers" in report and "| unanswerable: off_topic |" in report
    assert "4 question(s), e.g. q7, u1, u2, off_topic-3; 3 from" in report
    assert "answerability" in render(a, "html")
    comparison = render(compare_runs(store, a.run_id, b.run_id), "markdown")
    assert "## Answerability A vs B" in comparison and "| AUROC of confidence, answered vs unanswerable |" in comparison
    # L1 off: L0-only evidence is graded low at most, so no unanswerable question is graded high in B
    assert b.diagnostics["answerability"]["unanswerable_high"] == 0.0
    assert b.diagnostics["answerability"]["levels"]["answerable"]["high"] == 0.0


def test_a_qrels_file_without_a_header_keeps_its_first_judgement(tmp_path):
    """Issue 34's loader bug: the first line was dropped as a header even when it was a judgement."""
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "T", "text": "words"}) + "\n")
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": f"question {i}"}) + "\n"
                                                for i in ("a", "b")))
    (beir / "qrels" / "test.tsv").write_text("a\td1\t1\nb\td1\t2\n")  # no header
    assert {q.id: dict(q.qrels) for q in load_dataset(beir).queries} == {"a": {"d1": 1.0}, "b": {"d1": 2.0}}
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\td1\t1\n")  # BEIR's header
    assert [q.id for q in load_dataset(beir).queries] == ["a"]
