"""L1 as segments: a base (a full build's arrays, never rewritten) and at most one delta (the sections of the pages
added or edited since, in the base's fit), with tombstones over the base's pages an update removed or replaced.

Rows and pages are numbered across segments: the base's first, then the delta's. A query's terms are looked up in
each segment's own vocabulary, and weighed by statistics over the live rows of both (`QueryWeights`): the idf is
exact (the base's document frequencies, less the tombstoned rows', plus the delta's), the mean lengths BM25
normalises by are the base's until the next full build (the fit's, as the LSA idf is). docs/l1.md says why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from retrieval.l1.arrays import L1Arrays, bm25_idf
from retrieval.l1.terms import TermIndex
from retrieval.storage.text_column import TextColumn
from retrieval.text.analysis import tokenize


@dataclass(frozen=True, eq=False)
class Tombstones:
    """The base's pages an update removed (or replaced by a delta page), and the document frequencies their
    rows held: base column `columns[i]` lost `counts[i]` rows (sections) or pages (pages)."""

    pages: np.ndarray  # int64, sorted base page numbers
    section_columns: np.ndarray  # int64, sorted base unigram ids
    section_counts: np.ndarray  # int64
    page_columns: np.ndarray  # int64, sorted base page columns (unigrams, then pairs)
    page_counts: np.ndarray  # int64
    rows: int  # base rows the tombstoned pages hold

    @classmethod
    def none(cls) -> Tombstones:
        empty = np.empty(0, dtype=np.int64)
        return cls(empty, empty, empty, empty, empty, 0)

    def lost(self, columns: np.ndarray, sections: bool) -> np.ndarray:
        """How many rows (`sections`) or pages each base column in `columns` lost (-1: not a column, 0)."""
        known, counts = ((self.section_columns, self.section_counts) if sections
                         else (self.page_columns, self.page_counts))
        lost = np.zeros(columns.size, dtype=np.int64)
        if known.size and columns.size:
            at = np.minimum(np.searchsorted(known, columns), known.size - 1)
            hit = (known[at] == columns) & (columns >= 0)
            lost[hit] = counts[at[hit]]
        return lost


@dataclass(frozen=True, eq=False)
class Segment:
    """One segment's arrays, with its vocabulary and where its rows and pages start among all segments'."""

    arrays: L1Arrays
    first_row: int
    first_page: int

    @cached_property
    def vocabulary(self) -> TermIndex:
        a = self.arrays
        return TermIndex(TextColumn(a.unigram_blob, a.unigram_offsets), a.unigram_hashes, a.unigram_ids)

    @property
    def n_rows(self) -> int:
        return int(self.arrays.page_of_chunk.size)

    @property
    def n_pages(self) -> int:
        return int(self.arrays.page_row_starts.size - 1)

    def columns(self, terms: QueryTerms) -> tuple[np.ndarray, np.ndarray]:
        """Each query word's unigram id and each query pair's page column here (-1: this segment lacks it)."""
        vocabulary, keys = self.vocabulary, self.arrays.pair_keys
        n_unigrams = len(vocabulary)
        ids = {word: vocabulary.get(word) for word in terms.words}
        for first, second in terms.pairs:
            for word in (first, second):
                if word not in ids:
                    ids[word] = vocabulary.get(word)
        word_ids = np.fromiter((ids[w] for w in terms.words), dtype=np.int64, count=len(terms.words))
        pair_columns = np.full(len(terms.pairs), -1, dtype=np.int64)
        for i, (first, second) in enumerate(terms.pairs):
            a, b = ids[first], ids[second]
            if a >= 0 and b >= 0 and keys.size:
                key = a * n_unigrams + b
                at = int(np.searchsorted(keys, key))
                if at < keys.size and keys[at] == key:
                    pair_columns[i] = n_unigrams + at
        return word_ids, pair_columns

    def frequencies(self, columns: np.ndarray, sections: bool) -> np.ndarray:
        """How many rows (`sections`) or pages hold each column (0 where the column is -1)."""
        indptr = self.arrays.section_indptr if sections else self.arrays.page_indptr
        found = columns >= 0
        counts = np.zeros(columns.size, dtype=np.int64)
        counts[found] = indptr[columns[found] + 1] - indptr[columns[found]]
        return counts


@dataclass(frozen=True)
class QueryTerms:
    """A query's distinct stemmed words and adjacent word pairs, with their counts, in first-seen order."""

    words: tuple[str, ...]
    word_counts: np.ndarray  # float64
    pairs: tuple[tuple[str, str], ...]
    pair_counts: np.ndarray  # float64

    @classmethod
    def of(cls, query: str) -> QueryTerms:
        tokens = tokenize(query)
        words, pairs = Counter(tokens), Counter(zip(tokens, tokens[1:], strict=False))
        return cls(tuple(words), np.fromiter(words.values(), dtype=np.float64, count=len(words)),
                   tuple(pairs), np.fromiter(pairs.values(), dtype=np.float64, count=len(pairs)))


