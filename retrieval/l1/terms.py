"""L1's term counts, built with integer ids: unigrams per chunk, unigrams plus adjacent pairs per page.

The terms are exactly `text.analyze`'s (Snowball-stemmed unigrams, stop words out, adjacent pairs), but
counted without building a string per pair: each distinct surface word is stemmed once, pairs are
`first * n_unigrams + second` in an int64 array, and counting is numpy's. scikit-learn's CountVectorizer
over `analyze` was slower, and its vocabulary of pair strings slowed the SVD too (docs/l1.md).
"""

from __future__ import annotations

import hashlib
import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from retrieval.l1.count_parts import csr_of_parts, packed_counts
from retrieval.storage.heap import release_freed_memory
from retrieval.text.analysis import STEMMER, STOP_WORDS, WORD

_UNSEEN = -2
_STOP = -1


@dataclass(frozen=True, eq=False)
class TermCounts:
    """Counts of one corpus: `chunks` (chunk x unigram) and `pages` (page x unigram-then-pair)."""

    unigrams: tuple[str, ...]
    pair_keys: np.ndarray  # sorted int64 keys first * len(unigrams) + second, one per pair column
    chunks: Any  # scipy.sparse.csr_matrix
    pages: Any  # scipy.sparse.csr_matrix
    surface: SurfaceWords | None = None  # with `surface`: every text's case-folded words


@dataclass(frozen=True, eq=False)
class SurfaceWords:
    """Every text's case-folded words, stop words included: text i's are `words[ids[starts[i]:starts[i + 1]]]`."""

    words: tuple[str, ...]  # every distinct word, in first-seen order
    ids: np.ndarray  # int32, all texts' word ids end to end
    starts: np.ndarray  # int64, where each text's ids start (one more entry than texts)


class TermCounter:
    """Maps surface words to ids (each distinct case-folded word once, stop words included) and each
    surface word to its unigram id (stemming each distinct word once), growing the vocabulary."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.words: dict[str, int] = {}  # case-folded word -> surface id, in first-seen order
        self.unigram_of_word: list[int] = []  # surface id -> unigram id, or _STOP

    def word_ids(self, text: str) -> np.ndarray:
        """Surface ids of `text`'s words in order (stop words too): one dictionary lookup per word."""
        words = WORD.findall(unicodedata.normalize("NFKC", text).casefold())
        ids = np.fromiter(map(self.words.get, words, repeat(_UNSEEN)), dtype=np.int32, count=len(words))
        for position in np.flatnonzero(ids == _UNSEEN).tolist():
            ids[position] = self._learn(words[position])
        return ids

    def _learn(self, word: str) -> int:
        known = self.words.get(word)
        if known is not None:
            return known
        self.unigram_of_word.append(_STOP if word in STOP_WORDS else self.vocabulary.setdefault(
            STEMMER.stemWord(word), len(self.vocabulary)))
        return self.words.setdefault(word, len(self.words))


BLOCK_TEXTS = 50_000  # texts counted at a time: bounds the temporary arrays at 1M chunks


def count_terms(texts: Iterable[str], page_of_text: np.ndarray, n_pages: int,
                progress: Callable[[float], None] | None = None, *, surface: bool = False) -> TermCounts:
    """Unigram counts per text and unigram-plus-pair counts per page (pairs never cross texts); `progress`
    gets the share of blocks counted. With `surface`, also every text's case-folded words in order (stop
    words included, nothing stemmed: what L1's static part embeds), from the same pass over the texts.

    Counting goes block by block (blocks end where a page ends), each (row, term) pair packed into one
    int64 and counted by sorting, so the peak memory follows a block, not the corpus.
    """
    counter = TermCounter()
    surface_flat, word_lengths = _word_ids(counter, texts)
    word_starts = np.r_[0, np.cumsum(word_lengths)]
    del word_lengths
    flat, lengths = _kept_unigrams(surface_flat, word_starts, np.asarray(counter.unigram_of_word, dtype=np.int32))
    words = SurfaceWords(tuple(counter.words), surface_flat, word_starts) if surface else None
    del surface_flat
    n_unigrams = len(counter.vocabulary)
    starts = np.r_[0, np.cumsum(lengths)]
    pages = np.asarray(page_of_text, dtype=np.int64)
    blocks = _blocks(pages)
    pair_keys = _distinct(np.concatenate([_distinct(_pairs(flat, starts, a, b, n_unigrams)[0])
                                          for a, b in blocks] or [np.empty(0, dtype=np.int64)]))
    n_columns = n_unigrams + pair_keys.size
    chunk_parts, page_parts = [], []
    for done, (a, b) in enumerate(blocks, start=1):
        tokens = flat[starts[a]:starts[b]].astype(np.int64)
        rows = np.repeat(np.arange(a, b, dtype=np.int64), lengths[a:b])
        chunk_parts.append(packed_counts(rows, tokens, n_unigrams))
        keys, pair_rows = _pairs(flat, starts, a, b, n_unigrams)
        columns = n_unigrams + np.searchsorted(pair_keys, keys)
        page_parts.append(packed_counts(np.concatenate([pages[rows], pages[pair_rows]]),
                                         np.concatenate([tokens, columns]), n_columns))
        del tokens, rows, keys, pair_rows, columns
        release_freed_memory(b - a)  # the block's temporaries, freed between the parts kept: back to the system
        if progress is not None:
            progress(done / len(blocks))
    unigrams = tuple(sorted(counter.vocabulary, key=counter.vocabulary.__getitem__))
    return TermCounts(unigrams, pair_keys, csr_of_parts(chunk_parts, (len(lengths), n_unigrams)),
                      csr_of_parts(page_parts, (n_pages, n_columns)), words)


