"""Ranking metrics: one pure function per metric, and metric names such as `"ndcg@10"` parsed once.

Every function takes `ranked` (document ids best first, as the evidence blocks came back) and `qrels`
(document id -> relevance grade; grades <= 0 are not relevant) and returns a float in [0, 1].
A ranked id seen twice counts once, at its first position (later copies are ignored, not re-scored).
A query without relevant documents scores 0 on every metric (ranx and trec_eval do the same).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

Qrels = Mapping[str, float]
MetricFunction = Callable[[Sequence[str], Qrels, int], float]


def _unique(ranked: Iterable[str], k: int) -> list[str]:
    """The first `k` distinct ids, in order."""
    seen: dict[str, None] = {}
    for doc in ranked:
        if len(seen) >= k:
            break
        seen.setdefault(doc, None)
    return list(seen)


def _relevant(qrels: Qrels) -> dict[str, float]:
    return {doc: float(grade) for doc, grade in qrels.items() if grade > 0}


def hits(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """Hit@k = 1 if any of the top k is relevant, else 0."""
    relevant = _relevant(qrels)
    return float(any(doc in relevant for doc in _unique(ranked, k)))


def precision(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """P@k = |relevant ∩ top k| / k (a short ranking is still divided by k)."""
    relevant = _relevant(qrels)
    return sum(doc in relevant for doc in _unique(ranked, k)) / k


def recall(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """Recall@k = |relevant ∩ top k| / |relevant|."""
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    return sum(doc in relevant for doc in _unique(ranked, k)) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """MRR@k (per query) = 1 / rank of the first relevant document in the top k, 0 if none."""
    relevant = _relevant(qrels)
    for rank, doc in enumerate(_unique(ranked, k), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def average_precision(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """AP@k = Σ_{i ≤ k, doc_i relevant} P@i / |relevant| (trec_eval's map_cut: all relevant in the denominator)."""
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    found, total = 0, 0.0
    for rank, doc in enumerate(_unique(ranked, k), start=1):
        if doc in relevant:
            found += 1
            total += found / rank
    return total / len(relevant)


def ndcg(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{i ≤ k} rel_i / log2(i + 1) (linear gain, as trec_eval)."""
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    dcg = sum(relevant.get(doc, 0.0) / math.log2(rank + 1) for rank, doc in enumerate(_unique(ranked, k), 1))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return dcg / idcg


FUNCTIONS: dict[str, MetricFunction] = {
    "ndcg": ndcg, "recall": recall, "mrr": reciprocal_rank, "map": average_precision,
    "hit": hits, "p": precision,
}
"""Metric families by the name used before `@k`."""


@dataclass(frozen=True)
class Metric:
    """A parsed metric name: family and cutoff; calling it scores one query."""

    family: str
    k: int

    @property
    def name(self) -> str:
        return f"{self.family}@{self.k}"

    def __call__(self, ranked: Sequence[str], qrels: Qrels) -> float:
        return FUNCTIONS[self.family](ranked, qrels, self.k)


def parse_metric(name: str) -> Metric:
    """`"ndcg@10"` -> Metric("ndcg", 10); unknown names raise ValueError listing the known families."""
    family, sep, cutoff = str(name).strip().lower().partition("@")
    known = ", ".join(f"{f}@k" for f in FUNCTIONS)
    if family not in FUNCTIONS:
        raise ValueError(f"unknown metric {name!r}; known metrics: {known} (e.g. ndcg@10)")
    if not sep or not cutoff.isdigit() or not 1 <= int(cutoff) <= 1000:
        raise ValueError(f"metric {name!r} needs a cutoff from 1 to 1000, e.g. {family}@10; known metrics: {known}")
    return Metric(family, int(cutoff))


def parse_metrics(names: Iterable[str]) -> tuple[Metric, ...]:
    """Parse and deduplicate a list of names, keeping their order; an empty list is an error."""
    parsed = tuple(dict.fromkeys(parse_metric(n) for n in names))
    if not parsed:
        raise ValueError("no metrics given; pass names such as ndcg@10,recall@100")
    return parsed


def depth(metrics: Iterable[Metric]) -> int:
    """How many results a run must retrieve for every metric: the largest cutoff."""
    return max(m.k for m in metrics)


def score(ranked: Sequence[str], qrels: Qrels, metrics: Iterable[Metric]) -> dict[str, float]:
    """Every metric of one query, by name."""
    return {m.name: m(ranked, qrels) for m in metrics}
