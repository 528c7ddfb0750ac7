"""The vectors content gaps cluster: L1's own LSA query vectors made for many texts at once (the same as a lookup's),
page vectors, and the clustering rules (k, unknown words, determinism)."""

from __future__ import annotations

import json

import numpy as np

from retrieval.l1 import known_terms, lsa_page_vectors, lsa_query_vectors
from retrieval.paths import SAMPLE_QUERIES
from retrieval.traces import gaps_cluster
from retrieval.traces.gaps import distinct_questions, normalised


def _sample_questions() -> list[str]:
    return [json.loads(line)["text"] for line in SAMPLE_QUERIES.read_text(encoding="utf-8").splitlines() if line]


def test_batch_lsa_vectors_equal_the_lookups_query_vectors(gaps_index):
    l1 = gaps_index.l1
    texts = _sample_questions() + ["anomaly detection for latency", "zzz qqq", ""]
    batch = lsa_query_vectors(l1, texts)
    assert batch.shape == (len(texts), l1.dimensions) and batch.dtype == np.float32
    for text, row in zip(texts, batch, strict=True):
        one = l1.score(text).query_vector
        if one is None:
            assert not row.any(), text
        else:
            np.testing.assert_allclose(row, one, atol=1e-6, err_msg=text)


def test_page_vectors_are_unit_rows_nearest_their_own_text(gaps_index):
    l1 = gaps_index.l1
    pages = lsa_page_vectors(l1)
    assert pages.shape == (l1.n_pages, l1.dimensions)
    np.testing.assert_allclose(np.linalg.norm(pages, axis=1), 1.0, atol=1e-5)
    query = lsa_query_vectors(l1, ["install the agent on linux"])[0]
    assert l1.page_sources[int(np.argmax(pages @ query))].startswith("getting-started/install")


def test_known_terms_are_the_words_a_section_holds(gaps_index):
    assert known_terms(gaps_index.l1, ["agent", "anomali", "slack"]).tolist() == [True, False, True]


def test_k_grows_with_the_square_root_of_the_questions_within_bounds():
    assert gaps_cluster.k_for(3) == 3
    assert gaps_cluster.k_for(40) == gaps_cluster.K_MIN
    assert gaps_cluster.k_for(1_600) == 40
    assert gaps_cluster.k_for(1_000_000) == gaps_cluster.K_MAX


def test_a_word_the_base_lacks_weighs_more_than_one_it_has(gaps_index):
    matrix, lsa = gaps_cluster.vectors(gaps_index.l1, ["anomaly agent"], np.ones(1))
    own = matrix[0, lsa.shape[1]:]
    assert sorted(own[own > 0] / own[own > 0].min()) == [1.0, gaps_cluster.UNKNOWN_BOOST]
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-6)


def test_repeats_are_counted_by_normalised_text():
    import pandas as pd

    frame = pd.DataFrame({"query": ["Dark mode?", "dark  MODE", "dark mode!", "ansible"],
                          "created_at": pd.to_datetime(["2026-02-01", "2026-02-02", "2026-02-20", "2026-02-21"]),
                          "id": ["a", "b", "c", "d"]})
    asked = distinct_questions(frame, np.array([False, True, True, True]))
    assert normalised("Dark mode?") == "dark mode"
    at = asked.texts.index(next(t for t in asked.texts if normalised(t) == "dark mode"))
    assert asked.now[at] == 2 and asked.before[at] == 1 and asked.ids[at] == ["c", "b"]


def test_no_question_with_words_gives_no_topic(gaps_index):
    matrix, lsa = gaps_cluster.vectors(gaps_index.l1, ["???", "!!"], np.ones(2))
    clusters = gaps_cluster.cluster(matrix, lsa, np.ones(2), np.array([True, True]), 1)
    assert clusters.labels.tolist() == [-1, -1] and clusters.lsa_centroids.shape[0] == 0
