"""Content gaps' topics: the unanswered questions as vectors, clustered, each topic named by its terms.

A question's vector joins two parts, each L2-normalised, weighed `LSA_SHARE` and 1 - `LSA_SHARE` of the squared
norm: its LSA vector in the knowledge base's own L1 space (`retrieval.l1.lsa_query_vectors`: what known subject it
is about) and its own terms (the L1 analysis's stemmed words, sublinear counts, a word no section of the base holds
weighing `UNKNOWN_BOOST` times as much). The second part is there because a question the base cannot answer is
often about words the base has never seen ("anomaly detection" in a base with no such page): the LSA projection
drops them, and only what the question shares with the base would be left to group it by.

Clustering (scikit-learn): MiniBatchKMeans with k = clamp(round(sqrt(distinct questions)), K_MIN, K_MAX), each
question weighed by how often it was asked, deliberately more clusters than topics; then AgglomerativeClustering
(average linkage, cosine) over those centroids merges the ones closer than `MERGE_DISTANCE` (one topic asked in
several phrasings, which k-means splits by phrasing). A question whose cosine with its topic's centroid is under
`MEMBER_MIN`, or in a topic of fewer than `min_size` questions, falls in no topic. Fixed `random_state`: two runs on
the same rows give the same topics. docs/traces.md (Content gaps) says why these choices and their limits.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.l1.query_vectors import known_terms, lsa_page_vectors, lsa_query_vectors
from retrieval.l1.search import L1Index
from retrieval.text.analysis import STOP_WORDS, tokenize

LSA_SHARE = 0.2  # share of a question vector's squared norm given to its LSA part (the rest: its own terms)
UNKNOWN_BOOST = 3.0  # how much more a word no section of the base holds weighs in the own-terms part
K_MIN, K_MAX = 8, 64  # MiniBatchKMeans' k: round(sqrt(distinct questions)), within these
MERGE_DISTANCE = 0.6  # centroids whose average cosine distance is below this are one topic (cosine above 0.4)
MEMBER_MIN = 0.25  # a question less similar than this to its topic's centroid is in no topic
MIN_SIZE = 3  # a topic holds at least this many questions (and MIN_SHARE of the window's)
MIN_SHARE = 0.002
RANDOM_STATE = 0
INIT_ROWS = 4096  # questions k-means++ picks its seeds from (a seeded sample)
BATCH = 2048
TERMS = 5  # distinctive terms kept per topic
OWN_TERMS = 1024  # words of the own-terms part: those in most questions (the rest are left out of the vectors)
WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True, eq=False)
class Clusters:
    """Per distinct question its topic (-1: none) and its cosine with the topic's centroid; per topic its
    centroid's LSA part (L2-normalised; zeros when its questions share no word with the base)."""

    labels: np.ndarray
    cosines: np.ndarray
    lsa_centroids: np.ndarray
    k: int  # k-means' k
    merged: int  # topics after the merge, before the size rule


