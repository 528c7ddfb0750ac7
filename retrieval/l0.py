"""L0: BM25Okapi over entry titles, keywords, categories and entities; turns matches into hints.

Scores equal rank-bm25's `BM25Okapi.get_scores` (same idf with the epsilon floor, same length
normalisation) but come from a precomputed sparse term-weight matrix, so a query costs one sparse
column slice and a dot product instead of a Python loop over every entry.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .corpus import Entry
from .domains import DomainVote
from .postings import columns_from_triples, postings_sum
from .text import tokenize


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

    `domains` are the domains the hint data carries: after the domain vote (domains.py), those whose
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


def entry_terms(entry: Entry) -> list[str]:
    """The L0 document of an entry: the terms of its title, keywords, categories, entities and front-matter
    description (a page's one-line summary, in the words users ask with more often than its title)."""
    fields_text = [entry.title, *entry.keywords, *entry.categories, *entry.entities, entry.description]
    return [t for text in fields_text for t in tokenize(text)]


@dataclass
class L0Index:
    """Sparse BM25Okapi index over entries; `k1`, `b`, `epsilon` are rank-bm25's defaults."""

    entries: Sequence[Entry]
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    vocabulary: dict[str, int] = field(init=False, repr=False)
    _labels: dict[int, _Labels] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        docs = [entry_terms(e) for e in self.entries]
        self.vocabulary = {}
        rows, cols, tfs = [], [], []
        for row, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                rows.append(row)
                cols.append(self.vocabulary.setdefault(term, len(self.vocabulary)))
                tfs.append(tf)
        n_docs, n_terms = len(docs), len(self.vocabulary)
        tf = np.asarray(tfs, dtype=np.float64)
        doc_len = np.asarray([len(d) for d in docs], dtype=np.float64)
        avgdl = doc_len.mean() if n_docs and doc_len.sum() else 1.0
        idf = self._idf(np.bincount(np.asarray(cols, dtype=np.int64), minlength=n_terms), n_docs)
        self._idf_values = idf
        norm = self.k1 * (1 - self.b + self.b * doc_len[np.asarray(rows, dtype=np.int64)] / avgdl)
        row_ids, col_ids = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        values = idf[col_ids] * tf * (self.k1 + 1) / (tf + norm)
        self._columns = columns_from_triples(row_ids, col_ids, values, n_terms)
        # rows were appended in order, so the row-major view is the triples as they stand
        self._row_pointer = np.r_[0, np.cumsum(np.bincount(row_ids, minlength=n_docs))].astype(np.int64)
        self._row_columns = col_ids

    def _idf(self, doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
        """rank-bm25's BM25Okapi idf: log((N - n + .5) / (n + .5)), negatives floored at eps * mean idf."""
        idf = np.log(n_docs - doc_freq + 0.5) - np.log(doc_freq + 0.5)
        floor = self.epsilon * (idf.sum() / len(idf)) if len(idf) else 0.0
        return np.where(idf < 0, floor, idf)

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """BM25Okapi score of every entry for already-tokenized query terms (repeats count, as in rank-bm25)."""
        counts = Counter(t for t in query_terms if t in self.vocabulary)
        if not counts:
            return np.zeros(len(self.entries))
        columns = np.asarray([self.vocabulary[t] for t in counts], dtype=np.int64)
        weights = np.asarray(list(counts.values()), dtype=np.float64)
        return postings_sum(*self._columns, columns, weights, len(self.entries))

    def score_bound(self, query_terms: Sequence[str]) -> float:
        """The most any entry could score: every known query term at full saturation (idf * (k1 + 1))."""
        ids = [self.vocabulary[t] for t in query_terms if t in self.vocabulary]
        return float(self._idf_values[ids].sum() * (self.k1 + 1)) if ids else 0.0

    def match(self, query: str, *, max_matches: int = 5, min_score_ratio: float = 0.5) -> L0Hints:
        """Entries with a positive score sharing a real term with the query, best first, as hints."""
        terms = tokenize(query)
        if max_matches <= 0 or not terms:
            return L0Hints()
        scores = self.scores(terms)
        positive = np.flatnonzero(scores > 0)
        if positive.size == 0:
            return L0Hints()
        floor = scores[positive].max() * min_score_ratio
        kept = positive[scores[positive] >= floor]
        ranked = kept[np.lexsort((kept, -scores[kept]))][:max_matches].tolist()  # best first, ties by position
        query_terms = set(terms)
        matches = [replace(m, coverage=self.coverage(terms, i)) for m, i in
                   ((self._describe(i, float(scores[i]), query_terms), i) for i in ranked[:max_matches])
                   if m is not None]
        return replace(_hints(matches), score_bound=self.score_bound(terms))

    def coverage(self, query_terms: Sequence[str], row: int) -> float:
        """Share of the query's IDF mass (each distinct term once) that entry `row`'s L0 fields contain.
        A term no entry's fields contain weighs as much as the rarest term: it is what the fields miss."""
        unique_terms = list(dict.fromkeys(query_terms))
        if not unique_terms:
            return 0.0
        rarest = float(np.log(len(self.entries) + 0.5) - np.log(0.5))
        present = set(self._row_terms(row).tolist())
        total = covered = 0.0
        for term in unique_terms:
            column = self.vocabulary.get(term)
            weight = rarest if column is None else max(float(self._idf_values[column]), 1e-6)
            total += weight
            covered += weight if column is not None and column in present else 0.0
        return covered / total

    def _row_terms(self, row: int) -> np.ndarray:
        start, end = self._row_pointer[row], self._row_pointer[row + 1]
        return self._row_columns[start:end]

    def _describe(self, row: int, score: float, query_terms: set[str]) -> L0Match | None:
        entry = self.entries[row]
        labels = self._labels.get(row)
        if labels is None:  # tokenized once per entry, when it first matches (not at load: 65k entries at 1M)
            labels = self._labels[row] = _Labels.of(entry)
        keywords = tuple(k for k, terms in labels.keywords if not query_terms.isdisjoint(terms))
        entities = tuple(e for e, terms in labels.entities if not query_terms.isdisjoint(terms))
        categories = tuple(c for c, terms in labels.domains if not query_terms.isdisjoint(terms))
        title = not query_terms.isdisjoint(labels.title)
        if not (title or keywords or entities or categories):
            return None
        return L0Match(entry.source, entry.title, score, entry.domains, title, keywords, entities, categories)


@dataclass(frozen=True)
class _Labels:
    """An entry's labels with their terms: what `_describe` compares a query's terms with."""

    title: frozenset[str]
    keywords: tuple[tuple[str, frozenset[str]], ...]
    entities: tuple[tuple[str, frozenset[str]], ...]
    domains: tuple[tuple[str, frozenset[str]], ...]

    @classmethod
    def of(cls, entry: Entry) -> _Labels:
        def terms(labels) -> tuple[tuple[str, frozenset[str]], ...]:
            return tuple((label, frozenset(tokenize(label))) for label in labels)

        return cls(frozenset(tokenize(entry.title)), terms(entry.keywords), terms(entry.entities),
                   terms(entry.domains))


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
