"""L0: BM25Okapi over entry titles, keywords, categories and entities; turns matches into hints.

Scores equal rank-bm25's `BM25Okapi.get_scores` (same idf with epsilon floor, same length normalisation) but
come from a precomputed sparse term-weight matrix: a query is a column slice and a dot product, not a loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import numpy as np

from retrieval.kb.model import Entry
from retrieval.l0.arrays import L0Arrays, build_arrays
from retrieval.l1.postings import postings_sum
from retrieval.l1.terms import TermIndex
from retrieval.lookup.domains import DomainVote
from retrieval.storage.text_column import TextColumn
from retrieval.text.analysis import tokenize


@dataclass(frozen=True)
class L0Match:
    """One entry L0 matched, with the score and which of its labels share terms with the query."""

    source: str
    title: str
    score: float
    domains: tuple[str, ...]
    title_matched: bool
    matched_keywords: tuple[str, ...]
    matched_entities: tuple[str, ...]
    matched_categories: tuple[str, ...]
    coverage: float = 0.0  # share of the query's IDF mass found in this entry's L0 fields


@dataclass(frozen=True)
class L0Hints:
    """What L0 tells the rest of the flow: matched titles, keywords, domains and entities.

    `domains` are the domains the hint data carries: after the domain vote (retrieval/lookup/domains.py), those whose
    evidence holds; `match_domains` keeps every domain of the matched entries, for analysts.
    """

    matches: tuple[L0Match, ...] = ()
    matched_titles: tuple[str, ...] = ()
    matched_keywords: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    score_bound: float = 0.0
    match_domains: tuple[str, ...] = ()
    domain_vote: DomainVote | None = None

    @property
    def match_count(self) -> int:
        return len(self.matches)

    def with_vote(self, vote: DomainVote) -> L0Hints:
        """These hints carrying the domains `vote` accepts."""
        return replace(self, domains=vote.accepted, domain_vote=vote)

    def to_dict(self) -> dict[str, Any]:
        return {"matched_titles": list(self.matched_titles), "matched_keywords": list(self.matched_keywords),
                "domains": list(self.domains), "entities": list(self.entities), "match_count": self.match_count,
                "matches": [{"source": m.source, "title": m.title, "score": round(m.score, 6)}
                            for m in self.matches],
                "match_domains": list(self.match_domains),
                "domain_evidence": self.domain_vote.to_dict() if self.domain_vote else None}


@dataclass
class L0Index:
    """Sparse BM25Okapi index over entries; `k1`, `b`, `epsilon` are rank-bm25's defaults.

    Built from the entries, or opened from `arrays` (a cached index: no entry is read until it matches).
    `vocabulary` maps a term to its column (a TermIndex: `get`, `in`, `len`)."""

    entries: Sequence[Entry]
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    arrays: L0Arrays | None = field(default=None, repr=False)
    vocabulary: TermIndex = field(init=False, repr=False)
    _labels: dict[int, _Labels] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.arrays is None:
            self.arrays = build_arrays(self.entries, self.k1, self.b, self.epsilon)
        a = self.arrays
        a.check()
        if a.n_docs != len(self.entries):
            raise ValueError(f"L0 arrays index {a.n_docs} entries, the base holds {len(self.entries)}")
        if a.parameters.tolist() != [self.k1, self.b, self.epsilon]:
            raise ValueError("L0 arrays were computed with other k1, b or epsilon")
        self.vocabulary = TermIndex(TextColumn(a.term_blob, a.term_offsets), a.term_hashes, a.term_ids)
        self._idf_values = a.idf
        self._columns = (a.column_indptr, a.column_rows, a.column_values)
        self._row_pointer = a.row_pointer
        self._row_columns = a.row_columns
        self._n_docs = a.n_docs
        # term -> column, remembered: a TermIndex lookup hashes the term and searches; queries repeat terms
        self._term_id = lru_cache(maxsize=1 << 16)(self.vocabulary.get)

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """BM25Okapi score of every entry for already-tokenized query terms (repeats count, as in rank-bm25)."""
        return self._scores([self._term_id(t) for t in query_terms])

    def _scores(self, ids: list[int]) -> np.ndarray:
        counts = Counter(i for i in ids if i >= 0)  # one id per term: the term's first occurrence orders it
        if not counts:
            return np.zeros(self._n_docs)
        columns = np.asarray(list(counts), dtype=np.int64)
        weights = np.asarray(list(counts.values()), dtype=np.float64)
        return postings_sum(*self._columns, columns, weights, self._n_docs)

    def score_bound(self, query_terms: Sequence[str]) -> float:
        """The most any entry could score: every known query term at full saturation (idf * (k1 + 1))."""
        return self._score_bound([self._term_id(t) for t in query_terms])

    def _score_bound(self, ids: list[int]) -> float:
        known = [i for i in ids if i >= 0]
        return float(self._idf_values[known].sum() * (self.k1 + 1)) if known else 0.0

    def match(self, query: str, *, max_matches: int = 5, min_score_ratio: float = 0.5) -> L0Hints:
        """Entries with a positive score sharing a real term with the query, best first, as hints."""
        terms = tokenize(query)
        if max_matches <= 0 or not terms:
            return L0Hints()
        id_of = {term: self._term_id(term) for term in terms}  # each term looked up once per query
        ids = [id_of[t] for t in terms]
        scores = self._scores(ids)
        positive = np.flatnonzero(scores > 0)
        if positive.size == 0:
            return L0Hints()
        floor = scores[positive].max() * min_score_ratio
        kept = positive[scores[positive] >= floor]
        ranked = kept[np.lexsort((kept, -scores[kept]))][:max_matches].tolist()  # best first, ties by position
        query_terms = set(terms)
        unique_ids = list(id_of.values())  # distinct terms in order of first occurrence, as coverage takes them
        matches = [replace(m, coverage=self._coverage(unique_ids, i)) for m, i in
                   ((self._describe(i, float(scores[i]), query_terms), i) for i in ranked[:max_matches])
                   if m is not None]
        return replace(_hints(matches), score_bound=self._score_bound(ids))

    def coverage(self, query_terms: Sequence[str], row: int) -> float:
        """Share of the query's IDF mass (each distinct term once) that entry `row`'s L0 fields contain.
        A term no entry's fields contain weighs as much as the rarest term: it is what the fields miss."""
        return self._coverage([self._term_id(t) for t in dict.fromkeys(query_terms)], row)

    def _coverage(self, unique_ids: list[int], row: int) -> float:
        if not unique_ids:
            return 0.0
        rarest = float(np.log(self._n_docs + 0.5) - np.log(0.5))
        present = set(self._row_terms(row).tolist())
        total = covered = 0.0
        for column in unique_ids:
            weight = rarest if column < 0 else max(float(self._idf_values[column]), 1e-6)
            total += weight
            covered += weight if column >= 0 and column in present else 0.0
        return covered / total

    def _row_terms(self, row: int) -> np.ndarray:
        start, end = self._row_pointer[row], self._row_pointer[row + 1]
        return self._row_columns[start:end]

    def _describe(self, row: int, score: float, query_terms: set[str]) -> L0Match | None:
        labels = self._labels.get(row)
        if labels is None:  # read and tokenized once per entry, when it first matches (not at load)
            labels = self._labels[row] = _Labels.of(self.entries[row])
        keywords = tuple(k for k, terms in labels.keywords if not query_terms.isdisjoint(terms))
        entities = tuple(e for e, terms in labels.entities if not query_terms.isdisjoint(terms))
        categories = tuple(c for c, terms in labels.domains if not query_terms.isdisjoint(terms))
        title = not query_terms.isdisjoint(labels.title)
        if not (title or keywords or entities or categories):
            return None
        return L0Match(labels.source, labels.entry_title, score, labels.entry_domains, title, keywords, entities,
                       categories)