def vectors(index: L1Index, texts: Sequence[str], weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 [len(texts), dims + own terms]: each question's LSA part and own-terms part, joined (see the
    module's docstring), unit rows (a question with no known word at all: zeros); and the LSA part alone. The
    own terms are the OWN_TERMS words in most questions (`weights`: how often each was asked)."""
    from scipy import sparse

    tokens = [tokenize(text) for text in texts]
    lsa = lsa_query_vectors(index, texts, tokens)
    asked_in: Counter = Counter()
    for words, weight in zip(tokens, weights.tolist(), strict=True):
        for word in set(words):
            asked_in[word] += weight
    own_terms = sorted(asked_in, key=lambda w: (-asked_in[w], w))[:OWN_TERMS]
    column = {word: n for n, word in enumerate(own_terms)}
    rows, columns, values = [], [], []
    for row, words in enumerate(tokens):
        for word, count in Counter(w for w in words if w in column).items():
            rows.append(row)
            columns.append(column[word])
            values.append(1.0 + math.log(count))
    own = sparse.csr_matrix((np.asarray(values, dtype=np.float32), (rows, columns)),
                            shape=(len(texts), len(own_terms))).toarray()
    if own_terms:
        own *= np.where(known_terms(index, own_terms), 1.0, UNKNOWN_BOOST).astype(np.float32)
    joined = np.hstack([lsa * np.float32(math.sqrt(LSA_SHARE)), unit_rows(own) * np.float32(math.sqrt(1 - LSA_SHARE))])
    return unit_rows(joined), lsa


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix` with each row scaled to norm 1 (rows of zeros stay zeros), float32."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def k_for(distinct: int) -> int:
    """MiniBatchKMeans' k for `distinct` questions: round(sqrt(n)) within [K_MIN, K_MAX], at most n."""
    return max(1, min(distinct, max(K_MIN, min(K_MAX, round(math.sqrt(distinct))))))


def cluster(matrix: np.ndarray, lsa: np.ndarray, weights: np.ndarray, asked_now: np.ndarray,
            min_size: int) -> Clusters:
    """Topics of the questions asked in the window (`asked_now`, weighed by `weights`); every other row (asked
    only before) is put in the topic whose centroid it is nearest, when as near as MEMBER_MIN."""
    from sklearn.cluster import AgglomerativeClustering, MiniBatchKMeans, kmeans_plusplus

    n = matrix.shape[0]
    labels, cosines = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.float32)
    has_words = np.abs(matrix).sum(axis=1) > 0  # a question with no word at all: no topic
    now = np.flatnonzero(asked_now & has_words)
    if now.size == 0:
        return Clusters(labels, cosines, np.zeros((0, lsa.shape[1]), np.float32), 0, 0)
    k = k_for(now.size)
    x, w = matrix[now], weights[now].astype(np.float64)
    first = np.zeros(now.size, dtype=np.int64)
    if k > 1:
        # k-means++ seeds from a capped sample in float64 (scikit-learn's float32 k-means++ upcasts its distances
        # block by block: 30x slower on 16k rows), then mini-batches over every question
        sample = np.sort(np.random.default_rng(RANDOM_STATE).permutation(now.size)[:INIT_ROWS])
        seeds, _ = kmeans_plusplus(x[sample].astype(np.float64), k, sample_weight=w[sample],
                                   random_state=RANDOM_STATE)
        kmeans = MiniBatchKMeans(n_clusters=k, init=seeds.astype(np.float32), n_init=1, random_state=RANDOM_STATE,
                                 batch_size=BATCH)
        first = kmeans.fit_predict(x, sample_weight=w)
        used = np.unique(first)
        if used.size > 1:
            merge = AgglomerativeClustering(n_clusters=None, distance_threshold=MERGE_DISTANCE, metric="cosine",
                                            linkage="average").fit(unit_rows(kmeans.cluster_centers_[used]))
            to_topic = np.full(k, -1, dtype=np.int64)
            to_topic[used] = merge.labels_
            first = to_topic[first]
    merged = int(first.max()) + 1
    cos_now = _similarities(x, _centroids(x, w, first, merged))[np.arange(now.size), first]
    first = np.where(cos_now >= MEMBER_MIN, first, -1)
    sizes = np.bincount(first[first >= 0], weights=w[first >= 0], minlength=merged)
    kept = np.flatnonzero(sizes >= min_size)
    kept = kept[np.lexsort((kept, -sizes[kept]))]  # by size, largest first (ties: first made)
    renumber = np.full(merged + 1, -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size)
    first = renumber[first]  # -1 stays -1 (renumber[-1] is the spare slot)
    centroids = _centroids(x, w, first, kept.size)  # of the members kept
    labels[now] = first
    if kept.size:
        cosines[now] = np.where(first >= 0, _similarities(x, centroids)[np.arange(now.size), np.maximum(first, 0)],
                                0.0)
    before = np.flatnonzero(~asked_now & has_words)
    if before.size and kept.size:
        sims = _similarities(matrix[before], centroids)
        best = sims.argmax(axis=1)
        near = sims[np.arange(before.size), best]
        labels[before] = np.where(near >= MEMBER_MIN, best, -1)
        cosines[before] = np.where(near >= MEMBER_MIN, near, 0.0)
    lsa_centroids = _centroids(lsa[now], w, first, kept.size)
    return Clusters(labels, cosines, lsa_centroids, k, merged)


