"""The hole loop (issue 34 item 4): a comparison's judging queue (the unjudged pages of the top 10s that changed)
and the comparison scored again once analysts judged them, with the conclusions that flipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import holes, judgements, what_if
from eval.compare import compare_runs
from eval.run_labels import run_labels
from eval.storage import load_per_query, load_run_row
from retrieval import TraceStore

PERMUTATIONS = 2000


def _tops(store: TraceStore, run_id: str) -> dict[str, list[str]]:
    frame = store.query("SELECT query_id, top_sources FROM eval_query WHERE run_id = ?", [run_id])
    return {q: json.loads(t) for q, t in zip(frame["query_id"], frame["top_sources"], strict=True)}


def test_the_queue_lists_the_unjudged_pages_of_changed_top_10s_with_both_ranks(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    tops_a, tops_b = _tops(store, a), _tops(store, b)
    queue = holes.judging_queue(store, a, b)
    changed = sorted(q for q in tops_a if tops_a[q] != tops_b[q])
    assert queue.paired == 8 and queue.changed == len(changed) > 0
    assert sorted(queue.by_query()) == changed
    for query_id, found in queue.by_query().items():
        assert [h.source for h in found] == tops_b[query_id][1:]  # every page but the labelled first one
        assert all(h.rank_a is None and h.rank_b == tops_b[query_id].index(h.source) + 1 for h in found)
    assert queue.frame().columns.tolist() == holes.COLUMNS
    assert "read again from" in queue.labels


def test_a_marked_page_leaves_the_queue(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    before = holes.judging_queue(store, a, b)
    first = before.holes[0]
    judgements.record(store, first.query, first.source, 0, who="ana")  # judged not relevant: a judgement all the same
    again = holes.judging_queue(store, a, b)
    assert (first.query_id, first.source) not in {(h.query_id, h.source) for h in again.holes}
    assert len(again.holes) == len(before.holes) - 1
    assert holes.judging_queue(store, a, a).holes == ()  # a run against itself changes no top 10


def test_a_grade_0_label_is_not_in_the_queue(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    hole = holes.judging_queue(store, a, b).holes[0]
    path = Path(hole_runs["dataset"].path) / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["_id"] == hole.query_id:
            row["relevant"] = {row["relevant"][0]: 1, hole.source: 0}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    labels = run_labels(load_run_row(store, a), load_per_query(store, a))
    assert labels.qrels[hole.query_id][hole.source] == 0.0
    assert hole.source not in {h.source for h in holes.judging_queue(store, a, b).by_query()[hole.query_id]}


def test_labels_fall_back_to_the_stored_relevant_pages_when_the_dataset_is_gone(hole_runs):
    store, a = hole_runs["store"], hole_runs["a"].run_id
    row = {**load_run_row(store, a), "dataset_path": "/nowhere/at/all"}
    labels = run_labels(row, load_per_query(store, a))
    assert labels.qrels["q1"] == {"api/tokens.md": 1.0}
    assert labels.source.startswith("the run's stored relevant pages, each at grade 1")


def test_without_marks_nothing_changes(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS)
    result = what_if.what_if_judged(store, comparison, permutations=PERMUTATIONS)
    assert result.rescored == 0 and result.changed() == []
    assert [(c.delta_before, c.p_before) for c in result.conclusions] == [
        (c.delta_after, c.p_after) for c in result.conclusions]


def test_a_tie_becomes_a_significant_win_once_bs_pages_are_judged_relevant(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS)
    assert what_if.outcome(comparison.metrics["recall@10"]["p_randomization"],
                           comparison.metrics["recall@10"]["delta"]) == "tie"  # both find every labelled page
    for found in holes.judging_queue(store, a, b).by_query().values():
        judgements.record(store, found[0].query, found[0].source, 1, who="ana")  # B's second page answers too
    result = what_if.what_if_judged(store, comparison, permutations=PERMUTATIONS)
    recall = next(c for c in result.conclusions if c.metric == "recall@10")
    assert recall.delta_before == 0.0 and recall.delta_after > 0.2 and recall.p_after < 0.05
    assert "recall@10" in result.changed()
    table = result.table()
    assert table.columns.tolist() == what_if.TABLE
    row = table.set_index("metric").loc["recall@10"]
    assert row["before"] == "no difference" and row["after"].startswith("B better, significant")
    assert row["changed?"] == "yes"
    assert load_run_row(store, b)["metrics"] == hole_runs["b"].metrics  # a view: the stored runs are untouched


def test_a_mark_overrides_a_label_of_the_same_page(hole_runs):
    store, a, b = hole_runs["store"], hole_runs["a"].run_id, hole_runs["b"].run_id
    comparison = compare_runs(store, a, b, permutations=PERMUTATIONS)
    text = hole_runs["dataset"].queries[0].text
    judgements.record(store, text, "api/tokens.md", 0, who="ana")  # q1's labelled page, marked not relevant
    result = what_if.what_if_judged(store, comparison, permutations=PERMUTATIONS)
    assert result.rescored == 1
    q1 = result.per_query.set_index("query_id").loc["q1"]
    assert q1["recall@10_a"] == q1["recall@10_b"] == 0.0  # its only relevant page is now judged not relevant
    assert comparison.per_query.set_index("query_id").loc["q1", "recall@10_a"] == 1.0
    assert what_if.rankings(store, load_per_query(store, a).head(1))["q1"] == ["api/tokens.md"]


@pytest.mark.parametrize(("p", "delta", "expected"), [(0.01, 0.2, "B better"), (0.01, -0.2, "B worse"),
                                                      (0.2, 0.3, "tie"), (0.01, 0.0, "tie"), (None, 0.1, "tie")])
def test_an_outcome_is_a_significant_win_loss_or_tie(p, delta, expected):
    assert what_if.outcome(p, delta) == expected