@dataclass(frozen=True)
class _Labels:
    """An entry's labels with their terms: what `_describe` compares a query's terms with (and the entry's
    source, title and domains, which a match names)."""

    title: frozenset[str]
    keywords: tuple[tuple[str, frozenset[str]], ...]
    entities: tuple[tuple[str, frozenset[str]], ...]
    domains: tuple[tuple[str, frozenset[str]], ...]
    source: str
    entry_title: str
    entry_domains: tuple[str, ...]

    @classmethod
    def of(cls, entry: Entry) -> _Labels:
        def terms(labels) -> tuple[tuple[str, frozenset[str]], ...]:
            return tuple((label, frozenset(tokenize(label))) for label in labels)

        return cls(frozenset(tokenize(entry.title)), terms(entry.keywords), terms(entry.entities),
                   terms(entry.domains), entry.source, entry.title, entry.domains)


def _hints(matches: list[L0Match]) -> L0Hints:
    def unique(values: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for v in values if v))

    domains = unique([d for m in matches for d in m.domains])
    return L0Hints(
        matches=tuple(matches),
        matched_titles=unique([m.title for m in matches]),
        matched_keywords=unique([k for m in matches for k in m.matched_keywords]),
        domains=domains,
        entities=unique([e for m in matches for e in m.matched_entities]),
        match_domains=domains,
    )