def _similarities(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Cosines of unit rows `x` with unit `centroids`: rows x topics."""
    return x @ centroids.T


def _centroids(x: np.ndarray, w: np.ndarray, labels: np.ndarray, topics: int) -> np.ndarray:
    """Each topic's weighted mean of its rows of `x` (rows labelled -1 left out), L2-normalised."""
    from scipy import sparse

    if topics == 0:
        return np.zeros((0, x.shape[1]), dtype=np.float32)
    member = labels >= 0
    owners = sparse.csr_matrix((w[member], (labels[member], np.flatnonzero(member))), shape=(topics, x.shape[0]))
    return unit_rows(np.asarray(owners @ x, dtype=np.float32))


def surface_terms(text: str) -> list[str]:
    """The words a topic is named by: lower-case, unstemmed, stop words and one-letter words left out, and each
    adjacent pair of them ("anomaly detection")."""
    words = [w for w in WORD.findall(unicodedata.normalize("NFKC", text).casefold())
             if w not in STOP_WORDS and len(w) > 1 and not w.isdigit()]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


def topic_terms(texts: Sequence[str], weights: np.ndarray, labels: np.ndarray, topics: int) -> list[tuple[str, ...]]:
    """Each topic's distinctive terms by class-based TF-IDF (BERTopic's c-TF-IDF): a term's frequency in the
    topic's questions (weighed by how often each was asked) over the topic's term count, times log(1 + A / f),
    f its frequency in all the unanswered questions and A the mean term count of a class (the topics and the
    questions in none); up to TERMS, a word left out when a chosen pair holds it."""
    per_class = [Counter() for _ in range(topics + 1)]  # the last: questions in no topic
    for text, weight, label in zip(texts, weights.tolist(), labels.tolist(), strict=True):
        if weight <= 0:
            continue
        bag = per_class[label if label >= 0 else topics]
        for term in surface_terms(text):
            bag[term] += weight
    overall: Counter = Counter()
    for bag in per_class:
        overall.update(bag)
    sizes = [sum(bag.values()) for bag in per_class]
    mean_size = sum(sizes) / max(sum(1 for s in sizes if s), 1)
    named = []
    for topic in range(topics):
        bag, size = per_class[topic], sizes[topic] or 1
        scored = sorted(bag, key=lambda t: (-(bag[t] / size) * math.log(1 + mean_size / overall[t]), t))
        chosen: list[str] = []
        for term in scored:
            if len(chosen) == TERMS:
                break
            words = set(term.split())
            if len(words) == 1 and any(term in c.split() for c in chosen):
                continue  # a word a chosen pair holds
            if len(words) > 1 and words <= {w for c in chosen for w in c.split()} and \
                    all(c not in words for c in chosen):
                continue
            chosen = [c for c in chosen if not (len(c.split()) == 1 and c in words)] + [term]
        named.append(tuple(chosen))
    return named


def nearest_pages(index: L1Index, lsa_centroids: np.ndarray, top: int = 3) -> list[list[tuple[int, float]]]:
    """Per topic, the `top` pages whose LSA vector is nearest its centroid's LSA part: (page, cosine), best
    first, cosines above 0 only."""
    if lsa_centroids.shape[0] == 0 or not index.dimensions:
        return [[] for _ in range(lsa_centroids.shape[0])]
    scores = lsa_page_vectors(index) @ lsa_centroids.T  # pages x topics
    found = []
    for topic in range(lsa_centroids.shape[0]):
        column = scores[:, topic]
        order = np.lexsort((np.arange(column.size), -column))[:top]
        found.append([(int(p), float(column[p])) for p in order if column[p] > 0])
    return found
