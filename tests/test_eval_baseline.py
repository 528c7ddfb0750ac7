"""The BM25 baseline scores like rank-bm25's BM25Okapi over title + text with the core's tokenizer."""

from __future__ import annotations

import numpy as np
from rank_bm25 import BM25Okapi

from eval.baseline import BM25Baseline
from retrieval.text.analysis import tokenize
from tests.eval_helpers import DOCS


def test_baseline_scores_equal_rank_bm25(corpus):
    baseline = BM25Baseline.build(corpus)
    reference = BM25Okapi([tokenize(f"{d['title']} {d['text']}") for d in DOCS])
    for query in ("heart disease", "bone density vitamin", "sleep sleep exercise"):
        ours = baseline.index.scores(tokenize(query))
        assert np.allclose(ours, reference.get_scores(tokenize(query)))


def test_baseline_ranks_by_score_and_drops_non_matching_documents(corpus):
    baseline = BM25Baseline.build(corpus)
    scores = dict(zip("abcd", baseline.index.scores(tokenize("strength density vitamin")), strict=True))
    assert baseline.search("strength density vitamin", top_k=10) == sorted(
        (s for s in scores if scores[s] > 0), key=lambda s: -scores[s])
    assert baseline.search("strength density vitamin", top_k=10) == ["a", "d"]
    assert baseline.search("strength density vitamin", top_k=1) == ["a"]
    assert baseline.search("unrelated words", top_k=10) == []
