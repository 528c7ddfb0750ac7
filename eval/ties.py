"""Ties: how much a query's metrics depend on the order of documents with equal scores (issue 34, item 5).

A ranking is scored in the order it came back (trec_eval re-sorts by score and breaks ties by document id). When
several documents share a score, any order of them is as justified as the one returned, so per query and metric
we give the range over every order of the tied documents (`low`, `high`: the tied documents put worst-graded
first, then best-graded first, which bounds every metric here) and the expected value over uniformly random
orders (`expected`). Documents tie when their scores are equal as stored (rounded to 6 decimals); a group of
equal scores may hold positions that are not adjacent (a ranking need not be sorted by score), and its
documents are permuted over those positions. Tied documents beyond the ranking's depth are not seen.

The expectation is exact for P@k, Recall@k and nDCG@k (linear in the gain at each position: a position in a
tie group holds the group's mean gain); for Hit@k, MRR@k and MAP@k it is the mean over every order when there
are at most `EXACT_ORDERS`, else over `DRAWS` random orders drawn with a fixed seed.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import metrics as metric_lib

DRAWS = 400
EXACT_ORDERS = 5040  # 7!: up to this many orders of the tied documents, every one is scored
FLAG_AT = 0.005  # a run's reported metric and its expectation over tie orders further apart than this are flagged
LINEAR = ("p", "recall", "ndcg")


@dataclass(frozen=True)
class TieRange:
    """One metric of one query over the orders of its tied documents: lowest, highest and expected value, and
    the value of the order returned."""

    low: float
    high: float
    expected: float
    reported: float

    def to_list(self) -> list[float]:
        """As stored in `eval_query.tie_ranges`: [low, high, expected, reported]."""
        return [round(v, 6) for v in (self.low, self.high, self.expected, self.reported)]


def tie_groups(scores: Sequence[float | None]) -> list[list[int]]:
    """Positions (0-based) that share a score, for every score held by two or more documents; None is no score."""
    by_score: dict[float, list[int]] = {}
    for position, score in enumerate(scores):
        if score is not None and not (isinstance(score, float) and math.isnan(score)):
            by_score.setdefault(float(score), []).append(position)
    return [positions for positions in by_score.values() if len(positions) > 1]


def tie_ranges(ranked: Sequence[str], scores: Sequence[float | None] | None, qrels: Mapping[str, float],
               metrics: Sequence[metric_lib.Metric], *, seed: str = "") -> dict[str, TieRange]:
    """Per metric, its range and expectation over the orders of tied documents; only metrics that a tie order
    can change are returned (an empty dict: the order of ties changes nothing). Duplicated ids count once."""
    ranked, scores = _unique(ranked, scores)
    if not scores or not any(g > 0 for g in qrels.values()):
        return {}
    grade = {doc: max(float(qrels.get(doc, 0.0)), 0.0) for doc in ranked}
    groups = [g for g in tie_groups(scores) if len({grade[ranked[p]] for p in g}) > 1]  # all-equal grades: moot
    if not groups:
        return {}
    best, worst = _ordered(ranked, groups, grade, reverse=True), _ordered(ranked, groups, grade, reverse=False)
    draws = None
    found: dict[str, TieRange] = {}
    for metric in metrics:
        low, high = metric(worst, qrels), metric(best, qrels)
        if high - low <= 1e-12:
            continue
        if metric.family in LINEAR:
            expected = _linear_expectation(ranked, groups, grade, qrels, metric)
        else:
            draws = draws or _draws(ranked, groups, seed)
            expected = sum(metric(order, qrels) for order in draws) / len(draws)
        found[metric.name] = TieRange(low, high, expected, metric(ranked, qrels))
    return found


def _unique(ranked: Sequence[str], scores: Sequence[float | None] | None) -> tuple[list[str], list[float | None]]:
    """Each id once, at its first position, with its score there; no scores when they are missing or misaligned."""
    if scores is None or len(scores) != len(ranked):
        return list(dict.fromkeys(ranked)), []
    seen: dict[str, float | None] = {}
    for doc, score in zip(ranked, scores, strict=True):
        seen.setdefault(doc, score)
    return list(seen), list(seen.values())


def _placed(ranked: list[str], groups: list[list[int]], arrangements: Iterable[Sequence[str]]) -> list[str]:
    """The ranking with each tie group's positions given the documents of its arrangement, in order."""
    order = list(ranked)
    for positions, docs in zip(groups, arrangements, strict=True):
        for position, doc in zip(positions, docs, strict=True):
            order[position] = doc
    return order


