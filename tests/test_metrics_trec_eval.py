"""Our ranking metrics against trec_eval itself (pytrec_eval, its Python binding), on random graded qrels and
rankings (issue 34): every family, cut-offs beyond the ranking's length, queries with no relevant page, grades
0-3 and duplicated ids.

Conventions, stated here as in docs/evaluation.md: we score the order the lookup returned; trec_eval re-sorts a
run by score and breaks ties by document id (descending), so the run handed to it gets strictly decreasing
scores in our order and both see one order. A ranked id seen twice counts once, at its first position: the run
handed to trec_eval holds each id once. MRR@k is trec_eval's recip_rank over the first k; Hit@k its success.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval import metrics

pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier (a dev extra) is not installed")

DOCS = [f"d{i}" for i in range(12)]
CASES = int(os.environ.get("TREC_EVAL_CASES", "2000"))  # 100000 once: docs/evaluation.md


def _trec(ranked: list[str], qrels: dict[str, int], k: int) -> dict[str, float]:
    unique = list(dict.fromkeys(ranked))
    run = {"q": {doc: float(len(unique) - rank) for rank, doc in enumerate(unique)}}
    cut = {"q": {doc: float(len(unique) - rank) for rank, doc in enumerate(unique[:k])}}
    judged = {"q": {doc: int(grade) for doc, grade in qrels.items()}}
    full = pytrec_eval.RelevanceEvaluator(judged, {f"ndcg_cut.{k}", f"map_cut.{k}", f"P.{k}", f"recall.{k}",
                                                   f"success.{k}"}).evaluate(run)["q"]
    first_k = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(cut)["q"]
    return {"ndcg": full[f"ndcg_cut_{k}"], "map": full[f"map_cut_{k}"], "p": full[f"P_{k}"],
            "recall": full[f"recall_{k}"], "hit": full[f"success_{k}"], "mrr": first_k["recip_rank"]}


@settings(max_examples=CASES, deadline=None, derandomize=True)
@given(ranked=st.lists(st.sampled_from(DOCS), min_size=1, max_size=10),
       qrels=st.dictionaries(st.sampled_from(DOCS), st.integers(min_value=0, max_value=3), min_size=1, max_size=8),
       k=st.integers(min_value=1, max_value=20))
def test_every_metric_family_equals_trec_eval(ranked, qrels, k):
    expected = _trec(ranked, qrels, k)
    for family, value in expected.items():
        ours = metrics.FUNCTIONS[family](ranked, qrels, k)
        assert ours == pytest.approx(value, abs=1e-9), (family, ranked, qrels, k, ours, value)


def test_the_comparison_covers_the_cases_that_go_wrong_elsewhere():
    """Fixed cases: a cut-off past the ranking, duplicates (no recall above 1), no relevant page, graded gains."""
    assert _trec(["d1"], {"d1": 1, "d2": 1}, 10)["p"] == metrics.precision(["d1"], {"d1": 1, "d2": 1}, 10) == 0.1
    assert metrics.recall(["d1", "d1", "d1"], {"d1": 1}, 3) == _trec(["d1", "d1", "d1"], {"d1": 1}, 3)["recall"] == 1
    assert metrics.ndcg(["d1"], {"d1": 0, "d2": 0}, 5) == _trec(["d1"], {"d1": 0, "d2": 0}, 5)["ndcg"] == 0
    graded = {"d1": 1, "d2": 3}
    assert metrics.ndcg(["d1", "d2"], graded, 2) == pytest.approx(_trec(["d1", "d2"], graded, 2)["ndcg"])
