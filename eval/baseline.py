"""The plain BM25 baseline a run is measured against: BM25Okapi over each entry's title + full text.

It reuses the core's sparse BM25Okapi (retrieval.l0.index.L0Index, equal to rank-bm25's scores) built over
pseudo-entries whose "title" is the whole title + text, with the core's tokenizer, so both systems see
the same terms and the same knowledge base (including fields a dataset leaves out of the index).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from retrieval import Entry, KnowledgeBase
from retrieval.l0 import L0Index
from retrieval.text import tokenize

NAME = "bm25"


@dataclass
class BM25Baseline:
    """BM25Okapi (k1 1.5, b 0.75, epsilon 0.25: rank-bm25's defaults) over title + text of every entry."""

    index: L0Index

    @classmethod
    def build(cls, kb: KnowledgeBase) -> BM25Baseline:
        return cls(L0Index([_pseudo_entry(e) for e in kb.entries]))

    def search(self, query: str, top_k: int) -> list[str]:
        """Sources of the `top_k` best-scoring entries (score > 0), best first; ties by corpus order."""
        scores = self.index.scores(tokenize(query))
        positive = np.flatnonzero(scores > 0)
        if positive.size > top_k:
            positive = positive[np.argpartition(-scores[positive], top_k - 1)[:top_k]]
        ranked = sorted(positive.tolist(), key=lambda i: (-scores[i], i))
        return [self.index.entries[i].source for i in ranked]


def _pseudo_entry(entry: Entry) -> Entry:
    text = " ".join([entry.title, *(c.text for c in entry.chunks)])
    return Entry(entry.source, text, (), (), (), "", ())