def _ordered(ranked: list[str], groups: list[list[int]], grade: Mapping[str, float], *, reverse: bool) -> list[str]:
    """The ranking with every tie group's documents reordered by grade (best first when `reverse`)."""
    return _placed(ranked, groups, (sorted((ranked[p] for p in g), key=lambda d: grade[d], reverse=reverse)
                                    for g in groups))


def _linear_expectation(ranked: list[str], groups: list[list[int]], grade: Mapping[str, float],
                        qrels: Mapping[str, float], metric: metric_lib.Metric) -> float:
    """E[metric] over random tie orders for a metric linear in the gains at its positions."""
    gains = [grade[d] for d in ranked]
    hit = [1.0 if g > 0 else 0.0 for g in gains]
    for positions in groups:
        mean_gain = sum(gains[p] for p in positions) / len(positions)
        mean_hit = sum(hit[p] for p in positions) / len(positions)
        for p in positions:
            gains[p], hit[p] = mean_gain, mean_hit
    k = metric.k
    relevant = [g for g in qrels.values() if g > 0]
    if metric.family == "p":
        return sum(hit[:k]) / k
    if metric.family == "recall":
        return sum(hit[:k]) / len(relevant)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
    ideal = sorted(relevant, reverse=True)[:k]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def _draws(ranked: list[str], groups: list[list[int]], seed: str) -> list[list[str]]:
    """Every order of the tied documents when there are at most EXACT_ORDERS, else DRAWS random ones (seeded by
    `seed`, so a run's figures are reproducible)."""
    if math.prod(math.factorial(len(g)) for g in groups) <= EXACT_ORDERS:
        return [_placed(ranked, groups, perms)
                for perms in itertools.product(*(itertools.permutations([ranked[p] for p in g]) for g in groups))]
    rng = random.Random(f"ties:{seed}")

    def shuffled(positions: list[int]) -> list[str]:
        docs = [ranked[p] for p in positions]
        rng.shuffle(docs)
        return docs

    return [_placed(ranked, groups, [shuffled(g) for g in groups]) for _ in range(DRAWS)]


def ties_summary(ranges: Sequence[Mapping[str, Any] | None], means: Mapping[str, float]) -> dict[str, Any]:
    """A run's tie figures from its questions' `tie_ranges` (None: not measured, as in runs stored before them):
    per metric the reported mean, its expectation and range over tie orders, and the queries a tie order
    changes; `flagged` names the metrics whose reported mean and expectation differ by more than FLAG_AT."""
    measured = [r for r in ranges if r is not None]
    if not measured:
        return {"skipped": "no scores were stored with the rankings (a run stored before ties were measured)"}
    n = len(ranges)
    per_metric: dict[str, Any] = {}
    for name, reported in means.items():
        affected = [r[name] for r in measured if name in r]  # [low, high, expected, reported] each
        low, high, expected = (reported + sum(v[i] - v[3] for v in affected) / n for i in range(3))
        per_metric[name] = {"reported": round(reported, 4), "expected": round(expected, 4),
                            "low": round(low, 4), "high": round(high, 4), "queries_affected": len(affected)}
    flagged = [m for m, v in per_metric.items() if abs(v["reported"] - v["expected"]) > FLAG_AT]
    return {"queries": n, "queries_affected": sum(1 for r in measured if r), "metrics": per_metric,
            "flagged": flagged, "flag_at": FLAG_AT}


def ties_sentence(summary: Mapping[str, Any] | None) -> str:
    """The run's ties in one line, for the CLI summary and reports: which metrics a tie order moves, and by
    how much against the reported means; FLAGGED where the expectation is more than FLAG_AT away."""
    if not summary:
        return "ties: not measured"
    if "skipped" in summary:
        return f"ties: not measured ({summary['skipped']})"
    moved = {m: v for m, v in summary["metrics"].items() if v["queries_affected"]}
    if not moved:
        return f"ties: no tied scores change any metric ({summary['queries']} queries)"
    parts = [f"{m} {v['reported']:.4f} vs {v['expected']:.4f} expected over tie orders "
             f"(range {v['low']:.4f}-{v['high']:.4f}, {v['queries_affected']} queries)"
             + (" FLAGGED" if m in summary["flagged"] else "") for m, v in moved.items()]
    return "ties: " + "; ".join(parts)


def ties_table(summary: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The rows of a report's ties table: metrics a tie order moves, reported beside expected and range."""
    if not summary or "metrics" not in summary:
        return []
    return [{"metric": m, "reported": v["reported"], "expected over tie orders": v["expected"], "lowest": v["low"],
             "highest": v["high"], "queries affected": v["queries_affected"],
             "flagged": "yes" if m in summary["flagged"] else ""}
            for m, v in summary["metrics"].items() if v["queries_affected"]]
