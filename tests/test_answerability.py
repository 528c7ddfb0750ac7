"""Knowing when nothing answers (issue 32): real lookups graded by the shipped confidence, the labelled question
sets it is fitted and checked on, and its held-out figures against the issue's bounds."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score

from eval import fit_confidence
from eval.answerability import HELD_OUT_SHARE, OFF_TOPIC, held_out, question_sets, read_rows
from retrieval import lookup_knowledge, open_index
from tests.conftest import shared_path


def test_an_off_topic_question_on_the_sample_abstains(sample_index):
    relevance = lookup_knowledge("what is the capital of France", index=sample_index).relevance
    assert relevance.abstain and relevance.level in ("low", "none")


def test_an_answerable_sample_question_is_graded_high_with_its_page_first(sample_index):
    result = lookup_knowledge("install skylark server on linux", index=sample_index)
    assert result.relevance.level == "high" and not result.relevance.abstain
    assert result.evidence_blocks[0].source == "getting-started/install-linux.md"
    assert result.to_dict()["relevance"]["signals"]["primary_coverage"] == 1.0


def test_off_topic_questions_on_the_hugo_docs_are_never_high_and_mostly_abstain():
    """Before issue 32, 5 of 6 such questions were graded high ("what is the capital of France" among them,
    by "capital" stemming like "capitalize"). Counted over all 60, not one question near a threshold."""
    index = open_index(shared_path("hugo_docs", "content", "en"))
    graded = [lookup_knowledge(row["text"], index=index) for row in read_rows(OFF_TOPIC)]
    assert not [r.query for r in graded if r.relevance.level == "high"]
    assert sum(r.relevance.abstain for r in graded) >= 0.9 * len(graded)  # 59 of 60 when fitted
    assert all(r.evidence_blocks for r in graded if r.relevance.level == "low"), "the evidence still comes back"


def test_the_held_out_split_is_stable_and_about_its_share():
    assert held_out("hugo-dev", "dA001") == held_out("hugo-dev", "dA001")
    share = np.mean([held_out("src", f"q{i}") for i in range(4000)])
    assert abs(share - HELD_OUT_SHARE) < 0.03


def test_the_question_sets_label_every_source_and_read_only_scifacts_train_split():
    shared = shared_path()
    questions = question_sets(shared)
    sources = {q.source for q in questions}
    assert {"hugo-dev", "scifact-train", "sample", "sample-none", "off-topic→hugo", "scifact→hugo",
            "hugo-dev→scifact"} <= sources
    train = {line.split("\t")[0] for line in (shared / "scifact" / "qrels" / "train.tsv").read_text().splitlines()}
    assert all(q.id in train for q in questions if q.source.startswith("scifact"))
    assert all(not q.answerable for q in questions if "→" in q.source or q.source == "sample-none")
    hugo = shared / "hugo_docs" / "content" / "en"
    assert all((hugo / page).is_file() for q in questions if q.source == "hugo-dev" for page in q.relevant)


def test_the_shipped_confidence_meets_the_issues_bounds_on_the_held_out_part():
    """On questions never used for fitting or thresholds: high on at most 5% of unanswerable ones; of
    answerable ones graded high, a relevant page first at least 85% of the time; high reaching at least half
    of those with a relevant page first; AUROC at least 0.90."""
    looked = [row for row in fit_confidence.look_up_all(shared_path()) if row.question.held_out]
    confidence = np.array([row.confidence for row in looked])
    high = np.array([row.level == "high" for row in looked])
    answerable = np.array([row.question.answerable for row in looked])
    first, top5 = np.array([row.first for row in looked]), np.array([row.top5 for row in looked])
    assert high[~answerable].mean() <= 0.05
    assert first[answerable & high].mean() >= 0.85
    assert high[answerable & first].mean() >= 0.5
    rows = (answerable & top5) | ~answerable
    assert roc_auc_score((answerable & top5)[rows], confidence[rows]) >= 0.90


def test_an_off_topic_question_sharing_one_word_with_one_surviving_page_abstains(sample_index):
    """Issue 49: one page (billing/invoices.md, "Taxes and VAT") survives the filter and shares "tax" with the
    question; with no next block the margin used to read as a lead of 100% and the grade medium."""
    result = lookup_knowledge("when is the deadline for filing my income taxes", index=sample_index)
    assert [b.source for b in result.evidence_blocks] == ["billing/invoices.md"]
    assert result.relevance.abstain and result.relevance.level in ("low", "none")
    assert result.relevance.signals.margin is None
    assert "lead of 100%" not in result.relevance.basis


def test_the_answerability_data_holds_off_topic_questions_that_share_one_word_with_a_page():
    rows = read_rows(OFF_TOPIC)
    kinds = {row["_id"]: row.get("kind") for row in rows}
    assert kinds["off003"] == "shares-one-word" and sum(k == "shares-one-word" for k in kinds.values()) >= 20
    sources = {q.source for q in question_sets(shared_path())}
    assert {"shares-one-word→sample", "shares-one-word→hugo", "off-topic→sample"} <= sources
