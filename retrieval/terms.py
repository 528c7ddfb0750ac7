"""L1's term counts, built with integer ids: unigrams per chunk, unigrams plus adjacent pairs per page.

The terms are exactly `text.analyze`'s (Snowball-stemmed unigrams, stop words out, adjacent pairs), but
counted without building a string per pair: each distinct surface word is stemmed once, pairs are
`first * n_unigrams + second` in an int64 array, and counting is numpy's. On 100k chunks of man pages
this is what keeps the build inside its 30 s budget (scikit-learn's CountVectorizer over `analyze`
spent 36 s there, and its 2.2M-string vocabulary cost the SVD more).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from .text import _STEMMER, _WORD, STOP_WORDS, tokenize

_UNSEEN = -2
_STOP = -1


@dataclass(frozen=True, eq=False)
class TermCounts:
    """Counts of one corpus: `chunks` (chunk x unigram) and `pages` (page x unigram-then-pair)."""

    unigrams: tuple[str, ...]
    pair_keys: np.ndarray  # sorted int64 keys first * len(unigrams) + second, one per pair column
    chunks: Any  # scipy.sparse.csr_matrix
    pages: Any  # scipy.sparse.csr_matrix


class TermCounter:
    """Maps surface words to unigram ids (stemming each distinct word once), growing the vocabulary."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self._word_ids: dict[str, int] = {}

    def ids(self, text: str) -> np.ndarray:
        """Unigram ids of `text` in order, stop words left out: `tokenize(text)` as ids."""
        words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
        ids = np.fromiter(map(self._word_ids.get, words, repeat(_UNSEEN)), dtype=np.int32, count=len(words))
        unseen = np.flatnonzero(ids == _UNSEEN)
        for position in unseen.tolist():
            ids[position] = self._learn(words[position])
        return ids[ids >= 0]

    def _learn(self, word: str) -> int:
        known = self._word_ids.get(word)
        if known is not None:
            return known
        term_id = _STOP if word in STOP_WORDS else self.vocabulary.setdefault(
            _STEMMER.stemWord(word), len(self.vocabulary))
        self._word_ids[word] = term_id
        return term_id


def count_terms(texts: Iterable[str], page_of_text: np.ndarray, n_pages: int) -> TermCounts:
    """Unigram counts per text and unigram-plus-pair counts per page (pairs never cross texts)."""
    counter = TermCounter()
    pieces = [counter.ids(text) for text in texts]
    lengths = np.fromiter((p.size for p in pieces), dtype=np.int64, count=len(pieces))
    flat = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int32)
    del pieces
    n_texts, n_unigrams = lengths.size, len(counter.vocabulary)
    row_of = np.repeat(np.arange(n_texts, dtype=np.int32), lengths)
    chunks = _counts(row_of, flat, (n_texts, n_unigrams))
    same_text = row_of[1:] == row_of[:-1]
    pair_keys = flat[:-1][same_text].astype(np.int64) * n_unigrams + flat[1:][same_text]
    keys, pair_columns = np.unique(pair_keys, return_inverse=True)
    page_rows = page_of_text.astype(np.int32)[row_of]
    pages = _counts(np.concatenate([page_rows, page_rows[:-1][same_text]]),
                    np.concatenate([flat, n_unigrams + pair_columns.ravel()]), (n_pages, n_unigrams + keys.size))
    unigrams = tuple(sorted(counter.vocabulary, key=counter.vocabulary.__getitem__))
    return TermCounts(unigrams, keys, chunks, pages)


def query_terms(query: str, vocabulary: dict[str, int], pair_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The query's known term ids (unigram ids, then pair columns after them) and their counts."""
    n_unigrams = len(vocabulary)
    ids = np.asarray([vocabulary.get(s, -1) for s in tokenize(query)], dtype=np.int64)
    both = (ids[:-1] >= 0) & (ids[1:] >= 0)  # unknown words stay in place: no pair spans them
    keys = ids[:-1][both] * n_unigrams + ids[1:][both]
    pair_columns = np.empty(0, dtype=np.int64)
    if keys.size and pair_keys.size:
        position = np.minimum(np.searchsorted(pair_keys, keys), pair_keys.size - 1)
        pair_columns = position[pair_keys[position] == keys]
    terms, counts = np.unique(np.concatenate([ids[ids >= 0], n_unigrams + pair_columns]), return_counts=True)
    return terms, counts.astype(np.float64)


def vocabulary_of(unigrams: Sequence[str]) -> dict[str, int]:
    """term -> id for a stored unigram list."""
    return dict(zip(unigrams, range(len(unigrams)), strict=True))


def _counts(rows: np.ndarray, columns: np.ndarray, shape: tuple[int, int]) -> Any:
    from scipy import sparse

    matrix = sparse.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, columns)), shape=shape)
    matrix.sum_duplicates()
    return matrix
