"""Ranking metrics against values computed by hand, and metric-name parsing."""

from __future__ import annotations

from math import log2

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eval import metrics

RANKED = ["d1", "d2", "d3", "d4", "d5"]
QRELS = {"d2": 1, "d4": 1, "d9": 1}  # d9 is relevant but never retrieved


@pytest.mark.parametrize(("name", "expected"), [
    ("p@5", 2 / 5), ("p@2", 1 / 2), ("p@10", 2 / 10),
    ("recall@5", 2 / 3), ("recall@2", 1 / 3), ("recall@1", 0.0),
    ("mrr@5", 1 / 2), ("mrr@1", 0.0),
    ("hit@1", 0.0), ("hit@2", 1.0),
    ("map@5", (1 / 2 + 2 / 4) / 3), ("map@3", (1 / 2) / 3),
    ("ndcg@5", (1 / log2(3) + 1 / log2(5)) / (1 + 1 / log2(3) + 1 / log2(4))),
    ("ndcg@2", (1 / log2(3)) / (1 + 1 / log2(3))),
])
def test_metric_matches_hand_computed_value(name, expected):
    assert metrics.parse_metric(name)(RANKED, QRELS) == pytest.approx(expected)


def test_ndcg_uses_graded_relevance_with_linear_gain():
    # DCG = 1/log2(2) + 2/log2(3); ideal order a, b: 2/log2(2) + 1/log2(3)
    assert metrics.ndcg(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx((1 + 2 / log2(3)) / (2 + 1 / log2(3)))
    assert metrics.ndcg(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(0.859719, abs=1e-6)


def test_ndcg_ideal_ranking_scores_one():
    assert metrics.ndcg(["a", "b", "x"], {"a": 2, "b": 1}, 3) == pytest.approx(1.0)


@pytest.mark.parametrize("family", sorted(metrics.FUNCTIONS))
def test_query_without_relevant_documents_scores_zero(family):
    assert metrics.FUNCTIONS[family](["d1", "d2"], {}, 10) == 0.0
    assert metrics.FUNCTIONS[family](["d1", "d2"], {"d1": 0}, 10) == 0.0


@pytest.mark.parametrize("family", sorted(metrics.FUNCTIONS))
def test_empty_ranking_scores_zero(family):
    assert metrics.FUNCTIONS[family]([], {"d1": 1}, 10) == 0.0


def test_duplicate_ids_count_once_at_their_first_position():
    ranked = ["d2", "d2", "d4"]
    qrels = {"d2": 1, "d4": 1}
    assert metrics.recall(ranked, qrels, 3) == pytest.approx(1.0)
    assert metrics.precision(ranked, qrels, 3) == pytest.approx(2 / 3)
    assert metrics.ndcg(ranked, qrels, 3) == pytest.approx(1.0)
    assert metrics.average_precision(ranked, qrels, 3) == pytest.approx(1.0)
    # the duplicate does not take a cutoff slot: d4 is still inside the top 2 distinct ids
    assert metrics.recall(ranked, qrels, 2) == pytest.approx(1.0)


def test_zero_grade_is_not_relevant():
    assert metrics.reciprocal_rank(["d1", "d2"], {"d1": 0, "d2": 1}, 10) == pytest.approx(0.5)


def test_metric_names_are_parsed_once_case_insensitively():
    parsed = metrics.parse_metrics(["NDCG@10", "ndcg@10", "recall@100"])
    assert [m.name for m in parsed] == ["ndcg@10", "recall@100"]
    assert metrics.depth(parsed) == 100


@pytest.mark.parametrize("bad", ["foo@10", "ndcg", "ndcg@", "ndcg@0", "ndcg@x", "recall@5000"])
def test_unknown_or_malformed_metric_lists_the_known_ones(bad):
    with pytest.raises(ValueError, match="known metrics: ndcg@k, recall@k, mrr@k, map@k, hit@k, p@k"):
        metrics.parse_metric(bad)


def test_empty_metric_list_is_an_error():
    with pytest.raises(ValueError, match="no metrics"):
        metrics.parse_metrics([])


ids = st.lists(st.sampled_from([f"d{i}" for i in range(8)]), max_size=12)
grades = st.dictionaries(st.sampled_from([f"d{i}" for i in range(8)]), st.integers(0, 3), max_size=6)


@given(ranked=ids, qrels=grades, k=st.integers(1, 12))
def test_every_metric_is_between_zero_and_one_and_ignores_repeats(ranked, qrels, k):
    unique = list(dict.fromkeys(ranked))
    for family, function in metrics.FUNCTIONS.items():
        value = function(ranked, qrels, k)
        assert 0.0 <= value <= 1.0 + 1e-9, family
        assert value == pytest.approx(function(unique, qrels, k)), family
