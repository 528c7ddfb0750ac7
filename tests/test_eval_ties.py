"""Issue 34, item 5: ties. Per query, a metric's range over every order of the documents with equal scores and
its expectation over random orders; per run, the reported mean beside that expectation, flagged in the CLI and
the reports when they differ by more than 0.005."""

from __future__ import annotations

import itertools
import random

import pytest

from eval import cli
from eval.datasets import load_dataset
from eval.imported import import_run
from eval.metrics import parse_metrics
from eval.reports import render
from eval.ties import FLAG_AT, tie_groups, tie_ranges, ties_sentence, ties_summary
from retrieval.paths import PROJECT_ROOT

ALL = parse_metrics(["ndcg@3", "p@2", "recall@3", "mrr@5", "map@5", "hit@1"])


def _every_order(ranked, scores, qrels, metric):
    """The metric over every order of the tied documents: brute force, to check the bounds and expectation."""
    groups = tie_groups(scores)
    values = []
    for perms in itertools.product(*(itertools.permutations([ranked[p] for p in g]) for g in groups)):
        order = list(ranked)
        for positions, docs in zip(groups, perms, strict=True):
            for position, doc in zip(positions, docs, strict=True):
                order[position] = doc
        values.append(metric(order, qrels))
    return values


def test_tie_groups_are_the_positions_that_share_a_score():
    assert tie_groups([3.0, 2.0, 2.0, 1.0, 2.0, None, None]) == [[1, 2, 4]]
    assert tie_groups([3.0, 2.0, 1.0]) == []


def test_a_relevant_page_tied_for_first_gives_mrr_a_range_and_its_expectation():
    found = tie_ranges(["a", "b", "c"], [1.0, 1.0, 0.5], {"b": 1}, parse_metrics(["mrr@10", "p@1", "ndcg@10"]))
    assert found["mrr@10"].to_list() == [0.5, 1.0, 0.75, 0.5]
    assert found["p@1"].to_list() == [0.0, 1.0, 0.5, 0.0]
    assert set(found) == {"mrr@10", "p@1", "ndcg@10"}


def test_ties_among_equally_graded_pages_change_nothing():
    assert tie_ranges(["a", "b", "c"], [1.0, 1.0, 0.5], {"a": 1, "b": 1}, ALL) == {}  # two relevant pages tie
    assert tie_ranges(["a", "b", "c", "d"], [2.0, 1.0, 0.5, 0.5], {"a": 1}, ALL) == {}  # two unjudged pages tie
    assert tie_ranges(["a", "b", "c"], [1.0, 1.0, 1.0], {"a": 1, "b": 1}, ALL) != {}  # c may come first


@pytest.mark.parametrize("seed", range(40))
def test_the_range_and_expectation_equal_brute_force_over_every_tie_order(seed):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(7)]
    scores = [float(rng.choice([1, 2, 2, 3, 3, 3])) for _ in docs]
    qrels = {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(docs, 4)}
    if not any(g > 0 for g in qrels.values()):
        qrels[docs[0]] = 1
    found = tie_ranges(docs, scores, qrels, ALL, seed=str(seed))
    for metric in ALL:
        values = _every_order(docs, scores, qrels, metric)
        if max(values) - min(values) <= 1e-12:
            assert metric.name not in found
            continue
        got = found[metric.name]
        assert (got.low, got.high) == (pytest.approx(min(values)), pytest.approx(max(values)))
        exact = sum(values) / len(values)
        assert got.expected == pytest.approx(exact, abs=1e-9), metric.name  # 7 documents: every order is scored
        assert got.reported == pytest.approx(metric(docs, qrels))


def test_a_run_flags_a_metric_whose_reported_mean_is_off_its_tie_expectation():
    ranges = [{"mrr@10": [0.5, 1.0, 0.75, 1.0]}, {}, None]
    summary = ties_summary(ranges, {"mrr@10": 0.8, "p@10": 0.1})
    assert summary["metrics"]["mrr@10"]["expected"] == pytest.approx(0.8 + (0.75 - 1.0) / 3, abs=1e-4)
    assert summary["metrics"]["p@10"]["queries_affected"] == 0
    assert summary["flagged"] == ["mrr@10"] and summary["queries_affected"] == 1
    assert "FLAGGED" in ties_sentence(summary)
    small = ties_summary([{"mrr@10": [0.99, 1.0, 0.995, 1.0]}] + [{}] * 9, {"mrr@10": 0.9})
    assert small["flagged"] == [] and abs(small["metrics"]["mrr@10"]["expected"] - 0.9) <= FLAG_AT


def test_a_tie_too_large_to_enumerate_is_sampled_with_a_fixed_seed():
    docs = [f"d{i}" for i in range(12)]  # 12! orders: sampled
    scores, qrels = [1.0] * 12, {"d3": 1, "d7": 2}
    first = tie_ranges(docs, scores, qrels, parse_metrics(["mrr@10"]), seed="q")["mrr@10"]
    assert first == tie_ranges(docs, scores, qrels, parse_metrics(["mrr@10"]), seed="q")["mrr@10"]
    # E[RR] of the first of 2 relevant among 12 at random: sum over r of P(first at r) / r
    exact = sum((2 * (12 - r) / (12 * 11)) / r for r in range(1, 11))
    assert first.expected == pytest.approx(exact, abs=0.03) and (first.low, first.high) == (0.0, 1.0)  # 11th, 12th


def test_an_imported_run_with_tied_scores_is_flagged_in_its_report_and_summary(store, tmp_path, capsys):
    """Every page tied at one score: the order trec_eval picks (docid descending) is one of many."""
    dataset = load_dataset(PROJECT_ROOT / "data")
    pages = sorted({d for q in dataset.queries for d in q.qrels})
    lines = [f"{q.id} Q0 {page} {rank} 1.0 flat" for q in dataset.queries for rank, page in enumerate(pages, 1)]
    path = tmp_path / "flat.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = import_run(store, dataset, path, name="flat", metrics=["mrr@10", "recall@100"])
    ties = result.diagnostics["ties"]
    assert "mrr@10" in ties["flagged"]
    assert ties["metrics"]["recall@100"]["queries_affected"] == 0  # every page is in the top 100 whatever the order
    assert ties["metrics"]["mrr@10"]["low"] <= ties["metrics"]["mrr@10"]["expected"] <= ties["metrics"]["mrr@10"][
        "high"]
    report = render(result, "markdown")
    assert "## Ties" in report and "FLAGGED" in report
    assert cli.main(["import-run", str(path), "--name", "flat", "--dataset", str(PROJECT_ROOT / "data"),
                     "--traces", str(store.path), "--metrics", "mrr@10"]) == 0
    assert "FLAGGED" in capsys.readouterr().out


def test_a_lookup_run_stores_each_questions_ranking_scores_and_tie_ranges(eval_dataset, store):
    from eval import runs
    from retrieval import LookupConfig

    result = runs.run_evaluation(eval_dataset, LookupConfig(svd_dims=8), store=store, metrics=["ndcg@5"],
                                 oracle=False, attribute=False)
    row = result.per_query.iloc[0]
    assert row["ranked"][:10] == row["top_sources"] and len(row["ranked_scores"]) == len(row["ranked"])
    assert row["ranked_scores"] == sorted(row["ranked_scores"], reverse=True)
    assert isinstance(row["tie_ranges"], dict)
    assert "ties" in result.diagnostics and "skipped" not in result.diagnostics["ties"]