def _word_ids(counter: TermCounter, texts: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's surface word ids end to end (int32) and each text's number of words, appended to one
    growing buffer: an array per text, then joined, held 1M small arrays and then their copy."""
    buffer = array("i")  # C int: int32 on every platform numpy supports here
    lengths = array("q")
    for text in texts:
        ids = counter.word_ids(text)
        buffer.frombytes(ids.tobytes())
        lengths.append(ids.size)
    return np.frombuffer(buffer, dtype=np.int32) if buffer else np.empty(0, dtype=np.int32), \
        np.frombuffer(lengths, dtype=np.int64) if lengths else np.empty(0, dtype=np.int64)


def _kept_unigrams(surface: np.ndarray, word_starts: np.ndarray, unigram_of_word: np.ndarray) -> tuple[np.ndarray,
                                                                                                       np.ndarray]:
    """Every text's unigram ids end to end (stop words left out) and how many each text keeps, a block of
    texts at a time: mapping and filtering every word at once held two more copies of them at 1M chunks."""
    n_texts = word_starts.size - 1
    lengths = np.empty(n_texts, dtype=np.int64)
    flat = np.empty(surface.size, dtype=np.int32)  # an upper bound; only the pages written become memory
    at = 0
    for start in range(0, n_texts, BLOCK_TEXTS):
        end = min(start + BLOCK_TEXTS, n_texts)
        base = int(word_starts[start])
        mapped = unigram_of_word[surface[base:word_starts[end]]]
        kept = mapped >= 0
        before = np.r_[0, np.cumsum(kept, dtype=np.int64)]
        lengths[start:end] = before[word_starts[start + 1:end + 1] - base] - before[word_starts[start:end] - base]
        taken = mapped[kept]
        flat[at:at + taken.size] = taken
        at += taken.size
    return flat[:at], lengths


def _blocks(pages: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) text ranges of about BLOCK_TEXTS, cut where a page ends; one block unless every page's
    texts are contiguous and in order (then no (page, term) pair is split between blocks)."""
    n = pages.size
    if n == 0:
        return []
    if np.any(np.diff(pages) < 0):
        return [(0, n)]
    ends = np.flatnonzero(np.r_[pages[1:] != pages[:-1], True]) + 1  # where each page's texts end
    blocks, start = [], 0
    while start < n:
        end = int(ends[min(np.searchsorted(ends, start + BLOCK_TEXTS), ends.size - 1)])
        blocks.append((start, end))
        start = end
    return blocks


def _pairs(flat: np.ndarray, starts: np.ndarray, a: int, b: int, n_unigrams: int) -> tuple[np.ndarray, np.ndarray]:
    """Adjacent pair keys (first * n_unigrams + second) of texts a..b, and the text each is in."""
    tokens = flat[starts[a]:starts[b]].astype(np.int64)
    rows = np.repeat(np.arange(a, b, dtype=np.int64), np.diff(starts[a:b + 1]))
    same = rows[1:] == rows[:-1]
    return tokens[:-1][same] * n_unigrams + tokens[1:][same], rows[:-1][same]


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values, by sorting: numpy 2's hash-based `np.unique` is slower here."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if ordered.size else ordered


def vocabulary_of(unigrams: Sequence[str]) -> dict[str, int]:
    """term -> id for a stored unigram list."""
    return dict(zip(unigrams, range(len(unigrams)), strict=True))


def term_hash(term: str) -> int:
    """A stable 63-bit hash of a term (BLAKE2b), the same in every process."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little") >> 1


class TermIndex:
    """term -> id over a stored vocabulary, with no dict to build at load: hashes sorted once at build,
    a binary search per query term, and the stored string compared so a hash collision cannot match."""

    def __init__(self, terms: Sequence[str], hashes: np.ndarray, ids: np.ndarray) -> None:
        self._terms, self._hashes, self._ids = terms, hashes, ids
        # searched through memoryviews, which give Python ints: numpy's searchsorted is slow on one scalar
        self._hash_view = memoryview(np.ascontiguousarray(hashes, dtype=np.int64))
        self._id_view = memoryview(np.ascontiguousarray(ids, dtype=np.int64))

    @classmethod
    def of(cls, terms: Sequence[str]) -> TermIndex:
        hashes = np.fromiter((term_hash(t) for t in terms), dtype=np.int64, count=len(terms))
        order = np.argsort(hashes, kind="stable")
        return cls(terms, hashes[order], order.astype(np.int64))

    @property
    def hashes(self) -> np.ndarray:
        return self._hashes

    @property
    def ids(self) -> np.ndarray:
        return self._ids

    def __len__(self) -> int:
        return len(self._terms)

    def get(self, term: str, default: int = -1) -> int:
        key = term_hash(term)
        hashes = self._hash_view
        position = bisect_left(hashes, key)
        while position < len(hashes) and hashes[position] == key:
            term_id = self._id_view[position]
            if self._terms[term_id] == term:
                return term_id
            position += 1
        return default

    def __contains__(self, term: str) -> bool:
        return self.get(term) >= 0