@dataclass(frozen=True, eq=False)
class QueryWeights:
    """A query's terms weighed over every segment's live rows: per segment, the unigram ids and weights of its
    lexical sum and the page columns and weights of its page sum; the base's unigram ids and counts of the words
    the LSA query vector is made of."""

    sections: tuple[tuple[np.ndarray, np.ndarray], ...]  # per segment: (unigram ids, weights), ids ascending
    pages: tuple[tuple[np.ndarray, np.ndarray], ...]  # per segment: (page columns, weights), columns ascending
    lsa_ids: np.ndarray  # base unigram ids of the query's live words, ascending
    lsa_counts: np.ndarray
    any_word: bool  # a query word some live row holds (else only pairs matched: pages score, sections do not)
    any_term: bool  # a query word or pair some live row or page holds

    @classmethod
    def of(cls, terms: QueryTerms, segments: tuple[Segment, ...], dead: Tombstones, *, k1: float,
           pair_weight: float) -> QueryWeights:
        columns = [segment.columns(terms) for segment in segments]
        base_words = columns[0][0]
        word_df = live_frequencies(segments, dead, [words for words, _ in columns], sections=True)
        page_df = live_frequencies(segments, dead, [np.r_[words, pairs] for words, pairs in columns], sections=False)
        live_rows = sum(s.n_rows for s in segments) - dead.rows
        live_pages = sum(s.n_pages for s in segments) - dead.pages.size
        word_idf = bm25_idf(word_df, live_rows)
        page_idf = bm25_idf(page_df, live_pages)
        word_live = word_df > 0
        bound = float(terms.word_counts[word_live] @ word_idf[word_live]) * (k1 + 1)
        word_weight = terms.word_counts * word_idf / bound if bound > 0 else np.zeros(word_idf.size)
        page_counts = np.r_[terms.word_counts, terms.pair_counts * pair_weight]
        page_weight = page_counts * page_idf
        page_live = page_df > 0
        sections, pages = [], []
        for word_ids, pair_columns in columns:
            sections.append(_ascending(word_ids, word_weight, word_live))
            pages.append(_ascending(np.r_[word_ids, pair_columns], page_weight, page_live))
        lsa = np.flatnonzero(word_live & (base_words >= 0))
        order = np.argsort(base_words[lsa], kind="stable")
        return cls(tuple(sections), tuple(pages), base_words[lsa][order], terms.word_counts[lsa][order],
                   bool(word_live.any()), bool(page_live.any() or word_live.any()))


def live_frequencies(segments: tuple[Segment, ...], dead: Tombstones, columns: list[np.ndarray], *,
                     sections: bool) -> np.ndarray:
    """How many live rows (`sections`) or pages hold each term: per term, its column in each segment (`columns[k]`,
    -1 where segment k lacks it), summed over the segments, less what the base's tombstoned rows held."""
    held = sum(s.frequencies(c, sections) for s, c in zip(segments, columns, strict=True))
    return held - dead.lost(columns[0], sections)


def _ascending(columns: np.ndarray, weights: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The columns a segment holds (>= 0) of live terms, ascending, with their weights (sums then add the
    terms in column order, as a single index always has)."""
    keep = (columns >= 0) & live
    order = np.argsort(columns[keep], kind="stable")
    return columns[keep][order], weights[keep][order]


@dataclass(frozen=True, eq=False)
class Delta:
    """What an update adds to an L1 base: the delta segment's arrays (None: no section added) and the base's
    tombstones."""

    arrays: L1Arrays | None
    dead: Tombstones
