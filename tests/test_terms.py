"""Integer term counting gives exactly what `text.analyze` counts, block by block."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from retrieval.l1 import terms
from retrieval.text.analysis import analyze, tokenize

TEXTS = ["The quick brown fox jumps over the lazy dog", "quick quick fox", "", "dog lazy dog lazy",
         "Brown fox, brown FOX!"] * 7


@pytest.mark.parametrize("block", [1, 3, 1000])
def test_counts_equal_analyze_per_chunk_and_per_page(monkeypatch, block):
    monkeypatch.setattr(terms, "BLOCK_TEXTS", block)
    pages = np.repeat(np.arange(7), 5)
    counted = terms.count_terms(TEXTS, pages, 7)
    n = len(counted.unigrams)

    def name(column: int) -> str:
        if column < n:
            return counted.unigrams[column]
        first, second = divmod(int(counted.pair_keys[column - n]), n)
        return f"{counted.unigrams[first]}_{counted.unigrams[second]}"

    for row, text in enumerate(TEXTS):
        chunk = counted.chunks.getrow(row)
        assert {counted.unigrams[j]: v for j, v in zip(chunk.indices, chunk.data, strict=True)} == \
            dict(Counter(tokenize(text)))
    for page in range(7):
        expected = Counter(t for i, text in enumerate(TEXTS) if pages[i] == page for t in analyze(text))
        row = counted.pages.getrow(page)
        assert {name(j): v for j, v in zip(row.indices, row.data, strict=True)} == dict(expected)


def test_pages_out_of_order_are_counted_in_one_block(monkeypatch):
    monkeypatch.setattr(terms, "BLOCK_TEXTS", 1)
    counted = terms.count_terms(["alpha beta", "beta gamma", "alpha beta"], np.asarray([0, 1, 0]), 2)
    assert counted.pages.getrow(0).sum() == 6  # alpha, beta twice each plus the pair alpha_beta twice
    assert counted.pages.getrow(1).sum() == 3


def test_query_terms_find_words_and_pairs_through_the_term_index():
    from retrieval.kb.model import Chunk
    from retrieval.l1 import L1Index, QueryTerms

    segment = L1Index([Chunk("a.md", 0, "A", "", "quick brown fox", ())]).segments[0]
    index, n = segment.vocabulary, len(segment.vocabulary)
    query = QueryTerms.of("the quick brown cat")
    word_ids, pair_columns = segment.columns(query)
    assert {word for word, i in zip(query.words, word_ids.tolist(), strict=True) if i >= 0} == {"quick", "brown"}
    assert pair_columns.tolist() == [n + 0, -1]  # the pair quick_brown, not brown_cat
    assert index.get("cat") == -1 and "fox" in index
